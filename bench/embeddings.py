"""Embeddings: llmc's LLM.embed against onnxruntime on the same export without its LM head.

    .venv-optimum/bin/optimum-cli export onnx --model models/smollm2-135m-hf/hf \
        --task feature-extraction build/smollm2-135m-embed      # once: the default model's
    PYTHONPATH=python .venv/bin/python bench/embeddings.py \
        [--onnx build/smollm2-135m-embed/model.onnx] [--num-prompts 64] \
        [--prompt-len-range 32:256] [--ort-batch 8] [--threads N] [--json] [--record]
        [--artifact DIR] [--variant NAME] [--vllm [--vllm-dtype float32|bfloat16]]

Seeded random token-id prompts, each embedded as its last token's final hidden state,
L2-normalised (vLLM's LAST pooling). llmc: `llmc.LLM.embed` of every prompt at once (the
engine batches them; the prefix cache off, so every token is computed), on the ONNX file
compiled with the defaults, or on --artifact (compiled from it with other options; --variant
names them in the table). onnxruntime: the
same ONNX file on the prompts sorted by length in padded batches of --ort-batch (left
padding, so that the last position is each prompt's last token), as sentence-transformers
batches them, and on one prompt at a time; the faster of the two is the peer. Best of
--repeats runs each. With --vllm, vLLM's CPU backend too (bench/vllm_runner.py --embed in
.venv-vllm: its pooling runner on the default model's transformers directory, the same
prompts in one LLM.embed call). The largest differences between the engines' embeddings are
printed with the timings.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from common import best_of, machine, progress, record_rows
from peers import run_vllm, vllm_missing

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Embeddings: llmc's LLM.embed against onnxruntime on the same export"


def llmc_run(onnx: Path, prompts: list[list[int]], threads: int, repeats: int) -> dict:
    from llmc import LLM

    with LLM(onnx, num_threads=threads, enable_prefix_caching=False, quiet=True) as llm:
        llm.embed(prompts[:1], use_tqdm=False)  # warm-up
        seconds, outputs = best_of(repeats, lambda: llm.embed(prompts, use_tqdm=False))
    return {"seconds": seconds,
            "embeddings": np.array([output.outputs.embedding for output in outputs])}


def onnxruntime_run(onnx: Path, prompts: list[list[int]], batch: int, threads: int,
                    repeats: int) -> dict:
    import onnxruntime as ort

    from llmc.testing.llama import default_position_ids
    from llmc.testing.ort_reference import pad

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(onnx), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    takes_positions = "position_ids" in {i.name for i in session.get_inputs()}

    def embed(size: int) -> np.ndarray:
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        embeddings = np.zeros((len(prompts), 0), dtype=np.float32)
        for start in range(0, len(order), size):
            chosen = order[start:start + size]
            padded = pad([prompts[i] for i in chosen], "left")
            feeds = {"input_ids": padded.input_ids, "attention_mask": padded.attention_mask}
            if takes_positions:
                feeds["position_ids"] = default_position_ids(padded.attention_mask,
                                                             padded.input_ids.shape[1])
            last = session.run(["last_hidden_state"], feeds)[0][:, -1]
            if embeddings.shape[1] == 0:
                embeddings = np.zeros((len(prompts), last.shape[1]), dtype=np.float32)
            embeddings[chosen] = last / np.linalg.norm(last, axis=-1, keepdims=True)
        return embeddings

    embed(batch)  # warm-up
    batched, embeddings = best_of(repeats, lambda: embed(batch))
    one_by_one, _ = best_of(repeats, lambda: embed(1))
    return {"batched_seconds": batched, "one_by_one_seconds": one_by_one,
            "seconds": min(batched, one_by_one), "embeddings": embeddings}


def vllm_run(prompts: list[list[int]], dtype: str, threads: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        workload = Path(directory) / "workload.jsonl"
        workload.write_text("".join(json.dumps({"prompt_ids": p, "max_tokens": 1}) + "\n"
                                    for p in prompts))
        embeddings = Path(directory) / "embeddings.npy"
        result = run_vllm(["--embed", "--workload", str(workload), "--dtype", dtype,
                           "--repeat", str(repeats), "--embeddings-out", str(embeddings),
                           "--max-model-len", str(max(map(len, prompts)) + 1)], threads)
        return {"seconds": result["embed_s"], "vllm": result["vllm"], "dtype": dtype,
                "embeddings": np.load(embeddings)}


def section_text() -> str:
    return f"""{SECTION}

`bench/embeddings.py`: seeded random token-id prompts, each embedded as its last token's
final hidden state, L2-normalised. The model: the default model (SmolLM2-135M) exported by
optimum-onnx with `--task feature-extraction` (no LM head; its hidden states serve here as
an embedding model's would). llmc: `llmc.LLM.embed` of every prompt at once (the prefix
cache off). onnxruntime: the same file, the prompts sorted by length in left-padded batches
("batched") and one at a time; the faster is the peer. vLLM: its CPU backend's pooling
runner (`runner="pooling"`, LAST pooling, normalised) on the model's transformers weights, the
same prompts in one `LLM.embed` call, in the dtype the row names. Best of 3. "max diff": the
largest difference between llmc's normalised embeddings and each peer's. "llmc": the
artifact llmc ran, fp32 unless it says otherwise; onnxruntime runs the fp32 file.

| date | machine | threads | llmc | prompts | tokens | llmc s | llmc prompts/s | onnxruntime s (batched / one by one) | llmc / onnxruntime | vLLM s | llmc / vLLM | max diff (onnxruntime / vLLM) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnx", type=Path,
                        default=ROOT / "build" / "smollm2-135m-embed" / "model.onnx")
    parser.add_argument("--num-prompts", type=int, default=64)
    parser.add_argument("--prompt-len-range", default="32:256")
    parser.add_argument("--artifact", type=Path,
                        help="llmc runs this artifact, compiled from --onnx (default: --onnx, "
                             "compiled with the defaults)")
    parser.add_argument("--variant", default="fp32", help="the artifact's options, for the table")
    parser.add_argument("--ort-batch", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--vllm", action="store_true", help="vLLM's CPU backend too")
    parser.add_argument("--vllm-dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    if args.vllm and (why := vllm_missing()):
        print(f"embeddings: {why}", file=sys.stderr)
        return 1
    if not args.onnx.exists():
        print(f"embeddings: {args.onnx} not found: export it first (see the top of "
              f"bench/embeddings.py)", file=sys.stderr)
        return 1
    low, high = (int(n) for n in args.prompt_len_range.split(":"))

    rng = np.random.default_rng(args.seed)
    prompts = [rng.integers(100, 40000, size=int(rng.integers(low, high + 1))).tolist()
               for _ in range(args.num_prompts)]
    tokens = sum(len(p) for p in prompts)
    progress(f"llmc.LLM.embed of {len(prompts)} prompts ({tokens} tokens)", args.quiet)
    ours = llmc_run(args.artifact or args.onnx, prompts, args.threads, args.repeats)
    progress("onnxruntime, batched and one by one", args.quiet)
    peer = onnxruntime_run(args.onnx, prompts, args.ort_batch, args.threads, args.repeats)
    vllm = None
    if args.vllm:
        progress(f"vLLM ({args.vllm_dtype})", args.quiet)
        vllm = vllm_run(prompts, args.vllm_dtype, args.threads, args.repeats)
    embeddings = ours.pop("embeddings")
    difference = float(np.abs(embeddings - peer.pop("embeddings")).max())
    vllm_difference = float(np.abs(embeddings - vllm.pop("embeddings")).max()) if vllm else None
    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "threads": args.threads, "variant": args.variant,
              "prompts": f"{args.num_prompts} of {args.prompt_len_range} tokens",
              "tokens": tokens, "llmc": ours, "onnxruntime": peer,
              "vllm": vllm, "max_embedding_difference": difference,
              "max_embedding_difference_vllm": vllm_difference,
              "llmc_prompts_per_second": args.num_prompts / ours["seconds"],
              "speedup_over_onnxruntime": peer["seconds"] / ours["seconds"]}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"llmc                      {ours['seconds']:7.3f} s "
              f"({result['llmc_prompts_per_second']:.1f} prompts/s, "
              f"{tokens / ours['seconds']:.0f} tokens/s)")
        print(f"onnxruntime batched       {peer['batched_seconds']:7.3f} s")
        print(f"onnxruntime one by one    {peer['one_by_one_seconds']:7.3f} s")
        print(f"llmc / onnxruntime {result['speedup_over_onnxruntime']:.2f}x; largest "
              f"embedding difference {difference:.2e}")
        if vllm:
            print(f"vLLM {vllm['dtype']:9}            {vllm['seconds']:7.3f} s "
                  f"(llmc / vLLM {vllm['seconds'] / ours['seconds']:.2f}x; largest embedding "
                  f"difference {vllm_difference:.2e})")
    if args.record:
        vllm_cells = (f"{vllm['seconds']:.3f} ({vllm['dtype']}) | "
                      f"{vllm['seconds'] / ours['seconds']:.2f}x | {difference:.1e} / "
                      f"{vllm_difference:.1e}" if vllm else f"- | - | {difference:.1e} / -")
        row = (f"| {result['date']} | {result['machine']} | {args.threads} | {args.variant} | "
               f"{result['prompts']} | {tokens} | {ours['seconds']:.3f} | "
               f"{result['llmc_prompts_per_second']:.1f} | "
               f"{peer['batched_seconds']:.3f} / {peer['one_by_one_seconds']:.3f} | "
               f"{result['speedup_over_onnxruntime']:.2f}x | {vllm_cells} |")
        record_rows(RESULTS, SECTION, section_text(), [row])
    return 0


if __name__ == "__main__":
    sys.exit(main())
