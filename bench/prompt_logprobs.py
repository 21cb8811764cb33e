"""Prompt logprobs (vLLM's prompt_logprobs, what lm-eval-harness's loglikelihood reads):
llmc against onnxruntime's logits of every prompt position, on the same model.

    PYTHONPATH=python .venv/bin/python bench/prompt_logprobs.py \
        [--artifact build/smollm2-135m.llmc] [--onnx models/smollm2-135m/model.onnx] \
        [--num-prompts 4] [--prompt-len 512] [--top 5] [--threads N] [--json] [--record]

Random token-id prompts (seeded). llmc: `llmc.LLM.generate` with max_tokens 1, without and
with `prompt_logprobs` (the prefix cache off, so both compute every prompt). onnxruntime: the
same ONNX file run on each prompt whole (its graph computes the logits of every position),
then numpy's log-softmax, the prompt tokens' logprobs and the top ones, as a harness scoring
with onnxruntime would. Best of --repeats runs each. The largest difference between the two
engines' prompt logprobs, and how often they name the same most likely token, are printed
with the timings.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import numpy as np

from common import best_of, machine, progress, record_rows

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Prompt logprobs: llmc against onnxruntime's logits of every position"


def llmc_runs(artifact: Path, prompts: list[list[int]], top: int, threads: int,
              repeats: int) -> dict:
    from llmc import LLM, SamplingParams

    with LLM(artifact, num_threads=threads, enable_prefix_caching=False, quiet=True) as llm:
        batch = [{"prompt_token_ids": p} for p in prompts]
        llm.generate(batch[:1], SamplingParams(max_tokens=1), use_tqdm=False)  # warm-up
        plain, _ = best_of(repeats, lambda: llm.generate(
            batch, SamplingParams(temperature=0, max_tokens=1), use_tqdm=False))
        scored, outputs = best_of(repeats, lambda: llm.generate(
            batch, SamplingParams(temperature=0, max_tokens=1, prompt_logprobs=top),
            use_tqdm=False))
    logprobs = [[entries[token].logprob for token, entries in
                 zip(prompt[1:], output.prompt_logprobs[1:])]
                for prompt, output in zip(prompts, outputs)]
    firsts = [[next(t for t, e in entries.items() if e.rank == 1)
               for entries in output.prompt_logprobs[1:]] for output in outputs]
    return {"prefill_s": plain, "prompt_logprobs_s": scored, "logprobs": logprobs,
            "most_likely": firsts}


def onnxruntime_run(onnx: Path, prompts: list[list[int]], top: int, threads: int,
                    repeats: int) -> dict:
    import onnxruntime as ort

    from llmc.testing.ort_reference import OrtDecoder

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    decoder = OrtDecoder(onnx, session_options=options)

    def score() -> tuple[list[list[float]], list[list[int]]]:
        scored, firsts = [], []
        for prompt in prompts:
            logits, _ = decoder.prefill([prompt])
            rows = logits[0, :-1].astype(np.float32)
            rows = rows - rows.max(axis=-1, keepdims=True)
            rows -= np.log(np.exp(rows).sum(axis=-1, keepdims=True))
            positions = np.arange(len(prompt) - 1)
            alternatives = np.argpartition(-rows, top, axis=-1)[:, :top]
            best = alternatives[positions, rows[positions[:, None], alternatives].argmax(axis=-1)]
            scored.append(rows[positions, prompt[1:]].tolist())
            firsts.append(best.tolist())
        return scored, firsts

    score()  # warm-up
    seconds, (logprobs, firsts) = best_of(repeats, score)
    return {"prompt_logprobs_s": seconds, "logprobs": logprobs, "most_likely": firsts}


def section_text() -> str:
    return f"""{SECTION}

`bench/prompt_logprobs.py`: random token-id prompts scored by each engine, every prompt
token's logprob given the tokens before it and its top alternatives. llmc: `llmc.LLM.generate`
(max_tokens 1, the prefix cache off), whose `prompt_logprobs` run each prompt token as a query
row of its own; "prefill s" is the same call without them. onnxruntime: the ONNX file run on
each prompt whole (its graph computes the logits of every position) and numpy's log-softmax
and top-k over them. Best of 3. "max diff": the largest difference between the two engines'
logprobs; "same top": the positions where both name the same most likely token. Default
model, fp32.

| date | machine | threads | prompts | llmc prefill s | llmc prompt_logprobs s | onnxruntime s | onnxruntime / llmc | max diff | same top |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=ROOT / "build" / "smollm2-135m.llmc")
    parser.add_argument("--onnx", type=Path,
                        default=ROOT / "models" / "smollm2-135m" / "model.onnx")
    parser.add_argument("--num-prompts", type=int, default=4)
    parser.add_argument("--prompt-len", type=int, default=512)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    for path, hint in ((args.artifact, "scripts/run-default-model.sh"),
                       (args.onnx, "scripts/run-default-model.sh")):
        if not path.exists():
            print(f"prompt_logprobs: {path} not found ({hint})", file=sys.stderr)
            return 1

    rng = np.random.default_rng(args.seed)
    prompts = [rng.integers(100, 40000, size=args.prompt_len).tolist()
               for _ in range(args.num_prompts)]
    progress("llmc.LLM.generate, without and with prompt_logprobs", args.quiet)
    ours = llmc_runs(args.artifact, prompts, args.top, args.threads, args.repeats)
    progress("onnxruntime", args.quiet)
    peer = onnxruntime_run(args.onnx, prompts, args.top, args.threads, args.repeats)
    difference = max(abs(a - b) for mine, theirs in zip(ours.pop("logprobs"), peer.pop("logprobs"))
                     for a, b in zip(mine, theirs))
    firsts = [(a, b) for mine, theirs in zip(ours.pop("most_likely"), peer.pop("most_likely"))
              for a, b in zip(mine, theirs)]
    agreement = sum(a == b for a, b in firsts) / len(firsts)
    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "threads": args.threads,
              "prompts": f"{args.num_prompts} x {args.prompt_len} tokens, top {args.top}",
              "llmc": ours, "onnxruntime": peer, "max_logprob_difference": difference,
              "same_most_likely_token": agreement,
              "onnxruntime_over_llmc": peer["prompt_logprobs_s"] / ours["prompt_logprobs_s"]}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"llmc prefill            {ours['prefill_s']:7.3f} s")
        print(f"llmc prompt_logprobs    {ours['prompt_logprobs_s']:7.3f} s")
        print(f"onnxruntime             {peer['prompt_logprobs_s']:7.3f} s "
              f"(onnxruntime / llmc {result['onnxruntime_over_llmc']:.2f}x)")
        print(f"largest logprob difference {difference:.2e}, the same most likely token at "
              f"{agreement:.2%} of the positions")
    if args.record:
        row = (f"| {result['date']} | {result['machine']} | {args.threads} | {result['prompts']} "
               f"| {ours['prefill_s']:.3f} | {ours['prompt_logprobs_s']:.3f} "
               f"| {peer['prompt_logprobs_s']:.3f} | {result['onnxruntime_over_llmc']:.2f}x "
               f"| {difference:.1e} | {agreement:.2%} |")
        record_rows(RESULTS, SECTION, section_text(), [row])
        progress(f"recorded in {RESULTS.relative_to(ROOT)}", args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
