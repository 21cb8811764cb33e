"""Encoding throughput of the C++ tokenizer next to the Hugging Face `tokenizers` package (Rust),
in one process, on the same ~1 MB multilingual text and the same tokenizer.json.

    PYTHONPATH=python .venv/bin/python bench/tokenizer_throughput.py [--json]
        [--tokenizer models/smollm2-135m/tokenizer.json] [--megabytes 1] [--repeats 5]

The text is generated here, deterministically: English prose, code, numbers, CJK, Korean,
Arabic, Hebrew, Cyrillic, Greek, Devanagari, emoji (ZWJ sequences included) and whitespace
runs, in paragraphs. Each tokenizer encodes the whole text as one string (`encode`, special
tokens added), once to warm its caches and then --repeats times, the two taking turns; the
median wall-clock time and the median CPU time of the calling thread (both encoders are
single-threaded) give MB/s: on a shared machine the CPU figures are the steadier.
The ids must agree. A progress line goes to stderr when it is a terminal.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from tokenizers import Tokenizer  # noqa: E402

from llmc.tokenizer import Tokenizer as CppTokenizer  # noqa: E402

ENGLISH = ("the of and to in is that for it as was with be by on not he this are or his from at "
           "which but have an they you were her she there been one all we their has would when "
           "what will more if no out so said can who about its into them than only time could "
           "new other some these two may first then do any like my now over such our man me "
           "even most made after also did many before must through back years where much your "
           "way well down should because each just those people how too little state good very "
           "make world still own see men work long get here between both life being under never "
           "day same another know while last might us great old year off come since against go "
           "came right used take three tokenizer compiler runtime streaming Paris France").split()
CODE = [
    "def {0}(x, y):\n    return x * {1} + y\n",
    "for (int i = 0; i < {1}; ++i) {{\n\t{0}[i] = i * i;\n}}\n",
    "if ({0} != nullptr && {0}->size() > {1}) return -1;\n",
    "    {0} = {{\"key\": [{1}, {1}.5, None], 'other': \"{0}\"}}\n",
]
# (first code point, count) of the ranges pseudo-words are drawn from.
SCRIPTS = {
    "chinese": (0x4E00, 3000), "japanese": (0x3041, 86), "katakana": (0x30A1, 90),
    "korean": (0xAC00, 2000), "arabic": (0x0621, 26), "hebrew": (0x05D0, 27),
    "cyrillic": (0x0430, 32), "greek": (0x03B1, 25), "devanagari": (0x0915, 37),
}
EMOJI = ["\U0001f600", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467",
         "\U0001f3f3\ufe0f\u200d\U0001f308", "\U0001f1eb\U0001f1f7", "\u2764\ufe0f", "\U0001f680"]


def multilingual_text(megabytes: float, seed: int = 2024) -> str:
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    paragraphs, size = [], 0

    def pseudo_word(script: str) -> str:
        first, count = SCRIPTS[script]
        return "".join(chr(first + rng.randrange(count)) for _ in range(rng.randint(1, 6)))

    while size < target:
        kind = rng.random()
        if kind < 0.45:
            words = [rng.choice(ENGLISH) for _ in range(rng.randint(8, 40))]
            words[0] = words[0].capitalize()
            text = " ".join(words) + rng.choice([".", "!", "?", ", 1,234 items.", " (3.14)."])
        elif kind < 0.6:
            text = "".join(rng.choice(CODE).format(rng.choice(ENGLISH), rng.randint(0, 9999))
                           for _ in range(rng.randint(1, 4)))
        elif kind < 0.75:
            script = rng.choice(["chinese", "japanese", "katakana", "korean"])
            joiner = " " if script == "korean" else ""
            text = joiner.join(pseudo_word(script) for _ in range(rng.randint(5, 30))) + "\u3002"
        elif kind < 0.9:
            script = rng.choice(["arabic", "hebrew", "cyrillic", "greek", "devanagari"])
            text = " ".join(pseudo_word(script) for _ in range(rng.randint(5, 25))) + "."
        else:
            text = " ".join(rng.choice(EMOJI + ["2024-01-01", "\t", "   ", "12345"])
                            for _ in range(rng.randint(3, 12)))
        paragraphs.append(text)
        size += len(text.encode()) + 1
    return "\n".join(paragraphs)


def median_seconds(encoders: dict, repeats: int, progress: bool) -> dict[str, tuple[float, float]]:
    """Each encoder's median wall-clock and CPU (this thread's) seconds, the runs interleaved
    so that both see the same load. Both encoders run on the calling thread, so the CPU time
    is the time of the work itself, whatever else the machine runs."""
    for encode in encoders.values():
        encode()  # warm-up: caches fill
    wall: dict[str, list[float]] = {name: [] for name in encoders}
    cpu: dict[str, list[float]] = {name: [] for name in encoders}
    for i in range(repeats):
        for name, encode in encoders.items():
            if progress:
                print(f"\r  run {i + 1}/{repeats}: {name}      ", end="", file=sys.stderr,
                      flush=True)
            start_wall, start_cpu = time.perf_counter(), time.thread_time()
            encode()
            wall[name].append(time.perf_counter() - start_wall)
            cpu[name].append(time.thread_time() - start_cpu)
    if progress:
        print("\r" + " " * 40 + "\r", end="", file=sys.stderr, flush=True)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name]))
            for name in encoders}


def machine() -> str:
    """The CPU model and the number of CPUs this process may use."""
    model = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {len(os.sched_getaffinity(0))} CPUs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path,
                        default=ROOT / "models" / "smollm2-135m" / "tokenizer.json")
    parser.add_argument("--megabytes", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    progress = sys.stderr.isatty() and not args.json

    text = multilingual_text(args.megabytes)
    num_bytes = len(text.encode())
    ours = CppTokenizer(args.tokenizer)
    reference = Tokenizer.from_file(str(args.tokenizer))
    ours_ids, ref_ids = ours.encode(text), reference.encode(text).ids
    if ours_ids != ref_ids:
        print("tokenizer_throughput: the ids differ from the tokenizers package's", file=sys.stderr)
        return 1
    seconds = median_seconds({"llmc": lambda: ours.encode(text),
                              "tokenizers": lambda: reference.encode(text).ids},
                             args.repeats, progress)
    (ours_wall, ours_cpu), (ref_wall, ref_cpu) = seconds["llmc"], seconds["tokenizers"]
    import tokenizers
    report = {
        "tokenizer": str(args.tokenizer),
        "text_bytes": num_bytes,
        "tokens": len(ours_ids),
        "llmc_mb_per_s": num_bytes / ours_wall / 1e6,
        "tokenizers_mb_per_s": num_bytes / ref_wall / 1e6,
        "ratio": ref_wall / ours_wall,
        "llmc_cpu_mb_per_s": num_bytes / ours_cpu / 1e6,
        "tokenizers_cpu_mb_per_s": num_bytes / ref_cpu / 1e6,
        "cpu_ratio": ref_cpu / ours_cpu,
        "tokenizers_version": tokenizers.__version__,
        "machine": machine(),
        "load_average": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{num_bytes} bytes, {len(ours_ids)} tokens ({args.tokenizer}; {report['machine']}, "
              f"load {report['load_average']:.1f})")
        print("                              wall MB/s   CPU MB/s")
        print(f"  llmc (C++)                 {report['llmc_mb_per_s']:9.2f}  "
              f"{report['llmc_cpu_mb_per_s']:9.2f}")
        print(f"  tokenizers {tokenizers.__version__:<8} (Rust) "
              f"{report['tokenizers_mb_per_s']:9.2f}  {report['tokenizers_cpu_mb_per_s']:9.2f}")
        print(f"  ratio llmc / tokenizers    {report['ratio']:8.2f}x  {report['cpu_ratio']:8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
