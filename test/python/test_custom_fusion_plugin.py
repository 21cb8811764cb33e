"""An out-of-tree fusion pass plugin, end to end: examples/custom-fusion built against an
installed llmc, loaded by llmc and llmc-opt.

Once per session: `cmake --install` of the build tree under test ($LLMC_BUILD_DIR or build/)
into a temporary prefix; the example configured with find_package(LLMC) against that prefix
and built with ninja (LlmcExampleFusion.so); the QuickGELU-gated Llama fixture written by
examples/custom-fusion/quick_gelu_model.py. Then, with the installed llmc:

  * --emit=step-ir without the plugin keeps the MLP's llm.elementwise (the -O2 chain of
    QuickGELU and the product, over the two halves of the gate/up llm.split); with
    --load-pass-plugin and --insert-passes=before-lowering=func.func(<pass>) each layer has a
    gated llm.fused_linear whose epilogue holds the sigmoid arithmetic, and no elementwise op
    or gate/up split is left;
  * the same result through --pass-pipeline (the default pipeline spelled out with the pass)
    and through llmc-opt --load-pass-plugin on the step IR;
  * both artifacts' logits match onnxruntime's (prefill and decode, relative error < 1e-4)
    and their greedy tokens agree with each other and with onnxruntime's;
  * errors are one `llmc: error:` line and exit 1: a missing or bad plugin, an unknown
    extension point, a misspelled pass, the plugin's pass without the plugin, the pass not
    nested in func.func.

Needs cmake, ninja and lit, which scripts/setup.sh installs.
test_compile_api.py reuses the plugin built here (build_plugin).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))  # as PYTHONPATH=python (scripts/test.sh) does
BUILD = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build"))
EXAMPLE = ROOT / "examples" / "custom-fusion"
PASS = "llmc-example-fuse-gated-activation"
INSERT = f"--insert-passes=before-lowering=func.func({PASS})"
NUM_LAYERS = 2  # the gqa variant's
MAX_REL_ERROR = 1e-4
DECODE_STEPS = 8
GREEDY_STEPS = 24
PROMPTS = [[5, 17, 230, 4, 99, 12, 7], [301, 2, 45], [8, 150, 150, 62, 19, 33, 401, 3, 77, 250, 11]]



def run(command, **kwargs) -> subprocess.CompletedProcess:
    """Run `command`; on failure, fail the test with its output."""
    command = [str(part) for part in command]
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed ({result.returncode}):\n"
                    f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


@dataclass
class Plugin:
    prefix: Path  # the llmc install
    library: Path  # LlmcExampleFusion.so
    llmc: Path  # the installed llmc and llmc-opt
    llmc_opt: Path


_PLUGINS: dict[Path, Plugin] = {}


def build_plugin(root: Path) -> Plugin:
    """Install the build tree into root/prefix and build the example plugin against it, in
    root/plugin-build (once per root and process)."""
    if root in _PLUGINS:
        return _PLUGINS[root]
    prefix, build = root / "prefix", root / "plugin-build"
    run(["cmake", "--install", BUILD, "--prefix", prefix])
    config = prefix / "lib" / "cmake" / "llmc" / "LLMCConfig.cmake"
    assert config.is_file(), f"cmake --install wrote no {config}"
    for header in ("dialects/llm/LlmDialect.h", "dialects/llm/LlmOps.h.inc",
                   "llmc/Support/Debug.h"):
        assert (prefix / "include" / "llmc" / header).is_file() or \
            (prefix / "include" / header).is_file(), f"{header} is not installed"
    run(["cmake", "-S", EXAMPLE, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         f"-DCMAKE_PREFIX_PATH={prefix}"])
    run(["cmake", "--build", build])
    plugin = Plugin(prefix, build / "LlmcExampleFusion.so", prefix / "bin" / "llmc",
                    prefix / "bin" / "llmc-opt")
    assert plugin.library.is_file(), f"the build made no {plugin.library}"
    _PLUGINS[root] = plugin
    return plugin


def plugin_root(tmp_path_factory) -> Path:
    """One directory per session for the install and the plugin build, whichever test module
    asks first."""
    return tmp_path_factory.getbasetemp() / "custom-fusion-plugin"


def write_quick_gelu_model(path: Path) -> Path:
    """The fixture, written by the example's own script (as a user would run it)."""
    if not path.exists():
        run([sys.executable, EXAMPLE / "quick_gelu_model.py", "-o", path],
            env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    return path


@pytest.fixture(scope="session")
def plugin(tmp_path_factory) -> Plugin:
    return build_plugin(plugin_root(tmp_path_factory))


@pytest.fixture(scope="session")
def model(tmp_path_factory) -> Path:
    return write_quick_gelu_model(plugin_root(tmp_path_factory) / "quick-gelu" / "model.onnx")


def compile_ir(llmc: Path, model: Path, *args: str, emit: str = "step-ir") -> str:
    return run([llmc, "compile", model, f"--emit={emit}", "--quiet", "-o", "-", *args]).stdout


def ops_named(ir: str, name: str) -> list[str]:
    """The text of each `name` op in printed IR, with its regions (by brace depth from the
    op's line)."""
    lines = ir.splitlines()
    found = []
    for index, line in enumerate(lines):
        if not re.search(rf"(=|^)\s*{re.escape(name)}\b(?![.\w])", line):
            continue
        depth, text = 0, []
        for following in lines[index:]:
            text.append(following)
            depth += following.count("{") - following.count("}")
            # Attribute dicts open and close on the op's line; a region leaves depth > 0.
            if depth <= 0:
                break
        found.append("\n".join(text))
    return found


def is_gated(op_text: str) -> bool:
    first_line = op_text.splitlines()[0]
    return re.search(r"\bgated\b", first_line) is not None


def sigmoid_math(text: str) -> bool:
    """Whether a scalar body computes QuickGELU's sigmoid: an exp and the 1.702 factor."""
    return (("math.exp" in text or "math.tanh" in text)
            and re.search(r"1\.70[12]", text) is not None)


# ---- the IR ---------------------------------------------------------------------------------


def test_without_the_plugin_the_gated_activation_is_an_elementwise_op(plugin, model):
    ir = compile_ir(plugin.llmc, model)
    elementwise = ops_named(ir, "llm.elementwise")
    assert len(elementwise) >= NUM_LAYERS, f"expected the MLP's llm.elementwise:\n{ir}"
    assert sum(sigmoid_math(op) for op in elementwise) == NUM_LAYERS, \
        "expected one elementwise op per layer with the QuickGELU arithmetic:\n" + \
        "\n".join(elementwise)
    assert not any(is_gated(op) for op in ops_named(ir, "llm.fused_linear"))


def test_the_plugin_fuses_the_gated_activation_into_the_gemm(plugin, model):
    before = compile_ir(plugin.llmc, model)
    after = compile_ir(plugin.llmc, model, f"--load-pass-plugin={plugin.library}", INSERT)
    gated = [op for op in ops_named(after, "llm.fused_linear") if is_gated(op)]
    assert len(gated) == NUM_LAYERS, f"expected one gated llm.fused_linear per layer:\n{after}"
    for op in gated:
        assert sigmoid_math(op), f"the epilogue lacks the QuickGELU arithmetic:\n{op}"
        assert "llm.yield" in op
    assert not ops_named(after, "llm.elementwise"), f"an llm.elementwise is left:\n{after}"
    # The gate/up split is gone (the Q/K/V split stays); so is the [tokens, 2 * 344] product.
    assert len(ops_named(after, "llm.split")) == len(ops_named(before, "llm.split")) - NUM_LAYERS
    assert "tensor<?x688xf32>" in before and "tensor<?x688xf32>" not in after


def test_the_same_fusion_through_pass_pipeline_and_llmc_opt(plugin, model, tmp_path):
    inserted = compile_ir(plugin.llmc, model, f"--load-pass-plugin={plugin.library}", INSERT)
    # The default pipeline spelled out, with the plugin's pass before memory planning.
    pipeline = ("builtin.module(llmc-raise,"
                "func.func(llm-gqa-rewrite,canonicalize,llm-kv-cache-paging,"
                "llm-ragged-batching,canonicalize),"
                f"llmc-fuse{{opt-level=2}},func.func({PASS},llm-plan-memory))")
    spelled = compile_ir(plugin.llmc, model, f"--load-pass-plugin={plugin.library}",
                         f"--pass-pipeline={pipeline}")
    assert len([op for op in ops_named(spelled, "llm.fused_linear") if is_gated(op)]) == \
        NUM_LAYERS, spelled
    assert not ops_named(spelled, "llm.elementwise")
    assert len(ops_named(spelled, "llm.fused_linear")) == \
        len(ops_named(inserted, "llm.fused_linear"))

    # llmc-opt on the step IR (the fusions done, the plugin's pass not), as a lit test runs it.
    step = tmp_path / "step.mlir"
    step.write_text(compile_ir(plugin.llmc, model, "--insert-passes=before-lowering=cse"))
    fused = run([plugin.llmc_opt, step, f"--load-pass-plugin={plugin.library}",
                 f"--pass-pipeline=builtin.module(func.func({PASS}))"]).stdout
    assert len([op for op in ops_named(fused, "llm.fused_linear") if is_gated(op)]) == NUM_LAYERS
    assert not ops_named(fused, "llm.elementwise")


def test_debug_only_explains_what_the_pass_did_not_match(plugin, model):
    """llmc's -debug-only reaches the plugin's pattern: at -O1 (no elementwise fusion) the
    QuickGELU chain is several ops, which the pass explains it does not fuse."""
    result = run([plugin.llmc, "compile", model, "--emit=step-ir", "--quiet", "-O1", "-o",
                  os.devnull, f"--load-pass-plugin={plugin.library}", INSERT,
                  f"-debug-only={PASS}", "--mlir-disable-threading"])
    assert f"[{PASS}]" in result.stderr and "no match:" in result.stderr, result.stderr


def test_example_lit_tests(plugin):
    """The example's own lit test (examples/custom-fusion/test), as its README runs it."""
    lit = Path(sys.executable).parent / "lit"
    assert lit.exists(), f"{lit} is missing: scripts/setup.sh installs lit into the venv"
    run([lit, "-sv", EXAMPLE / "test", f"--param=llmc_opt={plugin.llmc_opt}",
         f"--param=plugin={plugin.library}"])


# ---- the artifacts ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def artifacts(plugin, model, tmp_path_factory):
    from llmc.runtime import Model

    directory = tmp_path_factory.mktemp("custom_fusion_artifacts")
    plain, fused = directory / "plain.llmc", directory / "fused.llmc"
    run([plugin.llmc, "compile", model, "--quiet", "-o", plain])
    run([plugin.llmc, "compile", model, "--quiet", "-o", fused,
         f"--load-pass-plugin={plugin.library}", INSERT])
    models = {"plain": Model(plain, num_kv_blocks=64), "fused": Model(fused, num_kv_blocks=64)}
    yield models
    for opened in models.values():
        opened.close()


@pytest.fixture(scope="module")
def reference(model):
    """onnxruntime's greedy loop over PROMPTS: the [N, vocab] logits of each step."""
    from llmc.testing.ort_reference import OrtDecoder

    decoder = OrtDecoder(model)
    logits, generation = decoder.prefill(PROMPTS)
    steps = [logits[np.arange(len(PROMPTS)), generation.prompts.last_positions()]]
    while len(steps) < GREEDY_STEPS:
        steps.append(decoder.decode(generation, steps[-1].argmax(axis=-1)))
    return steps


def relative_error(ours: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(ours - ref).max() / np.abs(ref).max())


@pytest.mark.parametrize("which", ["plain", "fused"])
def test_logits_match_onnxruntime(artifacts, reference, which):
    from llmc.testing.paged import PagedRunner

    runner = PagedRunner(artifacts[which])
    for step in range(DECODE_STEPS + 1):
        ours = (runner.prefill(PROMPTS) if step == 0
                else runner.decode(reference[step - 1].argmax(axis=-1)))
        error = relative_error(ours, reference[step])
        assert error < MAX_REL_ERROR, f"{which}: relative error {error:.3g} at step {step}"
    runner.release()


def test_greedy_tokens_agree(artifacts, reference):
    expected = np.stack([step.argmax(axis=-1) for step in reference], axis=1).tolist()
    plain = artifacts["plain"].generate(PROMPTS, max_tokens=GREEDY_STEPS)
    fused = artifacts["fused"].generate(PROMPTS, max_tokens=GREEDY_STEPS)
    assert fused == plain, "the fused artifact's greedy tokens differ from the unfused one's"
    assert plain == expected, "greedy tokens differ from onnxruntime's"


# ---- errors -----------------------------------------------------------------------------------


def compile_error(llmc: Path, model: Path, *args: str, tmp_path: Path) -> str:
    """llmc compile's stderr, checked to be one `llmc: error:` line with exit status 1."""
    result = subprocess.run([str(llmc), "compile", str(model), "--quiet", "-o",
                             str(tmp_path / "out.llmc"), *args], capture_output=True, text=True)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, f"exit {result.returncode}: {result.stderr}"
    assert len(lines) == 1 and lines[0].startswith("llmc: error: "), result.stderr
    return lines[0]


def test_errors_are_one_line(plugin, model, tmp_path):
    load = f"--load-pass-plugin={plugin.library}"
    message = compile_error(plugin.llmc, model, f"--load-pass-plugin={tmp_path}/missing.so",
                            INSERT, tmp_path=tmp_path)
    assert "cannot load pass plugin" in message and "missing.so" in message
    not_a_plugin = tmp_path / "not-a-plugin.so"
    not_a_plugin.write_text("not an ELF file\n" * 100)
    message = compile_error(plugin.llmc, model, f"--load-pass-plugin={not_a_plugin}",
                            tmp_path=tmp_path)
    assert message == (f"llmc: error: cannot load pass plugin '{not_a_plugin}': "
                       "invalid ELF header")
    libm = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6",
                             "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6")
                 if Path(p).exists()), None)
    if libm:
        message = compile_error(plugin.llmc, model, f"--load-pass-plugin={libm}",
                                tmp_path=tmp_path)
        assert "not an MLIR pass plugin" in message
    message = compile_error(plugin.llmc, model, load,
                            f"--insert-passes=before-everything=func.func({PASS})",
                            tmp_path=tmp_path)
    assert "unknown extension point 'before-everything'" in message
    assert "after-raising, before-fusion, before-lowering" in message
    message = compile_error(plugin.llmc, model, load,
                            "--insert-passes=before-lowering=func.func(llmc-example-fuse-gated)",
                            tmp_path=tmp_path)
    assert "'llmc-example-fuse-gated' does not refer to a registered pass" in message
    message = compile_error(plugin.llmc, model, INSERT, tmp_path=tmp_path)
    assert f"'{PASS}' does not refer to a registered pass" in message
    message = compile_error(plugin.llmc, model, load, f"--insert-passes=before-lowering={PASS}",
                            tmp_path=tmp_path)
    assert "did you intend to nest?" in message
    message = compile_error(plugin.llmc, model, load, INSERT,
                            f"--pass-pipeline=builtin.module(func.func({PASS}))",
                            tmp_path=tmp_path)
    assert "give one or the other" in message
