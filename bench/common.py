"""What the bench scripts that run in the project's venv share: progress lines and the
machine's name for RESULTS.md rows."""
from __future__ import annotations

import os
import platform
import sys
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
