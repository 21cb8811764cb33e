"""Prefill and batch-1 decode throughput of llmc's CPU backend next to onnxruntime, on the
same ONNX file, with the same thread count, in one run on one machine.

    PYTHONPATH=python .venv/bin/python bench/cpu_throughput.py [MODEL.onnx] \
        [--threads N] [--prompt-tokens 128] [--decode-tokens 64] [--repeat 3] [--json]

llmc: the model is compiled with `llmc compile` (into a temporary directory) and run step by
step through the runtime's C API (llmc.runtime.Model.step): one prefill step of the prompt,
then one decode step per token. onnxruntime: an InferenceSession with intra_op_num_threads =
threads, the prompt in one call, then one call per token with the KV cache fed back. Both are
greedy; the figures are the median of --repeat runs. Progress goes to stderr.
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

import numpy as np
import onnxruntime as ort

from llmc.runtime import Model
from llmc.testing.ort_reference import OrtDecoder

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "models" / "smollm2-135m" / "model.onnx"
LLMC = ROOT / "build" / "bin" / "llmc"


def progress(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"  {message}", file=sys.stderr, flush=True)


def run_llmc(model: Model, prompt: list[int], decode_tokens: int) -> tuple[float, float]:
    """Seconds of the prefill step and of the decode steps."""
    block = model.block_size
    total = len(prompt) + decode_tokens
    table = np.arange((total + block - 1) // block, dtype=np.int32)[None, :]
    start = time.perf_counter()
    logits = model.step(prompt, np.arange(len(prompt)), [0, len(prompt)], [len(prompt)], table,
                        np.arange(len(prompt)), [len(prompt) - 1])
    prefill = time.perf_counter() - start
    start = time.perf_counter()
    for position in range(len(prompt), total):
        token = int(logits[0].argmax())
        logits = model.step([token], [position], [0, 1], [position + 1], table, [position], [0])
    return prefill, time.perf_counter() - start


def run_onnxruntime(decoder: OrtDecoder, prompt: list[int], decode_tokens: int
                    ) -> tuple[float, float]:
    start = time.perf_counter()
    logits, generation = decoder.prefill([prompt])
    prefill = time.perf_counter() - start
    token = logits[:, -1].argmax(axis=-1)
    start = time.perf_counter()
    for _ in range(decode_tokens):
        token = decoder.decode(generation, token).argmax(axis=-1)
    return prefill, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--matmul", choices=["generated", "blas"], default="generated")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args()
    if not args.model.exists():
        print(f"cpu_throughput: {args.model} not found (run scripts/run-default-model.sh)",
              file=sys.stderr)
        return 1

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        artifact = Path(tmp) / "model.llmc"
        progress(f"compiling {args.model} (matmul={args.matmul})", args.quiet)
        subprocess.run([str(LLMC), "compile", str(args.model), "-o", str(artifact), "--quiet",
                        f"--matmul={args.matmul}"], check=True)
        blocks = (args.prompt_tokens + args.decode_tokens) // 16 + 2
        model = Model(artifact, num_threads=args.threads, num_kv_blocks=blocks)
        prompt = rng.integers(0, model.vocab_size, args.prompt_tokens).tolist()
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        decoder = OrtDecoder(args.model, session_options=options)

        runs = {"llmc": [], "onnxruntime": []}
        for index in range(args.repeat):
            progress(f"run {index + 1}/{args.repeat}: llmc", args.quiet)
            runs["llmc"].append(run_llmc(model, prompt, args.decode_tokens))
            progress(f"run {index + 1}/{args.repeat}: onnxruntime", args.quiet)
            runs["onnxruntime"].append(run_onnxruntime(decoder, prompt, args.decode_tokens))
        model.close()

    result = {"model": str(args.model), "machine": f"{platform.machine()} {platform.processor()}",
              "threads": args.threads, "prompt_tokens": args.prompt_tokens,
              "decode_tokens": args.decode_tokens, "matmul": args.matmul}
    for name, times in runs.items():
        prefill = statistics.median(t[0] for t in times)
        decode = statistics.median(t[1] for t in times)
        result[name] = {"prefill_tokens_per_s": args.prompt_tokens / prefill,
                        "decode_tokens_per_s": args.decode_tokens / decode}
    for metric in ("prefill_tokens_per_s", "decode_tokens_per_s"):
        result[f"{metric}_ratio"] = result["llmc"][metric] / result["onnxruntime"][metric]
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'':14}{'prefill tok/s':>15}{'decode tok/s (batch 1)':>25}")
    for name in ("llmc", "onnxruntime"):
        print(f"{name:14}{result[name]['prefill_tokens_per_s']:>15.1f}"
              f"{result[name]['decode_tokens_per_s']:>25.1f}")
    print(f"{'llmc / ort':14}{result['prefill_tokens_per_s_ratio']:>15.2f}"
          f"{result['decode_tokens_per_s_ratio']:>25.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
