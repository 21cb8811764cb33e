"""Write seeded Llama ONNX models.

    python -m llmc.testing.build --style optimum --variant gqa [--seed 0] [--opset N] \\
        [--option merged=true ...] [--external-data] -o out/model.onnx
    python -m llmc.testing.build --all -o DIR   # every fixture, DIR/<fixture name>/model.onnx

Prints one line per model written.
"""
from __future__ import annotations

import argparse
import sys

from .builder import STYLES, build_model, save_model
from .fixtures import FIXTURES, VARIANTS, write_fixture


def option_value(text: str):
    """Parse an --option value: true/false/none, an int, a float, or a string."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def parse_options(items: list[str]) -> dict:
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--option expects key=value, got {item!r}")
        options[key] = option_value(value)
    return options


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmc.testing.build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="write every fixture into -o DIR")
    parser.add_argument("--style", choices=sorted(STYLES))
    parser.add_argument("--variant", choices=sorted(VARIANTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--opset", type=int)
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a style option, e.g. merged=true or quant=int4 (repeatable)")
    parser.add_argument("--external-data", action="store_true",
                        help="store tensors in <name>_data next to the model")
    parser.add_argument("-o", "--output", required=True,
                        help="model path, or the directory for --all")
    args = parser.parse_args(argv)

    try:
        if args.all:
            if args.style or args.variant or args.option or args.opset or args.external_data:
                parser.error("--all takes only -o and --seed")
            for style, variant, options in FIXTURES:
                print(write_fixture(style, variant, options, args.output, seed=args.seed))
            return 0
        if not (args.style and args.variant):
            parser.error("give --style and --variant, or --all")
        model = build_model(VARIANTS[args.variant], args.style, seed=args.seed,
                            opset=args.opset, **parse_options(args.option))
        print(save_model(model, args.output, external_data=args.external_data))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
