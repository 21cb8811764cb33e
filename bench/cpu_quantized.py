"""Narrow weights on the CPU: llmc at fp32, f16, bf16, W8 and W4 next to onnxruntime on the
same ONNX files and llama.cpp at F32, F16, BF16, Q8_0 and Q4_0 on the same weights, in one run
on one machine.

    PYTHONPATH=python .venv/bin/python bench/cpu_quantized.py [--threads 2] \
        [--prompt-tokens 128] [--decode-tokens 64] [--repeat 3] [--group-size 32] \
        [--variants fp32,f16,bf16,W8,W4,W8-level4,W4-level4] [--no-llama-cpp] [--json]
        [--quiet]

The default model's ONNX (models/smollm2-135m, f32: SmolLM2-135M-Instruct's Q4_1 GGUF
dequantized) is quantized by llmc.quantize (round to nearest, symmetric, groups of
--group-size: the shape of llama.cpp's Q8_0 and Q4_0) into build/bench-quantized/, then each
of fp32, W8 and W4 is compiled with `llmc compile` (-O2; W8 and W4 also with
--int8-activations; f16 and bf16 are the fp32 file compiled with --dtype f16 and --dtype
bf16, its weights rounded and widened to f32 in registers, bf16 also with
--bf16-activations, its products on AMX tiles where the host has them and with
--bf16-products=avx512-bf16) and measured as bench/cpu_throughput.py measures (a --prompt-tokens
prefill step, then --decode-tokens greedy steps at batch 1; median of --repeat), beside
onnxruntime on the same file (MatMulNBits at accuracy_level 0,
its exact f32 product). The W8-level4 and W4-level4 variants are the same quantization with
every MatMulNBits at accuracy_level 4 (--accuracy-level 4), as the genai builder writes its
int4 models: onnxruntime then quantizes the activations to int8, and so does llmc by
default (its exact product with --int8-activations=false). llama.cpp runs through llama-cpp-python in its own venv (bash
scripts/setup.sh llama-cpp; bench/llamacpp_runner.py), on the default model's GGUF
requantized by llama.cpp to F32, F16, BF16, Q8_0 and Q4_0 (its Q4_0 keeps the tied embedding and
output at Q8_0). Bytes: llmc's weights.bin, the ONNX weights, the GGUF file. Progress goes
to stderr.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

from cpu_throughput import DEFAULT_MODEL, LLMC, ROOT, run_llmc, run_onnxruntime
from llmc.convert.gguf import default_gguf_path
from llmc.runtime import Model
from llmc.testing.ort_reference import OrtDecoder

WORK = ROOT / "build" / "bench-quantized"
LLAMA_CPP_PYTHON = ROOT / ".venv-llamacpp" / "bin" / "python"
# llmc's ways of running a quantized model: the exact product, and int8 activations.
LLMC_MODES = {"llmc": [], "llmc int8-act": ["--int8-activations"]}
# The same on a file whose MatMulNBits ask for accuracy_level 4: int8 activations by default.
LEVEL4_MODES = {"llmc": [], "llmc exact": ["--int8-activations=false"]}
# llmc's variant -> (bits of the ONNX file's weights (None: f32), its MatMulNBits'
# accuracy_level, llama.cpp's quantization of the same size, llmc's ways of compiling it).
VARIANTS = {"fp32": (None, 0, "f32", {"llmc": []}),
            "f16": (None, 0, "f16", {"llmc": ["--dtype", "f16"]}),
            "bf16": (None, 0, "bf16", {"llmc": ["--dtype", "bf16"],
                                       "llmc bf16-act": ["--dtype", "bf16", "--bf16-activations"],
                                       "llmc bf16-act avx512": ["--dtype", "bf16",
                                                                "--bf16-activations",
                                                                "--bf16-products=avx512-bf16"]}),
            "W8": (8, 0, "q8_0", LLMC_MODES), "W4": (4, 0, "q4_0", LLMC_MODES),
            "W8-level4": (8, 4, "q8_0", LEVEL4_MODES), "W4-level4": (4, 4, "q4_0", LEVEL4_MODES)}


def say(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"  {message}", file=sys.stderr, flush=True)


def onnx_bytes(model: Path) -> int:
    return sum(path.stat().st_size for path in model.parent.iterdir()
               if path.name.startswith(model.name))


def quantized_model(bits: int | None, group_size: int, accuracy_level: int, quiet: bool) -> Path:
    """The default model's ONNX at `bits` (None: as it is), made once into WORK; its
    MatMulNBits at `accuracy_level` (4, as the genai builder's int4 models: onnxruntime, and
    llmc by default, quantize the activations to int8)."""
    if bits is None:
        return DEFAULT_MODEL
    out = WORK / f"w{bits}-g{group_size}-level{accuracy_level}" / "model.onnx"
    if not out.exists():
        say(f"quantizing the default model to {bits} bits (llmc.quantize)", quiet)
        subprocess.run([sys.executable, "-m", "llmc.quantize", str(DEFAULT_MODEL), "-o", str(out),
                        "--bits", str(bits), "--group-size", str(group_size), "--symmetric",
                        "--accuracy-level", str(accuracy_level), "--quiet"], check=True)
    return out


def llama_cpp(quant: str, args) -> dict:
    say(f"llama.cpp {quant}", args.quiet)
    result = subprocess.run(
        [str(LLAMA_CPP_PYTHON), str(ROOT / "bench" / "llamacpp_runner.py"), "--gguf",
         str(default_gguf_path()), "--quant", quant, "--threads", str(args.threads),
         "--prompt-tokens", str(args.prompt_tokens), "--decode-tokens", str(args.decode_tokens),
         "--repeat", str(args.repeat), "--json"],
        check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if args.quiet else None,
        text=True)
    figures = json.loads(result.stdout)
    return {"bytes": figures["gguf_bytes"], "prefill_tokens_per_s": figures["prefill_tok_s"],
            "decode_tokens_per_s": figures["decode_tok_s"],
            "llama_cpp_python": figures["llama_cpp_python"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--group-size", type=int, default=32)
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated variants to measure")
    parser.add_argument("--no-llama-cpp", action="store_true",
                        help="leave llama.cpp out (no .venv-llamacpp)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args()
    variants = args.variants.split(",")
    if unknown := [variant for variant in variants if variant not in VARIANTS]:
        print(f"cpu_quantized: unknown variants {unknown}: use {', '.join(VARIANTS)}",
              file=sys.stderr)
        return 1
    if not DEFAULT_MODEL.exists():
        print(f"cpu_quantized: {DEFAULT_MODEL} not found (run scripts/run-default-model.sh)",
              file=sys.stderr)
        return 1
    if not args.no_llama_cpp and not LLAMA_CPP_PYTHON.exists():
        print("cpu_quantized: no .venv-llamacpp: run bash scripts/setup.sh llama-cpp, or pass "
              "--no-llama-cpp", file=sys.stderr)
        return 1

    result = {"machine": f"{platform.machine()} {platform.processor()}", "threads": args.threads,
              "prompt_tokens": args.prompt_tokens, "decode_tokens": args.decode_tokens,
              "group_size": args.group_size, "onnxruntime": ort.__version__, "variants": {}}
    blocks = (args.prompt_tokens + args.decode_tokens) // 16 + 2
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    for variant in variants:
        bits, accuracy_level, quant, modes = VARIANTS[variant]
        onnx_path = quantized_model(bits, args.group_size, accuracy_level, args.quiet)
        models = {}
        for mode, flags in modes.items():
            artifact = WORK / f"{variant}-{mode.replace(' ', '-')}.llmc"
            say(f"compiling {variant} ({mode})", args.quiet)
            subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact), "--quiet",
                            "-O2", *flags], check=True)
            models[mode] = (artifact, Model(artifact, num_threads=args.threads,
                                            num_kv_blocks=blocks))
        decoder = OrtDecoder(onnx_path, session_options=options)
        vocab = next(iter(models.values()))[1].vocab_size
        prompt = np.random.default_rng(0).integers(0, vocab, args.prompt_tokens).tolist()
        runs: dict[str, list] = {**{mode: [] for mode in models}, "onnxruntime": []}
        for index in range(args.repeat):
            say(f"run {index + 1}/{args.repeat}: {variant} {', '.join(runs)}", args.quiet)
            for mode, (_, model) in models.items():
                runs[mode].append(run_llmc(model, prompt, args.decode_tokens))
            runs["onnxruntime"].append(run_onnxruntime(decoder, prompt, args.decode_tokens))
        figures = {}
        for engine, times in runs.items():
            figures[engine] = {
                "prefill_tokens_per_s": args.prompt_tokens / statistics.median(t[0] for t in times),
                "decode_tokens_per_s": args.decode_tokens / statistics.median(t[1] for t in times)}
        for mode, (artifact, model) in models.items():
            figures[mode]["bytes"] = (artifact / "weights.bin").stat().st_size
            model.close()
        figures["onnxruntime"]["bytes"] = onnx_bytes(onnx_path)
        if not args.no_llama_cpp:
            figures["llama.cpp"] = llama_cpp(quant, args)
            figures["llama.cpp"]["quant"] = quant
        result["variants"][variant] = figures

    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'':8}{'engine':16}{'weights MB':>12}{'prefill tok/s':>15}{'decode tok/s':>14}"
          f"{'fastest llmc vs it (prefill / decode)':>40}")
    for variant, figures in result["variants"].items():
        ours = [row for engine, row in figures.items() if engine.startswith("llmc")]
        best = {metric: max(row[metric] for row in ours)
                for metric in ("prefill_tokens_per_s", "decode_tokens_per_s")}
        for engine, row in figures.items():
            name = engine if engine != "llama.cpp" else f"llama.cpp {row['quant']}"
            ratio = "" if engine.startswith("llmc") else (
                f"{best['prefill_tokens_per_s'] / row['prefill_tokens_per_s']:.2f}x / "
                f"{best['decode_tokens_per_s'] / row['decode_tokens_per_s']:.2f}x")
            print(f"{variant:8}{name:16}{row['bytes'] / 1e6:>12.1f}"
                  f"{row['prefill_tokens_per_s']:>15.1f}{row['decode_tokens_per_s']:>14.1f}"
                  f"{ratio:>40}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
