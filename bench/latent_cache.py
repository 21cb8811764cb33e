"""Multi-head latent attention on the CPU: the latent KV cache against every head's expanded
keys and values, on one export compiled both ways.

    PYTHONPATH=python .venv/bin/python bench/latent_cache.py OUT/onnx/model.onnx \
        [--contexts 128,2048,4000] [--decode-tokens 64] [--threads N] \
        [--serve-prompts 32] [--kv-cache-memory 256MiB] [--json] [--quiet]

The model is an MLA export (bench/moe_model.py --family deepseek-v3 writes DeepSeek-V3 in
miniature). It is compiled twice with `llmc compile -O2`: as by default, attending over the
latent and the rotary key as one cached KV head (llm-absorb-latent-attention), and with
--no-latent-kv-cache, caching each head's keys and values as the export computes them. Per
context length L, each artifact runs `llmc bench throughput --num-prompts 1 --input-len-range
L:L --output-len-range D:D --max-concurrency 1` (after its warm-up), the two interleaved:
the prefill rate (L / TTFT) and the decode step (TPOT). Then each serves --serve-prompts
requests at once (prompts of 512 to 1024 random ids, 64 to 128 greedy tokens) from a KV cache
of --kv-cache-memory, which holds 9.6x the tokens when it caches the latent (one row a token,
whose first features are the values): requests/s and output tokens/s. The KV bytes a token
takes come from each manifest (layers x kv_rows x kv_heads x head_dim x 4). Progress goes to
stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import progress

ROOT = Path(__file__).resolve().parents[1]
LLMC = ROOT / "build" / "bin" / "llmc"
CACHES = {"latent": [], "expanded": ["--no-latent-kv-cache"]}


def bench(artifact: Path, args, *workload: str) -> dict:
    result = subprocess.run(
        [str(LLMC), "bench", "throughput", str(artifact), "--threads", str(args.threads),
         "--json", "--quiet", *workload], check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(result.stdout)


def one_request(artifact: Path, context: int, args) -> dict:
    report = bench(artifact, args, "--num-prompts", "1", "--input-len-range",
                   f"{context}:{context}", "--output-len-range",
                   f"{args.decode_tokens}:{args.decode_tokens}", "--max-concurrency", "1")
    return {"prefill_tokens_per_s": context / (report["ttft_ms"]["p50"] / 1000),
            "tpot_ms": report["tpot_ms"]["p50"]}


def serve(artifact: Path, args) -> dict:
    report = bench(artifact, args, "--num-prompts", str(args.serve_prompts),
                   "--input-len-range", "512:1024", "--output-len-range", "64:128",
                   "--kv-cache-memory", args.kv_cache_memory)
    return {key: report[key] for key in ("requests_per_s", "output_tokens_per_s")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--contexts", default="128,2048,4000")
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--serve-prompts", type=int, default=32)
    parser.add_argument("--kv-cache-memory", default="256MiB")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    contexts = [int(c) for c in args.contexts.split(",")]
    with tempfile.TemporaryDirectory() as directory:
        artifacts, kv_bytes = {}, {}
        for cache, flags in CACHES.items():
            progress(f"compiling {args.model} ({cache} cache)", args.quiet)
            artifacts[cache] = Path(directory) / f"{cache}.llmc"
            subprocess.run([str(LLMC), "compile", str(args.model), "-o", str(artifacts[cache]),
                            "--quiet", *flags], check=True)
            manifest = json.loads((artifacts[cache] / "manifest.json").read_text())
            model = manifest["model"]
            kv_bytes[cache] = (model["num_layers"] * manifest["step"].get("kv_rows", 2)
                               * model["num_kv_heads"] * model["head_dim"] * 4)
        rows = []
        for context in contexts:
            row = {"context": context}
            for cache, artifact in artifacts.items():
                progress(f"{cache}: one request of {context} tokens", args.quiet)
                row[cache] = one_request(artifact, context, args)
            rows.append(row)
        served = {}
        for cache, artifact in artifacts.items():
            progress(f"{cache}: {args.serve_prompts} requests, {args.kv_cache_memory} of KV "
                     "cache", args.quiet)
            served[cache] = serve(artifact, args)
    if args.json:
        print(json.dumps({"threads": args.threads, "kv_bytes_per_token": kv_bytes,
                          "contexts": rows, "serving": served}, indent=2))
        return 0
    print(f"KV bytes a token: latent {kv_bytes['latent']}, expanded {kv_bytes['expanded']} "
          f"({kv_bytes['expanded'] / kv_bytes['latent']:.1f}x); {args.threads} threads")
    print(f"{'context':>8}{'prefill tok/s latent / expanded':>34}"
          f"{'decode ms latent / expanded':>31}")
    for row in rows:
        latent, expanded = row["latent"], row["expanded"]
        print(f"{row['context']:>8}{latent['prefill_tokens_per_s']:>20.0f} / "
              f"{expanded['prefill_tokens_per_s']:<11.0f}{latent['tpot_ms']:>18.2f} / "
              f"{expanded['tpot_ms']:<10.2f}")
    print(f"serving {args.serve_prompts} requests from {args.kv_cache_memory}: "
          + ", ".join(f"{cache} {figures['requests_per_s']:.2f} req/s "
                      f"{figures['output_tokens_per_s']:.0f} output tok/s"
                      for cache, figures in served.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
