"""The CUDA mixture of experts (attention/Moe.cuh), run on the CPU (no GPU needed).

A cuda artifact of the real exporters' Qwen3-MoE (optimum's dense form: no biases, silu, the
top 2 of 4 renormalised) and gpt-oss (the genai builder's MoE op: biases, the clamped swiglu)
is built for the host against llmc/testing/cuda_emulation.h, and one layer's route, plan,
experts, down and sum launches run as step_plan.json lists them, over the weights.bin the
artifact holds and a workspace that starts as NaN (ints -1), the router logits f32 as the
router's product leaves them. The result must match the layer computed in float64 from the
same inputs and bf16/f16 weights: each row's softmax, its top 2 (equal logits: the lower
expert first), the experts' products and the weighted sum.
Rows past the step's are left untouched, and a row's result does not depend on the batch.
What this cannot show (speed, the tensor cores' own rounding, the driver) needs a GPU:
scripts/gpu-check.sh runs test/gpu/test_cuda_exporters.py, which compares these models with
onnxruntime.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from llmc.testing.cuda_emulation import EmulatedKernels, from_storage, to_storage
from test_exporters import EXPORTS_DIR

ROOT = Path(__file__).resolve().parents[2]
LLMC = ROOT / "build" / "bin" / "llmc"
KERNELS = ["llmc_moe_route", "llmc_moe_plan", "llmc_moe_experts", "llmc_moe_down",
           "llmc_moe_sum"]

# (export, dtype, what its MoE op holds: normalize the top k, swiglu limit and alpha or None;
# the inputs' standard deviation). gpt-oss's inputs are wide enough that its experts' gate and
# up products often pass the swiglu's limit of 7, so that the clamps count.
CASES = {
    "qwen3-moe-bf16": ("optimum/qwen3-moe", "bf16", True, None, 1.0),
    "gpt-oss-f16": ("genai-fp32/gpt-oss", "f16", True, (7.0, 1.702), 8.0),
}
# Rows of the step: 37 rows of 2 picks over 4 experts give each expert more than one tile of
# 16 picks, the last one partial.
ROWS = 37


@pytest.fixture(scope="module", params=list(CASES))
def compiled(request, tmp_path_factory):
    """(kernels, the first layer's MoE launches, the artifact's weights.bin, workspace bytes,
    the case)."""
    export, dtype, normalize, swiglu, x_scale = CASES[request.param]
    work = tmp_path_factory.mktemp(request.param)
    out = work / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(EXPORTS_DIR / export / "model.onnx"), "-o",
                    str(out), "--quiet", "--target", "cuda:sm_80", "--dtype", dtype],
                   check=True, timeout=600)
    plan = json.loads((out / "step_plan.json").read_text())
    launches = [entry for entry in plan["steps"] if entry.get("kernel") in KERNELS][:5]
    assert [entry["kernel"] for entry in launches] == KERNELS
    manifest = json.loads((out / "manifest.json").read_text())
    tensors = {t["offset"]: t for t in manifest["weights"]["tensors"]}
    weights = np.fromfile(out / "weights.bin", np.uint8)
    kernels = EmulatedKernels((out / "attention.cu").read_text(), work)
    return (kernels, launches, weights, tensors, manifest["step"]["workspace_bytes"],
            (dtype, normalize, swiglu, x_scale))


def resolve(dim, symbols: dict[str, int]) -> int:
    """A plan dimension: an integer, a symbol, or ceil(symbol * mul / div) (+ add)."""
    if isinstance(dim, int):
        return dim
    if isinstance(dim, str):
        return symbols[dim]
    symbol, mul, div, *add = dim
    return -(-symbols[symbol] * mul // div) + sum(add)


def arg(entry: dict, index: int):
    (kind, value), = entry["args"][index].items()
    return kind, value


def run(kernels, launches, buffers: dict[str, np.ndarray], rows: int) -> None:
    """The launches, as the runtime makes them for a step of `rows` tokens."""
    symbols = {"tokens": rows}
    for entry in launches:
        args = []
        for index in range(len(entry["args"])):
            kind, value = arg(entry, index)
            if kind == "ptr":
                args.append(buffers[value["buffer"]][value["offset"]:])
            elif kind == "i64":  # a null pointer: an absent bias
                assert value == 0
                args.append(None)
            elif kind == "i32":
                args.append(resolve(value, symbols))
            else:
                args.append(value)
        grid = tuple(resolve(d, symbols) for d in entry["grid"])
        kernels.launch(entry["kernel"], grid, tuple(entry["block"]), *args)


def stored(weights: np.ndarray, tensors: dict, entry: dict, index: int, dtype: str):
    """The weight the launch's argument `index` points to, as float64, or None (null)."""
    kind, value = arg(entry, index)
    if kind == "i64":
        return None
    tensor = tensors[value["offset"]]
    count = int(np.prod(tensor["shape"]))
    bits = weights[value["offset"]:value["offset"] + 2 * count].view(np.uint16)
    return from_storage(bits, dtype).reshape(tensor["shape"])


def reference(x, logits, gate, up, down, biases, top_k, normalize, swiglu):
    """llm.moe in float64 (dialects/llm/LlmOps.td)."""
    gate_b, up_b, down_b = biases
    out = np.zeros((x.shape[0], down.shape[1]))
    for row in range(x.shape[0]):
        p = np.exp(logits[row] - logits[row].max())
        p /= p.sum()
        chosen = sorted(range(len(p)), key=lambda e: (-logits[row][e], e))[:top_k]
        w = p[chosen] / (p[chosen].sum() if normalize else 1.0)
        for e, weight in zip(chosen, w):
            g = gate[e] @ x[row] + (gate_b[e] if gate_b is not None else 0)
            u = up[e] @ x[row] + (up_b[e] if up_b is not None else 0)
            if swiglu:
                limit, alpha = swiglu
                g = np.minimum(g, limit)
                u = np.clip(u, -limit, limit)
                act = g / (1 + np.exp(-alpha * g)) * (u + 1)
            else:
                act = g / (1 + np.exp(-g)) * u
            y = down[e] @ act + (down_b[e] if down_b is not None else 0)
            out[row] += weight * y
    return out


def inputs(compiled, rows: int, seed: int):
    """A NaN workspace with `rows` rows of x and router logits in place; (buffers, x, logits,
    the output's place)."""
    _, launches, weights, _, workspace_bytes, (dtype, _, _, x_scale) = compiled
    route, _, experts, _, moe_sum = launches
    workspace = np.full(workspace_bytes, 0xFF, np.uint8)
    rng = np.random.default_rng(seed)
    hidden, num_experts = arg(experts, 10)[1], arg(route, 3)[1]
    # The same first rows at any `rows`.
    x = to_storage(rng.normal(scale=x_scale, size=(ROWS, hidden)), dtype)[:rows]
    logits = rng.normal(size=(ROWS, num_experts)).astype(np.float32)  # f32, as the router writes
    logits[3] = logits[3, 0]  # all equal: experts 0 and 1
    logits[4, 2:] = logits[4, 1]  # three equal after the best
    logits = logits[:rows]
    for data, entry, index, stride_index in ((x, experts, 0, 1), (logits, route, 0, 1)):
        offset, stride = arg(entry, index)[1]["offset"], arg(entry, stride_index)[1]
        size = data.itemsize
        for r in range(rows):
            at = offset + size * r * stride
            workspace[at:at + size * data.shape[1]] = data[r].view(np.uint8)
    out_at, out_stride = arg(moe_sum, 4)[1]["offset"], arg(moe_sum, 5)[1]
    return {"workspace": workspace, "weights": weights}, x, logits, (out_at, out_stride, hidden)


def output(workspace: np.ndarray, place, rows: int, dtype: str) -> np.ndarray:
    at, stride, hidden = place
    bits = workspace[at:at + 2 * rows * stride].view(np.uint16).reshape(rows, stride)
    return from_storage(bits[:, :hidden].copy(), dtype)


def test_moe_matches_float64(compiled):
    kernels, launches, weights, tensors, _, (dtype, normalize, swiglu, _) = compiled
    route, _, experts, down, _ = launches
    assert arg(route, 5)[1] == int(normalize)
    clamped, limit, alpha = (arg(experts, i)[1] for i in (12, 13, 14))
    assert clamped == (swiglu is not None)
    if swiglu:
        np.testing.assert_allclose((limit, alpha), swiglu, rtol=1e-6)
    buffers, x, logits, place = inputs(compiled, ROWS, seed=1)
    run(kernels, launches, buffers, ROWS)

    gate, up, down_w = (stored(weights, tensors, experts, 2, dtype),
                        stored(weights, tensors, experts, 3, dtype),
                        stored(weights, tensors, down, 1, dtype))
    biases = (stored(weights, tensors, experts, 4, dtype),
              stored(weights, tensors, experts, 5, dtype), stored(weights, tensors, down, 2, dtype))
    assert (biases[0] is not None) == (swiglu is not None), "gpt-oss's experts have biases"
    expected = reference(from_storage(x, dtype), logits.astype(np.float64), gate, up, down_w,
                         biases, arg(route, 4)[1], normalize, swiglu)
    got = output(buffers["workspace"], place, ROWS + 1, dtype)
    assert not np.isnan(got[:ROWS]).any(), "a row the kernels did not write"
    assert np.isnan(got[ROWS]).all(), "a write past the step's rows"
    # The picks' activations are rounded to the storage type before down, as is the result.
    tolerance = {"bf16": 2 ** -6, "f16": 2 ** -9}[dtype] * np.abs(expected).max()
    np.testing.assert_allclose(got[:ROWS], expected, rtol=0, atol=tolerance)


def test_a_row_is_the_same_in_any_batch(compiled):
    """A row's picks are computed with other rows' in tiles, but each of its sums alone."""
    kernels, launches, _, _, _, (dtype, *_) = compiled
    results = []
    for rows in (1, ROWS):
        buffers, _, _, place = inputs(compiled, rows, seed=2)
        run(kernels, launches, buffers, rows)
        results.append(output(buffers["workspace"], place, 1, dtype))
    np.testing.assert_array_equal(results[0], results[1])


def scored_routing_reference(logits, bias, groups: int, kept: int, top_k: int, epsilon: float,
                             scale: float, sigmoid: bool = True, minimum: float = 0.0,
                             hidden_choice: float = 0.0):
    """DeepSeek-V3's routing (llm.moe with sigmoid_scores; the dropped groups' experts choose
    `hidden_choice`: 0, or -inf with exclude_hidden_groups) or ERNIE 4.5's (softmax scores,
    one group, the sum floored at `minimum`) in float64: each row's chosen experts and their
    weights."""
    if sigmoid:
        scores = 1 / (1 + np.exp(-logits))
    else:
        exps = np.exp(logits - logits.max(axis=1, keepdims=True))
        scores = exps / exps.sum(axis=1, keepdims=True)
    choices = scores + bias
    experts = logits.shape[1]
    size = experts // groups
    chosen, weights = [], []
    for row in range(len(logits)):
        c = choices[row]
        group_scores = [np.sort(c[g * size:(g + 1) * size])[-2:].sum() for g in range(groups)]
        best = sorted(range(groups), key=lambda g: (-group_scores[g], g))[:kept]
        key = [c[e] if e // size in best else hidden_choice for e in range(experts)]
        picks = sorted(range(experts), key=lambda e: (-key[e], e))[:top_k]
        w = scores[row, picks]
        chosen.append(picks)
        weights.append(w / max(w.sum() + epsilon, minimum) * scale)
    return np.array(chosen), np.array(weights)


@pytest.mark.parametrize("exclude_hidden_groups", [False, True])
def test_scored_routing_matches_float64(compiled, exclude_hidden_groups):
    """The route kernel with DeepSeek-V3's routing: 16 experts in 4 groups, the best 2 groups
    kept, the top 4 experts. The biases are mostly below -0.5, so that many choices are
    negative: in such rows an expert of a dropped group (its choice 0) ranks above them, as
    masked_fill(0) lets it in transformers 4; with exclude_hidden_groups (transformers 5's
    masked_fill(-inf)) no row chooses one."""
    kernels = compiled[0]
    rows, experts, groups, kept, top_k = 37, 16, 4, 2, 4
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(rows, experts)).astype(np.float32)
    bias = (rng.normal(scale=0.3, size=experts) - 0.6).astype(np.float32)
    chosen = np.full((rows, top_k), -1, np.int32)
    weights = np.full((rows, top_k), np.nan, np.float32)
    kernels.launch("llmc_moe_route", (1, 1, 1), (64, 1, 1), logits, experts, rows, experts,
                   top_k, 1, 1, bias, groups, kept, int(exclude_hidden_groups), 0, 0.0, 1e-20, 0.0, 2.5,
                   chosen, weights)
    expected_chosen, expected_weights = scored_routing_reference(
        logits.astype(np.float64), bias.astype(np.float64), groups, kept, top_k, 1e-20, 2.5,
        hidden_choice=-np.inf if exclude_hidden_groups else 0.0)
    chooses_dropped = [len(set(row // (experts // groups))) > kept for row in expected_chosen]
    assert any(chooses_dropped) != exclude_hidden_groups, \
        "rows choose experts of dropped groups exactly when they choose 0"
    np.testing.assert_array_equal(chosen, expected_chosen)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-5)


def test_softmax_selection_bias_matches_float64(compiled):
    """The route kernel with ERNIE 4.5's routing: the top 2 of 8 experts by the softmax plus
    a bias, weighted by the softmax over the chosen scores' sum floored at 1e-3. The bias
    picks experts 0 to 2 over the others by 0.5 to 1; in every other row their logits are
    lowered by 12, so that the chosen scores sum to less than the floor (their weights then
    sum to less than 1), while in the rows between the floor changes nothing."""
    kernels = compiled[0]
    rows, experts, top_k, minimum = 37, 8, 2, 1e-3
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(rows, experts)).astype(np.float32)
    logits[1::2, :3] -= 12.0
    bias = np.array([1.0, 0.75, 0.5, 0, 0, 0, 0, 0], np.float32)
    chosen = np.full((rows, top_k), -1, np.int32)
    weights = np.full((rows, top_k), np.nan, np.float32)
    kernels.launch("llmc_moe_route", (1, 1, 1), (64, 1, 1), logits, experts, rows, experts,
                   top_k, 1, 0, bias, 0, 0, 0, 0, 0.0, 0.0, minimum, 1.0, chosen, weights)
    expected_chosen, expected_weights = scored_routing_reference(
        logits.astype(np.float64), bias.astype(np.float64), 1, 1, top_k, 0.0, 1.0,
        sigmoid=False, minimum=minimum)
    floored = expected_weights.sum(axis=1) < 1 - 1e-6
    assert 0 < floored.sum() < rows, "the floor should change some rows and not others"
    np.testing.assert_array_equal(chosen, expected_chosen)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-5)


def sparse_mixer_reference(logits, threshold: float):
    """PhiMoE's sparsemixer (transformers' eval path) in float64: each row's two experts, the
    largest logit then the largest of the others, each weighted by the softmax at it over the
    experts within `threshold` of it ((m - r) / max(|r|, m)), the first excluded from the
    second's."""
    chosen, weights = [], []
    for r in logits:
        picks, slot_weights = [], []
        masked = r.copy()
        for _ in range(2):
            best = int(np.argmax(masked))
            m = masked[best]
            with np.errstate(divide="ignore", invalid="ignore"):
                hidden = (m - r) / np.maximum(np.abs(r), m) > threshold
            visible = np.where(hidden | np.isneginf(masked), -np.inf, masked)
            slot_weights.append(1.0 / np.exp(visible - m).sum())
            picks.append(best)
            masked = masked.copy()
            masked[best] = -np.inf
        chosen.append(picks)
        weights.append(slot_weights)
    return np.array(chosen), np.array(weights)


def test_sparse_mixer_matches_float64(compiled):
    """The route kernel with PhiMoE's sparsemixer: 8 experts, threshold 0.02 (2 x jitter 0.01).
    Every other row has its logits within 1% of each other, so that each slot's softmax sees
    several experts; in the others it sees its expert alone (weight 1)."""
    kernels = compiled[0]
    rows, experts, top_k, threshold = 37, 8, 2, 0.02
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(rows, experts)).astype(np.float32)
    logits[::2] = (2.0 + rng.normal(scale=0.01, size=(len(logits[::2]), experts))).astype(np.float32)
    chosen = np.full((rows, top_k), -1, np.int32)
    weights = np.full((rows, top_k), np.nan, np.float32)
    kernels.launch("llmc_moe_route", (1, 1, 1), (64, 1, 1), logits, experts, rows, experts,
                   top_k, 0, 0, None, 0, 0, 0, 1, threshold, 0.0, 0.0, 1.0, chosen, weights)
    expected_chosen, expected_weights = sparse_mixer_reference(logits.astype(np.float64),
                                                               threshold)
    shared = (expected_weights < 1 - 1e-6).any(axis=1)
    assert 0 < shared.sum() < rows, "some rows' slots should see several experts, some one"
    np.testing.assert_array_equal(chosen, expected_chosen)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-5)
