"""Write one malformed ONNX model for test/Import/bad-input.test.

    python make_bad_models.py KIND -o OUT     # OUT is a file (plus siblings for some kinds)
    python make_bad_models.py --list

Binaries are generated at test time rather than committed. Every model is small and, apart
from its one defect, valid (IR 8, default-domain opset 17), so the error llmc reports is
about that defect.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import model_cli

IR_VERSION = 8
OPSET = 17


def model(nodes, inputs, outputs, initializers=(), opset=OPSET, ir_version=IR_VERSION,
          extra_opsets=()):
    graph = helper.make_graph(list(nodes), "bad", list(inputs), list(outputs),
                              initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="llmc-bad-input")
    m.ir_version = ir_version
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def good():
    """A valid model: y = Relu(x) + w."""
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    return model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                  helper.make_node("Add", ["r", "w"], ["y"], name="add")],
                 [f32("x", [2, 4])], [f32("y", [2, 4])], [w])


def raw_tensor(name, data_type, dims, raw=None, floats=None):
    """A TensorProto built field by field (onnx.helper refuses inconsistent ones)."""
    t = TensorProto(name=name, data_type=data_type, dims=dims)
    if raw is not None:
        t.raw_data = raw
    if floats is not None:
        t.float_data.extend(floats)
    return t


def write(m, out):
    with open(out, "wb") as f:
        f.write(m.SerializeToString())


def truncated(out):
    data = good().SerializeToString()
    with open(out, "wb") as f:
        f.write(data[: len(data) * 2 // 3])


def random_bytes(out):
    rng = np.random.default_rng(1234)
    with open(out, "wb") as f:
        f.write(rng.integers(0, 256, size=4096, dtype=np.uint8).tobytes())


def text_file(out):
    with open(out, "w") as f:
        f.write("This is not an ONNX model.\nJust some text, as a mistaken download would be.\n")


def empty_file(out):
    open(out, "wb").close()


def cycle(out):
    # a = Add(x, b); b = Relu(a): neither node can come first.
    write(model([helper.make_node("Add", ["x", "b"], ["a"], name="add_in_cycle"),
                 helper.make_node("Relu", ["a"], ["b"], name="relu_in_cycle")],
                [f32("x", [4])], [f32("a", [4])]), out)


def huge_input_dim(out):
    write(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [f32("x", [1, 1 << 40])], [f32("y", [1, 1 << 40])]), out)


def huge_initializer_dim(out):
    w = raw_tensor("w", TensorProto.FLOAT, [1 << 40])
    write(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                [f32("x", [1])], [f32("y", [1 << 40])], [w]), out)


def huge_initializer_elements(out):
    # Every dim is moderate, their product is 2^40 elements (4 TiB of float32), no data.
    w = raw_tensor("w", TensorProto.FLOAT, [1 << 20, 1 << 20])
    write(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                [f32("x", [1])], [f32("y", [1 << 20, 1 << 20])], [w]), out)


def negative_dim(out):
    write(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [f32("x", [2, -3])], [f32("y", [2, 3])]), out)


def missing_external_data(out):
    w = numpy_helper.from_array(np.ones((64, 64), dtype=np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "missing_weights.bin"), ("offset", "0"),
                       ("length", str(64 * 64 * 4))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    write(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                [f32("x", [64, 64])], [f32("y", [64, 64])], [w]), out)


def external_data_too_short(out):
    data_name = os.path.basename(out) + ".data"
    with open(os.path.join(os.path.dirname(os.path.abspath(out)), data_name), "wb") as f:
        f.write(np.ones(100, dtype=np.float32).tobytes())  # 400 bytes; the tensor needs 16384
    w = numpy_helper.from_array(np.ones((64, 64), dtype=np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", data_name), ("offset", "0"), ("length", str(64 * 64 * 4))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    write(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                [f32("x", [64, 64])], [f32("y", [64, 64])], [w]), out)


def external_data_outside_dir(out):
    w = numpy_helper.from_array(np.ones((4,), dtype=np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    entry = w.external_data.add()
    entry.key, entry.value = "location", "../../../../../../etc/passwd"
    write(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                [f32("x", [4])], [f32("y", [4])], [w]), out)


def raw_size_mismatch(out):
    # dims [4] float32 need 16 bytes; raw_data holds 8.
    w = raw_tensor("w", TensorProto.FLOAT, [4], raw=np.ones(2, dtype=np.float32).tobytes())
    write(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                [f32("x", [4])], [f32("y", [4])], [w]), out)


def typed_size_mismatch(out):
    # dims [2, 3] need 6 values; float_data holds 5.
    w = raw_tensor("w", TensorProto.FLOAT, [2, 3], floats=[1.0, 2.0, 3.0, 4.0, 5.0])
    write(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                [f32("x", [2, 3])], [f32("y", [2, 3])], [w]), out)


def opset_too_new(out):
    write(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [f32("x", [4])], [f32("y", [4])], opset=26, ir_version=11), out)


def opset_too_old(out):
    write(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [f32("x", [4])], [f32("y", [4])], opset=11, ir_version=8), out)


def ir_version_too_new(out):
    write(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [f32("x", [4])], [f32("y", [4])], ir_version=14), out)


def name_collision(out):
    # Two nodes write `y`.
    write(model([helper.make_node("Relu", ["x"], ["y"], name="first_writer"),
                 helper.make_node("Neg", ["x"], ["y"], name="second_writer")],
                [f32("x", [4])], [f32("y", [4])]), out)


def input_node_collision(out):
    # A node writes the name of a graph input.
    write(model([helper.make_node("Relu", ["z"], ["x"], name="overwrites_input")],
                [f32("x", [4]), f32("z", [4])], [f32("x", [4])]), out)


def initializer_node_collision(out):
    # A node writes the name of an initializer.
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    write(model([helper.make_node("Relu", ["x"], ["w"], name="overwrites_initializer")],
                [f32("x", [4])], [f32("w", [4])], [w]), out)


def unsupported_op(out):
    write(model([helper.make_node("Conv", ["x", "k"], ["y"], name="my_conv")],
                [f32("x", [1, 1, 8, 8]), f32("k", [1, 1, 3, 3])], [f32("y", [1, 1, 6, 6])]),
          out)


def undefined_input(out):
    write(model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")],
                [f32("x", [4])], [f32("y", [4])]), out)


def undefined_output(out):
    write(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [f32("x", [4])], [f32("z", [4])]), out)


def unsupported_dtype(out):
    write(model([helper.make_node("Identity", ["x"], ["y"], name="id")],
                [helper.make_tensor_value_info("x", TensorProto.COMPLEX64, [4])],
                [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, [4])]), out)


def no_graph(out):
    m = onnx.ModelProto(ir_version=IR_VERSION)
    m.opset_import.add(domain="", version=OPSET)
    write(m, out)


def recursive_function(out):
    f = helper.make_function("local", "Loop1", ["a"], ["b"],
                             [helper.make_node("Loop1", ["a"], ["b"], domain="local")],
                             [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])
    m = model([helper.make_node("Loop1", ["x"], ["y"], name="call", domain="local")],
              [f32("x", [4])], [f32("y", [4])], extra_opsets=[("local", 1)])
    m.functions.append(f)
    write(m, out)


def wrong_arity(out):
    # Relu takes one input.
    write(model([helper.make_node("Relu", ["x", "x"], ["y"], name="two_input_relu")],
                [f32("x", [4])], [f32("y", [4])]), out)


def shape_mismatch(out):
    # Add of [3] and [4] does not broadcast.
    write(model([helper.make_node("Add", ["x", "z"], ["y"], name="bad_broadcast")],
                [f32("x", [3]), f32("z", [4])], [f32("y", [4])]), out)


def empty_required_input(out):
    # Relu's one input is given as "" (an omitted optional input), but it is required.
    write(model([helper.make_node("Relu", [""], ["y"], name="relu_of_nothing")],
                [f32("x", [4])], [f32("y", [4])]), out)


def missing_required_attribute(out):
    # Cast without its required `to`.
    write(model([helper.make_node("Cast", ["x"], ["y"], name="cast_to_nothing")],
                [f32("x", [4])], [f32("y", [4])]), out)


def wrong_attribute_kind(out):
    # Cast's `to` as a string instead of an int.
    write(model([helper.make_node("Cast", ["x"], ["y"], name="cast_to_string", to="float")],
                [f32("x", [4])], [f32("y", [4])]), out)


def concat_without_axis(out):
    write(model([helper.make_node("Concat", ["x", "x"], ["y"], name="concat_no_axis")],
                [f32("x", [4])], [f32("y", [8])]), out)


def concat_rank_mismatch(out):
    write(model([helper.make_node("Concat", ["x", "z"], ["y"], name="concat_ranks", axis=1)],
                [f32("x", [2, 3]), f32("z", [2, 3, 4])], [f32("y", [2, 6])]), out)


def concat_axis_out_of_range(out):
    write(model([helper.make_node("Concat", ["x", "x"], ["y"], name="concat_axis", axis=5)],
                [f32("x", [2, 3])], [f32("y", [2, 6])]), out)


def concat_no_inputs(out):
    write(model([helper.make_node("Concat", [], ["y"], name="concat_of_nothing", axis=0)],
                [f32("x", [4])], [f32("y", [0])]), out)


def dim_product_overflow(out):
    # Each dim is at most 2^32, as llmc allows, but their product overflows int64.
    big = 1 << 32
    write(model([helper.make_node("Flatten", ["x"], ["y"], name="flatten_huge", axis=3)],
                [f32("x", [big, big, big, 2])], [f32("y", [1, 2])]), out)


KINDS = {f.__name__.replace("_", "-"): f for f in [
    truncated, random_bytes, text_file, empty_file, cycle, huge_input_dim,
    huge_initializer_dim, huge_initializer_elements, negative_dim, missing_external_data,
    external_data_too_short, external_data_outside_dir, raw_size_mismatch,
    typed_size_mismatch, opset_too_new, opset_too_old, ir_version_too_new, name_collision,
    input_node_collision, initializer_node_collision, unsupported_op, undefined_input, undefined_output,
    unsupported_dtype, no_graph, recursive_function, wrong_arity, shape_mismatch,
    empty_required_input, missing_required_attribute, wrong_attribute_kind, concat_without_axis,
    concat_rank_mismatch, concat_axis_out_of_range, concat_no_inputs, dim_product_overflow]}


if __name__ == "__main__":
    sys.exit(model_cli.run(KINDS, __doc__.splitlines()[0]))
