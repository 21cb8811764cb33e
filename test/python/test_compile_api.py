"""llmc.compile: `llmc compile` from Python (python/llmc/compiler.py).

IR text back when no output is given, the artifact directory otherwise; -O levels; passes at
one extension point (a pipeline string or a list) or at several (a dict); plugins, with the
example plugin built by test_custom_fusion_plugin.build_plugin (the same build when both
modules run in one session); CompileError carrying llmc's one-line message; ValueError for
bad arguments before llmc runs; find_llmc's LLMC_BIN.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))  # as PYTHONPATH=python (scripts/test.sh) does

import llmc  # noqa: E402
from llmc.compiler import LlmcNotFoundError, find_llmc  # noqa: E402
from llmc.testing.fixtures import write_fixture  # noqa: E402

import test_custom_fusion_plugin as plugin_tests  # noqa: E402

LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
PASS = plugin_tests.PASS


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return write_fixture("optimum", "gqa", {}, tmp_path_factory.mktemp("compile_api"))


@pytest.fixture(autouse=True)
def this_build(monkeypatch):
    """llmc.compile runs the build under test, as the other tests do."""
    monkeypatch.setenv("LLMC_BIN", str(LLMC))


def test_ir_text_is_returned_without_output(model):
    ir = llmc.compile(model, emit="llm-ir")
    assert isinstance(ir, str) and "llm.attention" in ir
    step = llmc.compile(model, emit="step-ir", opt_level=0)
    assert "llm.paged_attention" in step and "llm.split %" not in step


def test_ir_file_and_artifact_paths_are_returned(model, tmp_path):
    path = llmc.compile(model, tmp_path / "step.mlir", emit="step-ir")
    assert path == tmp_path / "step.mlir" and "llm.paged_attention" in path.read_text()
    artifact = llmc.compile(model, tmp_path / "model.llmc")
    assert artifact == tmp_path / "model.llmc"
    assert (artifact / "manifest.json").is_file() and (artifact / "kernels.so").is_file()


def test_opt_levels(model):
    unfused = llmc.compile(model, emit="step-ir", opt_level=0)
    fused = llmc.compile(model, emit="step-ir", opt_level=2)
    assert "llm.fused_linear" not in unfused and "llm.fused_linear" in fused
    with pytest.raises(llmc.CompileError, match=r"unknown optimization level -O7") as error:
        llmc.compile(model, emit="step-ir", opt_level=7)
    assert error.value.returncode == 1
    with pytest.raises(ValueError, match="opt_level"):
        llmc.compile(model, emit="step-ir", opt_level="2")


def test_passes_at_extension_points(model, tmp_path):
    assert "llm.paged_attention" in llmc.compile(model, emit="step-ir", passes="func.func(cse)")
    assert "llm.paged_attention" in llmc.compile(
        model, emit="step-ir", passes=["func.func(cse)", "canonicalize"],
        extension_point="before-fusion")
    assert "llm.attention" in llmc.compile(
        model, emit="llm-ir", passes={"after-raising": ["func.func(canonicalize)"]})
    artifact = llmc.compile(model, tmp_path / "model.llmc",
                            passes={"after-raising": "func.func(canonicalize)",
                                    "before-fusion": ["cse"],
                                    "before-lowering": ["func.func(cse)"]})
    assert (artifact / "manifest.json").is_file()


def test_errors_carry_llmcs_message(model, tmp_path):
    with pytest.raises(llmc.CompileError) as error:
        llmc.compile(model, emit="step-ir", passes="func.func(no-such-pass)")
    assert str(error.value) == ("llmc: error: --insert-passes=before-lowering: 'no-such-pass' "
                                "does not refer to a registered pass or pass pipeline")
    assert error.value.returncode == 1 and "--insert-passes=" in " ".join(error.value.command)
    with pytest.raises(llmc.CompileError, match="only after-raising applies"):
        llmc.compile(model, emit="llm-ir", passes="cse")
    with pytest.raises(llmc.CompileError, match="cannot load pass plugin"):
        llmc.compile(model, tmp_path / "x.llmc", plugins=[tmp_path / "missing.so"])
    with pytest.raises(llmc.CompileError, match="no-such-model.onnx"):
        llmc.compile(tmp_path / "no-such-model.onnx", emit="llm-ir")


def test_bad_arguments_are_value_errors(model, tmp_path):
    with pytest.raises(ValueError, match="writes a directory"):
        llmc.compile(model)
    with pytest.raises(ValueError, match="unknown emit kind"):
        llmc.compile(model, emit="tokens")
    with pytest.raises(ValueError, match="unknown extension point 'middle'"):
        llmc.compile(model, emit="step-ir", passes={"middle": "cse"})
    with pytest.raises(ValueError, match="unknown extension point 'middle'"):
        llmc.compile(model, emit="step-ir", passes="cse", extension_point="middle")


def test_find_llmc(monkeypatch, tmp_path):
    assert find_llmc() == LLMC
    monkeypatch.setenv("LLMC_BIN", str(tmp_path / "nowhere" / "llmc"))
    with pytest.raises(LlmcNotFoundError, match="LLMC_BIN"):
        find_llmc()
    monkeypatch.delenv("LLMC_BIN")
    monkeypatch.setenv("LLMC_BUILD_DIR", str(tmp_path / "no-build"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LlmcNotFoundError, match="llmc executable not found"):
        find_llmc()


def test_plugin_pass_by_name(tmp_path_factory, tmp_path):
    """The example plugin's pass through llmc.compile: passes names it, plugins loads it."""
    plugin = plugin_tests.build_plugin(plugin_tests.plugin_root(tmp_path_factory))
    model = plugin_tests.write_quick_gelu_model(
        plugin_tests.plugin_root(tmp_path_factory) / "quick-gelu" / "model.onnx")
    plain = llmc.compile(model, emit="step-ir")
    fused = llmc.compile(model, emit="step-ir", plugins=[plugin.library],
                         passes=[f"func.func({PASS})"])
    assert "llm.elementwise" in plain and "llm.elementwise" not in fused
    gated = [op for op in plugin_tests.ops_named(fused, "llm.fused_linear")
             if plugin_tests.is_gated(op)]
    assert len(gated) == plugin_tests.NUM_LAYERS
    artifact = llmc.compile(model, tmp_path / "fused.llmc", plugins=[plugin.library],
                            passes={"before-lowering": f"func.func({PASS})"}, opt_level=3)
    assert (artifact / "manifest.json").is_file()
    with pytest.raises(llmc.CompileError, match=f"'{PASS}' does not refer to a registered pass"):
        llmc.compile(model, emit="step-ir", passes=[f"func.func({PASS})"])
