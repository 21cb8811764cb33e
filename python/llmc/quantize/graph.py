"""Weight-only quantization of an ONNX decoder into onnxruntime's block-quantized operators.

    python -m llmc.quantize MODEL.onnx -o OUT.onnx [--bits 4|8] [--group-size 32]
        [--symmetric] [--method rtn] [--quiet]

Every MatMul by a constant weight (an initializer [K, N], or the Transpose of one [N, K]:
a tied LM head) becomes com.microsoft MatMulNBits, and with --bits 4 the embedding's Gather
becomes GatherBlockQuantized, so onnxruntime runs OUT.onnx as it is and `llmc compile` keeps
the weights packed. OUT.onnx's weights go to OUT.onnx.data beside it; the other files of
MODEL's folder (config, tokenizer) are copied along.

A weight [N, K] is cut along K into blocks of --group-size (the last one zero-padded). Round
to nearest (`rtn`, the only method so far), as onnxruntime's quantizer does it: symmetric
blocks map the value of largest magnitude to -2^(bits-1) and have no zero points (the default,
2^(bits-1), applies); asymmetric blocks span [min(x, 0), max(x, 0)] with a rounded zero point.
The layouts are MatMulNBits': codes uint8 [N, blocks, group * bits / 8], two 4-bit codes a
byte low nibble first; scales float32 [N, blocks]; zero points uint8 [N, ceil(blocks * bits /
8)], packed like the codes. GatherBlockQuantized reads the same codes as uint8 [N, K / 2].
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

MICROSOFT = "com.microsoft"


@dataclass
class QuantizedWeight:
    """A [N, K] weight in MatMulNBits' layout."""

    packed: np.ndarray  # uint8 [N, blocks, block_size * bits / 8]
    scales: np.ndarray  # float32 [N, blocks]
    zero_points: np.ndarray | None  # uint8 [N, ceil(blocks * bits / 8)]; None: symmetric
    in_features: int  # K
    block_size: int
    bits: int = 4

    @property
    def out_features(self) -> int:
        return self.packed.shape[0]

    def levels(self) -> np.ndarray:
        """The codes, uint8 [N, blocks, block_size]."""
        return unpack_codes(self.packed, self.bits)

    def block_zero_points(self) -> np.ndarray:
        """Zero point of every block, uint8 [N, blocks]."""
        blocks = self.scales.shape[1]
        if self.zero_points is None:
            return np.full(self.scales.shape, 1 << (self.bits - 1), dtype=np.uint8)
        return unpack_codes(self.zero_points, self.bits)[:, :blocks]

    def dequantize(self) -> np.ndarray:
        """The float32 weight [N, K] the quantized operators compute with."""
        q = self.levels().astype(np.float32) - self.block_zero_points()[..., None]
        w = q * self.scales[..., None]
        return w.reshape(self.out_features, -1)[:, :self.in_features]


def unpack_codes(packed: np.ndarray, bits: int) -> np.ndarray:
    """uint8 [..., n] -> the codes: [..., 2n] low nibble first for 4 bits, as is for 8."""
    if bits == 8:
        return packed
    return np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:-1], -1)


def pack_codes(values: np.ndarray, bits: int) -> np.ndarray:
    """Codes [..., n] -> uint8 [..., ceil(n * bits / 8)], two 4-bit codes a byte low first."""
    values = values.astype(np.uint8)
    if bits == 8:
        return values
    if values.shape[-1] % 2:
        values = np.concatenate([values, np.zeros_like(values[..., :1])], axis=-1)
    return (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)


def quantize_rtn(weight: np.ndarray, bits: int = 4, block_size: int = 32,
                 symmetric: bool = True) -> QuantizedWeight:
    """Round-to-nearest quantization of a [N, K] float weight (the module docstring says how)."""
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"the group size must be a power of two >= 16, got {block_size}")
    levels_max = (1 << bits) - 1
    n, k = weight.shape
    blocks = -(-k // block_size)
    padded = np.zeros((n, blocks * block_size), dtype=np.float32)
    padded[:, :k] = weight
    x = padded.reshape(n, blocks, block_size)

    if symmetric:
        index = np.argmax(np.abs(x), axis=-1)[..., None]
        extreme = np.take_along_axis(x, index, axis=-1)[..., 0]
        scales = extreme / -(1 << (bits - 1))
        zero = np.full((n, blocks), 1 << (bits - 1), dtype=np.float32)
    else:
        low = np.minimum(x.min(axis=-1), 0.0)
        high = np.maximum(x.max(axis=-1), 0.0)
        scales = (high - low) / levels_max
        safe = np.where(scales == 0, 1.0, scales)
        zero = np.where(scales == 0, 0.0, np.clip(np.round(-low / safe), 0, levels_max))
    scales = scales.astype(np.float32)
    reciprocal = np.where(scales == 0, 0.0, 1.0 / np.where(scales == 0, 1.0, scales))
    levels = np.clip(np.round(x * reciprocal[..., None] + zero[..., None]), 0, levels_max)
    return QuantizedWeight(
        packed=pack_codes(levels, bits),
        scales=scales,
        zero_points=None if symmetric else pack_codes(zero, bits),
        in_features=k,
        block_size=block_size,
        bits=bits,
    )


def _initializers(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    return {tensor.name: tensor for tensor in graph.initializer}


def _constant_weight(graph: onnx.GraphProto, name: str,
                     producers: dict[str, onnx.NodeProto],
                     initializers: dict[str, onnx.TensorProto]) -> np.ndarray | None:
    """The [N, K] float weight a MatMul's B input is, or None: an initializer [K, N], or a
    Transpose of one [N, K]."""
    if name in initializers:
        array = numpy_helper.to_array(initializers[name])
        return array.T if array.ndim == 2 and array.dtype == np.float32 else None
    node = producers.get(name)
    if node is None or node.op_type != "Transpose" or node.input[0] not in initializers:
        return None
    perm = [list(a.ints) for a in node.attribute if a.name == "perm"]
    array = numpy_helper.to_array(initializers[node.input[0]])
    if array.ndim != 2 or array.dtype != np.float32 or perm not in ([], [[1, 0]]):
        return None
    return array


def quantize_model(model: onnx.ModelProto, bits: int = 4, block_size: int = 32,
                   symmetric: bool = True, progress=None) -> tuple[onnx.ModelProto, int]:
    """The model with its constant-weight MatMuls as MatMulNBits (and, for 4 bits, the
    embedding Gather as GatherBlockQuantized); and the number of weights quantized.
    `progress(done, total)` is called after each weight."""
    graph = model.graph
    initializers = _initializers(graph)
    producers = {output: node for node in graph.node for output in node.output}
    matmuls = [node for node in graph.node if node.op_type == "MatMul"
               and _constant_weight(graph, node.input[1], producers, initializers) is not None]
    gathers = [node for node in graph.node if node.op_type == "Gather" and bits == 4
               and node.input[0] in initializers
               and numpy_helper.to_array(initializers[node.input[0]]).ndim == 2
               and all(a.i == 0 for a in node.attribute if a.name == "axis")]
    total = len(matmuls) + len(gathers)
    new_initializers: list[onnx.TensorProto] = []
    replaced: dict[int, onnx.NodeProto] = {}
    for done, node in enumerate(matmuls + gathers, start=1):
        prefix = node.name or node.output[0]
        if node.op_type == "MatMul":
            weight = _constant_weight(graph, node.input[1], producers, initializers)
            q = quantize_rtn(weight, bits, block_size, symmetric)
            names = [f"{prefix}_Q{bits}", f"{prefix}_scales", f"{prefix}_zero_points"]
            new_initializers += [numpy_helper.from_array(q.packed, names[0]),
                                 numpy_helper.from_array(q.scales, names[1])]
            inputs = [node.input[0], names[0], names[1]]
            if q.zero_points is not None:
                new_initializers.append(numpy_helper.from_array(q.zero_points, names[2]))
                inputs.append(names[2])
            replaced[id(node)] = helper.make_node(
                "MatMulNBits", inputs, list(node.output), name=node.name, domain=MICROSOFT,
                K=q.in_features, N=q.out_features, bits=bits, block_size=block_size,
                accuracy_level=0)
        else:
            table = numpy_helper.to_array(initializers[node.input[0]]).astype(np.float32)
            q = quantize_rtn(table, bits, block_size, symmetric)
            if table.shape[1] % block_size:
                raise ValueError(f"the embedding's width {table.shape[1]} is not a multiple of "
                                 f"the group size {block_size}")
            names = [f"{prefix}_Q{bits}", f"{prefix}_scales", f"{prefix}_zero_points"]
            new_initializers += [
                numpy_helper.from_array(q.packed.reshape(table.shape[0], -1), names[0]),
                numpy_helper.from_array(q.scales, names[1])]
            inputs = [names[0], node.input[1], names[1]]
            if q.zero_points is not None:
                new_initializers.append(numpy_helper.from_array(q.zero_points, names[2]))
                inputs.append(names[2])
            replaced[id(node)] = helper.make_node(
                "GatherBlockQuantized", inputs, list(node.output), name=node.name,
                domain=MICROSOFT, gather_axis=0, quantize_axis=1, block_size=block_size,
                bits=bits)
        if progress:
            progress(done, total)

    nodes = [replaced.get(id(node), node) for node in graph.node]
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(new_initializers)
    _drop_unused(graph)
    if not any(opset.domain == MICROSOFT for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MICROSOFT, 1))
    return model, total


def _drop_unused(graph: onnx.GraphProto) -> None:
    """Removes initializers and Transposes of them that no node reads any more."""
    while True:
        used = {name for node in graph.node for name in node.input}
        used |= {output.name for output in graph.output}
        dead = [node for node in graph.node if node.op_type == "Transpose"
                and not any(output in used for output in node.output)]
        for node in dead:
            graph.node.remove(node)
        if not dead:
            break
    used = {name for node in graph.node for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmc.quantize", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--method", choices=["rtn"], default="rtn")
    parser.add_argument("--bits", type=int, choices=[4, 8], default=4)
    parser.add_argument("--group-size", type=int, default=32)
    parser.add_argument("--symmetric", action="store_true",
                        help="no zero points (the default zero point 2^(bits-1))")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        if not args.quiet:
            print(f"llmc quantize: {message}", file=sys.stderr, flush=True)

    if args.output.resolve() == args.model.resolve():
        parser.error("the output must not overwrite the model")
    try:
        model = onnx.load(str(args.model))
    except Exception as error:  # OSError, or protobuf's DecodeError for a file that is not ONNX
        print(f"llmc quantize: error: cannot read {args.model}: {error}", file=sys.stderr)
        return 1
    start = time.monotonic()

    def progress(done: int, total: int) -> None:
        if not args.quiet and sys.stderr.isatty():
            print(f"\rllmc quantize: {done}/{total} weights", end="", file=sys.stderr, flush=True)

    try:
        model, count = quantize_model(model, args.bits, args.group_size, args.symmetric,
                                      progress)
    except ValueError as error:
        print(f"llmc quantize: error: {error}", file=sys.stderr)
        return 1
    if not args.quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    if count == 0:
        print(f"llmc quantize: error: {args.model} has no MatMul by a constant weight",
              file=sys.stderr)
        return 1
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
    say(f"{count} weights to {args.bits} bits in groups of {args.group_size} "
        f"({'symmetric' if args.symmetric else 'with zero points'}) in "
        f"{time.monotonic() - start:.1f} s; wrote {args.output} ({size / 1e6:.1f} MB of data)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
