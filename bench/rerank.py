"""Reranking: llmc's LLM.score of a causal LM served as a cross-encoder, against onnxruntime
on the same ONNX file.

    PYTHONPATH=python .venv/bin/python bench/rerank.py [--onnx models/smollm2-135m/model.onnx]
        [--num-documents 64] [--document-len-range 32:256] [--tokens no,yes]
        [--ort-batch 8] [--threads N] [--repeats 3] [--json] [--record]
        [--compile-args "--dtype bf16 --bf16-activations"]

The workload of a reranker behind retrieval: one query of about 20 tokens against
--num-documents passages of real text (bench/quality_text.txt, cut at seeded word counts
that give --document-len-range tokens), each pair read as the tokenizer's pair encoding and
scored by the LM head's logit of "yes" minus that of "no" at its last token (the sigmoid of
it), as Qwen3-Reranker is served. The model: the default model (SmolLM2-135M) as optimum
exports it, its head's logits of --tokens standing in for a trained reranker's.

llmc: `llmc compile --classifier-from-token no,yes`, then `LLM.score(query, documents)` in a fresh engine each
run: the engine batches every pair; with the prefix cache on (the default), the query's full
blocks are computed once for all pairs, and with it off every token is computed. onnxruntime: the same
file, the pairs sorted by length in left-padded batches of --ort-batch and one at a time, the
logits of the two tokens at each pair's last position; the faster is the peer. Best of
--repeats runs each; the largest difference between the engines' scores is printed.
--compile-args compiles llmc's artifact with more options (bf16 weights and products on AMX
tiles); onnxruntime runs the fp32 file.
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

import numpy as np

from common import best_of, machine, progress, record_rows

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Reranking: llmc's LLM.score against onnxruntime on the same file"
QUERY = "Which of these passages tells how the river reached the sea, and why did it flood?"


def documents(tokenizer, count: int, low: int, high: int, seed: int) -> list[str]:
    """`count` passages of quality_text.txt, each cut at the word that brings it to a
    seeded length of low..high tokens."""
    words = (ROOT / "bench" / "quality_text.txt").read_text().split()
    rng = np.random.default_rng(seed)
    passages = []
    for _ in range(count):
        target = int(rng.integers(low, high + 1))
        start = int(rng.integers(0, len(words) - 4 * high))
        end = start + 1
        while len(tokenizer.encode(" ".join(words[start:end])).ids) < target:
            end += 1
        passages.append(" ".join(words[start:end]))
    return passages


def llmc_run(artifact: Path, documents: list[str], threads: int, repeats: int,
             prefix_caching: bool) -> dict:
    """The best of `repeats` LLM.score calls, each in a fresh engine: a warm one's prefix
    cache would hold the whole pairs of the run before."""
    from llmc import LLM

    best, outputs = float("inf"), None
    for _ in range(repeats):
        with LLM(artifact, num_threads=threads, enable_prefix_caching=prefix_caching,
                 quiet=True) as llm:
            llm.score("a warm-up", ["of the kernels"], use_tqdm=False)
            seconds, outputs = best_of(1, lambda: llm.score(QUERY, documents, use_tqdm=False))
        best = min(best, seconds)
    return {"seconds": best, "scores": np.array([o.outputs.score for o in outputs]),
            "prompts": [o.prompt_token_ids for o in outputs]}


def onnxruntime_run(onnx: Path, prompts: list[list[int]], token_ids: list[int], batch: int,
                    threads: int, repeats: int) -> dict:
    import onnxruntime as ort

    from llmc.testing.ort_reference import OrtDecoder, pad

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    decoder = OrtDecoder(onnx, session_options=options)
    no, yes = token_ids

    def score(size: int) -> np.ndarray:
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        scores = np.zeros(len(prompts))
        for start in range(0, len(order), size):
            chosen = order[start:start + size]
            padded = pad([prompts[i] for i in chosen], "left")
            logits, _ = decoder.forward(padded.input_ids, padded.attention_mask)
            last = logits[:, -1].astype(np.float64)
            scores[chosen] = 1 / (1 + np.exp(-(last[:, yes] - last[:, no])))
        return scores

    score(batch)  # warm-up
    batched, scores = best_of(repeats, lambda: score(batch))
    one_by_one, _ = best_of(repeats, lambda: score(1))
    return {"batched_seconds": batched, "one_by_one_seconds": one_by_one,
            "seconds": min(batched, one_by_one), "scores": scores}


def section_text() -> str:
    return f"""{SECTION}

`bench/rerank.py`: one query against passages of real text, each (query, passage) pair
scored by the default model's (SmolLM2-135M, optimum's export) LM head logit of "yes" minus
"no" at its last token, as Qwen3-Reranker is served. llmc: `llmc compile
--classifier-from-token no,yes`, then `LLM.score(query, passages)` with the prefix cache on
(the query computed once) and off. onnxruntime: the same file, the pairs sorted by length in
left-padded batches of 8 and one at a time; the faster is the peer. Best of 3, each llmc run
in a fresh engine. "llmc": the artifact's compile options (onnxruntime runs the fp32 file).
"max diff": the largest difference between the two engines' scores (probabilities).

| date | machine | threads | llmc | passages | tokens | llmc s (prefix cache on / off) | llmc pairs/s | onnxruntime s (batched / one by one) | llmc / onnxruntime (on / off) | max diff |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnx", type=Path, default=ROOT / "models" / "smollm2-135m" / "model.onnx")
    parser.add_argument("--num-documents", type=int, default=64)
    parser.add_argument("--document-len-range", default="32:256")
    parser.add_argument("--tokens", default="no,yes",
                        help="the tokens whose logits score: no,yes (the tokenizer's spelling)")
    parser.add_argument("--compile-args", default="",
                        help="more `llmc compile` options for llmc's artifact")
    parser.add_argument("--ort-batch", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    if not args.onnx.exists():
        print(f"rerank: {args.onnx} not found (scripts/setup.sh makes the default model)",
              file=sys.stderr)
        return 1
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(args.onnx.parent / "tokenizer.json"))
    tokens = args.tokens.split(",")
    vocab = tokenizer.get_vocab()
    if len(tokens) != 2 or not all(token in vocab for token in tokens):
        print(f"rerank: --tokens must be two tokens of the vocabulary, not {args.tokens}",
              file=sys.stderr)
        return 1
    low, high = (int(n) for n in args.document_len_range.split(":"))
    passages = documents(tokenizer, args.num_documents, low, high, args.seed)

    with tempfile.TemporaryDirectory() as directory:
        artifact = Path(directory) / "reranker.llmc"
        progress(f"compiling {args.onnx} with --classifier-from-token {args.tokens}", args.quiet)
        llmc_binary = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
        subprocess.run([str(llmc_binary), "compile", str(args.onnx), "-o", str(artifact),
                        "--quiet", "--classifier-from-token", args.tokens,
                        *args.compile_args.split()], check=True)
        progress(f"llmc.LLM.score of {len(passages)} pairs, prefix cache on and off", args.quiet)
        cached = llmc_run(artifact, passages, args.threads, args.repeats, True)
        uncached = llmc_run(artifact, passages, args.threads, args.repeats, False)
    prompts = cached.pop("prompts")
    uncached.pop("prompts")
    expected = [tokenizer.encode(QUERY, passage).ids for passage in passages]
    if prompts != expected:
        print("rerank: llmc's pair encodings differ from the tokenizers package's", file=sys.stderr)
        return 1
    total = sum(len(p) for p in prompts)
    progress("onnxruntime, batched and one by one", args.quiet)
    peer = onnxruntime_run(args.onnx, prompts, [vocab[t] for t in tokens], args.ort_batch,
                           args.threads, args.repeats)
    difference = float(np.abs(cached.pop("scores") - peer.pop("scores")).max())
    uncached.pop("scores")
    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "threads": args.threads, "compile_args": args.compile_args,
              "passages": f"{args.num_documents} of {args.document_len_range} tokens",
              "tokens": total, "llmc": cached, "llmc_no_prefix_cache": uncached,
              "onnxruntime": peer, "max_score_difference": difference,
              "llmc_pairs_per_second": args.num_documents / cached["seconds"],
              "speedup_over_onnxruntime": peer["seconds"] / cached["seconds"],
              "speedup_over_onnxruntime_no_prefix_cache": peer["seconds"] / uncached["seconds"]}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"llmc, prefix cache on     {cached['seconds']:7.3f} s "
              f"({result['llmc_pairs_per_second']:.1f} pairs/s, {total} tokens)")
        print(f"llmc, prefix cache off    {uncached['seconds']:7.3f} s")
        print(f"onnxruntime batched       {peer['batched_seconds']:7.3f} s")
        print(f"onnxruntime one by one    {peer['one_by_one_seconds']:7.3f} s")
        print(f"llmc / onnxruntime {result['speedup_over_onnxruntime']:.2f}x (prefix cache off "
              f"{result['speedup_over_onnxruntime_no_prefix_cache']:.2f}x); largest score "
              f"difference {difference:.2e}")
    if args.record:
        row = (f"| {result['date']} | {result['machine']} | {args.threads} | "
               f"{args.compile_args or 'fp32'} | {result['passages']} | {total} | "
               f"{cached['seconds']:.3f} / {uncached['seconds']:.3f} | "
               f"{result['llmc_pairs_per_second']:.1f} | "
               f"{peer['batched_seconds']:.3f} / {peer['one_by_one_seconds']:.3f} | "
               f"{result['speedup_over_onnxruntime']:.2f}x / "
               f"{result['speedup_over_onnxruntime_no_prefix_cache']:.2f}x | {difference:.1e} |")
        record_rows(RESULTS, SECTION, section_text(), [row])
    return 0


if __name__ == "__main__":
    sys.exit(main())
