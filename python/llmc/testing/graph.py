"""A small ONNX graph builder that names nodes, values and constants the way exporters do.

Exporters differ in naming, and a compiler must not depend on names, so each style picks the
naming of the exporter it mirrors:

- TorchScript (torch.onnx, optimum): scoped node names `/model/layers.0/self_attn/MatMul`,
  repeats suffixed `_1`, `_2`; outputs `<node>_output_0`; small constants as Constant nodes.
- onnxruntime-genai: the same scoped node names; outputs `<node>/output_0`; constants as shared
  initializers named `/model/constants/INT64/[1]`.
- torch dynamo: flat node names `node_MatMul_12`, values `val_12`; Constant nodes.
"""
from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper


class Naming:
    """Scoped exporter naming; subclasses change the output or node format."""

    output_format = "{node}_output_{index}"
    constants_as_initializers = False

    def __init__(self):
        self._used: Counter[str] = Counter()

    def unique(self, name: str) -> str:
        count = self._used[name]
        self._used[name] += 1
        return name if count == 0 else f"{name}_{count}"

    def node_name(self, scope: str, op_type: str) -> str:
        return self.unique(f"{scope}/{op_type}")

    def output_name(self, node: str, index: int) -> str:
        return self.output_format.format(node=node, index=index)


class TorchScriptNaming(Naming):
    pass


class GenaiNaming(Naming):
    output_format = "{node}/output_{index}"
    constants_as_initializers = True


class DynamoNaming(Naming):
    """torch.export names: nodes and values numbered over the whole program; scopes only
    survive in metadata."""

    def __init__(self):
        super().__init__()
        self._nodes = 0
        self._values = 0

    def node_name(self, scope: str, op_type: str) -> str:
        self._nodes += 1
        return f"node_{op_type}_{self._nodes}"

    def output_name(self, node: str, index: int) -> str:
        self._values += 1
        return f"val_{self._values}"


def tensor_type(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


@dataclass
class ModelParts:
    """What every graph of one model shares: names in use, weights, local functions, opsets.

    Weights go straight into `model.graph.initializer`, so a large model's tensors are not
    copied again when the model is assembled.
    """

    naming: Naming
    opsets: dict[str, int] = field(default_factory=dict)
    model: onnx.ModelProto = field(default_factory=onnx.ModelProto)
    initializer_names: set[str] = field(default_factory=set)
    functions: dict[tuple[str, str], onnx.FunctionProto] = field(default_factory=dict)


class GraphBuilder:
    """Accumulates the nodes of one graph, subgraph or function body.

    Values are plain strings. `op` returns the output name (or a tuple of names for several
    outputs); `None` inputs become absent optional inputs.
    """

    def __init__(self, parts: ModelParts):
        self.parts = parts
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._scope: list[str] = []
        self._producers: dict[str, tuple[onnx.NodeProto, int]] = {}

    @property
    def naming(self) -> Naming:
        return self.parts.naming

    def child(self) -> GraphBuilder:
        """A builder for a subgraph or function body of the same model, in the same scope."""
        child = GraphBuilder(self.parts)
        child._scope = list(self._scope)
        return child

    @contextlib.contextmanager
    def scope(self, *parts: str):
        self._scope.extend(parts)
        try:
            yield
        finally:
            del self._scope[-len(parts):]

    @property
    def scope_name(self) -> str:
        return "".join(f"/{part}" for part in self._scope)

    # ---- nodes --------------------------------------------------------------------------------

    def op(self, op_type: str, *inputs: str | None, outputs: int | list[str | None] = 1,
           domain: str = "", name: str | None = None, **attrs) -> str | tuple[str, ...]:
        """Add a node. `outputs` is a count, or names where None means a generated name and
        "" an unused optional output. `name` overrides the generated node name."""
        name = name or self.naming.node_name(self.scope_name, op_type)
        if isinstance(outputs, int):
            outputs = [None] * outputs
        outputs = [self.naming.output_name(name, i) if value is None else value
                   for i, value in enumerate(outputs)]
        inputs = ["" if value is None else value for value in inputs]
        while inputs and not inputs[-1]:  # absent trailing optional inputs are left out
            inputs.pop()
        node = helper.make_node(op_type, inputs, outputs, name=name, domain=domain or None,
                                **attrs)
        self.nodes.append(node)
        for index, value in enumerate(outputs):
            if value:
                self._producers[value] = (node, index)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def rename(self, value: str, new_name: str) -> str:
        """Give a value produced here a fixed name (a graph output); call before it is used."""
        node, index = self._producers.pop(value)
        node.output[index] = new_name
        self._producers[new_name] = (node, index)
        return new_name

    # ---- constants and weights ----------------------------------------------------------------

    def const(self, value, dtype=None) -> str:
        """A small constant: an int becomes int64, a float float32, a list a 1-D tensor."""
        if dtype is None:
            dtype = np.float32 if isinstance(np.asarray(value).flat[0], (float, np.floating)) \
                else np.int64
        array = np.asarray(value, dtype=dtype)
        if not self.naming.constants_as_initializers:
            return self.op("Constant", value=numpy_helper.from_array(array))
        # onnxruntime-genai's builder shares one initializer per distinct constant.
        type_name = onnx.TensorProto.DataType.Name(tensor_type(dtype))
        text = str(array.tolist()).replace(" ", "") if array.ndim else str(array.item())
        name = f"/model/constants/{type_name}/{text}"
        return self.initializer(name, array)

    def initializer(self, name: str, array: np.ndarray) -> str:
        """A weight; every graph and function of the model sees it (functions as an input)."""
        if name not in self.parts.initializer_names:
            self.parts.initializer_names.add(name)
            array = np.ascontiguousarray(array)
            tensor = self.parts.model.graph.initializer.add()
            tensor.name = name
            tensor.data_type = tensor_type(array.dtype)
            tensor.dims.extend(array.shape)
            tensor.raw_data = array.tobytes()
        return name

    # ---- graph inputs and outputs -------------------------------------------------------------

    def input(self, name: str, dtype, shape) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, tensor_type(dtype), shape))
        return name

    def output(self, name: str, dtype, shape) -> str:
        self.outputs.append(helper.make_tensor_value_info(name, tensor_type(dtype), shape))
        return name

    def graph(self, name: str) -> onnx.GraphProto:
        """This builder's nodes as a subgraph (the main graph is assembled by `model`)."""
        return helper.make_graph(self.nodes, name, self.inputs, self.outputs)

    # ---- local functions ----------------------------------------------------------------------

    def call_function(self, body: GraphBuilder, outputs: list[str], domain: str,
                      name: str) -> list[str]:
        """Outline `body` into a local function and call it here.

        The function's inputs are the body's free values (weights included, since functions
        cannot hold initializers), in order of first use; its outputs keep their names, so the
        caller sees the same values as if the nodes were inlined.
        """
        produced = {value for node in body.nodes for value in node.output}
        free: list[str] = []
        for node in body.nodes:
            for value in node.input:
                if value and value not in produced and value not in free:
                    free.append(value)
        opsets = [helper.make_opsetid(d, v) for d, v in self.parts.opsets.items() if d != domain]
        self.parts.functions[(domain, name)] = helper.make_function(
            domain, name, free, outputs, body.nodes, opsets)
        self.parts.opsets.setdefault(domain, 1)
        self.op(name, *free, outputs=list(outputs), domain=domain)
        return outputs

    # ---- model --------------------------------------------------------------------------------

    def model(self, graph_name: str, producer: str, producer_version: str) -> onnx.ModelProto:
        """The finished model, with this builder's graph as the main graph."""
        model = self.parts.model
        model.graph.name = graph_name
        model.graph.node.extend(self.nodes)
        model.graph.input.extend(self.inputs)
        model.graph.output.extend(self.outputs)
        model.functions.extend(self.parts.functions.values())
        opsets = [helper.make_opsetid(d, v) for d, v in self.parts.opsets.items()]
        model.opset_import.extend(opsets)
        model.ir_version = helper.find_min_ir_version_for(opsets, ignore_unknown=True)
        model.producer_name = producer
        model.producer_version = producer_version
        return model
