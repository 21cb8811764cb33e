"""Serving-engine throughput: llmc's engine with every request in flight at once, the same
requests one after another, and onnxruntime one after another, on one workload.

    PYTHONPATH=python .venv/bin/python bench/engine_throughput.py \
        [--artifact build/smollm2-135m.llmc] [--onnx models/smollm2-135m/model.onnx] \
        [--num-prompts 32] [--input-len-range 32:128] [--output-len-range 64:256] [--seed 0] \
        [--threads N] [--vllm [--vllm-dtype float32|bfloat16]] [--json] [--record]

The workload is generated once by `llmc bench throughput --dump-workload` (uniformly random
prompt and output lengths, uniformly random token ids) and every run reads that file:
`llmc bench throughput --dataset FILE --max-concurrency NUM_PROMPTS`, then the same with
`--max-concurrency 1`, then onnxruntime (an InferenceSession with intra_op_num_threads equal
to llmc's threads, through python/llmc/testing/ort_reference.py's OrtDecoder) running each
request alone: its prompt in one call, then one call per token with the KV cache fed back.
With --vllm, vLLM's CPU backend also runs the workload with every request submitted at once
(bench/vllm_runner.py in .venv-vllm, float32 or --vllm-dtype, the same threads; see
bench/peers.py): with bfloat16 (its weights, activations and KV cache), compare an artifact
compiled with --dtype bf16 --bf16-activations.
All greedy, no stop tokens: each request generates exactly its max_tokens. Each run starts
with an unmeasured warm-up request. --record appends a row to bench/RESULTS.md. Progress goes
to stderr.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from llmc.testing.ort_reference import OrtDecoder
from common import (add_workload_arguments, dump_workload, machine, progress, record_rows,
                    workload_name)
from peers import run_vllm, vllm_missing

ROOT = Path(__file__).resolve().parents[1]
LLMC = ROOT / "build" / "bin" / "llmc"
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Serving engine throughput: 32 concurrent requests vs one after another"



def llmc_bench(artifact: Path, workload: Path, threads: int, concurrency: int) -> dict:
    """`llmc bench throughput --json` on the workload file."""
    command = [str(LLMC), "bench", "throughput", str(artifact), "--dataset", str(workload),
               "--max-concurrency", str(concurrency), "--threads", str(threads), "--json"]
    run = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if run.returncode != 0:
        raise SystemExit(f"engine_throughput: {' '.join(command)} failed (exit {run.returncode})")
    return json.loads(run.stdout)


def percentiles(values: list[float]) -> dict:
    """Mean, p50 and p99 in ms of values in seconds, as llmc bench reports them."""
    if not values:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0}
    ms = np.array(values) * 1e3
    return {"mean": float(ms.mean()), "p50": float(np.percentile(ms, 50)),
            "p99": float(np.percentile(ms, 99))}


def onnxruntime_bench(onnx_path: Path, requests: list[dict], threads: int,
                      quiet: bool) -> dict:
    """Each request alone, greedy: the prompt in one call (its last logits give the first
    token), then one call per further token."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    decoder = OrtDecoder(onnx_path, session_options=options)

    def generate(prompt: list[int], max_tokens: int) -> list[float]:
        """The time of each token, from the request's start."""
        start = time.perf_counter()
        logits, generation = decoder.prefill([prompt])
        token = logits[:, -1].argmax(axis=-1)
        times = [time.perf_counter() - start]
        for _ in range(max_tokens - 1):
            token = decoder.decode(generation, token).argmax(axis=-1)
            times.append(time.perf_counter() - start)
        return times

    generate(requests[0]["prompt_ids"][:16], 4)  # warm-up, as llmc bench does
    ttft, tpot, itl = [], [], []
    start = time.perf_counter()
    for index, request in enumerate(requests):
        if not quiet:
            print(f"\r  done {index}/{len(requests)} requests", end="", file=sys.stderr,
                  flush=True)
        times = generate(request["prompt_ids"], request["max_tokens"])
        ttft.append(times[0])
        if len(times) > 1:
            tpot.append((times[-1] - times[0]) / (len(times) - 1))
        itl.extend(np.diff(times).tolist())
    duration = time.perf_counter() - start
    if not quiet:
        print(f"\r  done {len(requests)}/{len(requests)} requests", file=sys.stderr)
    input_tokens = sum(len(r["prompt_ids"]) for r in requests)
    output_tokens = sum(r["max_tokens"] for r in requests)
    return {"num_requests": len(requests), "max_concurrency": 1, "threads": threads,
            "input_tokens": input_tokens, "output_tokens": output_tokens,
            "duration_s": duration, "requests_per_s": len(requests) / duration,
            "input_tokens_per_s": input_tokens / duration,
            "output_tokens_per_s": output_tokens / duration,
            "total_tokens_per_s": (input_tokens + output_tokens) / duration,
            "ttft_ms": percentiles(ttft), "tpot_ms": percentiles(tpot),
            "itl_ms": percentiles(itl), "onnxruntime": ort.__version__}


def section_text() -> str:
    """The section's heading, method and table header, for its first row."""
    return f"""{SECTION}

`bench/engine_throughput.py`: one synthetic workload (uniformly random prompt and output
lengths and token ids, written by `llmc bench throughput --dump-workload`) run three ways on
the default model (SmolLM2-135M-Instruct, fp32): llmc's serving engine with every request
submitted at once (`llmc bench throughput --max-concurrency N`: continuous batching), the
same with `--max-concurrency 1` (one request after another), and onnxruntime {ort.__version__}
on the same ONNX file one request after another (`OrtDecoder`: the prompt in one call, then
one call per token), with `intra_op_num_threads` equal to llmc's threads.
Greedy, no stop tokens: each request generates exactly its max_tokens. TTFT is the time from
a request's submission to its first token (queueing included), TPOT the mean time per
further token.

| date | machine | threads | workload | llmc concurrent out tok/s | llmc sequential out tok/s | ort sequential out tok/s | concurrent / sequential | concurrent / ort | TTFT p50 ms (conc / seq / ort) | TPOT p50 ms (conc / seq / ort) | vLLM concurrent out tok/s | concurrent / vLLM |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def table_row(result: dict) -> str:
    runs = [result["llmc_concurrent"], result["llmc_sequential"], result["onnxruntime"]]
    ttft = " / ".join(f"{run['ttft_ms']['p50']:.0f}" for run in runs)
    tpot = " / ".join(f"{run['tpot_ms']['p50']:.1f}" for run in runs)
    out = [f"{run['output_tokens_per_s']:.1f}" for run in runs]
    vllm = "— | —"
    if "vllm" in result:
        dtype = result["vllm"]["dtype"]
        vllm = (f"{result['vllm']['output_tokens_per_s']:.1f}"
                f"{'' if dtype == 'float32' else f' ({dtype})'} "
                f"| {result['concurrent_over_vllm']:.2f}x")
    return (f"| {result['date']} | {result['machine']} | {result['threads']} "
            f"| {result['workload']} | {out[0]} | {out[1]} | {out[2]} "
            f"| {result['concurrent_over_sequential']:.2f}x "
            f"| {result['concurrent_over_onnxruntime']:.2f}x | {ttft} | {tpot} "
            f"| {vllm} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=ROOT / "build" / "smollm2-135m.llmc")
    parser.add_argument("--onnx", type=Path,
                        default=ROOT / "models" / "smollm2-135m" / "model.onnx")
    add_workload_arguments(parser)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--vllm", action="store_true",
                        help="also run vLLM's CPU backend on the workload (.venv-vllm)")
    parser.add_argument("--vllm-dtype", choices=["float32", "bfloat16"], default="float32",
                        help="vLLM's dtype (bfloat16: against an artifact compiled with "
                             "--dtype bf16 --bf16-activations)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--record", action="store_true",
                        help=f"append a row to {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args()
    for path, hint in ((LLMC, "build it: ninja -C build llmc"),
                       (args.artifact, "run scripts/run-default-model.sh"),
                       (args.onnx, "run scripts/run-default-model.sh")):
        if not path.exists():
            print(f"engine_throughput: {path} not found ({hint})", file=sys.stderr)
            return 1
    if args.vllm and (why := vllm_missing()):
        print(f"engine_throughput: --vllm: {why}", file=sys.stderr)
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        workload = Path(tmp) / "workload.jsonl"
        requests = dump_workload(LLMC, args.artifact, args, workload)
        progress(f"llmc: {args.num_prompts} requests at once", args.quiet)
        concurrent = llmc_bench(args.artifact, workload, args.threads, args.num_prompts)
        progress("llmc: one request at a time", args.quiet)
        sequential = llmc_bench(args.artifact, workload, args.threads, 1)
        if args.vllm:
            progress(f"vLLM: {args.num_prompts} requests at once", args.quiet)
            vllm = run_vllm(["--workload", str(workload), "--dtype", args.vllm_dtype],
                            args.threads)
    progress("onnxruntime: one request at a time", args.quiet)
    reference = onnxruntime_bench(args.onnx, requests, args.threads, args.quiet)

    result = {
        "date": datetime.date.today().isoformat(), "machine": machine(),
        "threads": args.threads,
        "workload": workload_name(args),
        "llmc_concurrent": concurrent, "llmc_sequential": sequential,
        "onnxruntime": reference,
        "concurrent_over_sequential":
            concurrent["output_tokens_per_s"] / sequential["output_tokens_per_s"],
        "concurrent_over_onnxruntime":
            concurrent["output_tokens_per_s"] / reference["output_tokens_per_s"],
    }
    if args.vllm:
        result["vllm"] = vllm
        result["concurrent_over_vllm"] = (concurrent["output_tokens_per_s"]
                                          / vllm["output_tokens_per_s"])
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{'':28}{'out tok/s':>11}{'total tok/s':>13}{'TTFT p50 ms':>13}"
              f"{'TPOT p50 ms':>13}")
        for name, run in (("llmc, all at once", concurrent), ("llmc, one at a time", sequential),
                          ("onnxruntime, one at a time", reference)):
            print(f"{name:28}{run['output_tokens_per_s']:>11.1f}"
                  f"{run['total_tokens_per_s']:>13.1f}{run['ttft_ms']['p50']:>13.1f}"
                  f"{run['tpot_ms']['p50']:>13.1f}")
        if args.vllm:
            print(f"{'vLLM, all at once':28}{vllm['output_tokens_per_s']:>11.1f}"
                  f"{vllm['total_tokens_per_s']:>13.1f}")
        print(f"output tok/s: all at once / one at a time "
              f"{result['concurrent_over_sequential']:.2f}x, "
              f"/ onnxruntime {result['concurrent_over_onnxruntime']:.2f}x"
              + (f", / vLLM {result['concurrent_over_vllm']:.2f}x" if args.vllm else ""))
    if args.record:
        record_rows(RESULTS, SECTION, section_text(), [table_row(result)])
        progress(f"recorded in {RESULTS.relative_to(ROOT)}", args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
