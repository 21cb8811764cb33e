//===- Passes.td - Serving passes --------------------------*- tablegen -*-===//
//
// Serving form (llm dialect): grouped-query attention over the KV heads, a
// causal LM served as a cross-encoder, a paged KV cache and ragged batches,
// as the step ABI of include/llmc/Runtime/StepABI.h takes them
// (docs/architecture.md).
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_PASSES_SERVING_PASSES
#define LLMC_PASSES_SERVING_PASSES

include "mlir/Pass/PassBase.td"

def LlmAbsorbLatentAttentionPass
    : Pass<"llm-absorb-latent-attention", "mlir::func::FuncOp"> {
  let summary = "Cache multi-head latent attention's latent, not each head's keys and values";
  let description = [{
    Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2) is exported as
    attention over expanded heads: the latent c (kv_lora_rank features) goes
    through kv_b_proj into each head's key and value, and each head's key is
    those features then the one rotary key all heads share
    (`llm.concat_heads`). Since head h's score is
    [q_h W_k,h^T ; q_rope,h] . [c ; k_rope] and its output is
    (sum_t p_t c_t) W_v,h, this pass rewrites such an `llm.attention` to
    attend over one KV head, keys concat_heads(c, k_rope) and values c
    (narrower than the keys), behind `llm.head_linear` of the query's
    features without rotation through W_k,h^T and followed by
    `llm.head_linear` of the output through W_v,h. The past K/V inputs and
    present outputs take those shapes, so the cache that
    `llm-kv-cache-paging` builds holds kv_lora_rank + rope features a token
    for keys and as many for values, instead of heads * head_dim each
    (DeepSeek-V3: 2 * 576 floats against 2 * 128 * 192).

    It needs the up-projection's weight as an f32 constant or an
    llm.dequantize of constants (widened once into the two f32 weights),
    without a bias,
    the keys and values as its columns through llm.split_heads, and a cache
    only attention and the present outputs read; other attention is left
    alone (`-debug-only=llm-absorb-latent-attention` says why).
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmGqaRewritePass : Pass<"llm-gqa-rewrite", "mlir::func::FuncOp"> {
  let summary = "Attend over the KV heads themselves instead of their repeated copies";
  let description = [{
    Exports of grouped-query attention widen K and V to the query's head
    count (repeat_kv: Unsqueeze/Expand/Reshape, Tile) before a plain
    attention. `llm.attention` is grouped-query itself, so this pass feeds it
    the KV heads directly and the widened tensors disappear: MHA (one query
    head per KV head), GQA and MQA (one KV head) are the same op with
    different head counts. Attention that reads only one of K and V through
    repeat_kv, or the two with different repeats, is left alone.
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmClassifierFromTokensPass
    : Pass<"llm-classifier-from-tokens", "mlir::func::FuncOp"> {
  let summary = "Serve a causal LM as a cross-encoder scored by its LM head's logits of tokens";
  let description = [{
    LLM rerankers published as causal LMs score a (query, document) prompt
    by the LM head's logit of one token at its last position
    (bge-reranker-v2-gemma: "Yes"), or by the difference of two
    (Qwen3-Reranker: "yes" minus "no", the log-odds of the softmax over the
    two). vLLM serves them as classifiers of one label (`hf_overrides`'
    `classifier_from_token`); this pass does the same to the raised
    function: the `llm.logits` head's weight becomes that token's column
    (or the second token's minus the first's), its bias likewise, the
    function's result one label wide, and the function is marked
    `llmc.pooled_at_last_token`, so that `llm-kv-cache-paging` makes the
    step return class logits of one label, whose sigmoid the runtime gives
    as the score.

    A quantized head's weight (an `llm.dequantize` of constants) is widened
    at compile time: the column is the dequantized weights'.

    Refused with an error: a function without one `llm.logits` that it
    returns as it is (an embedding model, a classifier already), a head's
    weight not known at compile time, a token id outside the head,
    and two tokens through a head's epilogue (a softcap does not commute
    with the difference).
  }];
  let options = [
    ListOption<"tokenIds", "token-ids", "int64_t",
               "The token whose logit is the score, or two: the second's logit minus the "
               "first's (vLLM's order: no, yes)">,
  ];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmLoraSitesPass : Pass<"llm-lora-sites", "mlir::func::FuncOp"> {
  let summary = "Give every linear layer of the decoder layers a LoRA site";
  let description = [{
    A LoRA adapter (PEFT's `adapter_model.safetensors`) adds to some linear
    layers a low-rank product, `scaling * x A^T B^T`, and names each layer
    by its module path (`model.layers.0.self_attn.q_proj`). Adapters are
    chosen per request and loaded while the model serves (vLLM's multi-LoRA
    serving), so the step cannot hold their weights: this pass puts an
    `llm.lora` after each llm.linear of a decoder layer, which adds the
    product of whichever adapter each row runs with, and records the sites
    on the function as `llmc.lora_sites` (the manifest's step.lora_sites:
    each site's module, in and out features), by which the runtime matches
    an adapter's weights to sites.

    A linear's module path comes from its location, the name the exporter
    gave its MatMul node: optimum and torch.onnx's TorchScript exporter
    write `/model/layers.0/self_attn/q_proj/MatMul`, the module path with
    `/` for `.` and the op last. Linears outside the decoder layers (no
    indexed block such as `layers.N` or GPT-2's `h.N`: the LM head, a score
    head) get no site.

    Runs on the ragged step (after llm-ragged-batching), before fusion:
    the linears a site follows keep their product in memory, so fusion no
    longer folds their epilogues (a residual add, SwiGLU) into them.

    Refused with an error: a function with no linear layer named so (an
    export whose nodes do not carry module paths, as the genai builder's
    and the dynamo exporter's do not in this form), two linears named by
    one module (a projection split at raising), and a linear whose input
    is not [tokens, features].
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmKvCachePagingPass : Pass<"llm-kv-cache-paging", "mlir::func::FuncOp"> {
  let summary = "Replace the dense KV cache with writes to and attention over a paged pool";
  let description = [{
    Rewrites the model function into the paged form of the step ABI:

    - every `llm.attention` (with or without a cache: past inputs joined by
      `llm.kv_concat`, or K/V of the current tokens only) becomes
      `llm.paged_kv_write` of the new keys and values at `slot_mapping`,
      then `llm.paged_attention` over the pool through `block_tables` and
      `context_lens`; layers are numbered in program order;
    - the past_key_values inputs and present outputs disappear, and one
      `kv_pool` input [layers, num_blocks, 2, kv_heads, block_size,
      head_dim] takes their place: of the K/V type, with
      `kv-cache-dtype=bf16` of bf16 (f32 keys and values rounded as they
      are written), or with `kv-cache-dtype=int8` of i8 with head_dim + 4
      bytes per row (the int8 codes and their f32 scale); where every
      layer's values are its keys' first features (keys
      `concat_heads(values, rotary key)`: multi-head latent attention over
      its latent), [layers, num_blocks, 1, ...]: a token caches the keys'
      row alone, and attention reads the values from its first features;
    - the token ids and positions become i32 inputs (positions derived
      inside the graph from attention_mask are replaced by them), and
      attention_mask goes: padding is what context_lens leaves out.

    The function then takes (input_ids, positions, context_lens,
    block_tables, slot_mapping, kv_pool) as [batch, seq]-shaped tensors and
    returns one row a token; `llm-ragged-batching` makes it ragged. What the
    rows are goes on the function as `llmc.step_output`: "logits" (the LM
    head's), "hidden_states" (an export without its head returning
    `last_hidden_state`: an embedding model) or "class_logits" (the score
    head of a sequence classifier, whose pooling at each row's last token
    raising removed: `llmc.pooled_at_last_token`). The pass fails, naming
    the op, when attention is not causal, when an input it removes is still
    read by something else, when the function returns anything but those
    rows and the present K/V, or when a bf16 or int8 cache would store keys
    that are not f32.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"16",
           "Tokens per KV block">,
    Option<"kvCacheDtype", "kv-cache-dtype", "std::string", /*default=*/"\"auto\"",
           "The pool's element type: auto (the model's K/V type), bf16 (f32 K/V "
           "rounded to nearest even) or int8 (codes and a per-row scale, see "
           "llm.paged_kv_write)">,
  ];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmRaggedBatchingPass : Pass<"llm-ragged-batching", "mlir::func::FuncOp"> {
  let summary = "Turn [batch, seq] tensors into [tokens] tensors with cu_seqlens (no padding)";
  let description = [{
    Runs on the paged form `llm-kv-cache-paging` produces. Every
    [batch, seq, ...] activation becomes [tokens, ...], so that sequences of
    different lengths (prefill chunks and decode tokens alike) share a step
    without padding; heads become [tokens, heads, head_dim].
    `llm.paged_attention` receives `cu_seqlens_q` [seqs + 1] to find each
    sequence's rows, and keeps causality implicit. Only the rows named by
    the new `logits_indices` input reach the logits head (`llm.gather_rows`),
    so the result is [seqs, vocab]. The signature becomes exactly the step
    ABI: (tokens, positions, cu_seqlens_q, context_lens, block_tables,
    slot_mapping, logits_indices, kv_pool) -> logits. An op that is not
    token-wise (it mixes tokens, like a leftover onnx op) makes the pass
    fail with its name.
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmKvCacheGroupsPass : Pass<"llm-kv-cache-groups", "mlir::func::FuncOp"> {
  let summary = "Let layers of different attention windows own KV blocks apart";
  let description = [{
    Runs on the ragged step. A model that alternates sliding-window and
    global layers (Gemma-2 and -3, Cohere2, gpt-oss) keeps every block of a
    sequence for its global layers, while its local layers read only their
    window's: with one block table for all layers, the blocks out of the
    window cannot be given back. This pass splits the layers into KV cache
    groups, vLLM's hybrid allocator's layout:

    - layers are sorted by their attention window (none first, then by
      width); with S the fewest layers of one window, each window's layers
      make groups of S in layer order (the last one may be short);
    - the pool's first dim becomes S: a block is S layers' rows, and a
      group's layer `i` writes and reads slot `i`. Ops get
      `kv_group` = their group and `layer` = their slot;
    - block_tables holds one row per group and sequence ([groups * seqs,
      max_blocks], group g's rows first at g * seqs) and slot_mapping one
      slot per group and token ([groups * tokens]).

    The runtime then hands a group's blocks out of its window back, while
    the global groups keep theirs: with Gemma-3's five local layers to one
    global, a long sequence holds about a sixth of the blocks one table
    would. The function records the groups for the manifest as
    `llmc.kv_groups`: one dictionary per group with its `window` (0: none)
    and its `layers` in slot order. A model whose layers share one window
    (or none) is left alone. The pass fails, naming the op, when a pool
    write has no attention of its layer or a layer mixes windows.
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

#endif // LLMC_PASSES_SERVING_PASSES
