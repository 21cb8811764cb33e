"""The ONNX backend node tests, for every operator the importer claims: `llmc compile
--emit=graph` must compile each one through the CPU backend (onnx-lower-to-linalg, then
bufferization and LLVM), and the compiled function must reproduce the test's expected outputs
within the test's own tolerances (rtol/atol of its onnx TestCase; for 16-bit float outputs
never below two roundings of the type, see _rtol).

The onnx wheel does not ship onnx/backend/test/data/node/ (only the case generators), so the
models are made here with onnx.backend.test.case.node.collect_testcases(), the generator that
writes data/node/test_*/model.onnx in onnx's repository: same names, same models.

Most node tests are written at their op's since-version, often outside opsets 14-25. So each
such test also runs *retargeted*: the same model at the nearest opset in 14-25 where every
node has the same schema version (so the semantics are unchanged) and onnx.checker accepts
it, with an IR version llmc reads: test_node_retargeted[<name>@opset<N>].

A test is selected when the op of its (non-expanded) node is one llmc claims, or one of the
routing ops it imports only to raise a mixture of experts (ROUTING_OPS, always out of scope); `_expanded`
variants (the op's function body) come along with their base test. Each test is either in
scope, and must compile and match, or out of scope for a reason `out_of_scope()` computes from
the model (opset, IR version, element types, an op outside llmc's set): then llmc must fail
with exactly one clear `llmc: error:` line and no crash.

llmc compiles fixed shapes, so an operand that decides a result's shape (Reshape's shape,
Slice's starts, a reduction's axes: COMPILE_TIME_OPERANDS) and that the test feeds from a graph
input is bound to the test's value as an initializer before compiling, as onnx-mlir's backend
tests do with their constant inputs. Every other input stays a runtime argument.

Set LLMC_BUILD_DIR to test another build (e.g. build-asan).
"""
from __future__ import annotations

import copy
import os
import re
import subprocess
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import onnx.defs
import onnx.helper
import onnx.version_converter
import pytest
from onnx import TensorProto, numpy_helper

from llmc.graph import GraphLibrary

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
# 1,261 independent tests, 4 to 10 minutes on one core: dealt over the workers (conftest.py).
XDIST_SHARDS = 4

# The operators the importer claims (lib/Import/OpRegistry.cpp), default domain.
CLAIMED_OPS = """
Add Sub Mul Div Pow Neg Sqrt Reciprocal Exp Log Abs Floor Ceil Cos Sin Sigmoid Tanh Erf Relu
Softplus Not IsNaN IsInf Identity Gelu Mod Equal Less LessOrEqual Greater GreaterOrEqual And Or
Xor Max Min Sum Clip Where Cast CastLike ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL2
ArgMax
CumSum Softmax LayerNormalization RMSNormalization Shape Size Reshape Flatten Transpose Unsqueeze
Squeeze Expand Tile Concat Split Slice Gather GatherElements GatherND ScatterND TensorScatter
ConstantOfShape Range Trilu MatMul Gemm DequantizeLinear Attention RotaryEmbedding If Constant
""".split()
# Operators the importer takes only for the raising: a mixture of experts' routing, which it
# folds into llm.moe (dialects/onnx/OnnxOps.td). They have no lowering of their own, so each of
# their node tests must be refused with one clear error.
ROUTING_OPS = "TopK OneHot NonZero ScatterElements".split()
# The first default-domain opset at which llmc knows each op (OpRegistry.cpp's sinceVersion);
# the rest are known at every opset llmc reads.
FIRST_OPSET = {"Gelu": 20, "RMSNormalization": 23, "Attention": 23, "RotaryEmbedding": 23,
               "TensorScatter": 24}

MIN_OPSET, MAX_OPSET = 14, 25  # include/llmc/Import/OnnxImporter.h
MIN_IR, MAX_IR = 7, 13  # include/llmc/Import/OnnxImporter.h
SUPPORTED_ELEM_TYPES = {
    TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE,
    TensorProto.BOOL, TensorProto.INT4, TensorProto.INT8, TensorProto.INT16, TensorProto.INT32,
    TensorProto.INT64, TensorProto.UINT4, TensorProto.UINT8, TensorProto.UINT16,
    TensorProto.UINT32, TensorProto.UINT64,
}

# The operands, per op, whose values fix a result's shape; see the module docstring.
COMPILE_TIME_OPERANDS = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Unsqueeze": (1,),
    "Squeeze": (1,), "Split": (1,), "ConstantOfShape": (0,), "Range": (0, 1, 2),
    "ReduceMean": (1,), "ReduceSum": (1,), "ReduceMax": (1,), "ReduceMin": (1,),
    "ReduceProd": (1,), "ReduceL2": (1,), "CumSum": (1,),
}


def _collect():
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {case.name: case for case in collect_testcases()}


TEST_CASES = _collect()
ALL_CASES = {name: case.model for name, case in TEST_CASES.items()}


def base_name(name: str) -> str:
    return re.sub(r"_expanded(_ver\d+)?$", "", name)


def op_under_test(name: str) -> str | None:
    base = ALL_CASES.get(base_name(name))
    if base is None or len(base.graph.node) != 1:
        return None
    node = base.graph.node[0]
    return node.op_type if node.domain in ("", "ai.onnx") else None


SELECTED = sorted(name for name in ALL_CASES
                  if op_under_test(name) in CLAIMED_OPS + ROUTING_OPS)


def _graphs(graph: onnx.GraphProto):
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _graphs(g)


def _type_problem(tp: onnx.TypeProto, what: str) -> str | None:
    if not tp.HasField("tensor_type"):
        return f"{what} is not a tensor ({tp.WhichOneof('value')})"
    elem = tp.tensor_type.elem_type
    if elem not in SUPPORTED_ELEM_TYPES:
        return f"{what} has element type {TensorProto.DataType.Name(elem)}"
    return None


def out_of_scope(model: onnx.ModelProto) -> str | None:
    """Why llmc must refuse this model, or None when it must import it."""
    if not MIN_IR <= model.ir_version <= MAX_IR:
        return f"IR version {model.ir_version}"
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    opset = opsets.get("")
    if opset is None or not MIN_OPSET <= opset <= MAX_OPSET:
        return f"opset {opset}"
    for graph in _graphs(model.graph):
        for vi in list(graph.input) + list(graph.output):
            if problem := _type_problem(vi.type, f"value '{vi.name}'"):
                return problem
        for init in graph.initializer:
            if init.data_type not in SUPPORTED_ELEM_TYPES:
                return f"initializer of type {TensorProto.DataType.Name(init.data_type)}"
        for node in graph.node:
            if node.domain not in ("", "ai.onnx"):
                return f"op {node.domain}.{node.op_type}"
            if node.op_type in ROUTING_OPS:
                return f"op {node.op_type} outside a mixture of experts"
            if node.op_type not in CLAIMED_OPS:
                return f"op {node.op_type}"
            if opset < FIRST_OPSET.get(node.op_type, 0):
                return f"op {node.op_type} at opset {opset}"
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR and \
                        attr.t.data_type not in SUPPORTED_ELEM_TYPES:
                    return f"tensor attribute of type {TensorProto.DataType.Name(attr.t.data_type)}"
                if node.op_type in ("Cast", "CastLike") and attr.name == "to" and \
                        attr.i not in SUPPORTED_ELEM_TYPES:
                    return f"Cast to {TensorProto.DataType.Name(attr.i)}"
                if attr.type in (onnx.AttributeProto.SPARSE_TENSOR,
                                 onnx.AttributeProto.TYPE_PROTO):
                    return f"attribute kind {onnx.AttributeProto.AttributeType.Name(attr.type)}"
    return None


def _default_opset(model: onnx.ModelProto) -> int | None:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return None


def _schema_version(op_type: str, opset: int) -> int | None:
    try:
        return onnx.defs.get_schema(op_type, opset, "").since_version
    except onnx.defs.SchemaError:
        return None


def _fix_ir(model: onnx.ModelProto, opset: int) -> None:
    model.ir_version = min(
        onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", opset)]), MAX_IR)


def _valid(model: onnx.ModelProto) -> bool:
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        return False
    return True


def retarget(model: onnx.ModelProto) -> tuple[int, onnx.ModelProto] | None:
    """The model at the nearest opset llmc reads with the same semantics, or None.

    First choice: only the opset number changes, at the nearest opset where every node has
    the same schema version. Otherwise onnx.version_converter (which knows how each op
    changed, e.g. Mod 10 -> 13, Cast 28 -> 25) converts it to opset 14 or 25. Either way,
    onnx.checker must accept the result.
    """
    opset = _default_opset(model)
    if opset is None or (MIN_OPSET <= opset <= MAX_OPSET and model.ir_version <= MAX_IR):
        return None
    nodes = [n for g in _graphs(model.graph) for n in g.node]
    if any(n.domain not in ("", "ai.onnx") for n in nodes):
        return None
    targets = range(MIN_OPSET, MAX_OPSET + 1) if opset < MIN_OPSET else \
        range(min(opset, MAX_OPSET), MIN_OPSET - 1, -1)
    for target in targets:
        if any(_schema_version(n.op_type, opset) is None or
               _schema_version(n.op_type, opset) != _schema_version(n.op_type, target)
               for n in nodes):
            continue
        retargeted = copy.deepcopy(model)
        for o in retargeted.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = target
        _fix_ir(retargeted, target)
        if _valid(retargeted):
            return target, retargeted
    target = targets[0]
    if target == opset:  # only the IR version was out of range, and the model is invalid
        return None
    try:
        converted = onnx.version_converter.convert_version(model, target)
    except Exception:  # the converter has no adapter for some op (it raises RuntimeError)
        return None
    _fix_ir(converted, target)
    return (target, converted) if _valid(converted) else None


RETARGETED: dict[str, onnx.ModelProto] = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for _name in SELECTED:
        if (_found := retarget(ALL_CASES[_name])) is not None:
            RETARGETED[f"{_name}@opset{_found[0]}"] = _found[1]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    if not LLMC.exists():
        pytest.fail(f"{LLMC} does not exist: build it first (ninja -C build llmc)")
    return tmp_path_factory.mktemp("onnx-node-tests")


def run_llmc(path: Path, out_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LLMC), "compile", str(path), "--emit=graph", "-o", str(out_dir),
                           "--quiet"], capture_output=True, text=True, timeout=120)


def bind_compile_time_inputs(model: onnx.ModelProto, inputs: list[np.ndarray]) \
        -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The model with its COMPILE_TIME_OPERANDS inputs made initializers, and the values of
    the inputs that remain, by name."""
    values = {vi.name: value for vi, value in zip(model.graph.input, inputs)}
    bound = {node.input[i] for node in model.graph.node
             for i in COMPILE_TIME_OPERANDS.get(node.op_type, ())
             if i < len(node.input) and node.input[i] in values}
    if not bound:
        return model, values
    model = copy.deepcopy(model)
    kept = [vi for vi in model.graph.input if vi.name not in bound]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    model.graph.initializer.extend(numpy_helper.from_array(values[name], name) for name in sorted(bound))
    return model, {name: value for name, value in values.items() if name not in bound}


def _rtol(rtol: float, dtype: np.dtype) -> float:
    """The test's rtol, but never below two roundings of a 16-bit float output: the
    reference rounds after each numpy op, and a composed graph (an _expanded function body)
    may round in another order. 1e-3 is under one bf16 rounding step (2^-8)."""
    if dtype.itemsize == 2 and dtype.kind in "fV":
        return max(rtol, 2 * float(ml_dtypes.finfo(dtype).eps))
    return rtol


def _as_array(value) -> np.ndarray:
    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def check_node_test(model: onnx.ModelProto, case, work_dir: Path) -> None:
    """Compiles the model and checks its outputs against every data set of the test case;
    an out-of-scope model must be refused with one clear error instead."""
    reason = out_of_scope(model)
    data_sets = case.data_sets if reason is None else [([], [])]
    for index, (inputs, expected) in enumerate(data_sets):
        # Values numpy cannot hold natively (bfloat16, int4) are stored as TensorProtos.
        inputs = [_as_array(value) for value in inputs]
        expected = [_as_array(value) for value in expected]
        compiled, feeds = bind_compile_time_inputs(model, inputs) if reason is None \
            else (model, {})
        path = work_dir / f"data{index}.onnx"
        onnx.save(compiled, path)
        result = run_llmc(path, work_dir / f"data{index}.graph")
        stderr = result.stderr.strip()
        assert "Stack dump" not in stderr and "Sanitizer" not in stderr and \
            "LLVM ERROR" not in stderr, f"llmc crashed:\n{stderr}"
        assert result.returncode in (0, 1), f"exit code {result.returncode}:\n{stderr}"
        if reason is not None:
            # Out of scope: one clear error line and exit code 1.
            assert result.returncode == 1, f"expected an error ({reason}), but llmc compiled it"
            lines = stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("llmc: error: "), \
                f"expected one 'llmc: error:' line ({reason}), got:\n{stderr}"
            return
        assert result.returncode == 0, f"compile failed: {stderr}"
        outputs = GraphLibrary(work_dir / f"data{index}.graph").run(feeds)
        for spec, actual, want in zip(model.graph.output, outputs, expected):
            assert actual.shape == want.shape, f"output '{spec.name}': shape {actual.shape}, " \
                f"expected {want.shape}"
            if np.issubdtype(want.dtype, np.floating) or want.dtype.kind == "V":
                np.testing.assert_allclose(actual.astype(np.float64), want.astype(np.float64),
                                           rtol=_rtol(case.rtol, want.dtype), atol=case.atol,
                                           err_msg=f"output '{spec.name}'")
            else:
                np.testing.assert_array_equal(actual, want, err_msg=f"output '{spec.name}'")


def test_selection_covers_every_claimed_op():
    """Every claimed op has node tests, and at least one that must import (natively or
    retargeted), so that a rename in onnx cannot quietly empty this file."""
    assert set(CLAIMED_OPS) - {op_under_test(name) for name in SELECTED} == set()
    imported = {op_under_test(name) for name in SELECTED if out_of_scope(ALL_CASES[name]) is None}
    imported |= {op_under_test(name.split("@")[0]) for name, model in RETARGETED.items()
                 if out_of_scope(model) is None}
    assert set(CLAIMED_OPS) - imported == set()


@pytest.mark.parametrize("name", SELECTED)
def test_node(name: str, model_dir: Path):
    """The node test as onnx writes it."""
    work_dir = model_dir / name
    work_dir.mkdir()
    check_node_test(ALL_CASES[name], TEST_CASES[name], work_dir)


@pytest.mark.parametrize("name", sorted(RETARGETED))
def test_node_retargeted(name: str, model_dir: Path):
    """The node test at an opset and IR version llmc reads, with unchanged semantics."""
    work_dir = model_dir / name.replace("@", "-")
    work_dir.mkdir()
    check_node_test(RETARGETED[name], TEST_CASES[name.split("@")[0]], work_dir)
