"""llmc's Python API against its C++ engine and vLLM's Python API, on one workload.

    PYTHONPATH=python .venv/bin/python bench/python_api.py \
        [--artifact build/smollm2-135m.llmc] [--num-prompts 32] [--input-len-range 32:128] \
        [--output-len-range 64:256] [--seed 0] [--threads N] [--vllm] [--json] [--record]

The workload of bench/engine_throughput.py (`llmc bench throughput --dump-workload`: random
prompt and output lengths and token ids) runs three ways, every request submitted at once:
`llmc.LLM.generate` (token-id prompts, one SamplingParams per request: greedy, ignore_eos,
its max_tokens; no progress bar), `llmc bench throughput --dataset` (the same engine driven
from C++), and with --vllm `vllm.LLM.generate` (bench/vllm_runner.py in .venv-vllm, float32,
the same threads). The ratio of the first two is what the Python layer costs; the third is
the peer a vLLM user compares with. --record appends a row to bench/RESULTS.md.
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

from common import (add_workload_arguments, dump_workload, machine, progress, record_rows,
                    workload_name)
from peers import run_vllm, vllm_missing

ROOT = Path(__file__).resolve().parents[1]
LLMC = ROOT / "build" / "bin" / "llmc"
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## The Python API: llmc.LLM.generate against the C++ engine and vLLM's LLM.generate"


def python_api(artifact: Path, requests: list[dict], threads: int) -> dict:
    from llmc import LLM, SamplingParams

    with LLM(artifact, num_threads=threads, quiet=True) as llm:
        llm.generate([requests[0]["prompt_ids"][:16]],
                     SamplingParams(temperature=0, max_tokens=4), use_tqdm=False)  # warm-up
        params = [SamplingParams(temperature=0, max_tokens=r["max_tokens"], ignore_eos=True)
                  for r in requests]
        start = time.perf_counter()
        outputs = llm.generate([r["prompt_ids"] for r in requests], params, use_tqdm=False)
        duration = time.perf_counter() - start
    output_tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
    assert output_tokens == sum(r["max_tokens"] for r in requests)
    return {"duration_s": duration, "output_tokens_per_s": output_tokens / duration}


def cpp_engine(artifact: Path, workload: Path, threads: int, count: int) -> dict:
    command = [str(LLMC), "bench", "throughput", str(artifact), "--dataset", str(workload),
               "--max-concurrency", str(count), "--threads", str(threads), "--json", "--quiet"]
    return json.loads(subprocess.run(command, stdout=subprocess.PIPE, text=True,
                                     check=True).stdout)


def section_text() -> str:
    return f"""{SECTION}

`bench/python_api.py`: the workload of the engine table above (random prompt and output
lengths and token ids, every request submitted at once, greedy, each generating exactly its
max_tokens) through `llmc.LLM.generate` (token-id prompts, no progress bar), through the same
engine driven from C++ (`llmc bench throughput`), and with --vllm through `vllm.LLM.generate`
(vLLM's CPU backend, float32, the same threads). Default model, fp32.

| date | machine | threads | workload | llmc.LLM out tok/s | C++ engine out tok/s | LLM / C++ | vLLM LLM out tok/s | llmc.LLM / vLLM |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=ROOT / "build" / "smollm2-135m.llmc")
    add_workload_arguments(parser)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--vllm", action="store_true", help="also run vLLM's LLM.generate")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    for path, hint in ((LLMC, "ninja -C build"), (args.artifact, "scripts/run-default-model.sh")):
        if not path.exists():
            print(f"python_api: {path} not found ({hint})", file=sys.stderr)
            return 1
    if args.vllm and (why := vllm_missing()):
        print(f"python_api: --vllm: {why}", file=sys.stderr)
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        workload = Path(tmp) / "workload.jsonl"
        requests = dump_workload(LLMC, args.artifact, args, workload)
        progress("llmc.LLM.generate", args.quiet)
        ours = python_api(args.artifact, requests, args.threads)
        progress("llmc bench throughput (the C++ engine)", args.quiet)
        cpp = cpp_engine(args.artifact, workload, args.threads, len(requests))
        vllm = None
        if args.vllm:
            progress("vllm.LLM.generate", args.quiet)
            vllm = run_vllm(["--workload", str(workload)], args.threads)

    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "threads": args.threads,
              "workload": workload_name(args),
              "llmc_llm": ours, "cpp_engine": cpp,
              "llm_over_cpp": ours["output_tokens_per_s"] / cpp["output_tokens_per_s"]}
    if vllm:
        result["vllm"] = vllm
        result["llm_over_vllm"] = ours["output_tokens_per_s"] / vllm["output_tokens_per_s"]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"llmc.LLM.generate    {ours['output_tokens_per_s']:8.1f} output tok/s")
        print(f"C++ engine           {cpp['output_tokens_per_s']:8.1f} output tok/s "
              f"(llmc.LLM / C++ {result['llm_over_cpp']:.2f}x)")
        if vllm:
            print(f"vllm.LLM.generate    {vllm['output_tokens_per_s']:8.1f} output tok/s "
                  f"(llmc.LLM / vLLM {result['llm_over_vllm']:.2f}x)")
    if args.record:
        peer = (f"{vllm['output_tokens_per_s']:.1f} | {result['llm_over_vllm']:.2f}x"
                if vllm else "— | —")
        row = (f"| {result['date']} | {result['machine']} | {args.threads} | {result['workload']} "
               f"| {ours['output_tokens_per_s']:.1f} | {cpp['output_tokens_per_s']:.1f} "
               f"| {result['llm_over_cpp']:.2f}x | {peer} |")
        record_rows(RESULTS, SECTION, section_text(), [row])
        progress(f"recorded in {RESULTS.relative_to(ROOT)}", args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
