"""The CUDA attention kernels, run on the CPU (no GPU needed).

A cuda artifact's attention.cu (the source NVRTC compiled) is built for the host against
llmc/testing/cuda_emulation.h and its prefill, decode and combine kernels run as the step
plan launches them, over a ragged batch of prefill chunks (with and without cached context,
longer than one tile) and decode rows, with shuffled block tables in one layer of the pool.
The result must match attention computed in float64 from the same bf16/f16 inputs. The
real exporters' Gemma-2 (the genai builder's local layer: a window of 16 keys, a softcap of 50)
and Mistral (a window of 20) check the windowed kernels: the blocks wholly before a
sequence's window are NaN, as blocks the engine gave back may hold anything, so a kernel
that reads one fails. The genai builder's llama-gqa with a head_sink per query head (gpt-oss's
attention sinks) checks the sinks' share of each softmax, in both paths, and optimum's BLOOM
its linear biases (ALiBi), slope times the key's distance from the query.
What this cannot show (speed, the tensor cores' own rounding, the driver) needs a GPU:
scripts/gpu-check.sh.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from llmc.testing.cuda_emulation import EmulatedKernels, from_storage, to_storage
from llmc.testing.fixtures import write_variant
from test_exporters import EXPORTS_DIR, with_group_query_attention_sinks

ROOT = Path(__file__).resolve().parents[2]
LLMC = ROOT / "build" / "bin" / "llmc"
CONFIG = re.compile(r"attention_d(\d+)_g(\d+)_kv(\d+)_bs(\d+)_(bf16|f16)_s0x([0-9a-f]+)"
                    r"(?:_w(\d+))?(?:_c0x([0-9a-f]+))?(_sinks)?(_alibi)?(?:_u)?_prefill")

# (query rows, context) per sequence: a prompt longer than a tile, decode rows, a chunk
# after cached context, a two-row chunk, and decode at the first and at a long position.
SEQUENCES = [(70, 70), (1, 45), (21, 90), (2, 2), (1, 1), (1, 300), (9, 40)]
# 40 decode rows and a prefill chunk: enough (sequence, KV head) pairs that the decode kernel
# cuts each context in fewer than its most splits, some of them past a short context.
MANY_DECODES = [(1, int(c)) for c in np.random.default_rng(7).integers(1, 300, 40)] + [(9, 40)]
NUM_LAYERS = 2

# Queries of N(0, 2^2) over keys and values of N(0, 1).
PLAIN_INPUTS = {"query": (0.0, 2.0), "key_mean": 0.0}
# Gemma-2's local layer (scale 1/4, softcap 50): scaled scores of about 50 +- 12, where the
# softcap bends them (to about 38 to 42) and the softmax still weighs many keys.
SOFTCAP_INPUTS = {"query": (12.5, 0.5), "key_mean": 1.0}

# (variant or real export, sizes, dtype, block size, layer, inputs): head dims 16, 32, 40
# (padded to the MMA's 48) and 20 (not whole 16-byte loads), query heads per KV head 4, 1, 3
# (a tile of 64 with a spare row) and 4 with one KV head, both storage types; these prefill
# on mma.sync. Head dim 160 takes the WMMA prefill tile, as head dims past 128 do.
CASES = {
    "gqa-bf16": ("gqa", {}, "bf16", 16, 1, PLAIN_INPUTS),
    "mha-f16": ("mha", {}, "f16", 8, 1, PLAIN_INPUTS),
    "g3-d40-bf16": ("gqa", {"num_heads": 6, "num_kv_heads": 2, "head_dim": 40}, "bf16", 16, 1,
                    PLAIN_INPUTS),
    "mqa-d20-f16": ("mqa", {"head_dim": 20}, "f16", 16, 1, PLAIN_INPUTS),
    "mqa-d160-bf16": ("mqa", {"head_dim": 160}, "bf16", 16, 1, PLAIN_INPUTS),
    "gemma2-local-bf16": (EXPORTS_DIR / "genai-fp32/gemma2/model.onnx", {}, "bf16", 16, 0,
                          SOFTCAP_INPUTS),
    "mistral-window-f16": (EXPORTS_DIR / "optimum/mistral-window/model.onnx", {}, "f16", 8, 1,
                           PLAIN_INPUTS),
    # Attention sinks (gpt-oss's): the genai builder's llama-gqa with a head_sink per layer.
    "gqa-sinks-bf16": ("head_sink", {}, "bf16", 16, 1, PLAIN_INPUTS),
    # ALiBi: optimum's BLOOM, 4 heads of 16.
    "bloom-alibi-f16": (EXPORTS_DIR / "optimum/bloom/model.onnx", {}, "f16", 16, 1, PLAIN_INPUTS),
}


def bloom_slopes(heads: int) -> np.ndarray:
    """BLOOM's ALiBi slopes for a power-of-two head count (transformers' build_alibi_tensor):
    2^(-8 (h + 1) / heads)."""
    return 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)


def layer_sinks(onnx_path: Path, layer: int) -> np.ndarray:
    """The head_sink logits of the file's `layer`-th GroupQueryAttention."""
    model = onnx.load(str(onnx_path))
    node = [n for n in model.graph.node if n.op_type == "GroupQueryAttention"][layer]
    initializer = next(i for i in model.graph.initializer if i.name == node.input[11])
    return numpy_helper.to_array(initializer, base_dir=str(onnx_path.parent)).astype(np.float64)


@pytest.fixture(scope="module", params=list(CASES))
def compiled(request, tmp_path_factory):
    """The case's kernels, its launches of layer `layer`, the case itself and the layer's
    attention sinks (None without)."""
    model, sizes, dtype, block_size, layer, inputs = CASES[request.param]
    work = tmp_path_factory.mktemp(request.param)
    sinks = None
    if model == "head_sink":
        model = with_group_query_attention_sinks(EXPORTS_DIR / "genai-fp32" / "llama-gqa",
                                                 work / "export", "head_sink")
        sinks = layer_sinks(model, layer)
    elif isinstance(model, str):
        model = write_variant(model, work / "onnx", num_layers=NUM_LAYERS, **sizes)
    out = work / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(model), "-o", str(out), "--quiet", "--target", "cuda:sm_80",
                    "--dtype", dtype, f"--block-size={block_size}"], check=True, timeout=600)
    plan = json.loads((out / "step_plan.json").read_text())
    launches = {}  # the layer's prefill, decode and combine
    for entry in plan["steps"]:
        kind = entry.get("kernel", "").rsplit("_", 1)[-1]
        if entry.get("module") == "attention" and (
                kind == "combine" or entry["args"][-1] == {"i32": layer}):
            launches.setdefault(kind, entry)
    # The combine of the layer's config: the one launched right after its decode.
    config = launches["decode"]["kernel"].removesuffix("_decode")
    launches["combine"] = next(e for e in plan["steps"] if e.get("kernel") == config + "_combine")
    source = (out / "attention.cu").read_text()
    return EmulatedKernels(source, work), launches, layer, inputs, sinks


def grid_of(entry: dict, symbols: dict[str, int]) -> tuple[int, int, int]:
    return tuple(symbols[d] if isinstance(d, str) else d for d in entry["grid"])


def first_visible_key(position: int, window: int) -> int:
    """llm.paged_attention's window: the query at `position` sees the keys above
    position - window."""
    return max(0, position - window + 1) if window else 0


def reference(query, pool, tables, sequences, heads, group, block_size, scale, layer, window,
              softcap, sinks, slopes):
    """float64 causal attention over the paged cache: [tokens, heads, head_dim]. A head's
    sink (if any) is one more logit in its softmax, with no value; its ALiBi slope (if any)
    times the key's position less the query's joins each logit."""
    rows = []
    for seq, (q_len, context) in enumerate(sequences):
        slots = np.arange(context)
        blocks = tables[seq][slots // block_size]
        keys = pool[layer, blocks, 0, :, slots % block_size]    # [context, kv heads, D]
        values = pool[layer, blocks, 1, :, slots % block_size]
        for i in range(q_len):
            visible = context - q_len + i + 1
            first = first_visible_key(visible - 1, window)
            out = np.empty((heads, query.shape[-1]))
            for head in range(heads):
                k = keys[first:visible, head // group]
                v = values[first:visible, head // group]
                logits = k @ query[len(rows), head] * scale
                if softcap:
                    logits = softcap * np.tanh(logits / softcap)
                if slopes is not None:
                    logits = logits + slopes[head] * (np.arange(first, visible) - (visible - 1))
                sink = -np.inf if sinks is None else sinks[head]
                top = max(logits.max(), sink)
                weights = np.exp(logits - top)
                out[head] = weights @ v / (weights.sum() + np.exp(sink - top))
            rows.append(out)
    return np.stack(rows)


@pytest.mark.parametrize("sequences", [SEQUENCES, MANY_DECODES], ids=["mixed", "many-decodes"])
def test_attention_matches_float64_reference(compiled, sequences):
    kernels, launches, layer, inputs, sinks = compiled
    match = CONFIG.fullmatch(launches["prefill"]["kernel"])
    assert bool(match.group(9)) == (sinks is not None)
    slopes = bloom_slopes(int(match.group(2)) * int(match.group(3))) if match.group(10) else None
    head_dim, group, kv_heads, block_size = (int(match.group(i)) for i in range(1, 5))
    dtype = match.group(5)
    as_float = lambda hex_bits: float(np.frombuffer(bytes.fromhex(hex_bits.zfill(8)), ">f4")[0])
    scale = as_float(match.group(6))
    window = int(match.group(7) or 0)
    softcap = as_float(match.group(8)) if match.group(8) else 0.0
    heads = group * kv_heads
    rng = np.random.default_rng(0)

    tokens = sum(q for q, _ in sequences)
    cu_seqlens = np.cumsum([0] + [q for q, _ in sequences]).astype(np.int32)
    context_lens = np.array([c for _, c in sequences], np.int32)
    blocks_per_seq = [-(-c // block_size) for _, c in sequences]
    width = max(blocks_per_seq) + 1
    num_blocks = sum(blocks_per_seq) + 3
    order = rng.permutation(num_blocks).astype(np.int32)
    tables = np.full((len(sequences), width), -1, np.int32)
    used = 0
    for seq, count in enumerate(blocks_per_seq):
        tables[seq, :count] = order[used:used + count]
        used += count

    pool = rng.standard_normal((NUM_LAYERS, num_blocks + 1, 2, kv_heads, block_size, head_dim))
    pool[:, :, 0] += inputs["key_mean"]
    pool[:, num_blocks] = np.nan
    pool_bits = to_storage(pool, dtype)
    # The blocks before a sequence's window may have been given back: they point at the NaN
    # block (the reference reads only the window, so it never sees them).
    for seq, (q_len, context) in enumerate(sequences):
        released = first_visible_key(context - q_len, window) // block_size
        tables[seq, :released] = num_blocks
    num_blocks += 1
    # The query is a strided view: its heads are the first columns of a fused q/k/v row.
    q_stride = (heads + 2 * kv_heads) * head_dim
    query_mean, query_spread = inputs["query"]
    query_bits = to_storage(query_mean + rng.standard_normal((tokens, q_stride)) * query_spread,
                            dtype)
    out_stride = heads * head_dim
    out = np.full((tokens, out_stride), 0x7FFF, np.uint16)  # NaN: rows no kernel wrote stay NaN
    splits = launches["decode"]["grid"][2]
    # NaN: a partial sum the combine reads but no decode block wrote shows in the result.
    partials = np.full((len(sequences), heads, splits, head_dim + 2), np.nan, np.float32)

    symbols = {"tokens": tokens, "seqs": len(sequences),
               "prefill_tokens": tokens if max(q for q, _ in sequences) > 1 else 0}
    block = tuple(launches["prefill"]["block"])
    common = (tables, width, context_lens, cu_seqlens, len(sequences), num_blocks, layer)
    kernels.launch(launches["prefill"]["kernel"], grid_of(launches["prefill"], symbols), block,
                   query_bits, q_stride, pool_bits, out, out_stride, *common)
    decode_rows = cu_seqlens[:-1][np.diff(cu_seqlens) == 1]
    assert np.isnan(from_storage(out[decode_rows], dtype)).all(), "prefill wrote a decode row"
    kernels.launch(launches["decode"]["kernel"], grid_of(launches["decode"], symbols), block,
                   query_bits, q_stride, pool_bits, partials, *common)
    kernels.launch(launches["combine"]["kernel"], grid_of(launches["combine"], symbols), block,
                   partials, out, out_stride, cu_seqlens, context_lens, len(sequences), layer)

    query = from_storage(query_bits[:, :heads * head_dim], dtype).reshape(tokens, heads, head_dim)
    expected = reference(query, from_storage(pool_bits, dtype), tables, sequences, heads, group,
                         block_size, scale, layer, window, softcap, sinks, slopes)
    got = from_storage(out, dtype).reshape(tokens, heads, head_dim)
    assert not np.isnan(got).any(), "rows no kernel wrote"
    # Storage rounding of the output and of the softmax weights P V multiplies by.
    tolerance = 2e-2 if dtype == "bf16" else 4e-3
    error = np.abs(got - expected)
    worst = np.unravel_index(error.argmax(), error.shape)
    assert error.max() <= tolerance, f"error {error.max():.4g} at (row, head, d) {worst}"


@pytest.fixture(scope="module")
def argmax_kernels(tmp_path_factory):
    """The NVRTC source of one artifact: every one carries the greedy argmax kernel."""
    work = tmp_path_factory.mktemp("argmax")
    model = write_variant("gqa", work / "onnx", num_layers=1)
    out = work / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(model), "-o", str(out), "--quiet", "--target",
                    "cuda:sm_80"], check=True, timeout=600)
    return EmulatedKernels((out / "attention.cu").read_text(), work)


def host_argmax(row: np.ndarray) -> int:
    """runtime/core/Argmax.h's answer: a scan that takes a value only if it is larger."""
    best, index = row[0], 0
    for i, value in enumerate(row):
        if value > best:
            best, index = value, i
    return index


@pytest.mark.parametrize("threads", [1024, 32])
def test_argmax_rows_is_the_host_argmax(argmax_kernels, threads):
    """One block a row, as CudaExecutor::stepGreedy launches it: each row's token is the
    host's argmax, ties, NaNs and infinities included."""
    vocab = 9000  # not a multiple of the block, nor of its 8 loads a thread
    rng = np.random.default_rng(11)
    rows = [rng.standard_normal(vocab).astype(np.float32) for _ in range(6)]
    tie = np.zeros(vocab, np.float32)
    tie[[300, 700, 999, 3372, 8999]] = 5.0  # the lowest of a tie: other warps, other loads
    nan_first = rng.standard_normal(vocab).astype(np.float32)
    nan_first[0] = np.nan  # a row that starts with NaN: index 0
    nans = rng.standard_normal(vocab).astype(np.float32)
    nans[nans > 1.0] = np.nan  # NaNs elsewhere are never the largest
    infinities = np.full(vocab, -np.inf, np.float32)  # all -inf: index 0
    positive_inf = rng.standard_normal(vocab).astype(np.float32)
    positive_inf[[513, 514]] = np.inf
    last = np.full(vocab, -1.0, np.float32)
    last[-1] = 0.0
    rows += [tie, nan_first, nans, infinities, positive_inf, last,
             np.full(vocab, np.nan, np.float32)]
    logits = np.stack(rows)
    tokens = np.full(len(rows), -7, np.int32)  # poisoned: every row must be written
    argmax_kernels.launch("llmc_argmax_rows", (len(rows), 1, 1), (threads, 1, 1), logits, vocab,
                          tokens)
    assert tokens.tolist() == [host_argmax(row) for row in logits]
