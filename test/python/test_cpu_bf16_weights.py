"""bf16 weight storage on the CPU (`llmc compile --dtype bf16`).

The generated matmul's f32 weights (linear layers and the logits head) and the embedding
table are stored in weights.bin as bf16, rounded to nearest even, and widened to f32 as they
are loaded; the activations and the arithmetic stay f32. So the artifact must compute
exactly what the f32 artifact computes on the same model with those weights rounded. Checked
on a real export (optimum's Llama with GQA), whose MatMul weights and embedding table a copy
of the file holds rounded with numpy:

  * the bf16 artifact's logits equal, bit for bit, those of the f32 artifact of the rounded
    file over a ragged batch of prefills and decodes, and match onnxruntime on the rounded
    file;
  * they differ from the unrounded model's by about bf16's rounding, not more;
  * weights.bin stores those weights in half the bytes, and the manifest says bf16;
  * a --dtype the CPU does not store and --dtype bf16 with --matmul blas are refused.

With --bf16-activations each matmul input row is rounded to bf16 too and AVX512_BF16 adds
products of bf16 pairs: not exact, so its logits must stay within a few percent of the bf16
weights' and differ from them, and a prompt's logits must be bit-identical alone and in a
batch. It needs --dtype bf16. Where the host has AMX the products over panels take AMX tiles
(TDPBF16PS, 16 rows at a time, padded) by default, which the manifest says: their logits
agree with AVX512_BF16's (--bf16-products=avx512-bf16) to about f32's rounding of the sums,
and are as batch-invariant; a host without AMX refuses --bf16-products=amx.
"""
from __future__ import annotations

import json
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from llmc.runtime import Model
from llmc.testing.ort_reference import OrtDecoder
from llmc.testing.paged import PagedRunner
from test_exporters import EXPORTS_DIR, LLMC, NUM_KV_BLOCKS, seeded_prompts
from test_quantized_cpu import compile_model, ragged_steps

EXPORT = EXPORTS_DIR / "optimum/llama-gqa/model.onnx"
MAX_REL_ERROR = 1e-4
CPU_FLAGS = open("/proc/cpuinfo").read()
HAS_AVX512_BF16 = "avx512_bf16" in CPU_FLAGS
HAS_AMX_BF16 = "amx_bf16" in CPU_FLAGS
needs_avx512_bf16 = pytest.mark.skipif(not HAS_AVX512_BF16, reason="the CPU has no AVX512_BF16")
needs_amx_bf16 = pytest.mark.skipif(not (HAS_AVX512_BF16 and HAS_AMX_BF16),
                                    reason="the CPU has no AMX-BF16")


def rounded_to_bf16(values: np.ndarray) -> np.ndarray:
    """f32 values rounded to bf16 (to nearest, ties to even) and back to f32."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def stored_weight_names(model: onnx.ModelProto) -> set[str]:
    """The initializers that `--dtype` stores in a half type: the weights MatMul nodes take
    (through Identity nodes) and the tables Gather nodes read rows of."""
    initializers = {tensor.name: tensor for tensor in model.graph.initializer}
    identities = {node.output[0]: node.input[0] for node in model.graph.node
                  if node.op_type == "Identity"}
    names = set()
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gather"):
            continue
        name = node.input[1 if node.op_type == "MatMul" else 0]
        while name in identities:
            name = identities[name]
        tensor = initializers.get(name)
        if tensor is not None and (node.op_type == "MatMul" or len(tensor.dims) == 2):
            names.add(name)
    return names


def write_rounded_copy(source, destination, rounded_to=None) -> int:
    """Writes `source` with every stored weight initializer rounded (to bf16 unless
    `rounded_to` says otherwise); returns how many it rounded."""
    rounded_to = rounded_to or rounded_to_bf16
    model = onnx.load(source)
    initializers = {tensor.name: tensor for tensor in model.graph.initializer}
    names = stored_weight_names(model)
    for name in names:
        tensor = initializers[name]
        tensor.CopyFrom(numpy_helper.from_array(rounded_to(numpy_helper.to_array(tensor)), name))
    onnx.save(model, destination)
    return len(names)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bf16")
    rounded = directory / "rounded.onnx"
    # 2 layers of 7, the head and the embedding table.
    assert write_rounded_copy(EXPORT, rounded) == 2 * 7 + 2
    products = (compile_model(EXPORT, directory / "products.llmc", "--dtype", "bf16",
                              "--bf16-activations") if HAS_AVX512_BF16 else None)
    vector_products = (compile_model(EXPORT, directory / "vector-products.llmc", "--dtype", "bf16",
                                     "--bf16-activations", "--bf16-products=avx512-bf16")
                       if HAS_AVX512_BF16 else None)
    return {
        "products": products,
        "vector products": vector_products,
        "bf16": compile_model(EXPORT, directory / "bf16.llmc", "--dtype", "bf16"),
        "f32": compile_model(EXPORT, directory / "f32.llmc"),
        "rounded": compile_model(rounded, directory / "rounded.llmc"),
        "rounded.onnx": rounded,
    }


def test_bf16_weights_compute_the_rounded_model_exactly(artifacts):
    ours, rounded = ragged_steps(artifacts["bf16"], artifacts["rounded"])
    for step, (mine, reference) in enumerate(zip(ours, rounded)):
        assert np.array_equal(mine, reference), (
            f"step {step}: max |bf16 - rounded f32| {np.abs(mine - reference).max():.3g}")


def test_bf16_weights_match_onnxruntime_on_the_rounded_file(artifacts):
    ours, _ = ragged_steps(artifacts["bf16"], artifacts["rounded"])
    prompts = seeded_prompts(512)
    decoder = OrtDecoder(artifacts["rounded.onnx"])
    logits, generation = decoder.prefill(prompts)
    reference = [logits[np.arange(len(prompts)), generation.prompts.last_positions()]]
    for step in range(1, 4):
        reference.append(decoder.decode(generation, ours[step - 1].argmax(axis=-1)))
    for step, (mine, theirs) in enumerate(zip(ours, reference)):
        error = float(np.abs(mine - theirs).max() / np.abs(theirs).max())
        assert error < MAX_REL_ERROR, f"step {step}: relative error {error:.3g}"


def test_bf16_weights_stay_close_to_f32(artifacts):
    ours, f32 = ragged_steps(artifacts["bf16"], artifacts["f32"])
    for step, (mine, reference) in enumerate(zip(ours, f32)):
        error = float(np.abs(mine - reference).max() / np.abs(reference).max())
        assert 0 < error < 0.05, f"step {step}: relative error {error:.3g}"


def test_bf16_weights_take_half_the_bytes(artifacts):
    manifest = json.loads((artifacts["bf16"] / "manifest.json").read_text())
    f32_manifest = json.loads((artifacts["f32"] / "manifest.json").read_text())
    stored = [entry for entry in manifest["weights"]["tensors"] if entry["dtype"] == "bf16"]
    assert len(stored) >= 8
    for entry in stored:
        assert entry["nbytes"] == 2 * int(np.prod(entry["shape"]))
    bf16_bytes = (artifacts["bf16"] / "weights.bin").stat().st_size
    f32_bytes = (artifacts["f32"] / "weights.bin").stat().st_size
    assert bf16_bytes < 0.75 * f32_bytes, f"{bf16_bytes} vs {f32_bytes} bytes"
    assert not any(entry["dtype"] == "bf16" for entry in f32_manifest["weights"]["tensors"])


@needs_avx512_bf16
def test_bf16_products_stay_close_to_bf16_weights(artifacts):
    ours, widened = ragged_steps(artifacts["products"], artifacts["bf16"])
    for step, (mine, reference) in enumerate(zip(ours, widened)):
        error = float(np.abs(mine - reference).max() / np.abs(reference).max())
        assert 0 < error < 0.05, f"step {step}: relative error {error:.3g}"


@needs_avx512_bf16
def test_bf16_products_take_amx_tiles_where_the_host_has_them(artifacts):
    def products(artifact):
        return json.loads((artifact / "manifest.json").read_text())["step"]["bf16_products"]
    assert products(artifacts["products"]) == ("amx" if HAS_AMX_BF16 else "avx512-bf16")
    assert products(artifacts["vector products"]) == "avx512-bf16"
    assert "bf16_products" not in json.loads(
        (artifacts["bf16"] / "manifest.json").read_text())["step"]


@needs_avx512_bf16
@pytest.mark.parametrize("products,said", [
    ([], "bf16 products on AMX tiles" if HAS_AMX_BF16 else "bf16 products with AVX512_BF16"),
    (["--bf16-products=avx512-bf16"], "bf16 products with AVX512_BF16"),
])
def test_the_compile_says_how_bf16_products_run(products, said, tmp_path):
    result = subprocess.run([str(LLMC), "compile", str(EXPORT), "-o", str(tmp_path / "x.llmc"),
                             "--dtype", "bf16", "--bf16-activations", *products],
                            capture_output=True, text=True, check=True)
    assert said in result.stderr.splitlines()[-1]


@needs_amx_bf16
def test_amx_products_agree_with_avx512_products(artifacts):
    tiles, vectors = ragged_steps(artifacts["products"], artifacts["vector products"])
    for step, (mine, reference) in enumerate(zip(tiles, vectors)):
        error = float(np.abs(mine - reference).max() / np.abs(reference).max())
        assert error < 1e-5, f"step {step}: relative error {error:.3g}"
        assert np.array_equal(mine.argmax(axis=-1), reference.argmax(axis=-1)), f"step {step}"


@needs_avx512_bf16
@pytest.mark.parametrize("products", ["products", "vector products"])
def test_bf16_products_do_not_depend_on_the_batch(artifacts, products):
    model = Model(artifacts[products], num_kv_blocks=NUM_KV_BLOCKS)
    try:
        prompts = seeded_prompts(model.vocab_size)
        _, together = PagedRunner(model).greedy(prompts, 4)
        for seq, prompt in enumerate(prompts):
            _, alone = PagedRunner(model).greedy([prompt], 4)
            for step, (mine, batched) in enumerate(zip(alone, together)):
                assert np.array_equal(mine[0], batched[seq]), f"prompt {seq}, step {step}"
    finally:
        model.close()


@pytest.mark.parametrize("args,message", [
    (["--dtype", "f64"], "the CPU target stores weights as f32, bf16 or f16"),
    (["--dtype", "bf16", "--matmul", "blas"], "--dtype bf16 needs the generated matmul"),
    (["--bf16-activations"], "--bf16-activations multiplies the CPU target's bf16 weights"),
    (["--dtype", "bf16", "--bf16-products=amx"],
     "--bf16-products applies with --bf16-activations"),
    (["--dtype", "bf16", "--bf16-activations", "--bf16-products=tiles"],
     "unknown --bf16-products 'tiles': use auto, amx or avx512-bf16"),
    pytest.param(["--dtype", "bf16", "--bf16-activations", "--bf16-products=amx"],
                 "--bf16-products=amx needs a CPU with AMX-BF16",
                 marks=pytest.mark.skipif(HAS_AMX_BF16, reason="the CPU has AMX-BF16")),
])
def test_unsupported_cpu_dtypes_are_refused(args, message, tmp_path):
    result = subprocess.run([str(LLMC), "compile", str(EXPORT), "-o", str(tmp_path / "x.llmc"),
                             "--quiet", *args], capture_output=True, text=True)
    assert result.returncode != 0
    assert message in result.stderr
    assert not (tmp_path / "x.llmc").exists()
