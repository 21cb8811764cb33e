"""The ONNX side of weight-only quantization: which weights a decoder multiplies by, and
rewriting them as com.microsoft MatMulNBits and GatherBlockQuantized.

A MatMul by a constant weight (an initializer [K, N], or the Transpose of one [N, K]: a tied
LM head) becomes MatMulNBits (accuracy_level 0, the exact product), and the embedding's Gather
GatherBlockQuantized (when its width is a multiple of the block). Initializers and
Transposes no node reads any more are dropped.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .blocks import QuantizedWeight

MICROSOFT = "com.microsoft"


@dataclass
class WeightSite:
    """A constant weight to quantize: a MatMul's B, or an embedding Gather's table."""

    node: onnx.NodeProto
    weight: np.ndarray  # float32 [N, K]: outputs by inputs (for a Gather, rows by features)
    # The MatMul's activation input (for a Gather, "").
    input: str = ""

    @property
    def is_gather(self) -> bool:
        return self.node.op_type == "Gather"


class ModelGraph:
    """A decoder's graph with its initializers as arrays, for the quantizer."""

    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.graph = model.graph
        self.initializers = {tensor.name: tensor for tensor in self.graph.initializer}
        self.producers = {output: node for node in self.graph.node for output in node.output}

    def array(self, name: str) -> np.ndarray | None:
        tensor = self.initializers.get(name)
        return None if tensor is None else numpy_helper.to_array(tensor)

    def constant(self, name: str) -> np.ndarray | None:
        """The initializer `name` is, through Identity nodes (torch.onnx's exporter shares
        equal initializers that way), or None."""
        while name not in self.initializers:
            node = self.producers.get(name)
            if node is None or node.op_type != "Identity":
                return None
            name = node.input[0]
        return self.array(name)

    def add_array(self, name: str, value: np.ndarray) -> str:
        """Adds an initializer (its name made unique) and returns its name."""
        while name in self.initializers:
            name += "_"
        tensor = numpy_helper.from_array(value, name)
        self.graph.initializer.append(tensor)
        self.initializers[name] = self.graph.initializer[-1]
        return name

    def matmul_weight_name(self, name: str) -> tuple[str, bool] | None:
        """The initializer a MatMul's B input `name` is, and whether it is stored [N, K]
        (under a Transpose) rather than [K, N]; None for an activation."""
        if name in self.initializers:
            return name, False
        node = self.producers.get(name)
        if node is None or node.op_type != "Transpose" or node.input[0] not in self.initializers:
            return None
        perm = [list(a.ints) for a in node.attribute if a.name == "perm"]
        return (node.input[0], True) if perm in ([], [[1, 0]]) else None

    def _matmul_weight(self, node: onnx.NodeProto) -> np.ndarray | None:
        found = self.matmul_weight_name(node.input[1])
        if found is None:
            return None
        array = self.array(found[0])
        if array.ndim != 2 or array.dtype != np.float32:
            return None
        return array if found[1] else array.T

    def sites(self, bits: int, block_size: int) -> list[WeightSite]:
        """The weights to quantize, MatMuls first, in graph order. An embedding is one when
        its width is a multiple of the block (GatherBlockQuantized's layout)."""
        matmuls = []
        for node in self.graph.node:
            if node.op_type == "MatMul":
                weight = self._matmul_weight(node)
                if weight is not None:
                    matmuls.append(WeightSite(node, np.ascontiguousarray(weight), node.input[0]))
        gathers = []
        for node in self.graph.node:
            if (node.op_type == "Gather" and node.input[0] in self.initializers
                    and all(a.i == 0 for a in node.attribute if a.name == "axis")):
                table = self.array(node.input[0])
                if (table.ndim == 2 and table.dtype == np.float32
                        and table.shape[1] % block_size == 0):
                    gathers.append(WeightSite(node, table))
        return matmuls + gathers

    def replace(self, sites: list[WeightSite], quantized: list[QuantizedWeight],
                accuracy_level: int = 0) -> None:
        """Rewrites each site's node with its quantized weight; the MatMulNBits ask for
        `accuracy_level` (0: the exact product; 4: int8 activations allowed)."""
        new_initializers: list[onnx.TensorProto] = []
        replaced: dict[int, onnx.NodeProto] = {}
        for site, q in zip(sites, quantized):
            node = site.node
            prefix = node.name or node.output[0]
            names = [f"{prefix}_Q{q.bits}", f"{prefix}_scales", f"{prefix}_zero_points"]
            packed = q.packed.reshape(q.out_features, -1) if site.is_gather else q.packed
            new_initializers += [numpy_helper.from_array(packed, names[0]),
                                 numpy_helper.from_array(q.scales, names[1])]
            if site.is_gather:
                inputs = [names[0], node.input[1], names[1]]
            else:
                inputs = [node.input[0], names[0], names[1]]
            if q.zero_points is not None:
                new_initializers.append(numpy_helper.from_array(q.zero_points, names[2]))
                inputs.append(names[2])
            if q.group_index is not None:
                g_idx = f"{prefix}_g_idx"
                new_initializers.append(numpy_helper.from_array(q.group_index, g_idx))
                inputs += [""] * (4 - len(inputs)) + [g_idx]
            if site.is_gather:
                replaced[id(node)] = helper.make_node(
                    "GatherBlockQuantized", inputs, list(node.output), name=node.name,
                    domain=MICROSOFT, gather_axis=0, quantize_axis=1, block_size=q.block_size,
                    bits=q.bits)
            else:
                replaced[id(node)] = helper.make_node(
                    "MatMulNBits", inputs, list(node.output), name=node.name, domain=MICROSOFT,
                    K=q.in_features, N=q.out_features, bits=q.bits, block_size=q.block_size,
                    accuracy_level=accuracy_level)
        nodes = [replaced.get(id(node), node) for node in self.graph.node]
        del self.graph.node[:]
        self.graph.node.extend(nodes)
        self.graph.initializer.extend(new_initializers)
        self._drop_unused()
        if not any(opset.domain == MICROSOFT for opset in self.model.opset_import):
            self.model.opset_import.append(helper.make_opsetid(MICROSOFT, 1))

    def _drop_unused(self) -> None:
        """Removes initializers and Transposes of them that no node reads any more."""
        while True:
            used = {name for node in self.graph.node for name in node.input}
            used |= {output.name for output in self.graph.output}
            dead = [node for node in self.graph.node if node.op_type == "Transpose"
                    and not any(output in used for output in node.output)]
            for node in dead:
                self.graph.node.remove(node)
            if not dead:
                break
        used = {name for node in self.graph.node for name in node.input}
        kept = [tensor for tensor in self.graph.initializer if tensor.name in used]
        del self.graph.initializer[:]
        self.graph.initializer.extend(kept)
