"""The CUDA compile path on a machine without a GPU (docs/cuda.md).

Every fixture compiles for sm_80 and sm_90: the gpu.module kernels through MLIR's NVVM path,
the attention kernels through NVRTC, and both through ptxas (a cubin is only written when
ptxas accepted the PTX). The step plan must name only kernels the PTX defines, give every
launch a well-formed grid and arguments, and keep every location inside its buffer.
Running the artifacts needs a GPU: scripts/gpu-check.sh (test/gpu/).
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from llmc.testing.fixtures import FIXTURES, fixture_name, write_fixture

ROOT = Path(__file__).resolve().parents[2]
LLMC = ROOT / "build" / "bin" / "llmc"
MODELS = {fixture_name(*f): f for f in FIXTURES}
SYMBOLS = {"tokens", "seqs", "max_q_len", "block_table_width", "num_blocks", "prefill_tokens"}
STEP_INPUTS = {"tokens", "positions", "cu_seqlens_q", "context_lens", "block_tables",
               "slot_mapping", "logits_indices"}


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cuda-fixtures")


def compile_cuda(model: Path, out: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(LLMC), "compile", str(model), "-o", str(out), "--quiet", *options],
                          capture_output=True, text=True, timeout=600)


def entries(ptx: str) -> set[str]:
    return set(re.findall(r"\.entry\s+(\w+)\(", ptx))


def check_dim(dim) -> None:
    if isinstance(dim, int):
        assert dim >= 0
    elif isinstance(dim, str):
        assert dim in SYMBOLS, dim
    else:
        symbol, mul, div, *add = dim  # ceil(symbol * mul / div) (+ add)
        assert symbol in SYMBOLS and mul > 0 and div > 0 and len(add) <= 1, dim
        assert all(a >= 0 for a in add), dim


def check_location(location: dict, sizes: dict[str, int]) -> None:
    buffer = location["buffer"]
    assert buffer in sizes or buffer in STEP_INPUTS | {"kv_pool", "logits"}, buffer
    assert location["offset"] >= 0
    if buffer in sizes:
        assert location["offset"] < sizes[buffer], location


def check_artifact(directory: Path, arch: str, dtype: str) -> None:
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["target"] == {"kind": "cuda", "arch": arch, "dtype": dtype}
    assert manifest["model"]["dtype"] == dtype and manifest["step"]["kv_dtype"] == dtype
    files = {entry["file"]: entry for entry in manifest["kernels"]}
    # ptxas ran and accepted both PTX modules: their cubins are there.
    assert set(files) == {"kernels.ptx", "kernels.cubin", "attention.cu", "attention.ptx",
                          "attention.cubin", "step_plan.json"}
    for entry in files.values():
        assert (directory / entry["file"]).stat().st_size == entry["size"]
    for cubin in ("kernels.cubin", "attention.cubin"):
        assert (directory / cubin).read_bytes()[:4] == b"\x7fELF"

    modules = {name: entries((directory / f"{name}.ptx").read_text())
               for name in ("kernels", "attention")}
    for name in ("kernels", "attention"):
        assert f".target {arch}" in (directory / f"{name}.ptx").read_text()
    plan = json.loads((directory / "step_plan.json").read_text())
    sizes = {"weights": manifest["weights"]["size"],
             "workspace": plan["workspace_bytes"] + plan["scratch_bytes"]}
    assert manifest["step"]["workspace_bytes"] == sizes["workspace"]
    ops = [step["op"] for step in plan["steps"]]
    assert ops.count("gemm") >= 1 + manifest["model"]["num_layers"]  # logits + >= 1 per layer
    launched = set()
    for step in plan["steps"]:
        if step["op"] == "launch":
            assert step["kernel"] in modules[step["module"]], step["kernel"]
            launched.add((step["module"], step["kernel"]))
            assert len(step["grid"]) == 3 and len(step["block"]) == 3
            for dim in step["grid"]:
                check_dim(dim)
            for arg in step["args"]:
                (kind, value), = [(k, v) for k, v in arg.items() if k not in ("sizes", "strides")]
                assert kind in ("memref", "ptr", "i32", "index", "i64", "f32"), kind
                if kind in ("memref", "ptr"):
                    check_location(value, sizes)
                if kind == "memref":
                    assert len(arg["sizes"]) == len(arg["strides"])
                    for dim in arg["sizes"] + arg["strides"]:
                        check_dim(dim)
        else:
            assert step["op"] == "gemm"
            check_dim(step["m"])
            # Every matmul weight is stored [n, k] (what the decode GEMV reads).
            assert step["n"] > 0 and step["k"] > 0 and step["b_layout"] == "nk"
            assert step["ldb"] == step["k"]
            assert step["d_dtype"] in (dtype, "f32")
            for key in ("a", "b", "d", "bias", "c"):
                if step[key] is not None:
                    check_location(step[key], sizes)
    # Every kernel of the modules is launched, by the plan or by the runtime (the greedy argmax
    # after a step of greedy sequences, the GEMV for decode steps' gemms): nothing compiled for
    # nothing.
    launched |= {("attention", "llmc_argmax_rows"), ("attention", "llmc_gemv")}
    assert launched == {(name, kernel) for name, kernels in modules.items() for kernel in kernels}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_fixture_compiles_for_cuda(onnx_dir, tmp_path, name, arch):
    model = write_fixture(*MODELS[name], onnx_dir)
    result = compile_cuda(model, tmp_path / "model.llmc", "--target", f"cuda:{arch}")
    assert result.returncode == 0, result.stderr
    check_artifact(tmp_path / "model.llmc", arch, "bf16")


def test_f16_and_weights_in_the_storage_type(onnx_dir, tmp_path):
    model = write_fixture(*MODELS["optimum-gqa"], onnx_dir)
    for dtype in ("f16", "bf16"):
        out = tmp_path / dtype
        result = compile_cuda(model, out, "--target", "cuda:sm_90", "--dtype", dtype)
        assert result.returncode == 0, result.stderr
        check_artifact(out, "sm_90", dtype)
        tensors = json.loads((out / "manifest.json").read_text())["weights"]["tensors"]
        # Matrices are stored narrow; only rotary tables stay f32.
        assert {t["dtype"] for t in tensors} <= {dtype, "f32"}
        assert sum(t["dtype"] == dtype for t in tensors) > len(tensors) // 2
        for t in tensors:
            width = 4 if t["dtype"] == "f32" else 2
            count = 1
            for dim in t["shape"]:
                count *= dim
            assert t["nbytes"] == count * width


@pytest.mark.parametrize("target, message", [
    ("cuda:sm_75", "sm_80"),
    ("cuda:hopper", "cuda:sm_XX"),
    ("rocm", "use cpu, cuda or cuda:sm_XX"),
])
def test_bad_targets_are_one_clear_error(onnx_dir, tmp_path, target, message):
    model = write_fixture(*MODELS["optimum-gqa"], onnx_dir)
    result = compile_cuda(model, tmp_path / "out", "--target", target)
    assert result.returncode == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_dtype_is_checked_per_target(onnx_dir, tmp_path):
    """The CPU stores matmul weights as f32, bf16 or f16; CUDA stores everything as bf16 or
    f16. Anything else is one error."""
    model = write_fixture(*MODELS["optimum-gqa"], onnx_dir)
    result = compile_cuda(model, tmp_path / "out", "--dtype", "fp8")
    assert result.returncode == 1
    assert "the CPU target stores weights as f32, bf16 or f16" in result.stderr
    for dtype in ("fp8", "f32"):
        result = compile_cuda(model, tmp_path / "out", "--target", "cuda:sm_80", "--dtype", dtype)
        assert result.returncode == 1 and "bf16 or f16" in result.stderr


def test_a_cuda_artifact_without_a_gpu_is_one_clear_error(onnx_dir, tmp_path):
    """Loading needs the NVIDIA driver; without one the runtime says so (the test machine has none)."""
    from llmc.runtime import LlmcRuntimeError, Model
    model = write_fixture(*MODELS["optimum-gqa"], onnx_dir)
    assert compile_cuda(model, tmp_path / "model.llmc", "--target", "cuda:sm_90").returncode == 0
    with pytest.raises(LlmcRuntimeError, match=r"targets CUDA \(sm_90, bf16\): no NVIDIA driver"):
        Model(tmp_path / "model.llmc")
    run = subprocess.run([str(LLMC), "run", str(tmp_path / "model.llmc"), "--prompt-ids", "1,2"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "no NVIDIA driver" in run.stderr


EXPORTS = ROOT / "test" / "exporters"


@pytest.mark.parametrize("export", [
    "optimum/granite",  # the logits head's epilogue (logits / logits_scaling)
    "optimum/phi2",  # the logits head's bias, parallel residual, partial rotary
    "genai-fp16/llama-gqa",  # an f16 model, computed in f32 and stored in bf16
    # Block-quantised weights (MatMulNBits, GatherBlockQuantized; QKV and gate/up joined by
    # fusion), widened to the storage type: the CUDA target has no quantised kernels yet.
    "ort-int4/llama-gqa",
    "genai-int4/llama-tied",
    "genai-int4/gpt-oss-mxfp4",  # QMoE's 4-bit experts, under one llm.moe
    # Sliding windows and softcaps: the attention kernels take them as constants.
    "genai-fp32/gemma2",  # a window and a softcap on the local layer, a softcap on the other
    "optimum/mistral-window",
    # Per-head q/k norms: a block per (row, head).
    "optimum/qwen3",
    "optimum/gemma3",
    # Scaled rotary embeddings: YaRN's and LongRoPE's attention factor on cos and sin.
    "optimum/qwen2-yarn",
    "optimum/phi3-longrope",
    # A projection laid out head by head, its columns reordered into q, k and v.
    "optimum/gpt-neox",
    # relu(x)^2 as Pow by an int32 2, LayerNorm with a (1 + weight) scale.
    "genai-int4/nemotron",
    # Learned positions at an offset, the feed-forward block unflattened.
    "optimum/opt",
    # Exported without the cache: the keys' transposes joined, masks proven on prefills.
    "optimum-no-cache/gpt2",
    # One key and one value head split off the fused projection.
    "optimum/falcon",
    "optimum/gpt-bigcode",  # c_attn unsqueezed and split: one key and one value head
    # Rotary over interleaved pairs on part of each head; a projection in groups of heads.
    "optimum/gptj",
    "optimum/codegen",
    # Rotary over interleaved pairs of inv_freq's angles; LayerNorm without a bias.
    "optimum/cohere",
    "optimum/cohere-qk-norm",  # q and k LayerNorms with a weight per head

    "optimum/glm",
    # ALiBi over [batch * heads] batches; each head's q, k and v gathered from one view.
    "optimum/bloom",
    "optimum/mpt",  # ALiBi from a constant table, the mask applied by masked_fill
    "optimum/gpt-neo",  # a local layer's window read from the causal buffer it selects by
])
def test_exporter_features_compile_for_cuda(tmp_path, export):
    result = compile_cuda(EXPORTS / export / "model.onnx", tmp_path / "model.llmc",
                          "--target", "cuda:sm_90")
    assert result.returncode == 0, result.stderr
    check_artifact(tmp_path / "model.llmc", "sm_90", "bf16")


def test_windows_and_softcaps_name_their_attention_configs(tmp_path):
    """Gemma-2's local and global layers run different attention kernels; a model with a
    window on every layer says so to the engine (attention_window), which gives back the
    blocks out of it: the kernels never read them (test_cuda_attention_emulated.py)."""
    out = tmp_path / "gemma2"
    assert compile_cuda(EXPORTS / "genai-fp32/gemma2/model.onnx", out,
                        "--target", "cuda:sm_80").returncode == 0
    plan = json.loads((out / "step_plan.json").read_text())
    configs = {step["kernel"].removesuffix("_prefill") for step in plan["steps"]
               if step.get("kernel", "").endswith("_prefill")}
    assert len(configs) == 2
    assert any(c.endswith("_w16_c0x42480000") for c in configs)
    assert any(c.endswith("_c0x42480000") and "_w" not in c for c in configs)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model"]["attention_window"] == 0  # hybrid: every block is kept
    out = tmp_path / "mistral"
    assert compile_cuda(EXPORTS / "optimum/mistral-window/model.onnx", out,
                        "--target", "cuda:sm_80").returncode == 0
    assert json.loads((out / "manifest.json").read_text())["model"]["attention_window"] == 20


def test_act_order_is_refused_for_cuda_by_name(tmp_path):
    """GPTQ act-order reorders each layer's input (llm.permute_features): a CPU kernel only."""
    quantized = tmp_path / "quantized" / "model.onnx"
    subprocess.run([str(LLMC), "quantize", str(EXPORTS / "optimum/llama-gqa/model.onnx"), "-o",
                    str(quantized), "--method", "gptq", "--act-order", "--symmetric",
                    "--group-size", "16", "--quiet"], check=True)
    result = compile_cuda(quantized, tmp_path / "model.llmc", "--target", "cuda:sm_90")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"llmc: error: {quantized}: 'llm.permute_features' op (GPTQ act-order) has no CUDA "
        "kernel yet; the CPU target runs it"]
