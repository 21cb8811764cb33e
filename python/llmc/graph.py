"""Run a graph library: the native function `llmc compile --emit=graph -o DIR` writes.

    from llmc.graph import GraphLibrary
    graph = GraphLibrary("out.graph")
    outputs = graph.run({"x": x, "y": y})     # numpy arrays in, numpy arrays out, by name

DIR/graph.json lists the inputs and outputs (name, numpy dtype, static shape); DIR/graph.so
exports the entry `_mlir_ciface_main_graph(in_0, ..., in_n, out_0, ..., out_m)`, each a
pointer to an MLIR memref descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}.
"""
from __future__ import annotations

import ctypes
import json
from pathlib import Path

import ml_dtypes
import numpy as np

_DTYPES = {
    "bool": np.bool_, "int4": ml_dtypes.int4, "uint4": ml_dtypes.uint4, "int8": np.int8,
    "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
    "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
}


def _descriptor_type(rank: int) -> type[ctypes.Structure]:
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
              ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def _descriptor(array: np.ndarray) -> ctypes.Structure:
    """A descriptor of a C-contiguous array (the library reads and writes through it)."""
    descriptor = _descriptor_type(array.ndim)()
    descriptor.allocated = descriptor.aligned = array.ctypes.data
    descriptor.offset = 0
    if array.ndim:
        # Strides in elements; a dim of size 0 or 1 has any stride, numpy's byte strides
        # divided by the item size are exact for contiguous arrays.
        for i, (size, stride) in enumerate(zip(array.shape, array.strides)):
            descriptor.sizes[i] = size
            descriptor.strides[i] = stride // array.itemsize
    return descriptor


class GraphLibrary:
    """A loaded graph library; `run` may be called any number of times."""

    def __init__(self, directory: str | Path):
        directory = Path(directory)
        self.description = json.loads((directory / "graph.json").read_text())
        if self.description.get("format") != "llmc-graph":
            raise ValueError(f"{directory}/graph.json is not an llmc graph description")
        self._library = ctypes.CDLL(str(directory / self.description["library"]))
        self._entry = getattr(self._library, self.description["entry"])
        self._entry.restype = None
        self.inputs = self.description["inputs"]
        self.outputs = self.description["outputs"]

    def run(self, inputs: dict[str, np.ndarray] | list[np.ndarray]) -> list[np.ndarray]:
        if isinstance(inputs, dict):
            missing = [spec["name"] for spec in self.inputs if spec["name"] not in inputs]
            if missing:
                raise ValueError(f"missing inputs: {', '.join(missing)}")
            inputs = [inputs[spec["name"]] for spec in self.inputs]
        if len(inputs) != len(self.inputs):
            raise ValueError(f"the graph takes {len(self.inputs)} inputs, got {len(inputs)}")
        arrays = []
        for spec, value in zip(self.inputs, inputs):
            # np.array keeps 0-d arrays 0-d (np.ascontiguousarray would make them 1-d).
            array = np.array(value, dtype=_DTYPES[spec["dtype"]], order="C")
            if list(array.shape) != spec["shape"]:
                raise ValueError(f"input '{spec['name']}' has shape {list(array.shape)}, "
                                 f"the graph was compiled for {spec['shape']}")
            arrays.append(array)
        outputs = [np.zeros(spec["shape"], dtype=_DTYPES[spec["dtype"]]) for spec in self.outputs]
        descriptors = [_descriptor(array) for array in arrays + outputs]
        self._entry(*[ctypes.byref(d) for d in descriptors])
        return outputs
