"""CPU attention over long contexts, where a decode row's keys are split.

A decode row's visible keys are cut into up to four ranges of whole blocks (at least 64 keys
each), one task each; a combine kernel folds their partial softmax states left to right. A
prefill row folds the same ranges in one task. Checked on the default model (a 700-token
prompt: four ranges of 11 blocks) and on real exports at their longest positions (250 tokens:
four ranges of 4 blocks; Gemma 2's sliding window keeps one):

  * prefill and decode logits within 1e-4 of onnxruntime's on the same file;
  * a decode row's logits equal, bit for bit, those of the same row computed as the last row
    of a prefill (split into tasks and folded by the combine kernel vs folded in one task);
  * a long sequence's logits alone and beside a short one are bit-identical.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llmc.runtime import Model
from llmc.testing.ort_reference import OrtDecoder
from llmc.testing.paged import PagedRunner
from llmc.testing.server import default_model_dir
from test_cpu_parity import DEFAULT_MODEL
from test_exporters import EXPORTS_DIR
from test_quantized_cpu import compile_model

MAX_REL_ERROR = 1e-4
DECODE_STEPS = 4
# (ONNX file, prompt length): the real exports hold 256 positions.
CASES = {
    "default-smollm2-135m": (DEFAULT_MODEL, 700),
    "optimum/llama-gqa": (EXPORTS_DIR / "optimum/llama-gqa/model.onnx", 250),
    "optimum/gemma2": (EXPORTS_DIR / "optimum/gemma2/model.onnx", 250),
}
NUM_KV_BLOCKS = 128


@pytest.fixture(scope="module", params=list(CASES))
def case(request, tmp_path_factory):
    onnx_path, length = CASES[request.param]
    if onnx_path == DEFAULT_MODEL:
        default_model_dir()  # converted on first use
    artifact = compile_model(onnx_path, tmp_path_factory.mktemp("long") / "model.llmc")
    model = Model(artifact, num_kv_blocks=NUM_KV_BLOCKS)
    rng = np.random.default_rng(2024)
    prompt = rng.integers(3, model.vocab_size, size=length).tolist()
    yield onnx_path, model, prompt
    model.close()


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    return float(np.abs(ours - reference).max() / np.abs(reference).max())


def test_long_context_matches_onnxruntime(case):
    onnx_path, model, prompt = case
    decoder = OrtDecoder(onnx_path)
    logits, generation = decoder.prefill([prompt])
    reference = [logits[np.arange(1), generation.prompts.last_positions()]]
    runner = PagedRunner(model)
    ours = [runner.prefill([prompt])]
    for _ in range(DECODE_STEPS):
        token = reference[-1].argmax(axis=-1)
        reference.append(decoder.decode(generation, token))
        ours.append(runner.decode(token))
    runner.release()
    errors = [relative_error(mine, theirs) for mine, theirs in zip(ours, reference)]
    assert max(errors) < MAX_REL_ERROR, f"relative errors per step {errors}"


def test_a_decode_row_equals_the_same_row_of_a_prefill(case):
    _, model, prompt = case
    runner = PagedRunner(model)
    runner.prefill([prompt[:-1]])
    decoded = runner.decode([prompt[-1]])
    prefilled = runner.prefill([prompt])
    runner.release()
    assert np.array_equal(decoded, prefilled), (
        f"max |decode - prefill| {np.abs(decoded - prefilled).max():.3g}")


def test_a_long_sequence_does_not_depend_on_its_batch(case):
    _, model, prompt = case
    short = prompt[:5]
    _, together = PagedRunner(model).greedy([prompt, short], DECODE_STEPS)
    _, alone = PagedRunner(model).greedy([prompt], DECODE_STEPS)
    for step, (batched, mine) in enumerate(zip(together, alone)):
        assert np.array_equal(batched[0], mine[0]), f"step {step}"
