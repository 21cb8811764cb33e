"""What the bench scripts that run in the project's venv share: progress lines, the
machine's name for RESULTS.md rows, appending those rows, and the synthetic serving
workload."""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path


def progress(message: str, quiet: bool = False) -> None:
    """A progress line on stderr, unless quiet."""
    if not quiet:
        print(f"  {message}", file=sys.stderr, flush=True)


def machine() -> str:
    """The CPU model, the number of CPUs this process may use and the memory."""
    model = platform.machine()
    memory = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f", {round(int(line.split()[1]) / 2**20)} GiB"
                break
    except OSError:
        pass
    return f"{len(os.sched_getaffinity(0))}-CPU {model}{memory}"


def best_of(repeats: int, run) -> tuple[float, object]:
    """The shortest of `repeats` runs of run() and the last one's result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def record_rows(results: Path, section: str, section_text: str, rows: list[str]) -> None:
    """Appends table rows after the last row of `section` (its heading line) in `results`;
    a missing section is created at the end from `section_text` (heading, text and header)."""
    text = results.read_text()
    block = "".join(row + "\n" for row in rows)
    if section not in text:
        results.write_text(text.rstrip("\n") + "\n\n" + section_text + block)
        return
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.rstrip("\n") == section)
    # After the last table row before the next section.
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    table = [i for i in range(start, end) if lines[i].startswith("|")]
    lines.insert(table[-1] + 1 if table else end, block)
    results.write_text("".join(lines))


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the serving workload (`llmc bench throughput --dump-workload`)."""
    parser.add_argument("--num-prompts", type=int, default=32)
    parser.add_argument("--input-len-range", default="32:128")
    parser.add_argument("--output-len-range", default="64:256")
    parser.add_argument("--seed", type=int, default=0)


def workload_name(args: argparse.Namespace) -> str:
    return (f"{args.num_prompts} requests, prompts {args.input_len_range}, "
            f"outputs {args.output_len_range} tokens, seed {args.seed}")


def dump_workload(llmc: Path, artifact: Path, args: argparse.Namespace,
                  path: Path) -> list[dict]:
    """Writes the workload to `path` (uniformly random prompt and output lengths and token
    ids) and returns its requests: {"prompt_ids", "max_tokens"} each."""
    subprocess.run([str(llmc), "bench", "throughput", str(artifact), "--quiet",
                    "--num-prompts", str(args.num_prompts),
                    "--input-len-range", args.input_len_range,
                    "--output-len-range", args.output_len_range, "--seed", str(args.seed),
                    "--dump-workload", str(path)], check=True)
    return [json.loads(line) for line in path.read_text().splitlines()]
