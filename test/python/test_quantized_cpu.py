"""Quantized weights on the CPU: kept packed, computed exactly, and made by llmc.quantize.

  * A block-quantized weight (MatMulNBits, GatherBlockQuantized) stays packed in weights.bin,
    and the generated kernels dequantize it in registers with the arithmetic of widening it
    to f32 at compile time: the logits are bit-identical to those of the same model compiled
    with llm-lower-to-cpu{pack-quantized=false}, on the real exporters' files (the genai
    builder's int4 and onnxruntime's quantizer at 4 and 8 bits, with and without zero points,
    uint4 and int4 embeddings, a mixture of experts' stacked experts, QMoE's codes), in a
    ragged batch of prefills and decodes.
  * llmc.quantize (round to nearest, AWQ, GPTQ; 4 and 8 bits, symmetric or with zero points)
    writes a file onnxruntime runs, which llmc matches (test_exporters.compare); RTN puts
    every value within a step of the weight it quantized (half a step where the codes do not
    clip); GPTQ reconstructs correlated inputs' products better than RTN; at 8 bits AWQ's
    folded scales and GPTQ's error spreading leave the logits within 5%.
  * With --int8-activations (rows quantized to int8 per block, integer products) the logits
    stay within a few percent of the exact product and do not depend on the batch; AVX2's
    products give the bits AVX512-VNNI's give. Without the flag the file decides: a file
    whose MatMulNBits all ask for accuracy_level 4 (the genai builder's int4) gets them, and
    stays as close to onnxruntime's own int8 product of that file; one that asks for level 0
    (onnxruntime's quantizer) gets the exact product, and so does `--int8-activations=false`.
  * `llmc quantize` (which runs python -m llmc.quantize) refuses what it cannot read with
    one error line.

test_exporters.py checks the same exporters' files against onnxruntime.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from llmc.quantize import quantize_gptq, quantize_rtn
from llmc.runtime import Model
from llmc.testing.paged import PagedRunner
from test_exporters import (EXPORTS_DIR, LLMC, NUM_KV_BLOCKS, ROOT, compare, reference_steps,
                            seeded_prompts)

QUANTIZED_EXPORTS = ["genai-int4/llama-tied", "genai-int4/phi2", "genai-int4/qwen3",
                     "ort-int4/llama-gqa", "ort-int4-sym/llama-tied", "ort-int8/gemma",
                     "ort-int4/qwen3-moe", "ort-int8/qwen3-moe", "genai-int4/gpt-oss-mxfp4",
                     "genai-int4-qmoe8/gpt-oss-mxfp4", "genai-int4-qmoe-rows/gpt-oss-mxfp4"]
WIDENED_PIPELINE = ("builtin.module(llmc-raise,llmc-step{opt-level=2},"
                    "llm-lower-to-cpu{pack-quantized=false})")
DECODE_STEPS = 4


def compile_model(onnx_path: Path, artifact: Path, *args: str) -> Path:
    subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact), "--quiet", *args],
                   check=True)
    return artifact


def ragged_steps(artifact: Path, reference: Path) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The logits of `artifact` and of `reference` on a prefill of three prompts, then on
    decode steps of the tokens `reference` picks greedily (the same input for both)."""
    models = [Model(path, num_kv_blocks=NUM_KV_BLOCKS) for path in (artifact, reference)]
    try:
        runners = [PagedRunner(model) for model in models]
        prompts = seeded_prompts(models[0].vocab_size)
        steps = [[runner.prefill(prompts)] for runner in runners]
        for _ in range(DECODE_STEPS):
            tokens = steps[1][-1].argmax(axis=-1)
            for runner, logits in zip(runners, steps):
                logits.append(runner.decode(tokens))
        return steps[0], steps[1]
    finally:
        for model in models:
            model.close()


@pytest.mark.parametrize("export", QUANTIZED_EXPORTS)
def test_packed_weights_compute_what_widened_weights_compute(export, tmp_path):
    onnx_path = EXPORTS_DIR / export / "model.onnx"
    packed = compile_model(onnx_path, tmp_path / "packed.llmc", "--int8-activations=false")
    widened = compile_model(onnx_path, tmp_path / "widened.llmc",
                            f"--pass-pipeline={WIDENED_PIPELINE}")
    packed_bytes = (packed / "weights.bin").stat().st_size
    widened_bytes = (widened / "weights.bin").stat().st_size
    # f32 is 32 bits a weight, packed codes 4 or 8 bits plus a scale per block; f32 weights
    # (norms, an embedding onnxruntime's quantizer leaves at 8 bits) are alike in both.
    assert packed_bytes < 0.7 * widened_bytes, (packed_bytes, widened_bytes)
    for step, (ours, reference) in enumerate(zip(*ragged_steps(packed, widened))):
        assert np.array_equal(ours, reference), f"step {step}: packed logits differ"


CPU_FLAGS = Path("/proc/cpuinfo").read_text()
HAS_VNNI = "avx512_vnni" in CPU_FLAGS
HAS_INT8_PRODUCTS = HAS_VNNI or " avx2" in CPU_FLAGS
INT8_MAX_REL_ERROR = 0.08  # activations rounded to 8 bits: 1-3% on these models
# A mixture of experts' router can flip a near-tie between two experts under that rounding,
# and the row then differs by the experts' difference: one row of ort-int8/qwen3-moe goes
# from 3% to 9% at one step (and stays there, through its KV cache), the others at 1-2%.
INT8_MAX_REL_ERROR_MOE = 0.15


@pytest.mark.skipif(not HAS_INT8_PRODUCTS, reason="--int8-activations needs AVX512-VNNI or AVX2")
@pytest.mark.parametrize("export", QUANTIZED_EXPORTS)
def test_int8_activations_stay_close_to_the_exact_product(export, tmp_path):
    onnx_path = EXPORTS_DIR / export / "model.onnx"
    exact = compile_model(onnx_path, tmp_path / "exact.llmc", "--int8-activations=false")
    int8 = compile_model(onnx_path, tmp_path / "int8.llmc", "--int8-activations")
    bound = INT8_MAX_REL_ERROR_MOE if "moe" in export else INT8_MAX_REL_ERROR
    for step, (ours, reference) in enumerate(zip(*ragged_steps(int8, exact))):
        error = float(np.abs(ours - reference).max() / np.abs(reference).max())
        assert error < bound, f"step {step}: relative error {error:.3g}"
        assert not np.array_equal(ours, reference), "the int8 path computed the exact product"


def assert_prompts_do_not_depend_on_the_batch(artifact: Path) -> None:
    """A prompt's logits alone and in a batch of three, at a prefill and a decode step, are
    bit-identical."""
    model = Model(artifact, num_kv_blocks=NUM_KV_BLOCKS)
    try:
        prompts = seeded_prompts(model.vocab_size)
        batch = PagedRunner(model)
        together = [batch.prefill(prompts)]
        together.append(batch.decode(together[-1].argmax(axis=-1)))
        batch.release()
        for seq, prompt in enumerate(prompts):
            alone = PagedRunner(model)
            first = alone.prefill([prompt])
            second = alone.decode(together[0][seq:seq + 1].argmax(axis=-1))
            alone.release()
            assert np.array_equal(first[0], together[0][seq]), f"prompt {seq}: prefill"
            assert np.array_equal(second[0], together[1][seq]), f"prompt {seq}: decode"
    finally:
        model.close()


@pytest.mark.skipif(not HAS_INT8_PRODUCTS, reason="--int8-activations needs AVX512-VNNI or AVX2")
@pytest.mark.parametrize("export", ["ort-int4/llama-gqa", "ort-int8/llama-gqa",
                                    "ort-int4/qwen3-moe"])
def test_int8_activations_do_not_depend_on_the_batch(export, tmp_path):
    """Each row is quantised and summed alone (one step of 4-row tiles and single rows; a
    mixture of experts' picks in tiles grouped by what the batch chose)."""
    assert_prompts_do_not_depend_on_the_batch(
        compile_model(EXPORTS_DIR / export / "model.onnx", tmp_path / "int8.llmc",
                      "--int8-activations"))


@pytest.mark.skipif(not HAS_VNNI, reason="vpdpbusd's sums, the reference, need AVX512-VNNI")
@pytest.mark.parametrize("export", ["ort-int4/llama-gqa", "ort-int8/llama-gqa",
                                    "ort-int4/qwen3-moe", "genai-int4-qmoe8/gpt-oss-mxfp4"])
def test_avx2_int8_products_are_the_vnni_sums(export, tmp_path):
    """vpmaddubsw and vpmaddwd (8-bit codes as two nibbles) add the same integers as vpdpbusd:
    the logits are the same bits, 4- and 8-bit codes, dense and experts."""
    onnx_path = EXPORTS_DIR / export / "model.onnx"
    vnni = compile_model(onnx_path, tmp_path / "vnni.llmc", "--int8-activations",
                         "--int8-products=avx512-vnni")
    avx2 = compile_model(onnx_path, tmp_path / "avx2.llmc", "--int8-activations",
                         "--int8-products=avx2")
    for step, (ours, reference) in enumerate(zip(*ragged_steps(avx2, vnni))):
        assert np.array_equal(ours, reference), f"step {step}: AVX2's logits differ"


@pytest.mark.parametrize("export", ["optimum/qwen3-moe", "ort-int4/qwen3-moe", "optimum/gpt-oss",
                                    "genai-fp32/gpt-oss"])
def test_experts_do_not_depend_on_the_batch(export, tmp_path):
    """A mixture of experts computes an expert's picks in tiles of 4 and single picks,
    grouped by what the batch chose: a prompt's picks fall in other tiles alone than in a
    batch, and its logits are the same bits."""
    assert_prompts_do_not_depend_on_the_batch(
        compile_model(EXPORTS_DIR / export / "model.onnx", tmp_path / "moe.llmc"))


def activations_of(artifact: Path) -> str:
    return json.loads((artifact / "manifest.json").read_text())["step"]["activations"]


@pytest.mark.skipif(not HAS_INT8_PRODUCTS, reason="int8 activations need AVX512-VNNI or AVX2")
@pytest.mark.parametrize("export", ["genai-int4/llama-tied", "genai-int4/qwen3"])
def test_int8_activations_where_the_file_asks(export, tmp_path):
    """The genai builder's int4 files ask for accuracy_level 4 on every MatMulNBits: compiled
    without the flag they get int8 activations, the bits of --int8-activations, within the
    int8 bound of onnxruntime's own int8 product of the same file (teacher-forced on its
    tokens); --int8-activations=false keeps the exact product."""
    onnx_path = EXPORTS_DIR / export / "model.onnx"
    default = compile_model(onnx_path, tmp_path / "default.llmc")
    int8 = compile_model(onnx_path, tmp_path / "int8.llmc", "--int8-activations")
    exact = compile_model(onnx_path, tmp_path / "exact.llmc", "--int8-activations=false")
    assert [activations_of(a) for a in (default, int8, exact)] == ["int8", "int8", "f32"]
    for step, (ours, reference) in enumerate(zip(*ragged_steps(default, int8))):
        assert np.array_equal(ours, reference), f"step {step}: not --int8-activations' logits"

    model = Model(default, num_kv_blocks=NUM_KV_BLOCKS)
    try:
        prompts = seeded_prompts(model.vocab_size)
        reference = reference_steps(onnx_path, prompts)  # the file as it is: level 4
        runner = PagedRunner(model)
        for step in range(DECODE_STEPS + 1):
            ours = (runner.prefill(prompts) if step == 0
                    else runner.decode(reference[step - 1].argmax(axis=-1)))
            error = float(np.abs(ours - reference[step]).max() / np.abs(reference[step]).max())
            assert error < INT8_MAX_REL_ERROR, f"step {step}: relative error {error:.3g}"
        runner.release()
    finally:
        model.close()


def test_exact_product_where_the_file_asks_for_it(tmp_path):
    """onnxruntime's quantizer writes accuracy_level 0: the exact product, by default."""
    artifact = compile_model(EXPORTS_DIR / "ort-int4/llama-gqa/model.onnx",
                             tmp_path / "model.llmc")
    assert activations_of(artifact) == "f32"


@pytest.mark.parametrize("args,message", [
    (["--int8-activations", "--matmul=blas"],
     "--int8-activations applies to the CPU target's generated matmul"),
    (["--int8-activations", "--target", "cuda"],
     "--int8-activations applies to the CPU target's generated matmul"),
    (["--int8-activations", "--int8-products=sse4"],
     "unknown --int8-products 'sse4': use auto, avx512-vnni or avx2"),
    (["--int8-products=avx2"], "--int8-products applies with --int8-activations, which this "
     "file does not ask for (MatMulNBits' accuracy_level 4)"),
    (["--int8-activations=false", "--int8-products=avx2"],
     "--int8-products applies with --int8-activations")])
def test_int8_activations_refused_where_they_do_not_apply(args, message, tmp_path):
    result = subprocess.run([str(LLMC), "compile", str(EXPORTS_DIR / "ort-int4/llama-gqa/model.onnx"),
                             "-o", str(tmp_path / "out.llmc"), *args],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [f"llmc: error: {message}"]


@pytest.mark.parametrize("args", [["--matmul=blas"], ["--target", "cuda"]])
def test_int8_products_refused_where_the_files_int8_activations_do_not_apply(args, tmp_path):
    """A file that asks for int8 activations gets them from the CPU target's generated
    matmul only: elsewhere --int8-products names instructions nothing would use."""
    result = subprocess.run([str(LLMC), "compile",
                             str(EXPORTS_DIR / "genai-int4/llama-tied/model.onnx"),
                             "-o", str(tmp_path / "out.llmc"), "--int8-products=avx2", *args],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "llmc: error: --int8-products applies to the CPU target's generated matmul"]


@pytest.mark.parametrize("bits,group_size,symmetric",
                         [(4, 32, True), (4, 16, False), (8, 32, False), (8, 128, True)])
def test_rtn_values_are_within_a_step(bits, group_size, symmetric):
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((24, 200)).astype(np.float32)  # 200: a partial last block
    q = quantize_rtn(weight, bits, group_size, symmetric)
    error = np.abs(q.dequantize() - weight)
    step = np.repeat(np.abs(q.scales), group_size, axis=1)[:, :200]
    # Rounding is half a step off; the codes clip at the block's ends (symmetric blocks
    # reach -2^(bits-1) steps but only 2^(bits-1) - 1 up), and there it is up to one step.
    assert np.all(error <= step + 1e-6), float((error - step).max())
    assert np.mean(error <= step * 0.5 + 1e-6) > 0.95
    assert (q.zero_points is None) == symmetric


def test_gptq_reconstructs_correlated_inputs_better_than_rtn():
    rng = np.random.default_rng(3)
    mixing = rng.standard_normal((96, 96)) * 0.3 + np.eye(96)
    x = rng.standard_normal((2048, 96)) @ mixing  # correlated input channels
    weight = rng.standard_normal((48, 96)).astype(np.float32)
    hessian = 2.0 * x.T @ x / len(x)
    reference = x @ weight.T
    for bits in (4, 8):
        rtn = quantize_rtn(weight, bits, 32, symmetric=False).dequantize()
        rtn_error = np.linalg.norm(x @ rtn.T - reference)
        for act_order in (False, True):
            q = quantize_gptq(weight, hessian, bits, 32, symmetric=act_order, act_order=act_order)
            assert (q.group_index is not None) == act_order
            gptq_error = np.linalg.norm(x @ q.dequantize().T - reference)
            assert gptq_error < 0.8 * rtn_error, (bits, act_order, gptq_error, rtn_error)


def test_act_order_groups_each_hold_a_block_of_inputs_in_energy_order():
    rng = np.random.default_rng(4)
    energy = rng.permutation(np.arange(1, 81, dtype=np.float64))
    x = rng.standard_normal((1024, 80)) * np.sqrt(energy)
    weight = rng.standard_normal((8, 80)).astype(np.float32)
    hessian = 2.0 * x.T @ x / len(x)
    q = quantize_gptq(weight, hessian, 4, 32, act_order=True)
    # 80 inputs in groups of 32: the 32 of most energy, the next 32, then the last 16.
    assert np.bincount(q.group_index).tolist() == [32, 32, 16]
    order = np.argsort(-np.diag(hessian), kind="stable")
    assert q.group_index[order].tolist() == (np.arange(80) // 32).tolist()


@pytest.mark.parametrize("method", ["awq", "gptq"])
def test_calibrated_methods_keep_the_model_close_at_8_bits(method, tmp_path):
    """AWQ folds its scales into the norms and the up projection; a fold on the wrong axis or
    operand (dividing instead of multiplying: 48% here), or GPTQ's error spread going astray,
    moves the logits far more than 8-bit rounding does (1-3%: GPTQ fits the calibration
    text, not these random prompts)."""
    source = EXPORTS_DIR / "optimum" / "llama-gqa" / "model.onnx"
    output = tmp_path / "quantized" / "model.onnx"
    subprocess.run([sys.executable, "-m", "llmc.quantize", str(source), "-o", str(output),
                    "--method", method, "--bits", "8", "--group-size", "16", "--quiet"],
                   check=True, env={"PYTHONPATH": str(ROOT / "python")})
    prompts = seeded_prompts(512)
    reference = reference_steps(source, prompts)[0]
    ours = reference_steps(output, prompts)[0]
    assert float(np.abs(ours - reference).max() / np.abs(reference).max()) < 0.05


@pytest.mark.parametrize("family,method,bits,group_size,symmetric",
                         [("llama-tied", "rtn", 4, 32, True), ("llama-gqa", "rtn", 4, 16, False),
                          ("phi2", "rtn", 8, 32, False), ("qwen3", "rtn", 8, 64, True),
                          ("llama-gqa", "awq", 4, 32, False), ("qwen3", "gptq", 4, 16, True),
                          ("phi2", "awq", 4, 32, True), ("qwen3-moe", "gptq", 4, 32, False)])
def test_llmc_quantize_output_runs_in_onnxruntime_and_llmc_alike(family, method, bits,
                                                                  group_size, symmetric,
                                                                  tmp_path):
    source = EXPORTS_DIR / "optimum" / family / "model.onnx"
    output = tmp_path / "quantized" / "model.onnx"
    command = [str(LLMC), "quantize", str(source), "-o", str(output), "--method", method,
               "--bits", str(bits), "--group-size", str(group_size), "--quiet"]
    subprocess.run(command + (["--symmetric"] if symmetric else []), check=True)
    model = onnx.load(str(output), load_external_data=False)
    ops = {node.op_type for node in model.graph.node}
    assert "MatMulNBits" in ops and _only_activation_matmuls(model)
    assert "GatherBlockQuantized" in ops and "Gather" not in _gathers_of_constants(model)
    assert (output.parent / "config.json").exists()
    artifact = compile_model(output, tmp_path / "model.llmc")
    llmc_model = Model(artifact, num_kv_blocks=NUM_KV_BLOCKS)
    try:
        assert compare(llmc_model, output) == ""
    finally:
        llmc_model.close()


def test_quantized_latent_attention_attends_over_its_latent(tmp_path):
    """DeepSeek-V3 quantized by `llmc quantize` (kv_b_proj, q_b_proj and the experts in
    MatMulNBits): raising moves the packed rows of the projections it reorders by head, the
    serving form widens kv_b_proj once into the per-head up-projections and caches the latent
    and the rotary key (one KV head of 16 + 8 features), and the artifact computes what
    onnxruntime computes on the quantized file."""
    output = tmp_path / "quantized" / "model.onnx"
    subprocess.run([str(LLMC), "quantize", str(EXPORTS_DIR / "optimum/deepseek-v3/model.onnx"),
                    "-o", str(output), "--bits", "4", "--quiet"], check=True)
    artifact = compile_model(output, tmp_path / "model.llmc")
    manifest = json.loads((artifact / "manifest.json").read_text())["model"]
    assert (manifest["num_kv_heads"], manifest["head_dim"]) == (1, 24)
    llmc_model = Model(artifact, num_kv_blocks=NUM_KV_BLOCKS)
    try:
        assert compare(llmc_model, output) == ""
    finally:
        llmc_model.close()


@pytest.mark.skipif(not HAS_INT8_PRODUCTS, reason="int8 activations need AVX512-VNNI or AVX2")
def test_llmc_quantize_accuracy_level_asks_for_int8_activations(tmp_path):
    """`llmc quantize --accuracy-level 4` writes MatMulNBits that ask for int8 activations,
    which `llmc compile` then takes, as on the genai builder's int4 files."""
    output = tmp_path / "quantized" / "model.onnx"
    subprocess.run([str(LLMC), "quantize", str(EXPORTS_DIR / "optimum/llama-gqa/model.onnx"),
                    "-o", str(output), "--accuracy-level", "4", "--quiet"], check=True)
    levels = [attribute.i for node in onnx.load(str(output), load_external_data=False).graph.node
              if node.op_type == "MatMulNBits"
              for attribute in node.attribute if attribute.name == "accuracy_level"]
    assert levels and set(levels) == {4}
    assert activations_of(compile_model(output, tmp_path / "model.llmc")) == "int8"


@pytest.mark.parametrize("family,group_size", [("llama-gqa", 16), ("phi2", 32)])
def test_act_order_stays_packed_and_matches_onnxruntime(family, group_size, tmp_path):
    """GPTQ act-order writes MatMulNBits with a g_idx that scatters the groups; llmc sorts
    each weight's columns by group (so it stays packed) and reorders the layer's input."""
    source = EXPORTS_DIR / "optimum" / family / "model.onnx"
    output = tmp_path / "quantized" / "model.onnx"
    subprocess.run([str(LLMC), "quantize", str(source), "-o", str(output), "--method", "gptq",
                    "--act-order", "--symmetric", "--group-size", str(group_size), "--quiet"],
                   check=True)
    model = onnx.load(str(output))
    initializers = {tensor.name: tensor for tensor in model.graph.initializer}
    g_idx = [onnx.numpy_helper.to_array(initializers[node.input[4]])
             for node in model.graph.node if node.op_type == "MatMulNBits"]
    assert g_idx and all(np.any(g != np.arange(len(g)) // group_size) for g in g_idx)
    packed = compile_model(output, tmp_path / "packed.llmc")
    widened = compile_model(output, tmp_path / "widened.llmc", f"--pass-pipeline={WIDENED_PIPELINE}")
    assert (packed / "weights.bin").stat().st_size < 0.7 * (widened / "weights.bin").stat().st_size
    for step, (ours, reference) in enumerate(zip(*ragged_steps(packed, widened))):
        assert np.array_equal(ours, reference), f"step {step}: packed logits differ"
    llmc_model = Model(packed, num_kv_blocks=NUM_KV_BLOCKS)
    try:
        assert compare(llmc_model, output) == ""
    finally:
        llmc_model.close()


@pytest.mark.parametrize("args,message", [
    (["--method", "rtn", "--act-order"], "act-order is GPTQ's: use it with method gptq"),
    (["--method", "gptq", "--act-order"],
     "act-order needs symmetric groups: onnxruntime ignores MatMulNBits' zero points when "
     "g_idx is given"),
    (["--method", "gptq", "--act-order", "--symmetric", "--bits", "8"],
     "act-order is 4-bit: onnxruntime runs MatMulNBits with g_idx at 2 and 4 bits only")])
def test_llmc_quantize_refuses_act_order_where_it_does_not_apply(args, message, tmp_path):
    result = subprocess.run([str(LLMC), "quantize", str(EXPORTS_DIR / "optimum/llama-gqa/model.onnx"),
                             "-o", str(tmp_path / "out" / "model.onnx"), *args],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"llmc quantize: error: {message}"]


def _gathers_of_constants(model: onnx.ModelProto) -> set[str]:
    """The op types of the nodes that still gather from a constant table."""
    constants = {tensor.name for tensor in model.graph.initializer}
    return {node.op_type for node in model.graph.node
            if node.op_type == "Gather" and node.input[0] in constants}


def _only_activation_matmuls(model: onnx.ModelProto) -> bool:
    """Whether every MatMul left multiplies two activations (attention's)."""
    constants = {tensor.name for tensor in model.graph.initializer}
    return all(not set(node.input) & constants
               for node in model.graph.node if node.op_type == "MatMul")


def test_llmc_quantize_refuses_a_file_that_is_not_onnx(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a protobuf \xff\xff")
    result = subprocess.run([str(LLMC), "quantize", str(bad), "-o",
                             str(tmp_path / "out" / "model.onnx")], capture_output=True,
                            text=True)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmc quantize: error: cannot read"), lines
