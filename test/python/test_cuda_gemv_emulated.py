"""The CUDA decode GEMV (attention/Gemv.cuh), run on the CPU (no GPU needed).

A cuda artifact's attention.cu holds `llmc_gemv`, the tensor-core product that the runtime
launches in place of cuBLASLt for gemm steps of at most 8 rows with LLMC_CUDA_GEMV=1. It runs
here through the host emulation (llmc/testing/cuda_emulation.h, mma.sync in the PTX fragment
layout) against the same product in float64 from the same bf16/f16 inputs: row counts 1 to 8,
k split unevenly over the block's warps or looped over, a partial block of columns, A rows
wider than k (a strided view), a bias, a residual C, f32 and storage-type outputs. D starts as
NaN: what the kernel must write is checked written, and what it must not, untouched.
The compiler stores every matmul weight [n, k] for it: the artifact's weights are checked
against the ONNX file's [k, n] initializers, transposed.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from llmc.testing.cuda_emulation import EmulatedKernels, from_storage, to_storage
from llmc.testing.fixtures import write_fixture

ROOT = Path(__file__).resolve().parents[2]
LLMC = ROOT / "build" / "bin" / "llmc"
THREADS, COLUMNS, ROWS = 256, 16, 8  # stepplan::kGemvThreads, kGemvColumns, kGemvMaxRows


NAN_BITS = {"bf16": 0x7FC0, "f16": 0x7E00}


@pytest.fixture(scope="module", params=["bf16", "f16"])
def artifact(request, tmp_path_factory):
    """(the compiled artifact, its ONNX model, the GEMV kernel, dtype)."""
    dtype = request.param
    work = tmp_path_factory.mktemp(f"gemv-{dtype}")
    model = write_fixture("optimum", "gqa", {}, work / "onnx")
    out = work / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(model), "-o", str(out), "--quiet",
                    "--target", "cuda:sm_80", "--dtype", dtype], check=True, timeout=600)
    kernels = EmulatedKernels((out / "attention.cu").read_text(), work)
    return out, model, kernels, dtype


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("epilogue", ["plain", "bias", "residual", "f32"])
@pytest.mark.parametrize("k", [264, 4104])
def test_gemv_matches_float64(artifact, m, epilogue, k):
    _, _, kernels, dtype = artifact
    rng = np.random.default_rng(m * 10 + len(epilogue) + k)
    # 2 blocks, the second partial (a row of each lane's pair past n). k is not a whole number
    # of the 8 warps' 32-feature chunks, so one warp's slice is short and the last ones have
    # none (264), or each warp loops over its slice (4104).
    n, lda = 19, k + 16
    a = to_storage(rng.normal(size=(m, lda)), dtype)
    b = to_storage(rng.normal(size=(n, k)) / np.sqrt(k), dtype)
    bias = to_storage(rng.normal(size=n), dtype) if epilogue == "bias" else None
    c = to_storage(rng.normal(size=(ROWS, n)), dtype) if epilogue == "residual" else None
    d_f32 = epilogue == "f32"
    ldd = n + 3
    d = (np.full((ROWS, ldd), np.nan, np.float32) if d_f32
         else np.full((ROWS, ldd), NAN_BITS[dtype], np.uint16))
    beta = 1.0 if c is not None else 0.0
    grid = (-(-n // COLUMNS), 1, 1)
    kernels.launch("llmc_gemv", grid, (THREADS, 1, 1), a, lda, b, k, d, ldd, int(d_f32), bias,
                   c, n, beta, m, n, k)

    expected = from_storage(a, dtype)[:, :k] @ from_storage(b, dtype).T
    if bias is not None:
        expected += from_storage(bias, dtype)
    if c is not None:
        expected += from_storage(c, dtype)[:m]
    got = d.astype(np.float64) if d_f32 else from_storage(d, dtype)
    assert not np.isnan(got[:m, :n]).any(), "an output the kernel did not write"
    assert np.isnan(got[m:]).all() and np.isnan(got[:, n:]).all(), "a write past D"
    # f32 sums of k products; a storage-type D adds one rounding.
    tolerance = 1e-5 if d_f32 else {"bf16": 2 ** -8, "f16": 2 ** -11}[dtype]
    np.testing.assert_allclose(got[:m, :n], expected, rtol=tolerance, atol=tolerance)


def test_a_row_is_the_same_at_every_row_count(artifact):
    """Each row's sum is computed alone: a sequence gets the same bits whatever the batch."""
    _, _, kernels, dtype = artifact
    rng = np.random.default_rng(3)
    n, k = 8, 512
    a = to_storage(rng.normal(size=(ROWS, k)), dtype)
    b = to_storage(rng.normal(size=(n, k)), dtype)
    results = []
    for m in (1, ROWS):
        d = np.zeros((ROWS, n), np.float32)
        kernels.launch("llmc_gemv", (1, 1, 1), (THREADS, 1, 1), a, k, b, k, d, n, 1, None, None,
                       0, 0.0, m, n, k)
        results.append(d[0].copy())
    np.testing.assert_array_equal(results[0], results[1])


def test_matmul_weights_are_stored_n_by_k(artifact):
    """weights.bin holds each [k, n] MatMul initializer transposed, which the plan's gemms
    read as b_layout "nk" with ldb = k."""
    out, model, _, dtype = artifact
    manifest = json.loads((out / "manifest.json").read_text())
    tensors = manifest["weights"]["tensors"]
    blob = (out / "weights.bin").read_bytes()
    plan = json.loads((out / "step_plan.json").read_text())
    gemm_weights = {step["b"]["offset"]: (step["n"], step["k"])
                    for step in plan["steps"] if step["op"] == "gemm"}
    stored = {t["offset"]: t for t in tensors if t["offset"] in gemm_weights}
    assert len(stored) == len(gemm_weights)
    for offset, (n, k) in gemm_weights.items():
        assert stored[offset]["shape"] == [n, k], stored[offset]

    graph = onnx.load(str(model)).graph
    matmul_weights = {node.input[1] for node in graph.node if node.op_type == "MatMul"}
    initializers = {i.name: numpy_helper.to_array(i) for i in graph.initializer
                    if i.name in matmul_weights and len(i.dims) == 2}
    by_bits = {}
    for t in stored.values():
        n, k = t["shape"]
        bits = np.frombuffer(blob, np.uint16, n * k, t["offset"])
        by_bits[bits.tobytes()] = t["name"]
    # An unfused projection's weight (o_proj, down_proj) is its initializer, transposed.
    found = [name for name, w in initializers.items()
             if to_storage(w.T.copy(), dtype).tobytes() in by_bits]
    assert found, f"no MatMul initializer of {sorted(initializers)} is stored transposed"
