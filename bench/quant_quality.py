"""What quantization costs in quality: perplexity and KL divergence from fp32 on a fixed text.

    PYTHONPATH=python .venv/bin/python bench/quant_quality.py [--bits 4] [--group-size 128]
        [--symmetric] [--window 256] [--json] [--quiet]

The default model's ONNX (models/smollm2-135m, fp32) is quantized by llmc.quantize with each
method (rtn, awq, gptq; AWQ and GPTQ calibrate on llmc/quantize/calibration.txt) into
build/bench-quantized/. The evaluation text, bench/quality_text.txt (another text), is
tokenized with the model's tokenizer and cut into windows of --window tokens, each run from an
empty cache with the logits of every position: by onnxruntime on each ONNX file (MatMulNBits
at accuracy_level 0: the exact product, which llmc's default CPU path computes bit for bit
as the widened weights), and by llmc (one token a step) for what only llmc computes: the fp32
model with the int8 KV cache (--kv-cache-dtype int8), with bf16 weights (--dtype bf16) and
with bf16 weights and activations (--bf16-activations), and the rtn file with
--int8-activations, alone and with the int8 KV cache. Per variant:
the perplexity of the text's next tokens and the mean KL divergence KL(fp32 || variant) of
the next-token distributions, over every position of every window. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from llmc.quantize import METHODS
from llmc.runtime import Model
from llmc.testing.ort_reference import OrtDecoder

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "models" / "smollm2-135m" / "model.onnx"
TEXT = Path(__file__).with_name("quality_text.txt")
WORK = ROOT / "build" / "bench-quantized"
LLMC = ROOT / "build" / "bin" / "llmc"


def say(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"  {message}", file=sys.stderr, flush=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def ort_logits(model: Path, windows: list[list[int]]) -> list[np.ndarray]:
    decoder = OrtDecoder(model)
    return [decoder.forward(np.array([w]), np.ones((1, len(w)), dtype=np.int64))[0][0]
            for w in windows]


def llmc_logits(artifact: Path, windows: list[list[int]]) -> list[np.ndarray]:
    """Each window from an empty cache, one token a step (a step's logits are each
    sequence's last row), so every position's logits."""
    model = Model(artifact, num_kv_blocks=len(windows[0]) // 16 + 2)
    try:
        out = []
        for window in windows:
            table = np.arange((len(window) + model.block_size - 1) // model.block_size,
                              dtype=np.int32)[None, :]
            out.append(np.concatenate([
                model.step([token], [position], [0, 1], [position + 1], table, [position], [0])
                for position, token in enumerate(window)]))
        return out
    finally:
        model.close()


def llmc_scores(onnx_path: Path, name: str, flags: list[str], windows: list[list[int]],
                reference: list[np.ndarray], quiet: bool) -> dict:
    """The scores of `onnx_path` compiled by llmc with `flags`."""
    artifact = WORK / f"{name}.llmc"
    say(f"{name}: llmc {' '.join(flags)}", quiet)
    subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact), "--quiet", *flags],
                   check=True)
    return scores(windows, reference, llmc_logits(artifact, windows))


def scores(windows: list[list[int]], reference: list[np.ndarray] | None,
           logits: list[np.ndarray]) -> dict:
    """Perplexity of each window's next tokens, and the mean KL from the reference."""
    nll, kl, count = 0.0, 0.0, 0
    for index, (window, values) in enumerate(zip(windows, logits)):
        logp = log_softmax(values[:-1])
        nll -= float(logp[np.arange(len(window) - 1), window[1:]].sum())
        if reference is not None:
            ref = log_softmax(reference[index][:-1])
            kl += float((np.exp(ref) * (ref - logp)).sum())
        count += len(window) - 1
    result = {"perplexity": float(np.exp(nll / count)), "positions": count}
    if reference is not None:
        result["mean_kl"] = kl / count
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, choices=[4, 8], default=4)
    parser.add_argument("--group-size", type=int, default=128)
    parser.add_argument("--symmetric", action="store_true")
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    if not DEFAULT_MODEL.exists():
        print(f"quant_quality: {DEFAULT_MODEL} not found (run scripts/run-default-model.sh)",
              file=sys.stderr)
        return 1
    ids = Tokenizer.from_file(str(DEFAULT_MODEL.parent / "tokenizer.json")).encode(
        TEXT.read_text()).ids
    windows = [ids[i:i + args.window] for i in range(0, len(ids) - args.window + 1, args.window)]
    say(f"{len(windows)} windows of {args.window} tokens of {TEXT.name}", args.quiet)

    say("fp32: onnxruntime", args.quiet)
    reference = ort_logits(DEFAULT_MODEL, windows)
    results = {"fp32": scores(windows, None, reference)}
    int8_kv = ["--kv-cache-dtype", "int8"]
    results["fp32, llmc int8 KV cache"] = llmc_scores(DEFAULT_MODEL, "fp32-int8-kv", int8_kv,
                                                      windows, reference, args.quiet)
    results["fp32, llmc --dtype bf16"] = llmc_scores(DEFAULT_MODEL, "fp32-bf16", ["--dtype", "bf16"],
                                                     windows, reference, args.quiet)
    results["fp32, llmc bf16 weights + act."] = llmc_scores(
        DEFAULT_MODEL, "fp32-bf16-act", ["--dtype", "bf16", "--bf16-activations"], windows,
        reference, args.quiet)
    shape = f"w{args.bits}-g{args.group_size}{'-sym' if args.symmetric else ''}"
    for method in METHODS:
        quantized = WORK / f"{shape}-{method}" / "model.onnx"
        if not quantized.exists():
            say(f"quantizing with {method}", args.quiet)
            subprocess.run([sys.executable, "-m", "llmc.quantize", str(DEFAULT_MODEL), "-o",
                            str(quantized), "--method", method, "--bits", str(args.bits),
                            "--group-size", str(args.group_size), "--quiet",
                            *(["--symmetric"] if args.symmetric else [])], check=True)
        say(f"{method}: onnxruntime", args.quiet)
        results[method] = scores(windows, reference, ort_logits(quantized, windows))
        if method == "rtn":
            int8_act = ["--int8-activations"]
            results["rtn, llmc --int8-activations"] = llmc_scores(
                quantized, f"{shape}-rtn-int8-act", int8_act, windows, reference, args.quiet)
            results["rtn, llmc int8 act. + KV"] = llmc_scores(
                quantized, f"{shape}-rtn-int8-act-kv", int8_act + int8_kv, windows, reference,
                args.quiet)
    if args.bits == 4 and not args.symmetric:
        # Act-order needs symmetric groups (onnxruntime ignores zero points with g_idx): it is
        # measured next to symmetric GPTQ in order.
        for name, flags in (("gptq symmetric", ["--symmetric"]),
                            ("gptq symmetric act-order", ["--symmetric", "--act-order"])):
            quantized = WORK / f"{shape}-{name.replace(' ', '-')}" / "model.onnx"
            if not quantized.exists():
                say(f"quantizing with {name}", args.quiet)
                subprocess.run([sys.executable, "-m", "llmc.quantize", str(DEFAULT_MODEL), "-o",
                                str(quantized), "--method", "gptq", "--bits", "4",
                                "--group-size", str(args.group_size), "--quiet", *flags],
                               check=True)
            say(f"{name}: onnxruntime", args.quiet)
            results[name] = scores(windows, reference, ort_logits(quantized, windows))
    summary = {"text": TEXT.name, "tokens": sum(len(w) for w in windows), "bits": args.bits,
               "group_size": args.group_size, "symmetric": args.symmetric,
               "onnxruntime": ort.__version__, "results": results}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{'variant':34}{'perplexity':>12}{'mean KL vs fp32':>18}")
    for name, row in results.items():
        kl = f"{row['mean_kl']:.5f}" if "mean_kl" in row else ""
        print(f"{name:34}{row['perplexity']:>12.3f}{kl:>18}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
