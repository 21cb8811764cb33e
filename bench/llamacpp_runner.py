"""Prefill and batch-1 decode throughput of llama.cpp on the CPU, on a GGUF file, through
llama-cpp-python's low-level API. Run by .venv-llamacpp's Python (bash scripts/setup.sh
llama-cpp); it imports nothing but what that venv holds:

    .venv-llamacpp/bin/python bench/llamacpp_runner.py --gguf PATH \
        [--quant f32|f16|bf16|q8_0|q4_0|asis] [--work DIR] [--threads 2] [--prompt-tokens 128] \
        [--decode-tokens 64] [--repeat 3] [--json]

The default model's GGUF is what `llmc.convert.gguf.default_gguf_path()` returns. --quant
other than asis first requantizes the file with llama_model_quantize into --work (default
models/llamacpp, where it is kept by name and reused). Each run clears the KV cache, decodes
the prompt in one llama_decode call (prefill), then greedily decodes --decode-tokens tokens
one llama_decode call each (batch 1). The prompt is the one bench/cpu_throughput.py uses:
--prompt-tokens ids drawn with numpy's default_rng(0) over the vocabulary. n_threads and
n_threads_batch are --threads; the figures are wall-clock tokens/s, the median of --repeat
runs. Progress goes to stderr; --json prints {quant, gguf_bytes, prefill_tok_s,
decode_tok_s, threads, llama_cpp_python} on stdout.
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
import numpy as np

ROOT = Path(__file__).resolve().parents[1]

FTYPES = {"f32": llama_cpp.LLAMA_FTYPE_ALL_F32, "f16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16,
          "bf16": llama_cpp.LLAMA_FTYPE_MOSTLY_BF16, "q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
          "q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0}


def progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def requantized(gguf: Path, quant: str, work: Path, threads: int) -> Path:
    """The GGUF to measure: gguf itself for asis, else its requantization cached in work."""
    if quant == "asis":
        return gguf
    out = work / f"{gguf.stem}.{quant}.gguf"
    if not out.exists():
        progress(f"quantizing {gguf.name} to {quant}")
        work.mkdir(parents=True, exist_ok=True)
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = FTYPES[quant]
        params.allow_requantize = True
        params.nthread = threads
        partial = out.with_suffix(".partial")
        if llama_cpp.llama_model_quantize(str(gguf).encode(), str(partial).encode(), params):
            raise RuntimeError(f"llama_model_quantize failed on {gguf}")
        partial.rename(out)
    return out


def decode(ctx, tokens: list[int], n_vocab: int) -> int:
    """Runs tokens through the model; the greedy next token."""
    array = (llama_cpp.llama_token * len(tokens))(*tokens)
    if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(array, len(tokens))):
        raise RuntimeError("llama_decode failed")
    return int(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1),
                                     shape=(n_vocab,)).argmax())


def run(ctx, memory, prompt: list[int], decode_tokens: int, n_vocab: int
        ) -> tuple[float, float]:
    """Seconds of the prefill and of the decode steps, from an empty KV cache."""
    llama_cpp.llama_memory_clear(memory, True)
    start = time.perf_counter()
    token = decode(ctx, prompt, n_vocab)
    prefill = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(decode_tokens):
        token = decode(ctx, [token], n_vocab)
    return prefill, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--quant", choices=[*FTYPES, "asis"], default="asis")
    parser.add_argument("--work", type=Path, default=ROOT / "models" / "llamacpp",
                        help="where requantized GGUF files are kept")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # llama.cpp's own log
    llama_cpp.llama_backend_init()
    gguf = requantized(args.gguf, args.quant, args.work, args.threads)
    progress(f"loading {gguf}")
    model = llama_cpp.llama_model_load_from_file(str(gguf).encode(),
                                                 llama_cpp.llama_model_default_params())
    if not model:
        raise RuntimeError(f"cannot load {gguf}")
    n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = max(512, args.prompt_tokens + args.decode_tokens)
    params.n_batch = params.n_ubatch = params.n_ctx
    params.n_threads = params.n_threads_batch = args.threads
    ctx = llama_cpp.llama_init_from_model(model, params)
    memory = llama_cpp.llama_get_memory(ctx)
    prompt = np.random.default_rng(0).integers(0, n_vocab, args.prompt_tokens).tolist()

    runs = []
    for index in range(args.repeat):
        progress(f"run {index + 1}/{args.repeat}: llama.cpp {args.quant}")
        runs.append(run(ctx, memory, prompt, args.decode_tokens, n_vocab))
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)

    result = {"quant": args.quant, "gguf_bytes": gguf.stat().st_size,
              "prefill_tok_s": args.prompt_tokens / statistics.median(r[0] for r in runs),
              "decode_tok_s": args.decode_tokens / statistics.median(r[1] for r in runs),
              "threads": args.threads, "llama_cpp_python": llama_cpp.__version__}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"llama.cpp {args.quant} ({result['gguf_bytes']} bytes): "
              f"prefill {result['prefill_tok_s']:.1f} tok/s, "
              f"decode {result['decode_tok_s']:.1f} tok/s (batch 1), {args.threads} threads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
