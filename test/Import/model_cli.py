"""The command line shared by the test-model writers of test/Import:

    python make_<...>.py KIND -o OUT.onnx
    python make_<...>.py --list
"""
from __future__ import annotations

import argparse
from typing import Callable

import onnx


def run(kinds: dict[str, Callable], description: str, argv=None) -> int:
    """Writes the model of the named kind. A kind's function may write OUT itself
    (returning None) or return the ModelProto to save there."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("kind", nargs="?", choices=sorted(kinds))
    parser.add_argument("-o", "--output")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(sorted(kinds)))
        return 0
    if not (args.kind and args.output):
        parser.error("give KIND and -o OUT")
    model = kinds[args.kind](args.output)
    if model is not None:
        onnx.save(model, args.output)
    return 0
