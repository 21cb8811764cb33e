"""Serving throughput of llmc's CUDA backend: `llmc serve` on gpu_bench.py's model, loaded by
`llmc bench serve` with 64 and 256 streams in flight.

    PYTHONPATH=python python3 bench/gpu_serve.py [--work-dir build/gpu-bench] [--streams 64,256]
        [--requests-per-stream 2] [--kv-cache-memory 24GiB] [--json FILE] [--quiet]

The model is gpu_bench.py's tinyllama-1b with seeded random weights, built into --work-dir the
first time. A server streams text and the model has no tokenizer, so this writes one beside the
ONNX file: byte-level BPE with no merges whose token i is the text "t<i>" (requests are token ids;
only the server's detokenisation uses it). The artifact is compiled with it, bf16, --max-num-seqs
the most streams. Each run is `llmc bench serve`'s workload: S x --requests-per-stream requests,
prompts of 128-512 random token ids, 64-256 greedy output tokens each (ignore_eos), all arriving
at once, at most S in flight. The table is printed last on stdout; --json FILE writes every
figure `llmc bench serve --json` reported.
"""
from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from llmc.testing.fixtures import VARIANTS, write_variant

from gpu_bench import BLOCK_SIZE, LLMC, ROOT, VARIANT, batch_sizes, compile_artifact

READY_SECONDS = 300  # weights upload and CUDA graph capture


def progress(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"gpu_serve: {message}", file=sys.stderr, flush=True)


def write_id_tokenizer(path: Path, vocab_size: int) -> None:
    """A tokenizer.json that decodes token i to "t<i>" (byte-level BPE, no merges)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    tokenizer = Tokenizer(models.BPE(vocab={f"t{i}": i for i in range(vocab_size)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.save(str(path))


def gpu_name() -> str:
    """The first GPU's name from nvidia-smi; SystemExit if there is none."""
    try:
        result = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SystemExit(f"gpu_serve: no NVIDIA GPU: nvidia-smi: {error}")
    names = result.stdout.strip().splitlines()
    if result.returncode != 0 or not names:
        raise SystemExit("gpu_serve: no NVIDIA GPU: nvidia-smi lists none")
    return names[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_serving(server: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"gpu_serve: llmc serve exited with status {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"gpu_serve: llmc serve did not answer within {READY_SECONDS} s")


def bench_serve(url: str, streams: int, requests: int, vocab_size: int) -> dict:
    command = [str(LLMC), "bench", "serve", "--url", url, "--num-prompts", str(requests),
               "--max-concurrency", str(streams), "--vocab-size", str(vocab_size), "--json"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"gpu_serve: {' '.join(command)} failed:\n{result.stderr}")
    return json.loads(result.stdout)


def table(runs: list[dict], gpu: str) -> str:
    lines = [f"llmc serve (CUDA, bf16): {VARIANT} on {gpu}, llmc bench serve, greedy, "
             "prompts 128-512 tokens, outputs 64-256", "",
             f"{'streams':>8}{'requests':>10}{'req/s':>8}{'output tok/s':>14}{'total tok/s':>13}"
             f"{'TTFT p50 ms':>13}{'TPOT p50 ms':>13}{'ITL p99 ms':>12}"]
    for run in runs:
        lines.append(f"{run['max_concurrency']:>8}{run['num_requests']:>10}"
                     f"{run['requests_per_s']:>8.1f}{run['output_tokens_per_s']:>14,.0f}"
                     f"{run['total_tokens_per_s']:>13,.0f}{run['ttft_ms']['p50']:>13.1f}"
                     f"{run['tpot_ms']['p50']:>13.2f}{run['itl_ms']['p99']:>12.2f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, default=ROOT / "build" / "gpu-bench")
    parser.add_argument("--streams", type=batch_sizes, default=[64, 256],
                        help="comma-separated numbers of requests in flight (default 64,256)")
    parser.add_argument("--requests-per-stream", type=int, default=2)
    parser.add_argument("--kv-cache-memory", default="24GiB",
                        help="the server's KV cache (default 24GiB: 256 streams of 768 tokens "
                             "need about 4.5 GB)")
    parser.add_argument("--json", type=Path, metavar="FILE")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    if args.requests_per_stream < 1:
        parser.error("--requests-per-stream must be positive")

    gpu = gpu_name()
    config = VARIANTS[VARIANT]
    progress(f"building the {VARIANT} ONNX model in {args.work_dir} (cached)", args.quiet)
    onnx_path = write_variant(VARIANT, args.work_dir / VARIANT)
    write_id_tokenizer(onnx_path.parent / "tokenizer.json", config.vocab_size)
    artifact = args.work_dir / f"{VARIANT}-serve.llmc"
    progress(f"llmc compile --target cuda -> {artifact}", args.quiet)
    compile_artifact(onnx_path, artifact, max(args.streams), 2048)
    if not (artifact / "tokenizer.json").exists():
        raise SystemExit(f"gpu_serve: {artifact} has no tokenizer.json")

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([str(LLMC), "serve", str(artifact), "--port", str(port),
                               "--kv-cache-memory", args.kv_cache_memory],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL if args.quiet else None)
    runs = []
    try:
        progress(f"waiting for llmc serve on {url}", args.quiet)
        wait_until_serving(server, url)
        for streams in args.streams:
            requests = streams * args.requests_per_stream
            progress(f"llmc bench serve: {requests} requests, {streams} in flight", args.quiet)
            runs.append(bench_serve(url, streams, requests, config.vocab_size))
    finally:
        server.terminate()
        server.wait(timeout=60)
    failed = sum(run["failed_requests"] for run in runs)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"gpu": gpu, "variant": VARIANT, "block_size": BLOCK_SIZE,
                                         "runs": runs}, indent=2) + "\n")
    print(table(runs, gpu))
    if failed:
        print(f"gpu_serve: {failed} requests failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
