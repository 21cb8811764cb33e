"""The real exporters' files (test/exporters, as test_exporters.py runs them on the CPU) compiled
with `--target cuda --dtype f16` and run on the GPU: each matches onnxruntime on the same file,
or is refused at compile time with one error line. Never a wrong answer.

Per export that compiles: the prefill's and 32 teacher-forced decode steps' logits are within
f16's tolerance of onnxruntime's (test_cuda_parity.py's: 2e-2 of max|ref| per step and on
average), and 32 greedy tokens per prompt through Model.generate are onnxruntime's up to a
near-tie of its logits. The reference is test_exporters.exact_reference's: the file itself,
or the file with MatMulNBits at accuracy_level 0 and half types widened to f32, which is what
llmc computes. Exports that the CPU target refuses are refused here too. The genai
builder's llama-gqa with attention sinks added (test_exporters' head_sink and smooth_softmax
forms) checks the sinks in the CUDA attention kernels.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from llmc.runtime import Model
from llmc.testing.paged import PagedRunner
from test_cpu_parity import LLMC, relative_error
from test_cuda_parity import TOLERANCES, tie_band, tolerance_problem, unexplained_divergence
from test_exporters import (DECODE_STEPS, EXPORTS, EXPORTS_DIR, GREEDY_STEPS, NUM_KV_BLOCKS,
                            exact_reference, reference_steps, seeded_prompts,
                            with_group_query_attention_sinks)

DTYPE = "f16"


def compare(model: Model, onnx_path: Path) -> str:
    """'' if `model` computes onnxruntime's logits on `onnx_path` within f16's tolerance and
    its greedy tokens up to a near-tie; else what differs."""
    prompts = seeded_prompts(model.vocab_size)
    reference = reference_steps(onnx_path, prompts)
    runner = PagedRunner(model)
    errors = []
    for step in range(DECODE_STEPS + 1):
        ours = (runner.prefill(prompts) if step == 0
                else runner.decode(reference[step - 1].argmax(axis=-1)))
        errors.append([relative_error(ours[seq], reference[step][seq])
                       for seq in range(len(prompts))])
    runner.release()
    errors = np.array(errors)
    if problem := tolerance_problem(errors, TOLERANCES[DTYPE]):
        return f"logits, step 0 being the prefill: {problem}"
    expected = np.stack([step.argmax(axis=-1) for step in reference[:GREEDY_STEPS]], axis=1)
    generated = model.generate(prompts, max_tokens=GREEDY_STEPS)
    return unexplained_divergence(generated, expected, reference[:GREEDY_STEPS],
                                  tie_band(errors, TOLERANCES[DTYPE]))


@pytest.mark.parametrize("export", EXPORTS, ids=[str(e) for e in EXPORTS])
def test_export_matches_or_is_refused_on_the_gpu(export, tmp_path):
    onnx_path = EXPORTS_DIR / export / "model.onnx"
    artifact = tmp_path / "model.llmc"
    result = subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact), "--quiet",
                             "--target", "cuda", "--dtype", DTYPE], capture_output=True, text=True)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("llmc: error: "), (
            f"{export}: refused without one error line: {result.stderr!r}")
        return
    reference, _ = exact_reference(onnx_path, tmp_path / "reference")
    with Model(artifact, num_kv_blocks=NUM_KV_BLOCKS) as model:
        problem = compare(model, reference)
    assert not problem, f"{export} ({DTYPE}): {problem}"


@pytest.mark.parametrize("mode", ["head_sink", "smooth_softmax"])
def test_attention_sinks_match_onnxruntime_on_the_gpu(mode, tmp_path):
    onnx_path = with_group_query_attention_sinks(EXPORTS_DIR / "genai-fp32" / "llama-gqa",
                                                 tmp_path / "export", mode)
    artifact = tmp_path / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact), "--quiet",
                    "--target", "cuda", "--dtype", DTYPE], check=True)
    with Model(artifact, num_kv_blocks=NUM_KV_BLOCKS) as model:
        problem = compare(model, onnx_path)
    assert not problem, f"{mode} ({DTYPE}): {problem}"
