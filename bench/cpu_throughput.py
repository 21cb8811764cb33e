"""Prefill and batch-1 decode throughput of llmc's CPU backend next to onnxruntime, on the
same ONNX file, with the same thread count, in one run on one machine.

    PYTHONPATH=python .venv/bin/python bench/cpu_throughput.py [MODEL.onnx] \
        [--threads N] [--prompt-tokens 128] [--decode-tokens 64] [--repeat 3] \
        [--opt-levels 2] [--f16] [--bf16] [--int8-activations] [--vllm] [--json]

llmc: the model is compiled with `llmc compile` (into a temporary directory) and run step by
step through the runtime's C API (llmc.runtime.Model.step): one prefill step of the prompt,
then one decode step per token. onnxruntime: an InferenceSession with intra_op_num_threads =
threads, the prompt in one call, then one call per token with the KV cache fed back. Both are
greedy; the figures are the median of --repeat runs, each after 0.2 s idle (onnxruntime's
threads spin after a run). With --opt-levels 0,2 the model is
compiled at each fusion level (llmc compile -O<n>) and each is measured, interleaved with
onnxruntime in every round. With --f16, the -O2 model is also compiled with --dtype f16 (f16
weights widened to f32); with --bf16, with --dtype bf16 (bf16 weights widened to f32) and
with --dtype bf16 --bf16-activations (AVX512_BF16 products); with --int8-activations (a
quantized model), with --int8-activations (VNNI products of int8 rows) and with
--int8-activations=false (the exact product: without either, llmc follows the file, int8
where its MatMulNBits ask for accuracy_level 4); each is measured the same way. With --vllm, vLLM's CPU backend runs the same prompt after the
others (bench/vllm_runner.py in .venv-vllm, float32, the same threads and repeats; see
bench/peers.py). Progress goes to stderr.
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
from common import progress
from peers import run_vllm, vllm_missing

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "models" / "smollm2-135m" / "model.onnx"
LLMC = ROOT / "build" / "bin" / "llmc"
# Seconds each engine waits before its run for the other's threads to go idle: onnxruntime's
# spin for tens of milliseconds after a Run and took a core from an llmc prefill right after
# it (1,300 tokens/s against 1,700 alone).
SETTLE_SECONDS = 0.2



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
    parser.add_argument("--opt-levels", default="2",
                        help="comma-separated fusion levels to compile and measure (0-3)")
    parser.add_argument("--f16", action="store_true", help="also measure --dtype f16")
    parser.add_argument("--int8-activations", action="store_true",
                        help="also measure --int8-activations (a quantized model)")
    parser.add_argument("--bf16", action="store_true",
                        help="also measure --dtype bf16, with and without --bf16-activations")
    parser.add_argument("--vllm", action="store_true",
                        help="also measure vLLM's CPU backend (.venv-vllm)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args()
    if not args.model.exists():
        print(f"cpu_throughput: {args.model} not found (run scripts/run-default-model.sh)",
              file=sys.stderr)
        return 1
    if args.vllm and (why := vllm_missing()):
        print(f"cpu_throughput: --vllm: {why}", file=sys.stderr)
        return 1

    levels = [int(level) for level in args.opt_levels.split(",")]
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        blocks = (args.prompt_tokens + args.decode_tokens) // 16 + 2
        variants = {("llmc" if levels == [2] else f"llmc -O{level}"): [f"-O{level}"]
                    for level in levels}
        if args.f16:
            variants["llmc f16"] = ["--dtype", "f16"]
        if args.int8_activations:
            variants["llmc int8-act"] = ["--int8-activations"]
            variants["llmc exact"] = ["--int8-activations=false"]
        if args.bf16:
            variants["llmc bf16"] = ["--dtype", "bf16"]
            variants["llmc bf16+act"] = ["--dtype", "bf16", "--bf16-activations"]
        models = {}
        for index, (key, flags) in enumerate(variants.items()):
            artifact = Path(tmp) / f"model-{index}.llmc"
            progress(f"compiling {args.model} ({' '.join(flags)}, matmul={args.matmul})",
                     args.quiet)
            subprocess.run([str(LLMC), "compile", str(args.model), "-o", str(artifact), "--quiet",
                            *flags, f"--matmul={args.matmul}"], check=True)
            models[key] = Model(artifact, num_threads=args.threads, num_kv_blocks=blocks)
        prompt = rng.integers(0, next(iter(models.values())).vocab_size,
                              args.prompt_tokens).tolist()
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        decoder = OrtDecoder(args.model, session_options=options)

        runs = {**{key: [] for key in models}, "onnxruntime": []}
        for index in range(args.repeat):
            for key, model in models.items():
                progress(f"run {index + 1}/{args.repeat}: {key}", args.quiet)
                time.sleep(SETTLE_SECONDS)
                runs[key].append(run_llmc(model, prompt, args.decode_tokens))
            progress(f"run {index + 1}/{args.repeat}: onnxruntime", args.quiet)
            time.sleep(SETTLE_SECONDS)
            runs["onnxruntime"].append(run_onnxruntime(decoder, prompt, args.decode_tokens))
        for model in models.values():
            model.close()

    result = {"model": str(args.model), "machine": f"{platform.machine()} {platform.processor()}",
              "threads": args.threads, "prompt_tokens": args.prompt_tokens,
              "decode_tokens": args.decode_tokens, "matmul": args.matmul, "opt_levels": levels}
    for key, times in runs.items():
        prefill = statistics.median(t[0] for t in times)
        decode = statistics.median(t[1] for t in times)
        result[key] = {"prefill_tokens_per_s": args.prompt_tokens / prefill,
                       "decode_tokens_per_s": args.decode_tokens / decode}
    measured = list(runs)
    if args.vllm:
        progress("vLLM", args.quiet)
        vllm = run_vllm(["--prompt-tokens", str(args.prompt_tokens), "--decode-tokens",
                         str(args.decode_tokens), "--repeat", str(args.repeat)], args.threads)
        result["vllm"] = {"prefill_tokens_per_s": vllm["prefill_tok_s"],
                          "decode_tokens_per_s": vllm["decode_tok_s"], "version": vllm["vllm"]}
        measured.append("vllm")
    for key in measured:
        if key == "onnxruntime":
            continue
        for metric in ("prefill_tokens_per_s", "decode_tokens_per_s"):
            ratio = result[key][metric] / result["onnxruntime"][metric]
            result[key][f"{metric}_ratio"] = ratio
            if key == "llmc":  # the single-level form keeps its top-level ratios
                result[f"{metric}_ratio"] = ratio
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'':14}{'prefill tok/s':>15}{'decode tok/s (batch 1)':>25}{'vs onnxruntime':>20}")
    for key in measured:
        figures = result[key]
        ratios = ("" if key == "onnxruntime" else
                  f"{figures['prefill_tokens_per_s_ratio']:.2f}x / "
                  f"{figures['decode_tokens_per_s_ratio']:.2f}x")
        print(f"{key:14}{figures['prefill_tokens_per_s']:>15.1f}"
              f"{figures['decode_tokens_per_s']:>25.1f}{ratios:>20}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
