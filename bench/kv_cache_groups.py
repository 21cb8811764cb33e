"""Serving a model that mixes local and global layers in a fixed KV cache: a block table per
group of layers of one window against one table for every layer.

    .venv-optimum/bin/python bench/hybrid_model.py /tmp/hybrid     # once: Gemma-3 in miniature
    PYTHONPATH=python .venv/bin/python bench/kv_cache_groups.py --onnx /tmp/hybrid/onnx/model.onnx \\
        [--kv-cache-memory 24MiB] [--num-prompts 16] [--input-len-range 1024:2048] \\
        [--output-len-range 128:256] [--max-num-batched-tokens N] [--rounds 2] [--threads N] \
        [--json] [--record]

compiles the export twice, as `llmc compile` does by default (`step.kv_groups`: the local
layers' groups give back the blocks out of their windows) and with `--no-kv-cache-groups`
(one table, every block kept while the sequence lives), and runs one workload (written by
`llmc bench throughput --dump-workload`) through both with `llmc bench throughput
--kv-cache-memory` the same bytes and every request submitted at once, alternating the two
artifacts over the rounds. The figures: output and total tokens/s, the preemptions the cache
forced, and the KV blocks (a grouped block holds one group's layers, so more of them fit).
All greedy, no stop tokens. --record appends rows to bench/RESULTS.md. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import (add_workload_arguments, dump_workload, machine, progress, record_rows,
                    workload_name)

ROOT = Path(__file__).resolve().parents[1]
LLMC = ROOT / "build" / "bin" / "llmc"
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## KV cache groups: local and global layers in a fixed KV cache"
VARIANTS = {"groups": [], "one table": ["--no-kv-cache-groups"]}


def compile_variant(onnx: Path, out: Path, flags: list[str], quiet: bool) -> Path:
    progress(f"compiling {out.name}", quiet)
    subprocess.run([str(LLMC), "compile", str(onnx), "-o", str(out), "--quiet", *flags],
                   check=True)
    return out


def run(artifact: Path, workload: Path, args: argparse.Namespace) -> dict:
    """`llmc bench throughput --json` on the workload, every request at once."""
    command = [str(LLMC), "bench", "throughput", str(artifact), "--dataset", str(workload),
               "--max-concurrency", str(args.num_prompts), "--threads", str(args.threads),
               "--kv-cache-memory", args.kv_cache_memory, "--json"]
    if args.max_num_batched_tokens:
        command += ["--max-num-batched-tokens", str(args.max_num_batched_tokens)]
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit(f"kv_cache_groups: {' '.join(command)} failed (exit {result.returncode})")
    return json.loads(result.stdout)


def section_text() -> str:
    return f"""{SECTION}

`bench/kv_cache_groups.py` on `bench/hybrid_model.py`'s Gemma-3 in miniature (12 layers, five
local with a window of 512 keys to each global one, f32): the same optimum export compiled by
default (a block table per group of layers of one window, each block two layers' rows) and
with `--no-kv-cache-groups` (one table, each block all twelve layers'), the same workload with
every request submitted at once under the same `--kv-cache-memory`, the two alternating over
the rounds. Greedy, no stop tokens.

| date | machine | workload | KV memory | step tokens | variant | KV blocks | preemptions | output tok/s | total tok/s |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onnx", type=Path, required=True)
    parser.add_argument("--kv-cache-memory", default="24MiB")
    add_workload_arguments(parser)
    parser.set_defaults(num_prompts=16, input_len_range="1024:2048", output_len_range="128:256")
    parser.add_argument("--max-num-batched-tokens", type=int, default=0,
                        help="tokens a step carries (default: the artifact's 2,048)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()

    results: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        artifacts = {name: compile_variant(args.onnx, Path(tmp) / f"{i}.llmc", flags, args.json)
                     for i, (name, flags) in enumerate(VARIANTS.items())}
        workload = Path(tmp) / "workload.jsonl"
        dump_workload(LLMC, artifacts["groups"], args, workload)
        for round_index in range(args.rounds):
            for name, artifact in artifacts.items():
                progress(f"round {round_index + 1}/{args.rounds}: {name}", args.json)
                results[name].append(run(artifact, workload, args))

    if args.json:
        print(json.dumps(results))
        return
    rows = []
    date = datetime.date.today().isoformat()
    def per_round(runs: list[dict], value) -> str:
        return " / ".join(value(run) for run in runs)

    def rate(field: str):
        return lambda run: f"{run[field]:.1f}"

    for name, runs in results.items():
        row = (f"| {date} | {machine()} | {workload_name(args)} | {args.kv_cache_memory} | "
               f"{args.max_num_batched_tokens or 2048} | "
               f"{name} | {runs[0]['engine']['kv_blocks']} | "
               f"{per_round(runs, lambda run: str(run['engine']['preemptions']))} | "
               f"{per_round(runs, rate('output_tokens_per_s'))} | "
               f"{per_round(runs, rate('total_tokens_per_s'))} |")
        rows.append(row)
        print(row)
    ratios = [g["output_tokens_per_s"] / o["output_tokens_per_s"]
              for g, o in zip(results["groups"], results["one table"])]
    print("output tok/s, groups / one table: " + " / ".join(f"{r:.2f}x" for r in ratios))
    if args.record:
        record_rows(RESULTS, SECTION, section_text(), rows)


if __name__ == "__main__":
    main()
