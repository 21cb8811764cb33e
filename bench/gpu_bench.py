"""Decode and prefill speed of llmc's CUDA backend on a ~1.1B-parameter Llama, as fractions of the
GPU's measured limits and next to Hugging Face transformers on the same GPU, in one process.

    PYTHONPATH=python python3 bench/gpu_bench.py [--work-dir build/gpu-bench]
        [--batches 1,8,16,64,256] [--prompt-tokens 128] [--decode-tokens 128]
        [--prefill-tokens 2048] [--repeat 3] [--json FILE] [--quiet]

The model: the `tinyllama-1b` variant of llmc.testing.fixtures (TinyLlama-1.1B's shape: hidden
2048, 22 layers, 32 heads, 4 KV heads, intermediate 5632, vocab 32000; 1.10B parameters) with
seeded random weights, built once into --work-dir (optimum's export style, external data; about
a minute and ~11 GB of memory the first time) and compiled there on each run with
`llmc compile --target cuda --dtype bf16 --max-num-seqs <largest batch>`.

What runs, in this order:
  1. the GPU's limits, with torch: HBM bandwidth from a device-to-device copy of a 2 GiB buffer
     (bytes read + bytes written), the bf16 matmul rate from torch.matmul at 8192^3
     (2 x 8192^3 FLOPs); each the mean of 10 after warm-up;
  2. llmc, stepping llmc.runtime.Model directly: per batch size, that many random 128-token
     prompts prefilled (steps of at most max_num_batched_tokens tokens), then 128 greedy decode
     steps through Model.step_greedy (the argmax on the GPU; only the token ids come back, as
     the serving engine's greedy steps do), those calls timed; and one random 2048-token prompt
     prefilled in one step; then, for the batches of at most 8 sequences, the same decode with
     LLMC_CUDA_GEMV=1 (the gemms on the tensor-core GEMV kernel instead of cuBLASLt), to compare;
  3. transformers: LlamaForCausalLM from a LlamaConfig of the same shape, random init, bf16,
     attn_implementation="sdpa", on the same prompts: one forward over the prompts, then a loop
     of forwards over past_key_values (its DynamicCache) with the greedy argmax on the GPU,
     logits of the last position only (logits_to_keep=1); only the decode loop is timed.
Each workload runs once to warm up, then --repeat times; the median counts.

The figures:
  * decode tokens/s = batch x decode steps / decode seconds;
  * decode roofline: a decode step reads every weight once (bf16; of the embedding table only
    the batch's rows, unless it is also the logits head) and each sequence's KV cache
    (2 x layers x kv_heads x head_dim x 2 bytes per cached token, counting the token the step
    writes); those bytes over the measured bandwidth are the step's floor, and the floor over
    the measured time is the fraction of the roofline reached;
  * prefill FLOPs = 2 x (the layers' linear weights, 0.97B) x tokens + 2 x vocab x hidden (the
    one row of logits) + causal attention, 2 x layers x heads x head_dim x T x (T + 1) (QK^T and
    PV below the diagonal); TFLOP/s as a fraction of the measured bf16 matmul rate.
Targets reported against: decode at the smallest batch (1) at >= 85% of the roofline, decode at
batch 64 (or the largest batch below it) >= 3x transformers, prefill at >= 60% of the measured
bf16 rate. Progress goes to stderr; the table is printed last
on stdout; --json FILE writes every figure.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from llmc.runtime import Model
from llmc.testing.fixtures import VARIANTS, write_variant
from llmc.testing.llama import LlamaConfig, weight_shapes

ROOT = Path(__file__).resolve().parents[1]
LLMC = ROOT / "build" / "bin" / "llmc"
VARIANT = "tinyllama-1b"
DTYPE = "bf16"
DTYPE_BYTES = 2
BLOCK_SIZE = 16
COPY_GIB = 2
MATMUL_N = 8192
LIMIT_RUNS = 10
ROOFLINE_TARGET = 0.85  # decode at the smallest batch, fraction of the HBM roofline
SPEEDUP_TARGET = 3.0  # decode at SPEEDUP_BATCH, llmc over transformers
SPEEDUP_BATCH = 64
PREFILL_TARGET = 0.6  # prefill, fraction of the measured bf16 matmul rate
GEMV_MAX_ROWS = 8  # with LLMC_CUDA_GEMV=1, decode steps of at most this many sequences


def progress(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"gpu_bench: {message}", file=sys.stderr, flush=True)


def median_of_runs(run, repeat: int) -> float:
    """run() once to warm up, then `repeat` times; the median of what it returns (seconds)."""
    run()
    return statistics.median(run() for _ in range(repeat))


# --- the GPU's limits ------------------------------------------------------------------------


def import_gpu_modules():
    """torch, with a GPU it can use, and transformers; SystemExit saying why not otherwise."""
    try:
        import torch
        import transformers
    except ImportError as error:
        raise SystemExit(f"gpu_bench: needs torch (with CUDA) and transformers: {error}")
    if not torch.cuda.is_available():
        raise SystemExit("gpu_bench: no CUDA GPU visible to torch "
                         "(torch.cuda.is_available() is False)")
    return torch, transformers


def cuda_seconds(torch, run, runs: int, warmup: int = 2) -> float:
    """Mean GPU seconds of run(), timed with CUDA events around each of `runs` calls."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.mean(times)


def hbm_bandwidth(torch) -> float:
    """Bytes/s of a device-to-device copy of COPY_GIB GiB, counting bytes read and written."""
    size = COPY_GIB * 2**30
    source = torch.ones(size, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    return 2 * size / cuda_seconds(torch, lambda: target.copy_(source), LIMIT_RUNS)


def matmul_rate(torch) -> float:
    """bf16 FLOP/s of torch.matmul on MATMUL_N^3 (2 x N^3 FLOPs a product)."""
    a = torch.randn(MATMUL_N, MATMUL_N, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(MATMUL_N, MATMUL_N, dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(a)
    return 2 * MATMUL_N**3 / cuda_seconds(torch, lambda: torch.matmul(a, b, out=out), LIMIT_RUNS)


# --- the cost model ---------------------------------------------------------------------------


def kv_bytes_per_token(config: LlamaConfig) -> int:
    """K and V of one cached token over all layers."""
    return 2 * config.num_layers * config.num_kv_heads * config.head_dim * DTYPE_BYTES


def decode_weight_bytes(config: LlamaConfig, batch: int) -> int:
    """Weight bytes a decode step of `batch` sequences reads: all of them once, except that of
    an embedding table that is not also the logits head only the batch's rows are read."""
    embedding = config.vocab_size * config.hidden_size
    read_whole = config.num_parameters() - (0 if config.tie_word_embeddings else embedding)
    return (read_whole + batch * config.hidden_size) * DTYPE_BYTES


def decode_floor_seconds(config: LlamaConfig, batch: int, prompt_tokens: int, decode_tokens: int,
                         bandwidth: float) -> float:
    """The decode steps' bytes (weights + KV cache read) over the bandwidth."""
    weights = decode_weight_bytes(config, batch) * decode_tokens
    # Step d writes position prompt_tokens + d and attends to prompt_tokens + d + 1 tokens.
    cached = batch * sum(prompt_tokens + d + 1 for d in range(decode_tokens))
    return (weights + cached * kv_bytes_per_token(config)) / bandwidth


def linear_parameters(config: LlamaConfig) -> int:
    """The weights of the layers' linear projections (q, k, v, o, gate, up, down)."""
    return sum(int(np.prod(shape)) for name, shape in weight_shapes(config).items()
               if name.startswith("model.layers.") and len(shape) == 2)


def prefill_flops(config: LlamaConfig, tokens: int) -> float:
    """FLOPs of a prefill of `tokens` tokens giving logits for the last one (module docstring)."""
    linear = 2 * linear_parameters(config) * tokens
    logits = 2 * config.vocab_size * config.hidden_size
    attention = (2 * config.num_layers * config.num_heads * config.head_dim
                 * tokens * (tokens + 1))
    return float(linear + logits + attention)


# --- llmc -------------------------------------------------------------------------------------


def compile_artifact(onnx_path: Path, artifact: Path, max_num_seqs: int,
                     max_num_batched_tokens: int) -> None:
    command = [str(LLMC), "compile", str(onnx_path), "--target", "cuda", "--dtype", DTYPE,
               "--max-num-seqs", str(max_num_seqs),
               "--max-num-batched-tokens", str(max_num_batched_tokens),
               "--block-size", str(BLOCK_SIZE), "-o", str(artifact), "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"gpu_bench: {' '.join(command)} failed:\n{result.stderr}")


def block_tables(batch: int, positions: int) -> np.ndarray:
    """[batch, width]: each sequence its own consecutive blocks, enough for `positions`."""
    width = -(-positions // BLOCK_SIZE)
    return np.arange(batch * width, dtype=np.int32).reshape(batch, width)


def slots(tables: np.ndarray, rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The KV slot of each (sequence row, position)."""
    return tables[rows, positions // BLOCK_SIZE] * BLOCK_SIZE + positions % BLOCK_SIZE


def llmc_prefill(model: Model, prompts: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """One step prefilling `prompts` ([n, length], fresh sequences in `tables`' rows); the
    logits of each prompt's last token."""
    count, length = prompts.shape
    rows = np.repeat(np.arange(count), length)
    positions = np.tile(np.arange(length, dtype=np.int32), count)
    cu_seqlens_q = np.arange(count + 1, dtype=np.int32) * length
    return model.step(prompts.reshape(-1), positions, cu_seqlens_q,
                      np.full(count, length, dtype=np.int32), tables,
                      slots(tables, rows, positions), cu_seqlens_q[1:] - 1)


def llmc_prefill_greedy(model: Model, prompts: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Prefill `prompts` ([batch, length], fresh sequences in `tables`' rows) in as few steps
    as the artifact allows: each prompt's greedy next token."""
    batch, length = prompts.shape
    group = max(1, min(model.max_num_seqs, model.max_num_batched_tokens // length))
    return np.concatenate([
        llmc_prefill(model, prompts[first:first + group], tables[first:first + group])
        .argmax(axis=-1) for first in range(0, batch, group)])


def llmc_decode_seconds(model: Model, prompts: np.ndarray, decode_tokens: int,
                        logits_to_host: bool = False) -> float:
    """Prefill `prompts` ([batch, length]) in as few steps as the artifact allows, then run
    `decode_tokens` greedy decode steps over the whole batch: the seconds of those steps.
    Each step picks its tokens on the GPU (Model.step_greedy), or with `logits_to_host`
    brings the logits back and numpy takes their argmax (Model.step), which is timed too."""
    batch, length = prompts.shape
    tables = block_tables(batch, length + decode_tokens)
    tokens = llmc_prefill_greedy(model, prompts, tables)
    rows = np.arange(batch)
    cu_seqlens_q = np.arange(batch + 1, dtype=np.int32)
    seconds = 0.0
    for step in range(decode_tokens):
        positions = np.full(batch, length + step, dtype=np.int32)
        slot_mapping = slots(tables, rows, positions)
        arrays = (tokens, positions, cu_seqlens_q, positions + 1, tables, slot_mapping, rows)
        start = time.perf_counter()
        if logits_to_host:
            tokens = model.step(*arrays).argmax(axis=-1)
        else:
            tokens = model.step_greedy(*arrays)
        seconds += time.perf_counter() - start
    # The last step again, for its logits: the tokens above are their argmax.
    if not np.isfinite(model.step(*arrays)).all():
        raise SystemExit(f"gpu_bench: llmc's decode logits at batch {batch} are not finite")
    return seconds


def llmc_prefill_seconds(model: Model, prompt: np.ndarray) -> float:
    """Seconds of one step prefilling `prompt` ([1, length])."""
    tables = block_tables(1, prompt.shape[1])
    start = time.perf_counter()
    llmc_prefill(model, prompt, tables)
    return time.perf_counter() - start


# --- transformers -----------------------------------------------------------------------------


def transformers_model(torch, config: LlamaConfig):
    """LlamaForCausalLM of `config`'s shape, randomly initialised on the GPU, bf16, SDPA
    attention (rope theta, which does not change the cost, left at transformers' default)."""
    from transformers import LlamaConfig as HfLlamaConfig, LlamaForCausalLM
    hf_config = HfLlamaConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size, num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads, num_key_value_heads=config.num_kv_heads,
        head_dim=config.head_dim, rms_norm_eps=config.rms_norm_eps,
        max_position_embeddings=config.max_position_embeddings,
        tie_word_embeddings=config.tie_word_embeddings, attn_implementation="sdpa")
    with torch.device("cuda"):
        model = LlamaForCausalLM(hf_config)
    return model.to(torch.bfloat16).eval()


def transformers_decode_seconds(torch, model, prompts: np.ndarray, decode_tokens: int) -> float:
    """A forward over `prompts`, then `decode_tokens` greedy forwards over the cache: the
    seconds of those (GPU synchronised at both ends)."""
    ids = torch.from_numpy(prompts).to("cuda", torch.long)
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        cache, token = out.past_key_values, out.logits[:, -1].argmax(dim=-1, keepdim=True)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(decode_tokens):
            out = model(input_ids=token, past_key_values=cache, use_cache=True, logits_to_keep=1)
            cache, token = out.past_key_values, out.logits[:, -1].argmax(dim=-1, keepdim=True)
        torch.cuda.synchronize()
        return time.perf_counter() - start


def transformers_prefill_seconds(torch, model, prompt: np.ndarray) -> float:
    """Seconds of one forward over `prompt` ([1, length]) filling a fresh cache."""
    ids = torch.from_numpy(prompt).to("cuda", torch.long)
    with torch.inference_mode():
        torch.cuda.synchronize()
        start = time.perf_counter()
        model(input_ids=ids, use_cache=True, logits_to_keep=1)
        torch.cuda.synchronize()
        return time.perf_counter() - start


# --- the run ----------------------------------------------------------------------------------


def run_llmc(args, decode_prompts: dict[int, np.ndarray], prefill_prompt: np.ndarray
             ) -> tuple[dict[int, float], float, dict[int, float], dict[int, float]]:
    """Build (cached) and compile the model, then time llmc: decode seconds per batch, prefill
    seconds, decode seconds per batch with the logits brought to the host, and decode seconds
    per batch of at most GEMV_MAX_ROWS with the gemms on the GEMV kernel."""
    progress(f"building the {VARIANT} ONNX model in {args.work_dir} (cached after the first run: "
             "the first takes about a minute and ~11 GB of memory)", args.quiet)
    onnx_path = write_variant(VARIANT, args.work_dir / VARIANT)
    artifact = args.work_dir / f"{VARIANT}.llmc"
    max_batched = max(2048, args.prefill_tokens)  # --prompt-tokens is checked against it
    progress(f"llmc compile --target cuda --dtype {DTYPE} --max-num-seqs {max(args.batches)} "
             f"-> {artifact}", args.quiet)
    compile_artifact(onnx_path, artifact, max(args.batches), max_batched)

    per_sequence = -(-(args.prompt_tokens + args.decode_tokens) // BLOCK_SIZE)
    blocks = max(max(args.batches) * per_sequence, -(-args.prefill_tokens // BLOCK_SIZE))
    decode, decode_logits_to_host, prefill = {}, {}, 0.0
    with Model(artifact, num_kv_blocks=blocks) as model:
        for batch, prompts in decode_prompts.items():
            progress(f"llmc: decode at batch {batch}", args.quiet)
            decode[batch] = median_of_runs(
                lambda: llmc_decode_seconds(model, prompts, args.decode_tokens), args.repeat)
            decode_logits_to_host[batch] = median_of_runs(
                lambda: llmc_decode_seconds(model, prompts, args.decode_tokens,
                                            logits_to_host=True), args.repeat)
        progress(f"llmc: prefill of {args.prefill_tokens} tokens", args.quiet)
        prefill = median_of_runs(lambda: llmc_prefill_seconds(model, prefill_prompt),
                                 args.repeat)
    decode_gemv = {}
    small = {batch: prompts for batch, prompts in decode_prompts.items()
             if batch <= GEMV_MAX_ROWS}
    if small:
        os.environ["LLMC_CUDA_GEMV"] = "1"  # read when the Model is loaded
        try:
            with Model(artifact, num_kv_blocks=blocks) as model:
                for batch, prompts in small.items():
                    progress(f"llmc: decode at batch {batch}, the gemms on the GEMV kernel",
                             args.quiet)
                    decode_gemv[batch] = median_of_runs(
                        lambda: llmc_decode_seconds(model, prompts, args.decode_tokens),
                        args.repeat)
        finally:
            del os.environ["LLMC_CUDA_GEMV"]
    return decode, prefill, decode_logits_to_host, decode_gemv


def run_transformers(args, torch, config: LlamaConfig, decode_prompts: dict[int, np.ndarray],
                     prefill_prompt: np.ndarray) -> tuple[dict[int, float], float, str]:
    """Time transformers on the same workloads: decode seconds per batch, prefill seconds, and
    the attention implementation it ran."""
    progress("transformers: initialising LlamaForCausalLM on the GPU", args.quiet)
    model = transformers_model(torch, config)
    decode = {}
    for batch, prompts in decode_prompts.items():
        progress(f"transformers: decode at batch {batch}", args.quiet)
        decode[batch] = median_of_runs(
            lambda: transformers_decode_seconds(torch, model, prompts, args.decode_tokens),
            args.repeat)
    progress(f"transformers: prefill of {args.prefill_tokens} tokens", args.quiet)
    prefill = median_of_runs(lambda: transformers_prefill_seconds(torch, model, prefill_prompt),
                             args.repeat)
    return decode, prefill, model.config._attn_implementation


def figures(args, config: LlamaConfig, limits: dict, llmc: tuple, transformers: tuple) -> dict:
    """Every figure of the run, as --json writes it."""
    llmc_decode, llmc_prefill_s, llmc_decode_logits_to_host, llmc_decode_gemv = llmc
    tf_decode, tf_prefill_s, attention = transformers
    bandwidth, peak = limits["hbm_bytes_per_s"], limits["bf16_flops_per_s"]
    decode = []
    for batch in args.batches:
        floor = decode_floor_seconds(config, batch, args.prompt_tokens, args.decode_tokens,
                                     bandwidth)
        tokens = batch * args.decode_tokens
        decode.append({
            "batch": batch,
            "llmc_tokens_per_s": tokens / llmc_decode[batch],
            "llmc_logits_to_host_tokens_per_s": tokens / llmc_decode_logits_to_host[batch],
            "transformers_tokens_per_s": tokens / tf_decode[batch],
            "speedup": tf_decode[batch] / llmc_decode[batch],
            "roofline_tokens_per_s": tokens / floor,
            "llmc_roofline_fraction": floor / llmc_decode[batch],
            "transformers_roofline_fraction": floor / tf_decode[batch]})
        if batch in llmc_decode_gemv:
            decode[-1]["llmc_gemv_tokens_per_s"] = tokens / llmc_decode_gemv[batch]
    flops = prefill_flops(config, args.prefill_tokens)
    prefill = {"tokens": args.prefill_tokens, "flops": flops,
               "llmc_flops_per_s": flops / llmc_prefill_s,
               "transformers_flops_per_s": flops / tf_prefill_s,
               "llmc_peak_fraction": flops / llmc_prefill_s / peak,
               "transformers_peak_fraction": flops / tf_prefill_s / peak,
               "speedup": tf_prefill_s / llmc_prefill_s}
    smallest = decode[0]
    largest = [entry for entry in decode if entry["batch"] <= SPEEDUP_BATCH][-1]
    targets = {
        "roofline": {"batch": smallest["batch"], "target": ROOFLINE_TARGET,
                     "value": smallest["llmc_roofline_fraction"],
                     "met": smallest["llmc_roofline_fraction"] >= ROOFLINE_TARGET},
        "speedup": {"batch": largest["batch"], "target": SPEEDUP_TARGET,
                    "value": largest["speedup"], "met": largest["speedup"] >= SPEEDUP_TARGET},
        "prefill": {"target": PREFILL_TARGET, "value": prefill["llmc_peak_fraction"],
                    "met": prefill["llmc_peak_fraction"] >= PREFILL_TARGET}}
    return {"model": {"variant": VARIANT, "parameters": config.num_parameters(), "dtype": DTYPE,
                      "linear_parameters": linear_parameters(config)},
            "workload": {"prompt_tokens": args.prompt_tokens,
                         "decode_tokens": args.decode_tokens,
                         "prefill_tokens": args.prefill_tokens, "repeat": args.repeat},
            "transformers_attention": attention, "limits": limits, "decode": decode,
            "prefill": prefill, "targets": targets}


def table(result: dict) -> str:
    """The short table printed last."""
    limits, model = result["limits"], result["model"]

    def row(workload: str, ours: str, theirs: str, ratio: str, limit: str) -> str:
        return f"{workload:<22}{ours:>14}{theirs:>15}{ratio:>9}  {limit}"

    lines = [f"llmc CUDA ({model['dtype']}) vs transformers {result['versions']['transformers']} "
             f"({result['transformers_attention']}, bf16): {model['variant']} "
             f"({model['parameters'] / 1e9:.2f}B parameters) on {result['gpu']}",
             f"GPU limits: HBM {limits['hbm_bytes_per_s'] / 1e12:.2f} TB/s "
             f"({COPY_GIB} GiB copy), bf16 matmul {limits['bf16_flops_per_s'] / 1e12:.0f} TFLOP/s "
             f"({MATMUL_N}^3)", "",
             row("workload", "llmc", "transformers", "llmc/tf", "llmc vs limit")]
    for decode in result["decode"]:
        lines.append(row(f"decode, batch {decode['batch']}",
                         f"{decode['llmc_tokens_per_s']:,.0f} tok/s",
                         f"{decode['transformers_tokens_per_s']:,.0f} tok/s",
                         f"{decode['speedup']:.2f}x",
                         f"{decode['llmc_roofline_fraction']:.0%} of HBM roofline"))
    prefill = result["prefill"]
    lines.append(row(f"prefill, {prefill['tokens']} tokens",
                     f"{prefill['llmc_flops_per_s'] / 1e12:,.0f} TFLOP/s",
                     f"{prefill['transformers_flops_per_s'] / 1e12:,.0f} TFLOP/s",
                     f"{prefill['speedup']:.2f}x",
                     f"{prefill['llmc_peak_fraction']:.0%} of bf16 peak"))
    targets = result["targets"]
    roofline, speedup, prefill = targets["roofline"], targets["speedup"], targets["prefill"]

    def verdict(target: dict) -> str:
        return "met" if target["met"] else "MISSED"

    lines += ["", "llmc decode with the logits brought to the host (Model.step, numpy's argmax): "
              + ", ".join(f"batch {entry['batch']} "
                          f"{entry['llmc_logits_to_host_tokens_per_s']:,.0f}"
                          for entry in result["decode"]) + " tok/s"]
    gemv = [entry for entry in result["decode"] if "llmc_gemv_tokens_per_s" in entry]
    if gemv:
        lines.append("llmc decode with the gemms on the GEMV kernel (LLMC_CUDA_GEMV=1): "
                     + ", ".join(f"batch {entry['batch']} "
                                 f"{entry['llmc_gemv_tokens_per_s']:,.0f}"
                                 for entry in gemv) + " tok/s")
    lines += [f"targets: batch-{roofline['batch']} decode >= {roofline['target']:.0%} of "
              f"roofline: {roofline['value']:.0%} ({verdict(roofline)}); "
              f"batch-{speedup['batch']} decode >= {speedup['target']:.0f}x transformers: "
              f"{speedup['value']:.2f}x ({verdict(speedup)}); prefill >= "
              f"{prefill['target']:.0%} of the bf16 rate: {prefill['value']:.0%} "
              f"({verdict(prefill)})"]
    return "\n".join(lines)


def batch_sizes(text: str) -> list[int]:
    sizes = sorted({int(part) for part in text.split(",")})
    if sizes[0] < 1:
        raise argparse.ArgumentTypeError("batch sizes must be positive")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, default=ROOT / "build" / "gpu-bench",
                        help="where the model is built (once) and compiled")
    parser.add_argument("--batches", type=batch_sizes, default=[1, 8, 16, 64, 256],
                        help="comma-separated decode batch sizes (default 1,8,16,64,256)")
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--prefill-tokens", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per workload")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every figure to FILE")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args()
    if min(args.prompt_tokens, args.decode_tokens, args.prefill_tokens, args.repeat) < 1:
        parser.error("token counts and --repeat must be positive")
    if args.prompt_tokens > max(2048, args.prefill_tokens):
        parser.error("--prompt-tokens must fit one step (at most max(2048, --prefill-tokens))")

    torch, transformers = import_gpu_modules()
    config = VARIANTS[VARIANT]
    rng = np.random.default_rng(0)
    decode_prompts = {batch: rng.integers(0, config.vocab_size, (batch, args.prompt_tokens),
                                          dtype=np.int32) for batch in args.batches}
    prefill_prompt = rng.integers(0, config.vocab_size, (1, args.prefill_tokens), dtype=np.int32)

    progress(f"measuring the GPU: {COPY_GIB} GiB copy, {MATMUL_N}^3 bf16 matmul", args.quiet)
    limits = {"hbm_bytes_per_s": hbm_bandwidth(torch), "bf16_flops_per_s": matmul_rate(torch),
              "copy_gib": COPY_GIB, "matmul_n": MATMUL_N}
    torch.cuda.empty_cache()  # give the measurements' buffers back before llmc allocates
    llmc = run_llmc(args, decode_prompts, prefill_prompt)
    tf = run_transformers(args, torch, config, decode_prompts, prefill_prompt)

    result = {"date": datetime.date.today().isoformat(),
              "gpu": torch.cuda.get_device_name(),
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
              **figures(args, config, limits, llmc, tf)}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
