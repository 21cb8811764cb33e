"""llmc._native, the C++ runtime's Python module (nanobind), wherever it was built.

A wheel installs it inside this package. In a checkout used through PYTHONPATH=python it
is build/python/llmc/_native*.so, which CMake builds beside the rest; $LLMC_NATIVE_DIR
names another directory that holds it.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

from llmc.errors import LlmcRuntimeError

_CHECKOUT = Path(__file__).resolve().parents[2]


def _load_from(directory: Path):
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = directory / f"_native{suffix}"
        if path.is_file():
            spec = importlib.util.spec_from_file_location("llmc._native", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["llmc._native"] = module
            spec.loader.exec_module(module)
            return module
    return None


def _load():
    try:
        return importlib.import_module("llmc._native")
    except ModuleNotFoundError:
        pass
    directory = Path(os.environ.get("LLMC_NATIVE_DIR", _CHECKOUT / "build" / "python" / "llmc"))
    module = _load_from(directory)
    if module is None:
        raise LlmcRuntimeError(
            f"llmc's native module (_native) is neither installed nor built in {directory}: "
            "`pip install .`, or build it (ninja -C build _native) or set LLMC_NATIVE_DIR")
    return module


native = _load()
