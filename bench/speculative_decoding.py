"""Speculative decoding by prompt lookup on the CPU: batch-1 greedy decode of the default model
with and without it, llmc against llama.cpp's prompt lookup decoding, on the same prompt ids.

    PYTHONPATH=python .venv/bin/python bench/speculative_decoding.py \
        [--artifact build/smollm2-135m.llmc] [--threads N] [--decode-tokens 128] \
        [--num-speculative-tokens 4] [--repeat 3] [--no-llama-cpp] [--json] [--quiet]

Workloads (chat prompts in the model's ChatML template, tokenized by the artifact's
tokenizer; both engines get the same ids): "copy" asks for a passage of
bench/quality_text.txt again, word for word; "code" asks for a Python function again with a
comment on each line; "open" asks for a story, whose output has little to copy. llmc: one Model, an Engine without speculation and one with
`{"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_min": 1}`, each request
greedy for --decode-tokens tokens (no stop token), interleaved in every round; the decode
rate is (tokens - 1) / (time from the first token to the last). llama.cpp: llama-cpp-python
in .venv-llamacpp (bench/llamacpp_lookup_runner.py, the default model's GGUF dequantized to
F32) without and with LlamaPromptLookupDecoding (num_pred_tokens K, max_ngram_size 4), the
same measure. Medians of --repeat rounds; progress on stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llmc.convert.gguf import default_gguf_path
from llmc.engine import Engine
from llmc.runtime import Model
from llmc.tokenizer import Tokenizer
from common import machine, progress

ROOT = Path(__file__).resolve().parents[1]
LLAMA_CPP_PYTHON = ROOT / ".venv-llamacpp" / "bin" / "python"

FUNCTION = '''def merge_intervals(intervals):
    intervals = sorted(intervals, key=lambda pair: pair[0])
    merged = []
    for start, end in intervals:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
'''


def chat(message: str) -> str:
    """A user message as SmolLM2-Instruct's chat template (ChatML) puts it before a reply."""
    return f"<|im_start|>user\n{message}<|im_end|>\n<|im_start|>assistant\n"


def workloads() -> dict[str, str]:
    passage = (ROOT / "bench" / "quality_text.txt").read_text()[:900]
    return {
        "copy": chat(f"{passage}\n\nRepeat the text above word for word."),
        "code": chat(f"{FUNCTION}\nRewrite the function above with a comment on each line."),
        "open": chat("Write a long story about a dragon who learns to bake bread."),
    }


def llmc_decode(model: Model, config: dict, prompt: list[int], tokens: int
                ) -> tuple[float, list[int], dict]:
    """Tokens per second after the first token, the tokens, and the engine's counters."""
    with Engine(model, **config) as engine:
        engine.add_request(0, prompt, max_tokens=tokens, temperature=0)
        generated, first = [], 0.0
        while engine.has_unfinished():
            for output in engine.step():
                generated.append(output["token"])
                if len(generated) == 1:
                    first = time.perf_counter()
        rate = (tokens - 1) / (time.perf_counter() - first)
        return rate, generated, engine.stats()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=ROOT / "build" / "smollm2-135m.llmc")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--num-speculative-tokens", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-llama-cpp", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    if not (args.artifact / "manifest.json").exists():
        print(f"speculative_decoding: {args.artifact} not found "
              "(run scripts/run-default-model.sh)", file=sys.stderr)
        return 1
    if not args.no_llama_cpp and not LLAMA_CPP_PYTHON.exists():
        print("speculative_decoding: .venv-llamacpp not found (bash scripts/setup.sh "
              "llama-cpp; or --no-llama-cpp)", file=sys.stderr)
        return 1
    tokenizer = Tokenizer(args.artifact / "tokenizer.json")
    prompts = {name: tokenizer.encode(text) for name, text in workloads().items()}
    speculative = {"speculative_config": {"method": "ngram", "prompt_lookup_min": 1,
                                          "num_speculative_tokens":
                                              args.num_speculative_tokens}}
    results = {}
    with Model(args.artifact, num_threads=args.threads) as model:
        for name, prompt in prompts.items():
            rates = {"plain": [], "speculative": []}
            for index in range(args.repeat):
                progress(f"{name} round {index + 1}/{args.repeat}: llmc", args.quiet)
                plain, expected, _ = llmc_decode(model, {}, prompt, args.decode_tokens)
                fast, tokens, stats = llmc_decode(model, speculative, prompt,
                                                  args.decode_tokens)
                if tokens != expected:
                    raise SystemExit(f"{name}: speculative decoding changed the greedy tokens")
                rates["plain"].append(plain)
                rates["speculative"].append(fast)
            results[name] = {"prompt_tokens": len(prompt),
                             "llmc": {key: statistics.median(v) for key, v in rates.items()},
                             "acceptance": stats["accepted_draft_tokens"]
                             / max(1, stats["draft_tokens"]),
                             "text": tokenizer.decode(expected)[:160]}

    if not args.no_llama_cpp:
        progress("llama.cpp F32, without and with prompt lookup decoding", args.quiet)
        with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
            json.dump(prompts, file)
            file.flush()
            run = subprocess.run(
                [str(LLAMA_CPP_PYTHON), str(ROOT / "bench" / "llamacpp_lookup_runner.py"),
                 "--gguf", str(default_gguf_path()), "--prompts", file.name,
                 "--threads", str(args.threads), "--decode-tokens", str(args.decode_tokens),
                 "--num-pred-tokens", str(args.num_speculative_tokens),
                 "--repeat", str(args.repeat)],
                check=True, stdout=subprocess.PIPE, text=True,
                stderr=subprocess.DEVNULL if args.quiet else None)
        for name, figures in json.loads(run.stdout).items():
            results[name]["llama.cpp"] = figures

    report = {"machine": machine(), "threads": args.threads,
              "decode_tokens": args.decode_tokens,
              "num_speculative_tokens": args.num_speculative_tokens, "workloads": results}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"batch-1 greedy decode, tok/s; {args.decode_tokens} tokens, drafts of "
          f"{args.num_speculative_tokens}, {args.threads} threads, {machine()}")
    print(f"{'workload':>9}{'llmc':>9}{'+spec':>9}{'gain':>7}{'accepted':>10}"
          f"{'llama.cpp':>11}{'+lookup':>9}{'gain':>7}{'llmc+spec / llama.cpp+lookup':>30}")
    for name, row in results.items():
        ours = row["llmc"]
        line = (f"{name:>9}{ours['plain']:>9.1f}{ours['speculative']:>9.1f}"
                f"{ours['speculative'] / ours['plain']:>6.2f}x{100 * row['acceptance']:>9.0f}%")
        if "llama.cpp" in row:
            theirs = row["llama.cpp"]
            line += (f"{theirs['plain']:>11.1f}{theirs['lookup']:>9.1f}"
                     f"{theirs['lookup'] / theirs['plain']:>6.2f}x"
                     f"{ours['speculative'] / theirs['lookup']:>29.2f}x")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
