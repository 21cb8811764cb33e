"""Tiny decoder models of each family, with seeded random weights, as Hugging Face directories.

    python scripts/exporters/tiny_models.py OUT_DIR [--family NAME ...]

writes OUT_DIR/<family>/ (config.json, generation_config.json, model.safetensors and a small
byte-level BPE tokenizer trained here) for the exporters to read. Nothing is downloaded: each
model is built from its transformers config class. Runs in an exporter venv (torch,
transformers, tokenizers); see scripts/make-exporter-fixtures.sh.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

VOCAB_SIZE = 512
SEED = 0

# Small enough to commit the exports (hidden 64, 2 layers), large enough that every family's
# shapes differ (heads, KV heads, head_dim).
COMMON = dict(vocab_size=VOCAB_SIZE, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, max_position_embeddings=256, initializer_range=0.1,
              bos_token_id=1, eos_token_id=2, pad_token_id=0)

# family -> (config class, its settings over COMMON)
FAMILIES: dict[str, tuple[str, dict]] = {
    "llama-mha": ("LlamaConfig", dict(num_key_value_heads=4)),
    "llama-gqa": ("LlamaConfig", dict(num_key_value_heads=2)),
    "llama-mqa": ("LlamaConfig", dict(num_key_value_heads=1)),
    "llama-tied": ("LlamaConfig", dict(num_key_value_heads=2, tie_word_embeddings=True)),
    "qwen2": ("Qwen2Config", dict(num_key_value_heads=2)),
    "qwen3": ("Qwen3Config", dict(num_key_value_heads=2, head_dim=16)),
    "mistral": ("MistralConfig", dict(num_key_value_heads=2, head_dim=32, sliding_window=None)),
    # A sliding window on every layer (Mistral 7B v0.1's 4096, here 20 keys): a block that
    # falls out of it is out of every layer's.
    "mistral-window": ("MistralConfig", dict(num_key_value_heads=2, head_dim=32,
                                             sliding_window=20)),
    "phi3": ("Phi3Config", dict(num_key_value_heads=4, pad_token_id=0)),
    "gemma": ("GemmaConfig", dict(num_key_value_heads=1, head_dim=16)),
    "stablelm": ("StableLmConfig", dict(num_key_value_heads=4, partial_rotary_factor=0.25)),
    "gpt2": ("GPT2Config", dict(n_embd=64, n_layer=2, n_head=4, n_positions=256, n_inner=128)),
    # Logit softcaps, pre+post norms and alternating sliding-window layers (a window of 16).
    "gemma2": ("Gemma2Config", dict(num_key_value_heads=2, head_dim=16, sliding_window=16,
                                    query_pre_attn_scalar=16)),
    # q/k norms, and sliding-window layers with their own rope base.
    "gemma3": ("Gemma3TextConfig", dict(num_key_value_heads=2, head_dim=16, sliding_window=16,
                                        query_pre_attn_scalar=16)),
    # Embedding, residual, attention and logit multipliers.
    "granite": ("GraniteConfig", dict(num_key_value_heads=2, embedding_multiplier=12.0,
                                      residual_multiplier=0.22, attention_multiplier=0.0625,
                                      logits_scaling=8.0)),
    # Norms after attention and MLP, q/k norms over all heads.
    "olmo2": ("Olmo2Config", dict(num_key_value_heads=4)),
    # Layers without rope (every fourth by default: the second of two here).
    "smollm3": ("SmolLM3Config", dict(num_key_value_heads=2, no_rope_layer_interval=2)),
    # YaRN: scaled frequencies, and cos/sin times its attention factor.
    "qwen2-yarn": ("Qwen2Config", dict(num_key_value_heads=2, rope_scaling={
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64})),
    # LongRoPE (Phi-3.5, Phi-4-mini): per-frequency short factors up to
    # original_max_position_embeddings, long ones past it, and cos/sin times a factor.
    "phi3-longrope": ("Phi3Config", dict(
        num_key_value_heads=4, pad_token_id=0, original_max_position_embeddings=64,
        rope_scaling={"type": "longrope",
                      "short_factor": [1.0, 1.1, 1.2, 1.5, 2.0, 3.0, 4.0, 5.0],
                      "long_factor": [1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 16.0]})),
    # Parallel residual (attention and MLP read the same norm), partial rotary, gelu_new.
    # Two heads of 32: onnxruntime's GroupQueryAttention wants rotary caches a multiple of 8 wide.
    # A sparse mixture of experts in every layer's MLP: a router picks 2 of 4 experts per
    # token and weighs their outputs by its softmax, renormalized over the 2.
    "qwen3-moe": ("Qwen3MoeConfig", dict(num_key_value_heads=2, head_dim=16, num_experts=4,
                                         num_experts_per_tok=2, moe_intermediate_size=32,
                                         norm_topk_prob=True)),
    # gpt-oss: attention with sinks and biases, alternating sliding-window layers, YaRN, and
    # experts with biases, a clamped swiglu over interleaved gate/up columns, and a softmax
    # over the router's top k (optimum exports them dense: every expert on every token; the
    # genai builder as onnxruntime's MoE op). YaRN over gpt-oss's own 4096 original positions:
    # the builder's YaRN asserts its correction range is inside the head (64 positions put it
    # below 0). Experts of 48 features, so that fc1's 2 x 48 rows are not the hidden size.
    "gpt-oss": ("GptOssConfig", dict(num_key_value_heads=2, head_dim=16, num_local_experts=4,
                                     num_experts_per_tok=2, intermediate_size=48,
                                     sliding_window=16, layer_types=["sliding_attention",
                                                                     "full_attention"],
                                     rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                   "beta_fast": 32.0, "beta_slow": 1.0,
                                                   "truncate": False,
                                                   "original_max_position_embeddings": 4096})),
    # gpt-oss as OpenAI ships it: the experts' weights in MXFP4 (blocks of 32 e2m1 values under
    # one power-of-two scale; save_mxfp4_experts). The genai builder reads those tensors for its
    # int4 export (onnxruntime's QMoE). Experts of 96 features: the blocks of 32 must tile the
    # down projection's inputs, and fc1's 2 x 96 rows and down's 96 inputs are not the hidden size.
    "gpt-oss-mxfp4": ("GptOssConfig", dict(
        num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
        intermediate_size=96, sliding_window=16,
        layer_types=["sliding_attention", "full_attention"],
        rope_scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                      "truncate": False, "original_max_position_embeddings": 4096})),
    "phi2": ("PhiConfig", dict(num_attention_heads=2, num_key_value_heads=2,
                               partial_rotary_factor=0.5)),
    # Arcee (AFM): Llama's attention over an MLP without a gate, relu(x)^2.
    "arcee": ("ArceeConfig", dict(num_key_value_heads=2)),
    # Nemotron: LayerNorm with a (1 + weight) scale, relu(x)^2 without a gate, partial rotary.
    # Heads of 32, half of them rotating: onnxruntime's GroupQueryAttention (the genai
    # builder's) wants rotary caches a multiple of 8 wide.
    "nemotron": ("NemotronConfig", dict(num_attention_heads=2, num_key_value_heads=1,
                                        head_dim=32, partial_rotary_factor=0.5)),
    # OLMo: LayerNorm without weight or bias; q, k and v clamped to [-clip_qkv, clip_qkv]
    # (OLMo-7B-0424's 8; 0.5 here, where these weights' projections reach past it). The
    # genai builder leaves the clamp out of its export.
    "olmo": ("OlmoConfig", dict(num_key_value_heads=4, clip_qkv=0.5)),
    # GPT-NeoX (Pythia): one query_key_value projection laid out head by head (each head's
    # q, k, v side by side), rotary on the first quarter of each head, parallel residual.
    "gpt-neox": ("GPTNeoXConfig", dict(rotary_pct=0.25, use_parallel_residual=True)),
    # Falcon-7B's form: multi-query attention whose fused query_key_value is viewed as the
    # query heads, then one key and one value head; parallel attention and MLP, no biases.
    "falcon": ("FalconConfig", dict(new_decoder_architecture=False, multi_query=True,
                                    parallel_attn=True, bias=False)),
    # GPT-BigCode (StarCoder, SantaCoder): multi-query attention, c_attn's key and value one
    # head each, learned positions, gelu.
    "gpt-bigcode": ("GPTBigCodeConfig", dict(n_inner=128, multi_query=True)),
    # GPT-J: rotary over interleaved pairs (rotate_every_two) on the first quarter of each
    # head, applied before the heads' transpose, with sin and cos read from one table;
    # parallel attention and MLP.
    "gptj": ("GPTJConfig", dict(n_embd=64, n_layer=2, n_head=4, n_positions=256, rotary_dim=4,
                                n_inner=128)),
    # CodeGen: GPT-J's rotary and block, with one qkv_proj laid out in 4 groups of heads
    # (each group's q, v and k side by side); 8 heads, so 2 to a group.
    "codegen": ("CodeGenConfig", dict(n_embd=64, n_layer=2, n_head=8, n_positions=256,
                                      n_ctx=256, rotary_dim=4, n_inner=128)),
    # Cohere (Command-R): rotary over interleaved pairs with the angles repeated pairwise
    # before cos and sin, LayerNorm without a bias, parallel attention and MLP, logits scaled.
    "cohere": ("CohereConfig", dict(num_key_value_heads=2, logit_scale=0.5)),
    # Command-R+: Cohere with a LayerNorm over each head's q and k features, a weight per head.
    "cohere-qk-norm": ("CohereConfig", dict(num_key_value_heads=2, logit_scale=0.5,
                                            use_qk_norm=True)),
    # Helium: Llama's block with the rotary over interleaved pairs, cos and sin halved from
    # transformers' full-width tables and repeated pairwise.
    "helium": ("HeliumConfig", dict(num_key_value_heads=2, head_dim=16)),
    # GLM-4: Helium's rotary on half of each head, one gate_up_proj.
    "glm": ("GlmConfig", dict(num_key_value_heads=2, head_dim=16, partial_rotary_factor=0.5)),
    # BLOOM: attention with linear biases per head (ALiBi) computed from the attention mask,
    # over [batch * heads] batches (baddbmm, bmm), each head's q, k and v side by side.
    "bloom": ("BloomConfig", dict(n_head=4, n_layer=2)),
    # MPT: ALiBi from a constant table of slope * (key index - last index) sliced to the keys,
    # the mask applied with masked_fill, LayerNorm without biases, one Wqkv split in three.
    "mpt": ("MptConfig", dict(expansion_ratio=2, max_seq_len=256)),
    # DeepSeek-V3: multi-head latent attention (q and kv through low-rank projections, a
    # rope part of each head with one key shared by the heads, values narrower than keys),
    # and after a dense first layer a mixture of experts with a shared expert and routing by
    # groups of experts (sigmoid scores plus a correction bias).
    "deepseek-v3": ("DeepseekV3Config", dict(
        num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8,
        qk_nope_head_dim=16, v_head_dim=16, head_dim=8, n_routed_experts=4,
        num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
        first_k_dense_replace=1, n_group=2, topk_group=1)),
    # DeepSeek-V3's shape as Kimi-K2 and Moonlight take it: q without a low-rank projection,
    # one group of experts, and DeepSeek's YaRN (mscale_all_dim scales the softmax too); 8
    # heads over a latent of 64, so that attention over the latent keeps 8 x 4 vectors of
    # outputs, more than the CPU kernel's value loop carries at once.
    "deepseek-v3-yarn": ("DeepseekV3Config", dict(
        num_attention_heads=8, num_key_value_heads=8, q_lora_rank=None, kv_lora_rank=64,
        qk_rope_head_dim=8,
        qk_nope_head_dim=16, v_head_dim=16, head_dim=8, n_routed_experts=4,
        num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
        first_k_dense_replace=1, n_group=1, topk_group=1, rope_scaling={
            "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
            "mscale": 1.0, "mscale_all_dim": 1.0, "beta_fast": 32, "beta_slow": 1})),
    # GPT-Neo: global and local (windowed) layers, masked by selecting the scores where a
    # constant causal table allows (finfo.min elsewhere), the window baked into the table.
    "gpt-neo": ("GPTNeoConfig", dict(num_layers=2, num_heads=4, window_size=16,
                                     attention_types=[[["global", "local"], 1]])),
    # ERNIE 4.5 (its dense models): Llama's block with the rotary over interleaved pairs (cos
    # and sin of the first half repeated pairwise), the embedding tied to the head. No optimum
    # config; the genai builder and torch.onnx export it.
    "ernie": ("Ernie4_5Config", dict(num_key_value_heads=2, head_dim=16)),
    # Hunyuan dense (Hunyuan-0.5B..7B): an RMSNorm over each head's q and k features after the
    # rotary, where Qwen3's comes before it. No optimum config.
    "hunyuan": ("HunYuanDenseV1Config", dict(num_key_value_heads=2, head_dim=16)),
    # Hunyuan's mixture of experts (Hunyuan-A13B's form): Hunyuan's attention, a router
    # choosing 2 of 4 experts by its softmax, renormalised, and a shared MLP beside them. No
    # optimum config; torch.onnx exports transformers' grouped experts.
    "hunyuan-moe": ("HunYuanMoEV1Config", dict(num_key_value_heads=2, head_dim=16, num_experts=4,
                                                moe_topk=2, moe_intermediate_size=32,
                                                num_shared_expert=1)),
    # ERNIE 4.5's mixture of experts (ERNIE-4.5-21B-A3B's form): ERNIE's attention, a dense
    # first layer, then a router choosing 2 of 4 experts by its softmax plus a correction bias,
    # weighting them by the softmax renormalised (its sum clamped to moe_norm_min), and a
    # shared MLP beside them. No optimum config; torch.onnx exports transformers' grouped
    # experts.
    "ernie-moe": ("Ernie4_5_MoeConfig", dict(num_key_value_heads=2, head_dim=16, moe_num_experts=4,
                                             moe_k=2, moe_intermediate_size=32,
                                             moe_num_shared_experts=1, moe_layer_start_index=1,
                                             moe_layer_end_index=1)),
    # Mixtral: Mistral's attention and a sparse block choosing 2 of 4 experts by the router's
    # softmax, renormalised over the 2. No optimum config; torch.onnx exports transformers'
    # grouped experts (so does it every mixture of experts below).
    "mixtral": ("MixtralConfig", dict(num_key_value_heads=2, num_local_experts=4,
                                      num_experts_per_tok=2, intermediate_size=32)),
    # Qwen2-MoE (Qwen1.5-MoE's and Qwen2-57B-A14B's form): 2 of 4 experts by the softmax, not
    # renormalised, and a shared expert whose output is scaled by sigmoid of a [hidden, 1] gate.
    "qwen2-moe": ("Qwen2MoeConfig", dict(num_key_value_heads=2, num_experts=4,
                                         num_experts_per_tok=2, moe_intermediate_size=32,
                                         shared_expert_intermediate_size=48)),
    # OLMoE: OLMo-2's norms of the whole q and k projections, 2 of 4 experts by the softmax,
    # not renormalised.
    "olmoe": ("OlmoeConfig", dict(num_key_value_heads=4, num_experts=4, num_experts_per_tok=2,
                                  intermediate_size=32)),
    # StarCoder2: GQA with biases on every linear, LayerNorm, a plain gelu MLP.
    "starcoder2": ("Starcoder2Config", dict(num_key_value_heads=2, use_bias=True)),
    # GLM-4 (GLM-4-0414): GLM's partial rotary over interleaved pairs, and a norm after the
    # attention and after the MLP as well as before each.
    "glm4": ("Glm4Config", dict(num_key_value_heads=2, head_dim=16)),
    # Command R7B (Cohere2): Cohere's parallel block, sliding-window layers with rotary and
    # global layers without it.
    "cohere2": ("Cohere2Config", dict(num_key_value_heads=2, sliding_window=16,
                                      layer_types=["sliding_attention", "full_attention"])),
    # OLMo-3: OLMo-2's block with sliding-window layers beside global ones.
    "olmo3": ("Olmo3Config", dict(num_key_value_heads=4, sliding_window=16,
                                  layer_types=["sliding_attention", "full_attention"])),
    # Granite-MoE: Granite's multipliers and 2 of 4 experts whose gate and up are one stacked
    # projection (input_linear).
    "granitemoe": ("GraniteMoeConfig", dict(num_key_value_heads=2, num_local_experts=4,
                                            num_experts_per_tok=2, intermediate_size=32,
                                            embedding_multiplier=12.0, logits_scaling=8.0,
                                            residual_multiplier=0.5, attention_multiplier=0.25)),
    # Phi-3.5-MoE (PhiMoE): 2 of 4 experts chosen by sparsemixer (the best expert, its weight
    # a softmax over the logits near it, then the same over the rest).
    "phimoe": ("PhimoeConfig", dict(num_key_value_heads=2, num_local_experts=4,
                                    num_experts_per_tok=2, intermediate_size=32)),
    # EXAONE 4: norms after the attention and the MLP (none before), per-head q/k norms, and
    # rotary only on the sliding-window layers.
    "exaone4": ("Exaone4Config", dict(num_key_value_heads=2, sliding_window=16,
                                      layer_types=["sliding_attention", "full_attention"])),
    # GLM-4.5 (GLM-4.5-Air's form): a dense first layer, then 2 of 4 experts chosen by sigmoid
    # scores plus a correction bias (DeepSeek-V3's router), a shared expert, per-head q/k norms.
    "glm4-moe": ("Glm4MoeConfig", dict(num_key_value_heads=2, n_routed_experts=4,
                                       num_experts_per_tok=2, moe_intermediate_size=32,
                                       n_shared_experts=1, n_group=1, topk_group=1,
                                       first_k_dense_replace=1, use_qk_norm=True)),
    # Seed-OSS: Llama's block with biases on q, k and v (not on o).
    "seed-oss": ("SeedOssConfig", dict(num_key_value_heads=2, head_dim=16, attention_bias=True)),
    # OPT (vLLM's first example model, opt-125m): learned positions at an offset of 2, ReLU,
    # its feed-forward block computed on the flattened tokens.
    "opt": ("OPTConfig", dict(ffn_dim=128, word_embed_proj_dim=64)),
}


# The tokenizer's training text: enough distinct words for 512 byte-level merges.
CORPUS = """\
The quick brown fox jumps over the lazy dog. A small model speaks in tokens, one at a time.
Compilers turn graphs into kernels; a runtime pages the cache and batches the requests.
Hello, world! How are you today? I am fine, thank you. What is the capital of France? Paris.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 1024 2048. Lists: apples, oranges, pears and plums.
def add(a, b): return a + b  # code also appears in chats, with {braces} and [brackets].
""" * 4


def train_tokenizer(directory: Path, vocab_size: int = VOCAB_SIZE) -> None:
    """A byte-level BPE tokenizer of up to `vocab_size` ids (as many merges as the corpus
    has), saved as tokenizer.json and tokenizer_config.json (what the exporters and llmc
    read)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<pad>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(CORPUS.splitlines(), trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>",
                                                eos_token="</s>", pad_token="<pad>")
    fast.save_pretrained(directory)


# Buffers that training sets, saved with the weights: DeepSeek-V3's router bias, which
# shifts the experts' scores for the choice only (transformers starts it at zeros).
TRAINED_BUFFERS = ("e_score_correction_bias",)


def draw_constant_parameters(model: torch.nn.Module) -> None:
    """Spreads every parameter transformers initialises to one value (biases to 0, norm scales
    to 1, Gemma's scale offsets to 0), and the TRAINED_BUFFERS, around that value, as training
    would. A bias of zeros or a scale of ones computes the same whether an importer applies it
    or drops it: drawn, the exports test that each one is read, and read in the right place."""
    buffers = [buffer for name, buffer in model.named_buffers()
               if name.rsplit(".", 1)[-1] in TRAINED_BUFFERS]
    with torch.no_grad():
        for parameter in [*model.parameters(), *buffers]:
            if parameter.numel() > 1 and bool((parameter == parameter.flatten()[0]).all()):
                parameter.add_(torch.randn_like(parameter) * COMMON["initializer_range"])


# MXFP4's e2m1 magnitudes (a code's low three bits; the fourth is the sign).
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
MXFP4_BLOCK = 32


def mxfp4_blocks(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`weight` [experts, out, in] as OpenAI's checkpoints store it: blocks [experts, out,
    in/32, 16] of e2m1 codes two per byte (the even element in the low nibble) and scales
    [experts, out, in/32] of biased exponents (2^(scale - 127)), the OCP MX rule: a block's
    exponent is floor(log2(amax)) - 2, so its largest value lands in [4, 8) and rounds to
    e2m1's nearest (6 at most)."""
    experts, out, features = weight.shape
    blocks = weight.reshape(experts, out, features // MXFP4_BLOCK, MXFP4_BLOCK)
    amax = blocks.abs().amax(dim=-1).clamp_min(2.0 ** -100)
    exponent = torch.floor(torch.log2(amax)) - 2
    scaled = blocks / torch.pow(2.0, exponent).unsqueeze(-1)
    codes = (scaled.abs().unsqueeze(-1) - E2M1).abs().argmin(dim=-1).to(torch.uint8)
    codes |= (scaled < 0).to(torch.uint8) << 3
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return packed.contiguous(), (exponent + 127).to(torch.uint8).contiguous()


def mxfp4_values(blocks: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """The [experts, out, in] values of `blocks` and `scales` (mxfp4_blocks' inverse)."""
    codes = torch.stack((blocks & 0x0F, blocks >> 4), dim=-1).flatten(-2).long()
    values = torch.where(codes & 8 != 0, -E2M1[codes & 7], E2M1[codes & 7])
    values = values * torch.pow(2.0, scales.float() - 127).unsqueeze(-1)
    return values.flatten(-2)


def save_mxfp4_experts(directory: Path) -> None:
    """Rewrites the saved gpt-oss in `directory` as OpenAI ships gpt-oss: each layer's
    experts as `{gate_up,down}_proj_{blocks,scales}` and a quantization_config of
    quant_method mxfp4 (transformers widens them as it loads them)."""
    from safetensors.torch import load_file, save_file

    path = directory / "model.safetensors"
    tensors = load_file(path)
    for name in [name for name in tensors if name.endswith(("experts.gate_up_proj",
                                                            "experts.down_proj"))]:
        # transformers' gpt-oss holds them [experts, in, out]; the checkpoint [experts, out, in].
        blocks, scales = mxfp4_blocks(tensors.pop(name).transpose(1, 2).float())
        tensors[f"{name}_blocks"], tensors[f"{name}_scales"] = blocks, scales
    save_file(tensors, path, metadata={"format": "pt"})
    config_path = directory / "config.json"
    config = json.loads(config_path.read_text())
    config["quantization_config"] = {
        "quant_method": "mxfp4",
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                   "model.embed_tokens", "lm_head"]}
    config_path.write_text(json.dumps(config, indent=2) + "\n")


def round_experts_to_mxfp4(model: torch.nn.Module) -> None:
    """Makes every expert weight of a gpt-oss the value its MXFP4 code holds, so that the
    checkpoint save_mxfp4_experts writes is the model."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith(("experts.gate_up_proj", "experts.down_proj")):
                out_major = parameter.transpose(1, 2)
                parameter.copy_(mxfp4_values(*mxfp4_blocks(out_major)).transpose(1, 2))


def build(family: str, directory: Path, labels: int = 0) -> None:
    """Saves `family`'s tiny model to `directory`: a causal LM, or with `labels` a sequence
    classifier of that many labels (a score head in place of the LM head: a reward model's,
    a reranker's)."""
    config_class, settings = FAMILIES[family]
    common = dict(COMMON)
    if family == "gpt2":  # GPT-2's config names its sizes differently
        for key in ("hidden_size", "intermediate_size", "num_hidden_layers",
                    "num_attention_heads", "max_position_embeddings"):
            common.pop(key)
    if labels:
        common["id2label"] = {i: f"class_{i}" for i in range(labels)}
    config = getattr(transformers, config_class)(**{**common, **settings})
    torch.manual_seed(SEED)
    auto = (transformers.AutoModelForSequenceClassification if labels
            else transformers.AutoModelForCausalLM)
    model = auto.from_config(config, dtype=torch.float32)
    model.eval()
    draw_constant_parameters(model)
    if family.endswith("-mxfp4"):
        round_experts_to_mxfp4(model)
    model.save_pretrained(directory)
    if family.endswith("-mxfp4"):
        save_mxfp4_experts(directory)
    if not labels:
        model.generation_config.save_pretrained(directory)
    train_tokenizer(directory)


def wrap_in_sentence_transformers(directory: Path, pooling: str) -> None:
    """Turns the causal LM saved in `directory` into a sentence-transformers embedding model
    there (modules.json: the transformer, its pooling, Normalize), as Qwen3-Embedding,
    gte-Qwen2 and e5-mistral are published (`pooling`: lasttoken, theirs, or mean)."""
    from sentence_transformers import SentenceTransformer, models

    transformer = models.Transformer(str(directory))
    pooled = models.Pooling(transformer.get_word_embedding_dimension(), pooling_mode=pooling)
    SentenceTransformer(modules=[transformer, pooled, models.Normalize()]).save(str(directory))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES),
                        help="only these families (repeatable; default all)")
    parser.add_argument("--labels", type=int, default=0,
                        help="sequence classifiers of this many labels, not causal LMs")
    parser.add_argument("--sentence-transformers", choices=["lasttoken", "mean"],
                        help="sentence-transformers embedding models pooling so")
    args = parser.parse_args()
    for family in args.family or FAMILIES:
        build(family, args.out / family, args.labels)
        if args.sentence_transformers:
            wrap_in_sentence_transformers(args.out / family, args.sentence_transformers)
        print(f"tiny_models: {family}", flush=True)


if __name__ == "__main__":
    main()
