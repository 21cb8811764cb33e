"""Batch-1 greedy decode of llama.cpp on the CPU with and without its prompt lookup decoding
(llama-cpp-python's LlamaPromptLookupDecoding draft model), on given prompt ids. Run by
.venv-llamacpp's Python (bash scripts/setup.sh llama-cpp):

    .venv-llamacpp/bin/python bench/llamacpp_lookup_runner.py --gguf PATH --prompts FILE \
        [--quant f32] [--threads 2] [--decode-tokens 128] [--num-pred-tokens 4] \
        [--max-ngram-size 4] [--repeat 3]

FILE holds a JSON object {workload name: prompt ids}. Each run generates --decode-tokens
tokens greedily through Llama.generate (the high-level API, which runs the draft model's
tokens through one llama_decode call and keeps the greedy ones that match), without stopping
at end-of-sequence. The decode time is from the first generated token to the last; the
figures are the median of --repeat runs. Prints {workload: {"plain": tok/s, "lookup": tok/s,
"tokens_equal": bool}} as JSON on stdout; progress on stderr.
"""
from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path

import llama_cpp
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

from llamacpp_runner import FTYPES, ROOT, progress, requantized


def decode(llm: llama_cpp.Llama, prompt: list[int], tokens: int) -> tuple[float, list[int]]:
    """Tokens per second after the first generated token, and the tokens."""
    llm.reset()
    generated, first = [], 0.0
    for token in llm.generate(prompt, temp=0.0, reset=True):
        generated.append(token)
        if len(generated) == 1:
            first = time.perf_counter()
        if len(generated) == tokens:
            break
    return (tokens - 1) / (time.perf_counter() - first), generated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--prompts", type=Path, required=True)
    parser.add_argument("--quant", choices=[*FTYPES, "asis"], default="f32")
    parser.add_argument("--work", type=Path, default=ROOT / "models" / "llamacpp")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--num-pred-tokens", type=int, default=4)
    parser.add_argument("--max-ngram-size", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
    gguf = requantized(args.gguf, args.quant, args.work, args.threads)
    prompts = json.loads(args.prompts.read_text())
    n_ctx = max(len(ids) for ids in prompts.values()) + args.decode_tokens + 64
    lookup = LlamaPromptLookupDecoding(max_ngram_size=args.max_ngram_size,
                                       num_pred_tokens=args.num_pred_tokens)
    engines = {}
    for name, draft in (("plain", None), ("lookup", lookup)):
        progress(f"loading {gguf.name} ({name})")
        engines[name] = llama_cpp.Llama(str(gguf), n_ctx=n_ctx, n_batch=n_ctx,
                                        n_threads=args.threads, n_threads_batch=args.threads,
                                        draft_model=draft, verbose=False)
    results = {}
    for workload, prompt in prompts.items():
        rates = {name: [] for name in engines}
        outputs = {}
        for index in range(args.repeat):
            for name, llm in engines.items():
                progress(f"{workload} run {index + 1}/{args.repeat}: llama.cpp {name}")
                rate, outputs[name] = decode(llm, prompt, args.decode_tokens)
                rates[name].append(rate)
        results[workload] = {name: statistics.median(values) for name, values in rates.items()}
        results[workload]["tokens_equal"] = outputs["plain"] == outputs["lookup"]
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
