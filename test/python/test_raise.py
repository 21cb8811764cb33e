"""Every fixture of the builder, and the default model, raise to llm ops with
no onnx op left (llmc compile exits non-zero when one is left)."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from llmc.testing.fixtures import FIXTURES, fixture_name, write_fixture
from llmc.testing.server import default_model_dir

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"

# Per decoder layer, the ops every style raises to (repeat_kv only where the
# export widens K/V itself; rope/position ops differ by style).
LAYER_OPS = {"llm.attention": 1, "llm.merge_heads": 1, "llm.swiglu": 1, "llm.rms_norm": 2}


def compile_to_llm(model: Path) -> str:
    result = subprocess.run([str(LLMC), "compile", str(model), "--emit=llm-ir", "--quiet",
                             "-o", "-"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def count_ops(ir: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in re.findall(r"= ((?:llm|onnx)\.[A-Za-z_.]+)", ir):
        counts[op] = counts.get(op, 0) + 1
    return counts


@pytest.mark.parametrize("fixture", FIXTURES, ids=[fixture_name(*f) for f in FIXTURES])
def test_fixture_raises_completely(fixture, tmp_path):
    model = write_fixture(*fixture, tmp_path)
    counts = count_ops(compile_to_llm(model))
    left = {op: n for op, n in counts.items() if op.startswith("onnx.")}
    assert left == {}
    layers = 2
    for op, per_layer in LAYER_OPS.items():
        assert counts.get(op, 0) >= per_layer * layers, (op, counts)
    assert counts["llm.attention"] == layers
    assert counts["llm.embedding"] == 1 and counts["llm.logits"] == 1


def test_default_model_raises_completely():
    counts = count_ops(compile_to_llm(default_model_dir() / "model.onnx"))
    assert counts["llm.attention"] == 30
    assert counts["llm.rms_norm"] == 61
    assert counts["llm.linear"] == 30 * 7
    assert counts["llm.logits"] == 1
    assert not [op for op in counts if op.startswith("onnx.")]
