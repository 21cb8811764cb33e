"""f16 weight storage on the CPU: a half-precision export keeps its own weights, and
`llmc compile --dtype f16` rounds an f32 model's.

The generated matmul's weights (linear layers and the logits head) are stored in weights.bin
as f16 and widened to f32 as they are loaded (vcvtph2ps); the activations and the arithmetic
stay f32. Widening an f16 value to f32 is exact, so:

  * an fp16 export (optimum's `--dtype fp16` Llama with GQA) compiles to f16 storage by
    default, in about half the bytes of `--dtype f32`, its embedding table (gathered and
    widened) and the attention output projections too,
    which the exporter left f32 holding f16 values, and its logits equal, bit for bit,
    those of the same file compiled with its weights widened (`--dtype f32`), over a ragged
    batch of prefills and decodes (test_exporters checks the same file against onnxruntime);
  * so does the genai builder's fp16 Llama with tied embeddings, whose embedding gathers
    from the logits head's f16 panels: one f16 copy of the table, no f32 one;
  * `--dtype f16` on an f32 export computes exactly what the f32 artifact computes on a copy
    whose MatMul weights and embedding table numpy rounded to f16, and differs from the
    unrounded model's by about f16's rounding, not more; on the genai builder's f32 Llama
    with tied embeddings too, whose rounded table is kept once, in the head's f16 panels;
  * a mixture of experts' stacked experts are stored the same way: optimum's fp16 Qwen3-MoE
    keeps them f16 and computes its widened self bit for bit, and `--dtype f16` on the f32
    export computes the copy whose weights numpy rounded;
  * `--dtype f16` with `--matmul blas` is refused, and `--matmul blas` on the fp16 export
    widens its weights instead.
"""
from __future__ import annotations

import json
import subprocess

import numpy as np
import onnx
import pytest

from test_cpu_bf16_weights import write_rounded_copy
from test_exporters import EXPORTS_DIR, LLMC
from test_quantized_cpu import compile_model, ragged_steps

F32_EXPORT = EXPORTS_DIR / "optimum/llama-gqa/model.onnx"
F16_EXPORT = EXPORTS_DIR / "optimum-fp16/llama-gqa/model.onnx"
TIED_F16_EXPORT = EXPORTS_DIR / "genai-fp16/llama-tied/model.onnx"
TIED_F32_EXPORT = EXPORTS_DIR / "genai-fp32/llama-tied/model.onnx"
MOE_F32_EXPORT = EXPORTS_DIR / "optimum/qwen3-moe/model.onnx"
MOE_F16_EXPORT = EXPORTS_DIR / "optimum-fp16/qwen3-moe/model.onnx"


def rounded_to_f16(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).astype(np.float32)


def stored_dtypes(artifact) -> dict[str, int]:
    """How many weights.bin entries the manifest lists per dtype."""
    manifest = json.loads((artifact / "manifest.json").read_text())
    counts: dict[str, int] = {}
    for entry in manifest["weights"]["tensors"]:
        counts[entry["dtype"]] = counts.get(entry["dtype"], 0) + 1
    return counts


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    directory = tmp_path_factory.mktemp("f16")
    rounded, tied_rounded = directory / "rounded.onnx", directory / "tied-rounded.onnx"
    # 2 layers of 7, the head and the embedding table.
    assert write_rounded_copy(F32_EXPORT, rounded, rounded_to_f16) == 2 * 7 + 2
    assert write_rounded_copy(TIED_F32_EXPORT, tied_rounded, rounded_to_f16) >= 2 * 4 + 1
    return {
        "export": compile_model(F16_EXPORT, directory / "export.llmc"),
        "export widened": compile_model(F16_EXPORT, directory / "widened.llmc", "--dtype", "f32"),
        "tied": compile_model(TIED_F16_EXPORT, directory / "tied.llmc"),
        "tied widened": compile_model(TIED_F16_EXPORT, directory / "tied-widened.llmc",
                                      "--dtype", "f32"),
        "f16": compile_model(F32_EXPORT, directory / "f16.llmc", "--dtype", "f16"),
        "f32": compile_model(F32_EXPORT, directory / "f32.llmc"),
        "rounded": compile_model(rounded, directory / "rounded.llmc"),
        "tied f16": compile_model(TIED_F32_EXPORT, directory / "tied-f16.llmc", "--dtype", "f16"),
        "tied rounded": compile_model(tied_rounded, directory / "tied-rounded.llmc"),
    }


def test_an_fp16_export_keeps_f16_weights(artifacts):
    kept, widened = artifacts["export"], artifacts["export widened"]
    # 2 layers of 4 matmuls at -O2 (q/k/v and gate/up joined), the head and the embedding
    # table.
    assert stored_dtypes(kept).get("f16", 0) == 2 * 4 + 1 + 1
    manifest = json.loads((kept / "manifest.json").read_text())
    dtypes = {entry["name"]: entry["dtype"] for entry in manifest["weights"]["tensors"]}
    assert dtypes["model.embed_tokens.weight"] == "f16"
    f32_in_the_file = [tensor.name for tensor in onnx.load(F16_EXPORT).graph.initializer
                       if tensor.data_type == onnx.TensorProto.FLOAT and len(tensor.dims) == 2]
    assert f32_in_the_file and all(dtypes[name] == "f16" for name in f32_in_the_file)
    assert "f16" not in stored_dtypes(widened)
    kept_bytes = (kept / "weights.bin").stat().st_size
    widened_bytes = (widened / "weights.bin").stat().st_size
    assert kept_bytes < 0.75 * widened_bytes, f"{kept_bytes} vs {widened_bytes} bytes"


@pytest.mark.parametrize("tied", ["tied", "tied f16"])
def test_a_tied_table_is_kept_once_in_f16(artifacts, tied):
    manifest = json.loads((artifacts[tied] / "manifest.json").read_text())
    vocab_by_hidden = 512 * 64
    tables = [entry for entry in manifest["weights"]["tensors"]
              if int(np.prod(entry["shape"])) == vocab_by_hidden]
    assert [entry["dtype"] for entry in tables] == ["f16"], tables


@pytest.mark.parametrize("export", ["export", "tied"])
def test_f16_weights_compute_the_widened_export_exactly(artifacts, export):
    ours, widened = ragged_steps(artifacts[export], artifacts[f"{export} widened"])
    for step, (mine, reference) in enumerate(zip(ours, widened)):
        assert np.array_equal(mine, reference), (
            f"step {step}: max |f16 - widened| {np.abs(mine - reference).max():.3g}")


@pytest.mark.parametrize("model", ["", "tied "])
def test_f16_weights_compute_the_rounded_model_exactly(artifacts, model):
    ours, rounded = ragged_steps(artifacts[f"{model}f16"], artifacts[f"{model}rounded"])
    for step, (mine, reference) in enumerate(zip(ours, rounded)):
        assert np.array_equal(mine, reference), (
            f"step {step}: max |f16 - rounded f32| {np.abs(mine - reference).max():.3g}")


def test_f16_weights_stay_close_to_f32(artifacts):
    ours, f32 = ragged_steps(artifacts["f16"], artifacts["f32"])
    for step, (mine, reference) in enumerate(zip(ours, f32)):
        error = float(np.abs(mine - reference).max() / np.abs(reference).max())
        assert 0 < error < 0.01, f"step {step}: relative error {error:.3g}"


@pytest.fixture(scope="module")
def moe_artifacts(tmp_path_factory):
    directory = tmp_path_factory.mktemp("f16-moe")
    rounded = directory / "rounded.onnx"
    # 2 layers of 4 attention projections, the router and 4 experts of 3; the head and the
    # embedding table.
    assert write_rounded_copy(MOE_F32_EXPORT, rounded, rounded_to_f16) == 2 * (4 + 1 + 4 * 3) + 2
    return {
        "export": compile_model(MOE_F16_EXPORT, directory / "export.llmc"),
        "export widened": compile_model(MOE_F16_EXPORT, directory / "widened.llmc",
                                        "--dtype", "f32"),
        "f16": compile_model(MOE_F32_EXPORT, directory / "f16.llmc", "--dtype", "f16"),
        "rounded": compile_model(rounded, directory / "rounded.llmc"),
    }


@pytest.mark.parametrize("artifact", ["export", "f16"])
def test_experts_are_stored_in_f16(moe_artifacts, artifact):
    manifest = json.loads((moe_artifacts[artifact] / "manifest.json").read_text())
    experts = [entry for entry in manifest["weights"]["tensors"] if "/experts/" in entry["name"]]
    # Each layer's gate, up and down projections, stacked [experts, out, in].
    assert sorted(tuple(entry["shape"]) for entry in experts) == (
        [(4, 32, 64)] * 4 + [(4, 64, 32)] * 2), experts
    assert {entry["dtype"] for entry in experts} == {"f16"}


@pytest.mark.parametrize("pair", [("export", "export widened"), ("f16", "rounded")])
def test_f16_experts_compute_their_f32_copy_exactly(moe_artifacts, pair):
    ours, reference = ragged_steps(moe_artifacts[pair[0]], moe_artifacts[pair[1]])
    for step, (mine, theirs) in enumerate(zip(ours, reference)):
        assert np.array_equal(mine, theirs), (
            f"step {step}: max |f16 - f32 copy| {np.abs(mine - theirs).max():.3g}")


def test_f16_storage_needs_the_generated_matmul(tmp_path):
    result = subprocess.run([str(LLMC), "compile", str(F32_EXPORT), "-o", str(tmp_path / "x.llmc"),
                             "--quiet", "--dtype", "f16", "--matmul", "blas"],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "--dtype f16 needs the generated matmul" in result.stderr
    assert not (tmp_path / "x.llmc").exists()
    blas = compile_model(F16_EXPORT, tmp_path / "blas.llmc", "--matmul", "blas")
    assert "f16" not in stored_dtypes(blas)
