"""Paged attention's products on AMX tiles (`--bf16-activations` where the host has AMX-BF16).

With bf16 products on AMX tiles, attention multiplies on them too: the query rows (the
(position, query head) pairs of a GQA group) rounded to bf16 times a block's keys, then the
softmax weights rounded to bf16 times its values, in TDPBF16PS; the softmax and the
accumulators stay f32. A decode row is a tile of one position, whose arithmetic is the same
as in a prefill's tile, and its keys are cut into the vector kernel's ranges. Checked on real
exports whose head_dim takes the tiles (optimum's Mistral, GQA with head_dim 32, and with a
20-token sliding window; the default model, a GQA group of 3 and head_dim 64), at 250 tokens
(the exports' longest: four key ranges of 4 blocks, passes of several tiles), with an f32
and a bf16 KV cache:

  * logits within bf16's rounding of onnxruntime's fp32 on the same file, and differing from
    AVX512_BF16's products (whose attention stays f32) by more than f32's rounding, so the
    tiles did the work;
  * a decode row's logits equal, bit for bit, the same row's as the last of a prefill, and
    as the last of a prefill chunk that continues a cached prefix;
  * a long sequence's logits alone and beside a short one are bit-identical.
"""
from __future__ import annotations

import numpy as np
import pytest

from llmc.runtime import Model
from llmc.testing.ort_reference import OrtDecoder
from llmc.testing.paged import PagedRunner
from llmc.testing.server import default_model_dir
from test_cpu_bf16_weights import needs_amx_bf16
from test_cpu_parity import DEFAULT_MODEL
from test_exporters import EXPORTS_DIR
from test_quantized_cpu import compile_model

pytestmark = needs_amx_bf16

# bf16 weights, activations, queries and softmax weights against onnxruntime's fp32.
MAX_REL_ERROR = 0.05
# What AVX512_BF16's products change against the tiles' in the matmuls alone.
MATMUL_ONLY_ERROR = 1e-5
DECODE_STEPS = 4
PROMPT_LENGTH = 250
NUM_KV_BLOCKS = 128
CASES = {
    "optimum/mistral": (EXPORTS_DIR / "optimum/mistral/model.onnx", []),
    "optimum/mistral-window": (EXPORTS_DIR / "optimum/mistral-window/model.onnx", []),
    "optimum/mistral bf16 cache": (EXPORTS_DIR / "optimum/mistral/model.onnx",
                                   ["--kv-cache-dtype", "bf16"]),
    # A GQA group of 3 (a tile's 16th row unused), head_dim 64.
    "default-smollm2-135m bf16 cache": (DEFAULT_MODEL, ["--kv-cache-dtype", "bf16"]),
}
BF16_PRODUCTS = ["--dtype", "bf16", "--bf16-activations"]


@pytest.fixture(scope="module", params=list(CASES))
def case(request, tmp_path_factory):
    onnx_path, flags = CASES[request.param]
    if onnx_path == DEFAULT_MODEL:
        default_model_dir()  # converted on first use
    directory = tmp_path_factory.mktemp("tiles")
    tiles = compile_model(onnx_path, directory / "tiles.llmc", *BF16_PRODUCTS, *flags)
    vectors = compile_model(onnx_path, directory / "vectors.llmc", *BF16_PRODUCTS,
                            "--bf16-products=avx512-bf16", *flags)
    model = Model(tiles, num_kv_blocks=NUM_KV_BLOCKS)
    rng = np.random.default_rng(2024)
    prompt = rng.integers(3, model.vocab_size, size=PROMPT_LENGTH).tolist()
    yield onnx_path, model, vectors, prompt
    model.close()


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    return float(np.abs(ours - reference).max() / np.abs(reference).max())


def steps_of(model: Model, prompt: list[int], tokens: list[int]) -> list[np.ndarray]:
    runner = PagedRunner(model)
    logits = [runner.prefill([prompt])]
    for token in tokens:
        logits.append(runner.decode([token]))
    runner.release()
    return logits


def test_tile_attention_matches_onnxruntime(case):
    onnx_path, model, vectors, prompt = case
    decoder = OrtDecoder(onnx_path)
    logits, generation = decoder.prefill([prompt])
    reference = [logits[np.arange(1), generation.prompts.last_positions()]]
    tokens = []
    for _ in range(DECODE_STEPS):
        tokens.append(int(reference[-1].argmax(axis=-1)[0]))
        reference.append(decoder.decode(generation, [tokens[-1]]))
    ours = steps_of(model, prompt, tokens)
    errors = [relative_error(mine, theirs) for mine, theirs in zip(ours, reference)]
    assert max(errors) < MAX_REL_ERROR, f"relative errors per step {errors}"
    vector_model = Model(vectors, num_kv_blocks=NUM_KV_BLOCKS)
    try:
        vector_steps = steps_of(vector_model, prompt, tokens)
    finally:
        vector_model.close()
    changes = [relative_error(mine, theirs) for mine, theirs in zip(ours, vector_steps)]
    assert min(changes) > MATMUL_ONLY_ERROR, f"relative changes per step {changes}"


def test_a_decode_row_equals_the_same_row_of_a_prefill(case):
    _, model, _, prompt = case
    runner = PagedRunner(model)
    runner.prefill([prompt[:-1]])
    decoded = runner.decode([prompt[-1]])
    prefilled = runner.prefill([prompt])
    runner.prefill([prompt[:100]])
    continued = runner._step([prompt[100:]])
    runner.release()
    assert np.array_equal(decoded, prefilled), (
        f"max |decode - prefill| {np.abs(decoded - prefilled).max():.3g}")
    assert np.array_equal(continued, prefilled), (
        f"max |chunk - prefill| {np.abs(continued - prefilled).max():.3g}")


def test_a_long_sequence_does_not_depend_on_its_batch(case):
    _, model, _, prompt = case
    short = prompt[:5]
    _, together = PagedRunner(model).greedy([prompt, short], DECODE_STEPS)
    _, alone = PagedRunner(model).greedy([prompt], DECODE_STEPS)
    for step, (batched, mine) in enumerate(zip(together, alone)):
        assert np.array_equal(batched[0], mine[0]), f"step {step}"
