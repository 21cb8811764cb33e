"""Turn an ONNX text model (onnx.parser syntax) into a binary .onnx file.

    python lit_onnxtext.py model.onnxtext -o model.onnx [--check]

Lines starting with `//` (lit's RUN and CHECK lines) are blanked first, so line numbers in
parser errors still match the source. --check also runs onnx.checker on the result.
Local functions (`<domain: ..., opset_import: ...> Name (in) => (out) { ... }` after the
graph) are parsed by onnx.parser.parse_model too.
"""
from __future__ import annotations

import argparse
import sys

import onnx
import onnx.checker
import onnx.parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--check", action="store_true", help="run onnx.checker on the model")
    args = parser.parse_args(argv)

    with open(args.source, encoding="utf-8") as f:
        lines = [("" if line.lstrip().startswith("//") else line) for line in f]
    try:
        model = onnx.parser.parse_model("".join(lines))
    except onnx.parser.ParseError as error:
        print(f"{args.source}: cannot parse ONNX text: {error}", file=sys.stderr)
        return 1
    if args.check:
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
