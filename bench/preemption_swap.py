"""Preemption by recompute vs by swap: the serving engine under a KV cache too small for its
requests, with and without swap space.

    PYTHONPATH=python .venv/bin/python bench/preemption_swap.py \
        [--artifact build/smollm2-135m.llmc] [--kv-blocks 96] [--num-prompts 32] \
        [--input-len-range 64:256] [--output-len-range 64:256] [--seed 0] [--threads N] [--json]

One workload (`llmc bench throughput --dump-workload`: uniformly random lengths and token ids)
is run twice by `llmc bench throughput --max-concurrency NUM_PROMPTS --kv-blocks K`: without
swap space (every preempted sequence is recomputed from its tokens) and with `--swap-space 4`
(a preempted sequence's blocks go to host memory and back when that costs less than
recomputing them). Greedy, no stop tokens. Reported per run: output tokens/s, preemptions (and
how many swapped), the tokens the model computed (a recomputed sequence's tokens count again)
and TPOT. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LLMC = ROOT / "build" / "bin" / "llmc"


def run(artifact: Path, workload: Path, args, swap: list[str]) -> dict:
    command = [str(LLMC), "bench", "throughput", str(artifact), "--dataset", str(workload),
               "--max-concurrency", str(args.num_prompts), "--kv-blocks", str(args.kv_blocks),
               "--threads", str(args.threads), "--json", *swap]
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit(f"preemption_swap: {' '.join(command)} failed (exit {result.returncode})")
    return json.loads(result.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=ROOT / "build" / "smollm2-135m.llmc")
    parser.add_argument("--kv-blocks", type=int, default=96)
    parser.add_argument("--num-prompts", type=int, default=32)
    parser.add_argument("--input-len-range", default="64:256")
    parser.add_argument("--output-len-range", default="64:256")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.artifact / "manifest.json").exists():
        print(f"preemption_swap: {args.artifact} not found (run scripts/run-default-model.sh)",
              file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        workload = Path(tmp) / "workload.jsonl"
        subprocess.run([str(LLMC), "bench", "throughput", str(args.artifact), "--num-prompts",
                        str(args.num_prompts), "--input-len-range", args.input_len_range,
                        "--output-len-range", args.output_len_range, "--seed", str(args.seed),
                        "--dump-workload", str(workload), "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        results = {}
        for name, swap in (("recompute", []), ("swap", ["--swap-space", "4"])):
            print(f"  {name}: {args.num_prompts} requests over {args.kv_blocks} KV blocks",
                  file=sys.stderr, flush=True)
            results[name] = run(args.artifact, workload, args, swap)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'preemption':12}{'out tok/s':>11}{'preemptions':>13}{'swapped':>9}"
          f"{'computed tokens':>17}{'TPOT p50 ms':>13}")
    for name, report in results.items():
        engine = report["engine"]
        print(f"{name:12}{report['output_tokens_per_s']:>11.1f}{engine['preemptions']:>13}"
              f"{engine['swap_preemptions']:>9}{engine['computed_tokens']:>17}"
              f"{report['tpot_ms']['p50']:>13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
