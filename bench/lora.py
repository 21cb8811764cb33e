"""LoRA adapters by request: what serving them costs, against the base model in llmc and
against onnxruntime on the model with the adapter merged in.

    PYTHONPATH=python .venv/bin/python bench/lora.py [--onnx models/smollm2-135m/model.onnx]
        [--rank 16] [--adapters 4] [--requests 16] [--prompt-tokens 128]
        [--decode-tokens 64] [--threads N] [--repeats 2] [--json] [--record]

The default model (SmolLM2-135M) with --adapters seeded random PEFT adapters of --rank on
every linear of every layer (q, k, v, o, gate, up and down: PEFT's "all-linear"), written as
PEFT saves them. llmc compiles the file twice, as it is and with --enable-lora, and runs
LLM.generate (greedy, ignore_eos) of --requests prompts of --prompt-tokens random tokens,
--decode-tokens each, in a fresh engine per run:

  base            the artifact without sites;
  sites, none     the --enable-lora artifact, no request naming an adapter;
  one adapter     every request with adapter 0;
  mixed           the requests spread over every adapter, round robin;

then one request alone with adapter 0 (batch-1 latency). onnxruntime runs the model with
adapter 0 merged into its weights (W + scaling * A^T B^T, what one serves without multi-LoRA
serving), batch 1, on the same prompt: its decode is the peer of llmc's batch-1 decode, and
its greedy tokens are compared with llmc's (how many agree). Best of --repeats.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from common import best_of, machine, progress, record_rows

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## LoRA adapters by request: the cost of serving them"
MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
NODE = re.compile(r"^/(model/layers\.\d+/\w+/(\w+))/MatMul$")


def linear_weights(model: onnx.ModelProto) -> dict[str, str]:
    """Module path -> the name of its MatMul's weight initializer, for the targeted modules."""
    initializers = {init.name for init in model.graph.initializer}
    found = {}
    for node in model.graph.node:
        match = NODE.match(node.name)
        if node.op_type == "MatMul" and match and match.group(2) in MODULES:
            weight = next(name for name in node.input if name in initializers)
            found[match.group(1).replace("/", ".")] = weight
    return found


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """The safetensors layout: an 8-byte header length, the JSON header, the data."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    with open(path, "wb") as file:
        file.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))


def make_adapters(model: onnx.ModelProto, weights: dict[str, str], directory: Path,
                  count: int, rank: int) -> list[tuple[Path, dict]]:
    """`count` seeded adapters of `rank` on every module in `weights`, saved as PEFT saves
    them; each with its (A, B) per module, scaling 2 (lora_alpha = 2 * rank)."""
    shapes = {init.name: tuple(init.dims) for init in model.graph.initializer}
    adapters = []
    for index in range(count):
        rng = np.random.default_rng(index)
        tensors, factors = {}, {}
        for module, weight in weights.items():
            fan_in, fan_out = shapes[weight]
            a = rng.normal(0, 1 / np.sqrt(fan_in), (rank, fan_in)).astype(np.float32)
            b = rng.normal(0, 0.02, (fan_out, rank)).astype(np.float32)
            tensors[f"base_model.model.{module}.lora_A.weight"] = a
            tensors[f"base_model.model.{module}.lora_B.weight"] = b
            factors[module] = (a, b)
        path = directory / f"adapter-{index}"
        path.mkdir()
        config = {"peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank, "bias": "none",
                  "target_modules": list(MODULES), "use_dora": False, "use_rslora": False}
        (path / "adapter_config.json").write_text(json.dumps(config, indent=2))
        write_safetensors(path / "adapter_model.safetensors", tensors)
        adapters.append((path, factors))
    return adapters


def write_merged(onnx_path: Path, weights: dict[str, str], factors: dict, out: Path) -> Path:
    """The model with one adapter merged into its weights: W [in, out] + 2 A^T B^T."""
    model = onnx.load(str(onnx_path))
    by_name = {init.name: init for init in model.graph.initializer}
    for module, weight in weights.items():
        a, b = factors[module]
        merged = numpy_helper.to_array(by_name[weight]) + 2.0 * (a.T @ b.T)
        by_name[weight].CopyFrom(numpy_helper.from_array(merged.astype(np.float32), weight))
    out.mkdir()
    path = out / "model.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="model.onnx_data")
    return path


def llmc_generate(artifact: Path, prompts: list[list[int]], loras: list, tokens: int,
                  threads: int, repeats: int) -> tuple[float, list[list[int]]]:
    """The best of `repeats` LLM.generate runs, each in a fresh engine (no prefix hits from
    the run before); the tokens of the last."""
    from llmc import LLM, LoRARequest, SamplingParams

    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    requests = [None if lora is None else LoRARequest(lora.name, int(lora.name.split("-")[1]) + 1,
                                                       str(lora)) for lora in loras]
    best, outputs = float("inf"), None
    for _ in range(repeats):
        with LLM(artifact, num_threads=threads, max_lora_rank=64, quiet=True) as llm:
            llm.generate([[1, 2, 3]], SamplingParams(max_tokens=2), use_tqdm=False,
                         lora_request=requests[:1] if any(requests) else None)  # warm-up
            start = time.perf_counter()
            outputs = llm.generate(prompts, params, use_tqdm=False,
                                   lora_request=requests if any(requests) else None)
            best = min(best, time.perf_counter() - start)
    return best, [output.outputs[0].token_ids for output in outputs]


def onnxruntime_decode(onnx_path: Path, prompt: list[int], tokens: int, threads: int,
                       repeats: int) -> tuple[float, float, list[int]]:
    """Batch-1 greedy generation: prefill seconds, decode seconds, the tokens."""
    import onnxruntime as ort

    from llmc.testing.ort_reference import OrtDecoder

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    decoder = OrtDecoder(onnx_path, session_options=options)
    best = (float("inf"), float("inf"), [])
    for _ in range(repeats):
        start = time.perf_counter()
        logits, generation = decoder.prefill([prompt])
        prefill = time.perf_counter() - start
        token = logits[:, -1].argmax(axis=-1)
        generated = [int(token[0])]
        start = time.perf_counter()
        for _ in range(tokens - 1):
            token = decoder.decode(generation, token).argmax(axis=-1)
            generated.append(int(token[0]))
        decode = time.perf_counter() - start
        if decode < best[1]:
            best = (prefill, decode, generated)
    return best


def section_text() -> str:
    return f"""{SECTION}

`bench/lora.py`: the default model (SmolLM2-135M, fp32) with seeded random PEFT adapters on
every linear of every layer (q, k, v, o, gate, up, down), served by `LLM.generate` (greedy,
ignore_eos) from a fresh engine: "base" is the artifact compiled as it is; the others are
the `--enable-lora` artifact with no request naming an adapter ("sites, none"), every
request with one adapter ("one"), and the requests spread over every adapter ("mixed").
"x base": tokens/s over the base artifact's in the same run. Batch 1: one request with
adapter 0, its decode (tokens after the first) against onnxruntime decoding the model with
that adapter merged into its weights, and how many of the greedy tokens agree. Best of 2.

| date | machine | threads | rank, adapters | requests x (prompt + decode) | base tok/s | sites, none | one | mixed | batch-1 decode tok/s: llmc one / onnxruntime merged | greedy tokens agreeing |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnx", type=Path,
                        default=ROOT / "models" / "smollm2-135m" / "model.onnx")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--adapters", type=int, default=4)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    if not args.onnx.exists():
        print(f"lora: {args.onnx} not found (scripts/run-default-model.sh makes the default "
              "model)", file=sys.stderr)
        return 1
    header = onnx.load(str(args.onnx), load_external_data=False)
    weights = linear_weights(header)
    if not weights:
        print(f"lora: {args.onnx} has no MatMul named as optimum names a layer's projections",
              file=sys.stderr)
        return 1
    rng = np.random.default_rng(0)
    vocab = next(init.dims[0] for init in header.graph.initializer
                 if "embed_tokens" in init.name)
    prompts = [rng.integers(3, vocab, args.prompt_tokens).tolist()
               for _ in range(args.requests)]
    llmc_binary = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
    runs = {}
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        progress(f"{args.adapters} adapters of rank {args.rank} on {len(weights)} linears",
                 args.quiet)
        adapters = make_adapters(header, weights, tmp, args.adapters, args.rank)
        artifacts = {}
        for name, flags in (("base", []), ("lora", ["--enable-lora"])):
            progress(f"compiling {args.onnx} {' '.join(flags)}", args.quiet)
            artifacts[name] = tmp / f"{name}.llmc"
            subprocess.run([str(llmc_binary), "compile", str(args.onnx), "-o",
                            str(artifacts[name]), "--quiet", *flags], check=True)
        paths = [path for path, _ in adapters]
        for label, artifact, loras in (
                ("base", "base", [None] * args.requests),
                ("sites, none", "lora", [None] * args.requests),
                ("one", "lora", [paths[0]] * args.requests),
                ("mixed", "lora", [paths[i % len(paths)] for i in range(args.requests)])):
            progress(f"llmc: {label}", args.quiet)
            seconds, _ = llmc_generate(artifacts[artifact], prompts, loras, args.decode_tokens,
                                       args.threads, args.repeats)
            runs[label] = args.requests * args.decode_tokens / seconds
        progress("llmc: batch 1 with adapter 0", args.quiet)
        first, _ = llmc_generate(artifacts["lora"], prompts[:1], [paths[0]], 1, args.threads,
                                 args.repeats)
        whole, (ours,) = llmc_generate(artifacts["lora"], prompts[:1], [paths[0]],
                                       args.decode_tokens, args.threads, args.repeats)
        llmc_decode = (args.decode_tokens - 1) / max(whole - first, 1e-9)
        progress("onnxruntime: the model with adapter 0 merged", args.quiet)
        merged = write_merged(args.onnx, weights, adapters[0][1], tmp / "merged")
        _, ort_seconds, theirs = onnxruntime_decode(merged, prompts[0], args.decode_tokens,
                                                    args.threads, args.repeats)
    ort_decode = (args.decode_tokens - 1) / ort_seconds
    agreeing = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), len(ours))
    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "threads": args.threads, "rank": args.rank, "adapters": args.adapters,
              "requests": args.requests, "prompt_tokens": args.prompt_tokens,
              "decode_tokens": args.decode_tokens, "tokens_per_second": runs,
              "batch1_decode_tokens_per_second": {"llmc": llmc_decode, "onnxruntime": ort_decode},
              "greedy_tokens_agreeing": agreeing}
    base = runs["base"]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for label, rate in runs.items():
            print(f"{label:12s} {rate:8.1f} tok/s  {rate / base:.2f}x base")
        print(f"batch 1, adapter 0: llmc decode {llmc_decode:.1f} tok/s, onnxruntime on the "
              f"merged model {ort_decode:.1f} tok/s ({llmc_decode / ort_decode:.2f}x); "
              f"{agreeing} of {len(ours)} greedy tokens agree")
    if args.record:
        cells = " | ".join(f"{runs[k]:.1f} ({runs[k] / base:.2f}x)"
                           for k in ("sites, none", "one", "mixed"))
        row = (f"| {result['date']} | {result['machine']} | {args.threads} | {args.rank}, "
               f"{args.adapters} | {args.requests} x ({args.prompt_tokens} + "
               f"{args.decode_tokens}) | {base:.1f} | {cells} | {llmc_decode:.1f} / "
               f"{ort_decode:.1f} ({llmc_decode / ort_decode:.2f}x) | {agreeing} of "
               f"{len(ours)} |")
        record_rows(RESULTS, SECTION, section_text(), [row])
    return 0


if __name__ == "__main__":
    sys.exit(main())
