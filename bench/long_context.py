"""Long contexts on the CPU: prefill and batch-1 decode at 2k and 4k tokens of context, llmc
against llama.cpp (F32) and optionally vLLM on the default model, and how much of llmc's
decode step the context costs.

    PYTHONPATH=python .venv/bin/python bench/long_context.py [--artifact build/smollm2-135m.llmc] \
        [--contexts 128,2048,4096] [--decode-tokens 64] [--threads N] [--no-llama-cpp] \
        [--vllm [--vllm-dtype float32|bfloat16]] [--json] [--quiet]

Per context length L: llmc's `llmc bench throughput --num-prompts 1 --input-len-range L:L
--output-len-range D:D --max-concurrency 1` (one request of L random token ids, D greedy
tokens; after its own warm-up) gives the prefill rate (L / TTFT) and the decode step (TPOT);
llama.cpp through llama-cpp-python (`.venv-llamacpp`, bench/llamacpp_runner.py, the default
model's GGUF dequantized to F32) runs L prompt tokens and D decode steps the same way, and
with --vllm so does vLLM's CPU backend (bench/vllm_runner.py in .venv-vllm, bench/peers.py:
--vllm-dtype bfloat16 for an artifact of bf16 activations and cache; its prefill is a
one-token generation, its decode the further D tokens). The
context's share of llmc's decode step is (TPOT(L) - TPOT(shortest)) / TPOT(L): attention over
the cached tokens and what else grows with them. The KV bytes a decode step reads are L x
layers x 2 x kv_heads x head_dim x 4 (f32; x 2 with the bf16 cache, head_dim + 4 with the int8
cache); their floor is that over the rate at which the
shortest context's step streams the weights (weights.bin / TPOT). Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from llmc.convert.gguf import default_gguf_path
from peers import run_vllm, vllm_missing

ROOT = Path(__file__).resolve().parents[1]
LLMC = ROOT / "build" / "bin" / "llmc"
LLAMA_CPP_PYTHON = ROOT / ".venv-llamacpp" / "bin" / "python"


def say(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"  {message}", file=sys.stderr, flush=True)


def llmc(artifact: Path, context: int, args) -> dict:
    say(f"llmc: {context} tokens of context", args.quiet)
    result = subprocess.run(
        [str(LLMC), "bench", "throughput", str(artifact), "--num-prompts", "1",
         "--input-len-range", f"{context}:{context}", "--output-len-range",
         f"{args.decode_tokens}:{args.decode_tokens}", "--max-concurrency", "1", "--threads",
         str(args.threads), "--json"], check=True, stdout=subprocess.PIPE, text=True)
    report = json.loads(result.stdout)
    ttft = report["ttft_ms"]["p50"] / 1000
    return {"prefill_tokens_per_s": context / ttft, "tpot_ms": report["tpot_ms"]["p50"]}


def llama_cpp(context: int, args) -> dict:
    say(f"llama.cpp F32: {context} tokens of context", args.quiet)
    result = subprocess.run(
        [str(LLAMA_CPP_PYTHON), str(ROOT / "bench" / "llamacpp_runner.py"), "--gguf",
         str(default_gguf_path()), "--quant", "f32", "--threads", str(args.threads),
         "--prompt-tokens", str(context), "--decode-tokens", str(args.decode_tokens),
         "--repeat", "1", "--json"], check=True, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if args.quiet else None, text=True)
    figures = json.loads(result.stdout)
    return {"prefill_tokens_per_s": figures["prefill_tok_s"],
            "tpot_ms": 1000 / figures["decode_tok_s"]}


def vllm(context: int, args) -> dict:
    say(f"vLLM {args.vllm_dtype}: {context} tokens of context", args.quiet)
    # Room for the prompt, the decode and vLLM's block rounding.
    longest = context + args.decode_tokens + 64
    figures = run_vllm(["--dtype", args.vllm_dtype, "--prompt-tokens", str(context),
                        "--decode-tokens", str(args.decode_tokens), "--repeat", "1",
                        "--max-model-len", str(max(2048, longest))], args.threads)
    return {"prefill_tokens_per_s": figures["prefill_tok_s"],
            "tpot_ms": 1000 / figures["decode_tok_s"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=ROOT / "build" / "smollm2-135m.llmc")
    parser.add_argument("--contexts", default="128,2048,4096")
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--no-llama-cpp", action="store_true", help="skip llama.cpp")
    parser.add_argument("--vllm", action="store_true",
                        help="also run vLLM's CPU backend (.venv-vllm)")
    parser.add_argument("--vllm-dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    if not (args.artifact / "manifest.json").exists():
        print(f"long_context: {args.artifact} not found (run scripts/run-default-model.sh)",
              file=sys.stderr)
        return 1
    if not args.no_llama_cpp and not LLAMA_CPP_PYTHON.exists():
        print("long_context: .venv-llamacpp not found (bash scripts/setup.sh llama-cpp)",
              file=sys.stderr)
        return 1
    if args.vllm and (why := vllm_missing()):
        print(f"long_context: --vllm: {why}", file=sys.stderr)
        return 1
    peers = {name: run for name, run, wanted in (("llama.cpp", llama_cpp, not args.no_llama_cpp),
                                                 ("vLLM", vllm, args.vllm)) if wanted}
    manifest = json.loads((args.artifact / "manifest.json").read_text())
    model = manifest["model"]
    # A cached row: head_dim f32 or bf16, or with the int8 cache head_dim codes and a 4-byte
    # scale.
    head_dim = model["head_dim"]
    row_bytes = {"f32": 4 * head_dim, "bf16": 2 * head_dim,
                 "int8": head_dim + 4}[manifest["step"]["kv_dtype"]]
    kv_bytes_per_token = model["num_layers"] * 2 * model["num_kv_heads"] * row_bytes
    weights_bytes = manifest["weights"]["size"]
    contexts = [int(c) for c in args.contexts.split(",")]
    rows = [{"context": c, "llmc": llmc(args.artifact, c, args),
             **{name: run(c, args) for name, run in peers.items()}} for c in contexts]
    shortest = rows[0]["llmc"]["tpot_ms"]
    bandwidth = weights_bytes / (shortest / 1000)
    for row in rows:
        tpot = row["llmc"]["tpot_ms"]
        row["context_share"] = (tpot - shortest) / tpot
        row["kv_bytes_per_step"] = row["context"] * kv_bytes_per_token
        row["kv_floor_ms"] = 1000 * row["kv_bytes_per_step"] / bandwidth
        row["context_ms"] = tpot - shortest
    if args.json:
        print(json.dumps({"threads": args.threads, "bandwidth_gb_s": bandwidth / 1e9,
                          "rows": rows}, indent=2))
        return 0
    print(f"weights streamed at {bandwidth / 1e9:.1f} GB/s at {contexts[0]} tokens; "
          f"{args.threads} threads")
    engines = " / ".join(["llmc", *peers])
    print(f"{'context':>8}  prefill tok/s {engines}  |  decode ms {engines}  |  context share"
          f"  |  KV MB  |  KV ms / floor")
    for row in rows:
        prefill = " / ".join(f"{row[e]['prefill_tokens_per_s']:.0f}" for e in ["llmc", *peers])
        decode = " / ".join(f"{row[e]['tpot_ms']:.1f}" for e in ["llmc", *peers])
        print(f"{row['context']:>8}  {prefill}  |  {decode}  |  {100 * row['context_share']:.0f}%"
              f"  |  {row['kv_bytes_per_step'] / 1e6:.0f}  |  {row['context_ms']:.1f} / "
              f"{row['kv_floor_ms']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
