"""Where the CUDA backend's step time goes: the GPU time of each kernel of a decode step and of a
prefill step, measured by Nsight Compute (ncu), next to the step's wall time with CUDA graphs.

    PYTHONPATH=python python3 bench/gpu_profile.py [--work-dir build/gpu-bench] [--layers 4]
        [--batches 1,64] [--prefill-tokens 2048] [--csv-dir DIR] [--quiet]

The model is gpu_bench.py's tinyllama-1b at --layers layers (every layer runs the same kernels,
so a few layers show a step's make-up; per-layer figures multiply out to the 22 layers). For
each workload the script runs itself under
`ncu --nvtx --nvtx-include step/ --metrics gpu__time_duration.sum --clock-control none`
with CUDA graphs off (LLMC_CUDA_GRAPHS=0: the kernels are the ones the graphs replay), so only
the kernels launched inside the NVTX range `step` (the timed steps, not the prefill that sets a
decode up) are profiled, each once its caches are flushed (ncu's default). The table gives, per
kernel, the launches and GPU microseconds per step and the share of the step's kernel time; the
step's wall time (graphs on, no profiler) beside the sum says how much is launch gaps and host
work. --csv-dir keeps ncu's raw CSV of each workload.

Needs torch (for NVTX) and ncu on PATH or under /opt/nvidia or /usr/local/cuda.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_bench import (BLOCK_SIZE, DTYPE, VARIANT, block_tables, compile_artifact,  # noqa: E402
                       llmc_prefill, llmc_prefill_greedy, slots)
from llmc.runtime import Model  # noqa: E402
from llmc.testing.fixtures import VARIANTS, write_variant  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROMPT_TOKENS = 128
DECODE_STEPS = 8  # profiled decode steps (each kernel of a step, DECODE_STEPS times)
WALL_STEPS = 64  # decode steps timed for the wall time


def find_ncu() -> str:
    found = shutil.which("ncu")
    if found:
        return found
    for root in (Path("/opt/nvidia"), Path("/usr/local/cuda")):
        for candidate in sorted(root.glob("**/ncu")) if root.exists() else []:
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    raise SystemExit("gpu_profile: Nsight Compute (ncu) is not on PATH, /opt/nvidia or "
                     "/usr/local/cuda")


# --- the workloads, run in the child process ------------------------------------------------


def decode_setup(model: Model, batch: int):
    """Prefill `batch` random prompts; the state a decode step needs."""
    rng = np.random.default_rng(batch)
    prompts = rng.integers(0, model.vocab_size, (batch, PROMPT_TOKENS), dtype=np.int32)
    tables = block_tables(batch, PROMPT_TOKENS + WALL_STEPS + DECODE_STEPS + 1)
    return tables, llmc_prefill_greedy(model, prompts, tables).astype(np.int32)


def decode_step(model: Model, tables: np.ndarray, tokens: np.ndarray, position: int):
    batch = len(tokens)
    rows = np.arange(batch)
    positions = np.full(batch, position, dtype=np.int32)
    return model.step_greedy(tokens, positions, np.arange(batch + 1, dtype=np.int32),
                             positions + 1, tables, slots(tables, rows, positions), rows)


def run_workload(artifact: Path, workload: str, batch: int, prefill_tokens: int) -> None:
    """The child: the workload's steps, the profiled ones inside the NVTX range `step`."""
    import torch  # NVTX only: no CUDA context is made
    blocks = max(batch * -(-(PROMPT_TOKENS + WALL_STEPS + DECODE_STEPS + 1) // BLOCK_SIZE),
                 -(-prefill_tokens // BLOCK_SIZE))
    with Model(artifact, num_kv_blocks=blocks) as model:
        if workload == "prefill":
            prompt = np.random.default_rng(0).integers(0, model.vocab_size, (1, prefill_tokens),
                                                       dtype=np.int32)
            llmc_prefill(model, prompt, block_tables(1, prefill_tokens))  # warm-up
            torch.cuda.nvtx.range_push("step")
            llmc_prefill(model, prompt, block_tables(1, prefill_tokens))
            torch.cuda.nvtx.range_pop()
            return
        tables, tokens = decode_setup(model, batch)
        tokens = decode_step(model, tables, tokens, PROMPT_TOKENS)  # warm-up
        torch.cuda.nvtx.range_push("step")
        for step in range(DECODE_STEPS):
            tokens = decode_step(model, tables, tokens, PROMPT_TOKENS + 1 + step)
        torch.cuda.nvtx.range_pop()


def decode_wall_seconds(artifact: Path, batch: int) -> float:
    """Median wall seconds of a decode step with CUDA graphs (the steps' own Model.step_greedy
    calls: the argmax on the GPU, the token ids back)."""
    blocks = batch * -(-(PROMPT_TOKENS + WALL_STEPS + DECODE_STEPS + 1) // BLOCK_SIZE)
    with Model(artifact, num_kv_blocks=blocks) as model:
        tables, tokens = decode_setup(model, batch)
        times = []
        for step in range(WALL_STEPS):
            start = time.perf_counter()
            tokens = decode_step(model, tables, tokens, PROMPT_TOKENS + step)
            times.append(time.perf_counter() - start)
    return float(np.median(times[2:]))


# --- the parent: ncu and the table ----------------------------------------------------------


def profile(ncu: str, artifact: Path, workload: str, batch: int, prefill_tokens: int,
            csv_dir: Path | None) -> tuple[list[dict], str]:
    """ncu's rows (one per kernel launch inside `step`) for one workload, and the unit of
    their durations."""
    command = [ncu, "--nvtx", "--nvtx-include", "step/", "--metrics", "gpu__time_duration.sum",
               "--clock-control", "none", "--csv", "--page", "raw",
               sys.executable, __file__, "--child", workload, "--artifact", str(artifact),
               "--batch", str(batch), "--prefill-tokens", str(prefill_tokens)]
    env = {**os.environ, "LLMC_CUDA_GRAPHS": "0"}
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if csv_dir:
        csv_dir.mkdir(parents=True, exist_ok=True)
        (csv_dir / f"ncu-{workload}-{batch}.csv").write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        raise SystemExit(f"gpu_profile: ncu on {workload} (batch {batch}) failed:\n"
                         f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    header = result.stdout.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(result.stdout[header:]))) if header >= 0 else []
    # The line after the header gives each column's unit.
    if len(rows) < 2:
        raise SystemExit(f"gpu_profile: ncu profiled no kernel of {workload} (batch {batch}):\n"
                         f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return rows[1:], rows[0]["gpu__time_duration.sum"]


MICROSECONDS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def summarize(rows: list[dict], steps: int, unit: str) -> list[tuple[str, float, float]]:
    """(kernel, launches per step, microseconds per step), the slowest first."""
    if unit not in MICROSECONDS:
        raise SystemExit(f"gpu_profile: ncu's durations are in '{unit}', not a unit of time")
    per_kernel = defaultdict(lambda: [0, 0.0])
    for row in rows:
        name = row.get("Kernel Name") or row.get("Function Name") or "?"
        per_kernel[name][0] += 1
        per_kernel[name][1] += (float(row["gpu__time_duration.sum"].replace(",", ""))
                                * MICROSECONDS[unit])
    return sorted(((name, count / steps, micros / steps)
                   for name, (count, micros) in per_kernel.items()), key=lambda item: -item[2])


def torch_gemm_micros(shapes: list[tuple[int, int]], batches: list[int]) -> str:
    """The peer: torch's bf16 products (cuBLAS) on each of the model's weights, per batch, with
    the weight stored [K, N] (as llmc stores it: x @ W) and [N, K] (as torch's Linear stores
    it: x @ W^T). Each product is timed as a CUDA graph of REPLAYED products over weight
    copies that together exceed the L2 (so that launches and cached weights do not count):
    microseconds a product, and weight bytes over that time."""
    import torch
    lines = ["\ntorch bf16 products (cuBLAS) on the model's weights, graph-replayed",
             f"{'weight':<16}{'batch':>6}{'[K,N] us':>10}{'GB/s':>7}{'[N,K] us':>10}{'GB/s':>7}"]
    replayed = 20
    for n, k in shapes:
        copies = max(2, -(-256 * 2**20 // (n * k * 2)))
        weights = [torch.randn(k, n, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        transposed = [w.t().contiguous() for w in weights]  # [N, K]
        for batch in batches:
            x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
            micros = []
            for product in (lambda i: x @ weights[i % copies],
                            lambda i: x @ transposed[i % copies].t()):
                for i in range(3):  # warm-up: cuBLAS picks and loads its kernels
                    product(i)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for i in range(replayed):
                        product(i)
                times = []
                for _ in range(5):
                    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                    start.record()
                    graph.replay()
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end) * 1e3 / replayed)
                micros.append(float(np.median(times)))
            gbs = [n * k * 2 / us / 1e3 for us in micros]
            lines.append(f"{f'{k}x{n}':<16}{batch:>6}{micros[0]:>10.1f}{gbs[0]:>7.0f}"
                         f"{micros[1]:>10.1f}{gbs[1]:>7.0f}")
        del weights, transposed
    return "\n".join(lines)


def table(title: str, kernels: list[tuple[str, float, float]], wall_us: float | None) -> str:
    total = sum(micros for _, _, micros in kernels)
    lines = [title, f"{'kernel':<72}{'launches':>9}{'us/step':>10}{'share':>7}"]
    for name, launches, micros in kernels:
        short = name if len(name) <= 70 else name[:67] + "..."
        lines.append(f"{short:<72}{launches:>9.1f}{micros:>10.1f}{micros / total:>7.0%}")
    launches = sum(count for _, count, _ in kernels)
    lines.append(f"{'all kernels':<72}{launches:>9.1f}{total:>10.1f}")
    if wall_us is not None:
        lines.append(f"wall time of the step with CUDA graphs: {wall_us:.1f} us "
                     f"({wall_us - total:+.1f} us beside the kernels' GPU time)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, default=ROOT / "build" / "gpu-bench")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batches", default="1,64")
    parser.add_argument("--prefill-tokens", type=int, default=2048)
    parser.add_argument("--csv-dir", type=Path)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--child", choices=["decode", "prefill"], help=argparse.SUPPRESS)
    parser.add_argument("--artifact", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_workload(args.artifact, args.child, args.batch, args.prefill_tokens)
        return 0

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"gpu_profile: {message}", file=sys.stderr, flush=True)

    ncu = find_ncu()
    batches = sorted({int(part) for part in args.batches.split(",")})
    name = f"{VARIANT}-{args.layers}layers"
    progress(f"building {name} and compiling it for cuda ({DTYPE})")
    onnx_path = write_variant(VARIANT, args.work_dir / name, num_layers=args.layers)
    artifact = args.work_dir / f"{name}.llmc"
    compile_artifact(onnx_path, artifact, max(batches), max(2048, args.prefill_tokens))

    config = VARIANTS[VARIANT]
    reports = [f"{name}: the per-kernel GPU time of a step (ncu), {args.layers} of "
               f"{config.num_layers} layers"]
    # A workload whose profile fails is reported as such; the others still run.
    for batch in batches:
        progress(f"decode at batch {batch}: wall time, then ncu")
        try:
            wall = decode_wall_seconds(artifact, batch) * 1e6
            rows, unit = profile(ncu, artifact, "decode", batch, args.prefill_tokens,
                                 args.csv_dir)
            reports.append(table(f"\ndecode step, batch {batch} (context {PROMPT_TOKENS}+)",
                                 summarize(rows, DECODE_STEPS, unit), wall))
        except SystemExit as failure:
            reports.append(f"\ndecode step, batch {batch}: {failure}")
    progress(f"prefill of {args.prefill_tokens} tokens under ncu")
    try:
        rows, unit = profile(ncu, artifact, "prefill", 1, args.prefill_tokens, args.csv_dir)
        reports.append(table(f"\nprefill step, {args.prefill_tokens} tokens",
                             summarize(rows, 1, unit), None))
    except SystemExit as failure:
        reports.append(f"\nprefill step: {failure}")
    progress("torch's products on the same weights")
    hidden, inter = config.hidden_size, config.intermediate_size
    kv = config.num_kv_heads * (config.head_dim or hidden // config.num_heads)
    reports.append(torch_gemm_micros(
        [(hidden + 2 * kv, hidden), (hidden, hidden), (2 * inter, hidden), (hidden, inter),
         (config.vocab_size, hidden)], batches))
    print("\n".join(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
