"""The kernel cache of `llmc compile` for the CPU (include/llmc/Target/CodeUnitCache.h).

The kernels are compiled as code units, each named after its content and kept in
$LLMC_CACHE_DIR/kernels. A second compile takes every unit from there and writes the same
kernels.so; another fusion level of the same model shares the kernels it has in common; a
damaged entry is compiled again; a cache that cannot be written is a warning, not a failure;
compiles running at once share a directory; another llmc build does not read what this one
wrote; --no-kernel-cache neither reads nor writes it.
The model is optimum's Llama export (test/exporters/optimum/llama-gqa).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))  # as PYTHONPATH=python (scripts/test.sh) does

from llmc.runtime import Model  # noqa: E402

LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
EXPORT = ROOT / "test" / "exporters" / "optimum" / "llama-gqa" / "model.onnx"
SUMMARY = re.compile(r"(\d+) code units, (\d+) from the kernel cache")


def compile_model(output: Path, cache: Path, *args: str) -> tuple[int, int, str]:
    """Compiles EXPORT with `cache` as LLMC_CACHE_DIR; returns its code units, how many came
    from the cache, and stderr."""
    result = subprocess.run([str(LLMC), "compile", str(EXPORT), "-o", str(output), *args],
                            env={**os.environ, "LLMC_CACHE_DIR": str(cache)},
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    units, cached = map(int, SUMMARY.search(result.stderr).groups())
    return units, cached, result.stderr


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "kernels").glob("*"))


def prefill_logits(artifact: Path) -> np.ndarray:
    model = Model(artifact, num_threads=1)
    prompt = [5, 17, 301, 42, 9, 77]
    table = np.arange(1, dtype=np.int32)[None, :]
    return model.step(prompt, np.arange(len(prompt)), [0, len(prompt)], [len(prompt)], table,
                      np.arange(len(prompt)), [len(prompt) - 1])


@pytest.fixture(scope="module")
def uncached(tmp_path_factory) -> tuple[Path, np.ndarray]:
    """The export compiled with --no-kernel-cache, and its logits."""
    directory = tmp_path_factory.mktemp("uncached")
    cache = directory / "cache"
    units, cached, _ = compile_model(directory / "model.llmc", cache, "--no-kernel-cache")
    assert cached == 0 and units > 2
    assert not cache.exists(), "--no-kernel-cache wrote the cache"
    return directory / "model.llmc", prefill_logits(directory / "model.llmc")


def test_a_second_compile_takes_every_unit_from_the_cache(tmp_path, uncached):
    cache = tmp_path / "cache"
    units, cached, _ = compile_model(tmp_path / "first.llmc", cache)
    assert cached == 0
    assert len(entries(cache)) == units and all(p.suffix == ".o" for p in entries(cache))
    again, cached, _ = compile_model(tmp_path / "second.llmc", cache)
    assert (again, cached) == (units, units)
    first = (tmp_path / "first.llmc" / "kernels.so").read_bytes()
    assert (tmp_path / "second.llmc" / "kernels.so").read_bytes() == first
    artifact, logits = uncached
    assert (artifact / "kernels.so").read_bytes() == first
    np.testing.assert_array_equal(prefill_logits(tmp_path / "second.llmc"), logits)


def test_another_fusion_level_shares_the_kernels_it_has_in_common(tmp_path, uncached):
    cache = tmp_path / "cache"
    compile_model(tmp_path / "o0.llmc", cache, "-O0")
    units, cached, _ = compile_model(tmp_path / "o2.llmc", cache, "-O2")
    assert 0 < cached < units
    np.testing.assert_array_equal(prefill_logits(tmp_path / "o2.llmc"), uncached[1])


def test_a_damaged_entry_is_compiled_again(tmp_path, uncached):
    cache = tmp_path / "cache"
    units, _, _ = compile_model(tmp_path / "first.llmc", cache)
    whole = {path: path.read_bytes() for path in entries(cache)}
    for path, data in whole.items():
        path.write_bytes(data[: len(data) // 2])
    again, cached, _ = compile_model(tmp_path / "second.llmc", cache)
    assert (again, cached) == (units, 0)
    assert {path: path.read_bytes() for path in entries(cache)} == whole
    np.testing.assert_array_equal(prefill_logits(tmp_path / "second.llmc"), uncached[1])


def test_a_cache_that_cannot_be_written_is_a_warning(tmp_path, uncached):
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    units, cached, stderr = compile_model(tmp_path / "model.llmc", not_a_directory)
    assert cached == 0
    warnings = [line for line in stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "the kernel cache is not written" in warnings[0], stderr
    assert str(not_a_directory) in warnings[0]
    np.testing.assert_array_equal(prefill_logits(tmp_path / "model.llmc"), uncached[1])


def test_compiles_at_once_share_the_cache(tmp_path, uncached):
    cache = tmp_path / "cache"
    env = {**os.environ, "LLMC_CACHE_DIR": str(cache)}
    runs = [subprocess.Popen([str(LLMC), "compile", str(EXPORT), "-o", str(tmp_path / f"{i}.llmc"),
                              "--quiet"], env=env, stderr=subprocess.PIPE, text=True)
            for i in range(3)]
    for run in runs:
        assert run.wait() == 0, run.stderr.read()
        run.stderr.close()
    assert all(path.suffix == ".o" for path in entries(cache)), "a scratch file was left"
    expected = (uncached[0] / "kernels.so").read_bytes()
    for i in range(3):
        assert (tmp_path / f"{i}.llmc" / "kernels.so").read_bytes() == expected


def build_id(executable: Path) -> bytes:
    notes = subprocess.run(["readelf", "-n", str(executable)], capture_output=True, text=True,
                           check=True).stdout
    return bytes.fromhex(re.search(r"Build ID: ([0-9a-f]+)", notes).group(1))


def test_another_llmc_build_does_not_take_its_objects(tmp_path):
    """The llmc executable's build ID is part of every key: a copy of the same build reads
    the cache, a build with another ID compiles everything."""
    cache = tmp_path / "cache"
    units, _, _ = compile_model(tmp_path / "first.llmc", cache)
    data = LLMC.read_bytes()
    identity = build_id(LLMC)
    assert data.count(identity) == 1
    for name, patched in [("same", data), ("other", data.replace(identity, bytes(len(identity))))]:
        executable = tmp_path / name / "llmc"
        executable.parent.mkdir()
        executable.write_bytes(patched)
        executable.chmod(0o755)
        result = subprocess.run([str(executable), "compile", str(EXPORT), "-o",
                                 str(tmp_path / f"{name}.llmc")],
                                env={**os.environ, "LLMC_CACHE_DIR": str(cache)},
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        expected = units if name == "same" else 0
        assert SUMMARY.search(result.stderr).groups() == (str(units), str(expected))


def test_kernels_so_exports_only_the_step(uncached):
    """The units' roots are hidden symbols: the library's dynamic symbols are the step's."""
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(uncached[0] / "kernels.so")],
                             capture_output=True, text=True, check=True).stdout.split()
    exported = [name for name in symbols if name.startswith(("llmc", "_mlir"))]
    assert sorted(exported) == ["_mlir_ciface_llmc_step", "llmc_step"]
