"""vLLM's CPU backend on the default model: the serving workload all at once, and prefill and
batch-1 decode throughput. Run by .venv-vllm's Python (bash scripts/setup.sh vllm); it imports
nothing but what that venv holds:

    .venv-vllm/bin/python bench/vllm_runner.py --model HF_DIR [--threads 2] \
        [--dtype float32|bfloat16] [--workload FILE] [--prompt-tokens 128] \
        [--decode-tokens 64] [--repeat 3] [--max-model-len 2048] [--json]
        [--embed --workload FILE [--embeddings-out FILE.npy]]

HF_DIR is a transformers directory of the model (bench/engine_throughput.py writes the default
model's with scripts/exporters/default_model.py). The model runs in --dtype (float32) through
`vllm.LLM` with VLLM_CPU_OMP_THREADS_BIND pinning --threads OpenMP threads, prefix caching
off (the runs repeat one prompt), and tcmalloc and libiomp5 preloaded as vLLM's CPU guide
says.

With --workload (a `llmc bench throughput --dump-workload` file: prompt_ids and max_tokens per
line) every request is submitted in one `LLM.generate` call with max_num_seqs equal to their
number: continuous batching. Greedy, ignore_eos: each request generates exactly max_tokens.
Without it, a prompt of --prompt-tokens ids (numpy default_rng(0) over the vocabulary, as
bench/cpu_throughput.py and bench/llamacpp_runner.py draw it) runs alone: the prefill is the
time of a one-token generation, the decode the time of the further --decode-tokens tokens of
a (--decode-tokens + 1)-token generation; the median of --repeat runs.

With --embed, the model runs as vLLM's pooling runner (`runner="pooling"`: its last token's
final hidden state, L2-normalised) and `LLM.embed` embeds every workload prompt in one call;
the best of --repeat runs. --embeddings-out saves the embeddings ([prompts, hidden] float32).

Progress goes to stderr; --json prints the figures on stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path


def with_preloads() -> None:
    """Re-executes this script with tcmalloc and Intel's OpenMP preloaded, as vLLM's CPU
    installation guide sets LD_PRELOAD (it warns and runs slower without them)."""
    wanted = [str(Path(sys.prefix) / "lib" / "libiomp5.so"),
              "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"]
    present = os.environ.get("LD_PRELOAD", "").split(":")
    missing = [lib for lib in wanted if lib not in present and Path(lib).exists()]
    if missing:
        os.environ["LD_PRELOAD"] = ":".join([*missing, *filter(None, present)])
        os.execv(sys.executable, [sys.executable, *sys.argv])


def progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def seconds(llm, prompts: list[list[int]], max_tokens: list[int]) -> float:
    """Wall time of one generate call over the prompts, greedy, each to its max_tokens."""
    from vllm import SamplingParams, TokensPrompt
    params = [SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True) for n in max_tokens]
    start = time.perf_counter()
    outputs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                           use_tqdm=False)
    elapsed = time.perf_counter() - start
    for output, n in zip(outputs, max_tokens):
        if len(output.outputs[0].token_ids) != n:
            raise RuntimeError(f"vLLM generated {len(output.outputs[0].token_ids)} tokens "
                               f"of {n}")
    return elapsed


def embed(args: argparse.Namespace, requests: list[dict]) -> int:
    """--embed: the workload's prompts through the pooling runner, best of --repeat."""
    import numpy as np
    import vllm
    from vllm import TokensPrompt

    progress(f"loading {args.model} into vLLM {vllm.__version__} (pooling runner)")
    llm = vllm.LLM(model=str(args.model), runner="pooling", dtype=args.dtype, seed=0,
                   max_num_seqs=len(requests), max_model_len=args.max_model_len,
                   enable_prefix_caching=False)
    prompts = [TokensPrompt(prompt_token_ids=r["prompt_ids"]) for r in requests]
    llm.embed(prompts[:1], use_tqdm=False)  # warm-up
    best, outputs = float("inf"), []
    for index in range(args.repeat):
        progress(f"run {index + 1}/{args.repeat}")
        start = time.perf_counter()
        outputs = llm.embed(prompts, use_tqdm=False)
        best = min(best, time.perf_counter() - start)
    if args.embeddings_out:
        np.save(args.embeddings_out,
                np.array([output.outputs.embedding for output in outputs], dtype=np.float32))
    print(json.dumps({"vllm": vllm.__version__, "threads": args.threads, "dtype": args.dtype,
                      "num_requests": len(requests), "embed_s": best}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="transformers directory")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                        help="the weights', activations' and KV cache's type")
    parser.add_argument("--workload", type=Path, help="llmc bench --dump-workload file")
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-model-len", type=int, default=2048,
                        help="vLLM's longest sequence (raise it for prompts past 2047 tokens)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--embed", action="store_true",
                        help="embed the --workload prompts with the pooling runner")
    parser.add_argument("--embeddings-out", type=Path, help="with --embed: save them (.npy)")
    args = parser.parse_args()
    if args.embed and not args.workload:
        parser.error("--embed needs --workload")
    with_preloads()

    # vLLM reads these when its engine starts: its OpenMP threads, pinned to CPUs 0..N-1, and
    # the KV cache size in GiB.
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = f"0-{args.threads - 1}"
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "4")
    os.environ["VLLM_LOGGING_STREAM"] = "ext://sys.stderr"  # stdout carries the figures only
    import numpy as np
    import vllm

    requests = ([json.loads(line) for line in args.workload.read_text().splitlines()]
                if args.workload else [])
    if args.embed:
        return embed(args, requests)
    progress(f"loading {args.model} into vLLM {vllm.__version__}")
    llm = vllm.LLM(model=str(args.model), dtype=args.dtype, seed=0,
                   max_num_seqs=max(1, len(requests)), max_model_len=args.max_model_len,
                   enable_prefix_caching=False)  # repeated prompts must be computed again
    vocab = llm.get_tokenizer().vocab_size
    prompt = np.random.default_rng(0).integers(0, vocab, args.prompt_tokens).tolist()
    seconds(llm, [prompt[:16]], [4])  # warm-up

    result = {"vllm": vllm.__version__, "threads": args.threads, "dtype": args.dtype}
    if requests:
        progress(f"{len(requests)} requests at once")
        duration = seconds(llm, [r["prompt_ids"] for r in requests],
                           [r["max_tokens"] for r in requests])
        input_tokens = sum(len(r["prompt_ids"]) for r in requests)
        output_tokens = sum(r["max_tokens"] for r in requests)
        result.update(num_requests=len(requests), duration_s=duration,
                      input_tokens=input_tokens, output_tokens=output_tokens,
                      output_tokens_per_s=output_tokens / duration,
                      total_tokens_per_s=(input_tokens + output_tokens) / duration)
    else:
        prefill, decode = [], []
        for index in range(args.repeat):
            progress(f"run {index + 1}/{args.repeat}")
            prefill.append(seconds(llm, [prompt], [1]))
            decode.append(seconds(llm, [prompt], [args.decode_tokens + 1]) - prefill[-1])
        result.update(prefill_tok_s=args.prompt_tokens / statistics.median(prefill),
                      decode_tok_s=args.decode_tokens / statistics.median(decode))
    if args.json:
        print(json.dumps(result))
    else:
        print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
