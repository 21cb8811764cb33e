"""llmc quantize (or python -m llmc.quantize) MODEL.onnx -o OUT.onnx [--method rtn|awq|gptq] [--bits 4|8]
    [--group-size 32] [--symmetric] [--act-order] [--calibration FILE] [--accuracy-level 0|4]
    [--quiet]

Every MatMul by a constant weight (an initializer [K, N], or the Transpose of one [N, K]: a
tied LM head) becomes com.microsoft MatMulNBits, and the embedding's Gather becomes
GatherBlockQuantized (when its width is a multiple of the group size), so onnxruntime runs OUT.onnx as it is and `llmc compile` keeps
the weights packed. OUT.onnx's weights go to OUT.onnx.data beside it; the other files of
MODEL's folder (config, tokenizer) are copied along. A weight is cut along its input into
groups of --group-size, each with a scale and (unless --symmetric) a zero point: the layout
of llmc/quantize/blocks.py. --method awq and gptq calibrate on --calibration (a text file;
llmc/quantize/calibration.txt by default) with the model's tokenizer.json. --act-order
(GPTQ) quantizes each weight's inputs in order of decreasing activation energy and groups
them in that order, recorded in MatMulNBits' g_idx. --accuracy-level 4 lets the MatMulNBits
be computed with int8 activations, which onnxruntime and `llmc compile` then do by default.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import onnx

from . import METHODS, quantize_model
from .calibration import DEFAULT_TEXT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="llmc quantize", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--method", choices=METHODS, default="rtn")
    parser.add_argument("--bits", type=int, choices=[4, 8], default=4)
    parser.add_argument("--group-size", type=int, default=32)
    parser.add_argument("--symmetric", action="store_true",
                        help="no zero points (the default zero point 2^(bits-1))")
    parser.add_argument("--act-order", action="store_true",
                        help="GPTQ: quantize and group the inputs by decreasing Hessian "
                             "diagonal (MatMulNBits' g_idx)")
    parser.add_argument("--calibration", type=Path, default=DEFAULT_TEXT,
                        help="text to calibrate AWQ and GPTQ on")
    parser.add_argument("--accuracy-level", type=int, choices=[0, 4], default=0,
                        help="MatMulNBits' accuracy_level: 0, the exact product, or 4, which "
                             "lets onnxruntime and llmc compile quantize the activations to "
                             "int8 (as the genai builder's int4 models ask)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        if not args.quiet:
            print(f"llmc quantize: {message}", file=sys.stderr, flush=True)

    def progress(stage: str, done: int, total: int) -> None:
        if not args.quiet and sys.stderr.isatty():
            end = "\n" if done == total else ""
            print(f"\rllmc quantize: {stage} {done}/{total}", end=end, file=sys.stderr,
                  flush=True)

    def fail(message: str) -> int:
        print(f"llmc quantize: error: {message}", file=sys.stderr)
        return 1

    if args.output.resolve() == args.model.resolve():
        return fail("the output must not overwrite the model")
    if not args.calibration.is_file():
        return fail(f"cannot read the calibration text {args.calibration}")
    try:
        model = onnx.load(str(args.model))
    except Exception as error:  # OSError, or protobuf's DecodeError for a file that is not ONNX
        return fail(f"cannot read {args.model}: {error}")
    start = time.monotonic()
    try:
        model, count = quantize_model(model, args.model, args.method, args.bits, args.group_size,
                                      args.symmetric, args.act_order, args.calibration, say,
                                      progress, args.accuracy_level)
    except ValueError as error:
        return fail(str(error))
    if count == 0:
        return fail(f"{args.model} has no MatMul by a constant weight")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    data = args.output.name + ".data"
    (args.output.parent / data).unlink(missing_ok=True)
    onnx.save(model, str(args.output), save_as_external_data=True, all_tensors_to_one_file=True,
              location=data, size_threshold=1024)
    for companion in args.model.parent.iterdir():
        if companion.suffix in (".json", ".jinja", ".model") and companion.is_file():
            target = args.output.parent / companion.name
            if not target.exists():
                shutil.copy(companion, target)
    size = (args.output.parent / data).stat().st_size
    method = args.method + (" act-order" if args.act_order else "")
    say(f"{count} weights to {args.bits} bits ({method}, groups of {args.group_size}, "
        f"{'symmetric' if args.symmetric else 'with zero points'}) in "
        f"{time.monotonic() - start:.1f} s; wrote {args.output} ({size / 1e6:.1f} MB of data)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
