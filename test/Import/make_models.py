"""Write the valid ONNX models of the importer tests that ONNX text cannot express well.

    python make_models.py KIND -o OUT.onnx
    python make_models.py --list

dtypes:          initializers and inputs of every element type llmc reads (fp32, fp16, bf16,
                 int8, uint8, int4, uint4, int32, int64, bool), with known values.
external-data:   weights in one model.onnx_data file (as optimum and torch write them), small
                 tensors kept inline.
external-files:  one external file per tensor (onnx's all_tensors_to_one_file=False).
weights:         a 64x64 weight (a dense_resource blob) next to small inline constants.
"""
from __future__ import annotations

import os
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import model_cli


def model(nodes, inputs, outputs, initializers, opset=21, ir_version=10):
    graph = helper.make_graph(nodes, "m", inputs, outputs, initializer=initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="llmc-tests")
    m.ir_version = ir_version
    onnx.checker.check_model(m)
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def dtypes(out):
    inits = [
        numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "f32"),
        numpy_helper.from_array(np.array([1.5, -2.0], np.float16), "f16"),
        helper.make_tensor("bf16", TensorProto.BFLOAT16, [2],
                           np.array([1.5, -2.0], ml_dtypes.bfloat16).view(np.uint16).tobytes(),
                           raw=True),
        numpy_helper.from_array(np.array([-3, 4], np.int8), "i8"),
        numpy_helper.from_array(np.array([200, 7], np.uint8), "u8"),
        helper.make_tensor("i4", TensorProto.INT4, [4], [-8, 7, 1, -1]),
        helper.make_tensor("u4", TensorProto.UINT4, [4], [15, 0, 3, 9]),
        numpy_helper.from_array(np.array([1, -2], np.int32), "i32"),
        numpy_helper.from_array(np.array([1, -2], np.int64), "i64"),
        numpy_helper.from_array(np.array([True, False]), "b"),
        numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
    ]
    names = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16,
             "i8": TensorProto.INT8, "u8": TensorProto.UINT8, "i32": TensorProto.INT32,
             "i64": TensorProto.INT64, "b": TensorProto.BOOL}
    nodes, inputs, outputs = [], [], []
    for name, elem in names.items():
        inputs.append(vi(f"x_{name}", elem, [2]))
        op = "Xor" if name == "b" else "Add"
        nodes.append(helper.make_node(op, [f"x_{name}", name], [f"y_{name}"], name=f"{op}_{name}"))
        outputs.append(vi(f"y_{name}", elem, [2]))
    for name, elem in (("i4", TensorProto.INT4), ("u4", TensorProto.UINT4)):
        nodes.append(helper.make_node("DequantizeLinear", [name, "scale"], [f"dq_{name}"],
                                      name=f"dq_{name}"))
        outputs.append(vi(f"dq_{name}", TensorProto.FLOAT, [4]))
    return model(nodes, inputs, outputs, inits)


def weights_model():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w")
    w2 = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w2")
    bias = numpy_helper.from_array(np.arange(64, dtype=np.float32), "bias")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "bias"], ["hb"], name="add"),
             helper.make_node("MatMul", ["hb", "w2"], ["y"], name="mm2")]
    return model(nodes, [vi("x", TensorProto.FLOAT, ["n", 64])],
                 [vi("y", TensorProto.FLOAT, ["n", 64])], [w, w2, bias])


def weights(out):
    return weights_model()


def external_data(out):
    m = weights_model()
    onnx.save(m, out, save_as_external_data=True, all_tensors_to_one_file=True,
              location=os.path.basename(out) + "_data", size_threshold=1024)
    return None


def external_files(out):
    m = weights_model()
    onnx.save(m, out, save_as_external_data=True, all_tensors_to_one_file=False,
              size_threshold=1024)
    return None


KINDS = {"dtypes": dtypes, "external-data": external_data, "external-files": external_files,
         "weights": weights}


if __name__ == "__main__":
    sys.exit(model_cli.run(KINDS, __doc__.splitlines()[0]))
