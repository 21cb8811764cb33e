"""Time `llmc compile` on a model, next to the reference: onnxruntime building an
InferenceSession on the same file (load + graph optimisation), in the same run on the same
machine.

    PYTHONPATH=python .venv/bin/python bench/compile_time.py [MODEL.onnx] [--repeat N] [--json]

Three llmc figures: `--emit=llm-ir` (import, shape inference, raising, the IR written to
/dev/null); the whole artifact with an empty kernel cache (every kernel through LLVM, the
code units in parallel); and the artifact again with the kernel cache that a first compile
filled (LLVM skipped). Prints the median of N runs of each and their ratios to onnxruntime.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "models" / "smollm2-135m" / "model.onnx"
LLMC = ROOT / "build" / "bin" / "llmc"


def time_llmc(model: Path, *args: str, cache: Path | None = None) -> float:
    env = dict(os.environ)
    if cache is not None:
        env["LLMC_CACHE_DIR"] = str(cache)
    start = time.perf_counter()
    subprocess.run([str(LLMC), "compile", str(model), "--quiet", *args], check=True, env=env)
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
    figures = {"llm_ir_s": [], "artifact_cold_cache_s": [], "artifact_warm_cache_s": [],
               "onnxruntime_session_s": []}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        warm = scratch / "warm-cache"
        time_llmc(args.model, "-o", str(scratch / "warm.llmc"), cache=warm)
        for i in range(args.repeat):
            if not args.json:
                print(f"  run {i + 1}/{args.repeat}", file=sys.stderr)
            figures["llm_ir_s"].append(
                time_llmc(args.model, "--emit=llm-ir", "-o", "/dev/null"))
            cold = scratch / f"cold-cache-{i}"
            figures["artifact_cold_cache_s"].append(
                time_llmc(args.model, "-o", str(scratch / "cold.llmc"), cache=cold))
            figures["artifact_warm_cache_s"].append(
                time_llmc(args.model, "-o", str(scratch / "warm.llmc"), cache=warm))
            figures["onnxruntime_session_s"].append(time_onnxruntime(args.model))
    result = {"model": str(args.model), "machine": f"{platform.machine()}, {platform.processor()}",
              "cores": os.cpu_count(), "repeat": args.repeat}
    result.update({name: statistics.median(times) for name, times in figures.items()})
    reference = result["onnxruntime_session_s"]
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for label, name in [("llmc compile --emit=llm-ir", "llm_ir_s"),
                        ("llmc compile, empty kernel cache", "artifact_cold_cache_s"),
                        ("llmc compile, warm kernel cache", "artifact_warm_cache_s"),
                        ("onnxruntime InferenceSession", "onnxruntime_session_s")]:
        print(f"{label:34} {result[name]:6.2f} s  {result[name] / reference:5.2f}x onnxruntime")
    print(f"(median of {args.repeat})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
