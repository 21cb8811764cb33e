"""Peers that run in venvs of their own, for the bench scripts: vLLM's CPU backend.

vLLM (.venv-vllm, bash scripts/setup.sh vllm) reads a transformers directory. The default
model's is written once by scripts/exporters/default_model.py in .venv-optimum (bash
scripts/setup.sh exporters) from the same GGUF that llmc.convert.gguf turns into
models/smollm2-135m/model.onnx, so both read the same f32 weights; it is kept in
models/smollm2-135m-hf.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
OPTIMUM_PYTHON = ROOT / ".venv-optimum" / "bin" / "python"
DEFAULT_MODEL_HF = ROOT / "models" / "smollm2-135m-hf"


def vllm_missing() -> str | None:
    """Why vLLM cannot run here, or None."""
    for python, option in ((VLLM_PYTHON, "vllm"), (OPTIMUM_PYTHON, "exporters")):
        if not python.exists():
            return f"{python.parent.parent.name} not found (bash scripts/setup.sh {option})"
    return None


def default_model_hf() -> Path:
    """The default model as a transformers directory, written on first use."""
    hf = DEFAULT_MODEL_HF / "hf"
    if not (hf / "config.json").exists():
        sys.path.insert(0, str(ROOT / "python"))
        from llmc.convert.gguf import default_gguf_path
        subprocess.run([str(OPTIMUM_PYTHON), str(ROOT / "scripts/exporters/default_model.py"),
                        str(default_gguf_path()), str(DEFAULT_MODEL_HF), "--prompt", "Hello",
                        "--tokens", "1"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return hf


def run_vllm(arguments: list[str], threads: int) -> dict:
    """bench/vllm_runner.py's --json figures on the default model. vLLM's own log goes to a
    file, shown only if the run fails."""
    command = [str(VLLM_PYTHON), str(ROOT / "bench" / "vllm_runner.py"), "--model",
               str(default_model_hf()), "--threads", str(threads), "--json", *arguments]
    with tempfile.TemporaryFile("w+") as log:
        run = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True)
        if run.returncode != 0:
            log.seek(0)
            sys.stderr.write(log.read()[-4000:])
            raise SystemExit(f"vLLM failed (exit {run.returncode}): {' '.join(command)}")
    return json.loads(run.stdout.splitlines()[-1])
