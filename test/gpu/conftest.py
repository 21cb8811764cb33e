"""test/gpu runs only on a machine with an NVIDIA GPU (scripts/gpu-check.sh runs it there).

Without a GPU the run stops at configuration with one line saying so and a non-zero exit
status: these tests never pass by being skipped. They reuse test/python/test_cpu_parity.py's
helpers, so that directory goes on sys.path.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from llmc.testing.ort_reference import use_exact_kernels  # noqa: E402

use_exact_kernels()  # the references compute their ops' exact semantics


def visible_gpus() -> tuple[list[str], str]:
    """The `GPU n: ...` lines of `nvidia-smi -L`, and why there are none when there are none."""
    try:
        result = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return [], "nvidia-smi is not installed"
    except subprocess.TimeoutExpired:
        return [], "nvidia-smi -L did not answer within 60 s"
    gpus = [line for line in result.stdout.splitlines() if line.startswith("GPU ")]
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()
        return [], f"nvidia-smi -L failed: {output[0] if output else f'exit {result.returncode}'}"
    return gpus, "" if gpus else "nvidia-smi -L lists no GPU"


def pytest_configure():
    gpus, why = visible_gpus()
    if not gpus:
        pytest.exit(f"test/gpu needs an NVIDIA GPU and there is none: {why}", returncode=1)
