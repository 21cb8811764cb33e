"""Time `llmc compile --emit=llm-ir` (import, shape inference, raising) on a model,
next to the reference: onnxruntime building an InferenceSession on the same file
(load + graph optimisation), in the same run on the same machine.

    PYTHONPATH=python .venv/bin/python bench/compile_time.py [MODEL.onnx] [--repeat N] [--json]

Prints the median of N runs of each and their ratio.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "models" / "smollm2-135m" / "model.onnx"
LLMC = ROOT / "build" / "bin" / "llmc"


def time_llmc(model: Path) -> float:
    start = time.perf_counter()
    subprocess.run([str(LLMC), "compile", str(model), "--emit=llm-ir", "--quiet", "-o",
                    "/dev/null"], check=True)
    return time.perf_counter() - start


def time_onnxruntime(model: Path) -> float:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    start = time.perf_counter()
    ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.model.exists():
        print(f"compile_time: {args.model} not found (run scripts/run-default-model.sh)",
              file=sys.stderr)
        return 1
    llmc, reference = [], []
    for i in range(args.repeat):
        if not args.json:
            print(f"  run {i + 1}/{args.repeat}", file=sys.stderr)
        llmc.append(time_llmc(args.model))
        reference.append(time_onnxruntime(args.model))
    result = {"model": str(args.model), "machine": f"{platform.machine()}, {platform.processor()}",
              "llmc_compile_s": statistics.median(llmc),
              "onnxruntime_session_s": statistics.median(reference)}
    result["ratio"] = result["llmc_compile_s"] / result["onnxruntime_session_s"]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"llmc compile --emit=llm-ir   {result['llmc_compile_s']:.2f} s (median of {args.repeat})")
        print(f"onnxruntime InferenceSession {result['onnxruntime_session_s']:.2f} s")
        print(f"ratio                        {result['ratio']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
