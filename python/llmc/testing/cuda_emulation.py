"""Runs generated CUDA C++ kernels on the CPU, through cuda_emulation.h.

The attention kernels of a cuda artifact (its attention.cu) compile with the host C++
compiler against a header that emulates the CUDA features they use (threads as fibers,
barriers, warp shuffles, WMMA). `EmulatedKernels(source).launch(name, grid, block, *args)`
runs one kernel; array arguments are numpy arrays, passed by pointer, or None for a null
pointer. A fault the emulation detects (threads at different barriers, a misaligned WMMA
access) raises RuntimeError.
"""
from __future__ import annotations

import ctypes
import hashlib
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np

HEADER = Path(__file__).with_name("cuda_emulation.h")
_KERNEL = re.compile(r'extern "C" __global__ void(?: __launch_bounds__\(\w+\))?\s+(\w+)\(([^)]*)\)')


def _parameters(text: str) -> list[tuple[str, str]]:
    """[(C type, name)] of a kernel's parameter list."""
    parameters = []
    for parameter in " ".join(text.split()).split(","):
        match = re.fullmatch(r"\s*(.*?)\s*(\w+)\s*", parameter)
        if not match:
            raise ValueError(f"cannot read the kernel parameter '{parameter}'")
        parameters.append((match.group(1), match.group(2)))
    return parameters


def _ctype(c_type: str):
    if c_type.endswith("*"):
        return ctypes.c_void_p
    if c_type in ("int", "unsigned"):
        return ctypes.c_int
    if c_type == "float":
        return ctypes.c_float
    raise ValueError(f"no ctypes type for the kernel parameter type '{c_type}'")


def to_storage(values: np.ndarray, dtype: str) -> np.ndarray:
    """`values` as the kernels' storage_t bits: f16, or bf16 rounded to nearest even (as
    cvt.rn)."""
    if dtype == "f16":
        return values.astype(np.float16).view(np.uint16)
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_storage(bits: np.ndarray, dtype: str) -> np.ndarray:
    """storage_t bits of `dtype` ("bf16" or "f16") as float64."""
    if dtype == "f16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


class EmulatedKernels:
    """The kernels of `source`, compiled for the host; each `launch` runs one over a grid."""

    def __init__(self, source: str, build_dir: str | Path | None = None):
        self.kernels = {name: _parameters(params) for name, params in _KERNEL.findall(source)}
        if not self.kernels:
            raise ValueError("the source defines no extern \"C\" __global__ kernel")
        wrappers = []
        for name, params in self.kernels.items():
            declared = ", ".join(f"{c_type} {param}" for c_type, param in params)
            passed = ", ".join(param for _, param in params)
            wrappers.append(
                f'extern "C" const char *emulate_{name}(unsigned gx, unsigned gy, unsigned gz, '
                f"unsigned bx, unsigned by, unsigned bz, {declared}) {{\n"
                "  static std::string error;\n"
                f"  error = llmc_emulation::launch({{gx, gy, gz}}, {{bx, by, bz}}, [&] {{ {name}({passed}); }});\n"
                "  return error.c_str();\n"
                "}\n")
        text = f'#include "{HEADER}"\n{source}\n' + "".join(wrappers)
        digest = hashlib.sha256((text + HEADER.read_text()).encode()).hexdigest()[:16]
        directory = Path(build_dir or tempfile.gettempdir()) / "llmc-cuda-emulation"
        directory.mkdir(parents=True, exist_ok=True)
        library = directory / f"kernels-{digest}.so"
        if not library.exists():
            cpp = directory / f"kernels-{digest}.cpp"
            cpp.write_text(text)
            partial = library.with_suffix(".so.partial")
            built = subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-o", str(partial),
                                    str(cpp)], capture_output=True, text=True)
            if built.returncode:
                raise RuntimeError(f"g++ could not build {cpp} for the emulation:\n{built.stderr}")
            partial.rename(library)
        self._library = ctypes.CDLL(str(library))

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int], *args) -> None:
        params = self.kernels[name]
        if len(args) != len(params):
            raise TypeError(f"{name} takes {len(params)} arguments, not {len(args)}")
        function = getattr(self._library, f"emulate_{name}")
        function.restype = ctypes.c_char_p
        function.argtypes = [ctypes.c_uint] * 6 + [_ctype(c_type) for c_type, _ in params]
        values = []
        for (c_type, param), arg in zip(params, args):
            if c_type.endswith("*"):
                if arg is None:
                    values.append(None)
                    continue
                if not isinstance(arg, np.ndarray) or not arg.flags.c_contiguous:
                    raise TypeError(f"{name}: {param} needs a contiguous numpy array")
                values.append(arg.ctypes.data)
            else:
                values.append(arg)
        error = function(*grid, *block, *values)
        if error:
            raise RuntimeError(f"{name}: {error.decode()}")
