"""The ONNX backend node tests, for every operator the importer claims: `llmc compile
--emit=onnx-ir` must import each one (numeric checks come with the CPU backend).

The onnx wheel does not ship onnx/backend/test/data/node/ (only the case generators), so the
models are made here with onnx.backend.test.case.node.collect_testcases(), the generator that
writes data/node/test_*/model.onnx in onnx's repository: same names, same models.

Most node tests are written at their op's since-version, often outside opsets 14-25. So each
such test also runs *retargeted*: the same model at the nearest opset in 14-25 where every
node has the same schema version (so the semantics are unchanged) and onnx.checker accepts
it, with an IR version llmc reads: test_node_retargeted[<name>@opset<N>].

A test is selected when the op of its (non-expanded) node is one llmc claims; `_expanded`
variants (the op's function body) come along with their base test. Each test is either in
scope, and must import, or out of scope for a reason `out_of_scope()` computes from the model
(opset, IR version, element types, an op outside llmc's set): then llmc must fail with exactly
one clear `llmc: error:` line and no crash.

Set LLMC_BUILD_DIR to test another build (e.g. build-asan).
"""
from __future__ import annotations

import copy
import os
import re
import subprocess
import warnings
from pathlib import Path

import onnx
import onnx.defs
import onnx.helper
import onnx.version_converter
import pytest
from onnx import TensorProto

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"

# The operators the importer claims (lib/Import/OpRegistry.cpp), default domain.
CLAIMED_OPS = """
Add Sub Mul Div Pow Neg Sqrt Reciprocal Exp Log Abs Floor Ceil Cos Sin Sigmoid Tanh Erf Relu
Softplus Not IsNaN IsInf Identity Gelu Mod Equal Less LessOrEqual Greater GreaterOrEqual And Or
Xor Max Min Sum Where Cast CastLike ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ArgMax
CumSum Softmax LayerNormalization RMSNormalization Shape Size Reshape Flatten Transpose Unsqueeze
Squeeze Expand Tile Concat Split Slice Gather GatherElements ScatterND TensorScatter
ConstantOfShape Range Trilu MatMul Gemm DequantizeLinear Attention RotaryEmbedding If Constant
""".split()
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

def _collect() -> dict[str, onnx.ModelProto]:
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    return {case.name: case.model for case in cases}


ALL_CASES = _collect()


def base_name(name: str) -> str:
    return re.sub(r"_expanded(_ver\d+)?$", "", name)


def op_under_test(name: str) -> str | None:
    base = ALL_CASES.get(base_name(name))
    if base is None or len(base.graph.node) != 1:
        return None
    node = base.graph.node[0]
    return node.op_type if node.domain in ("", "ai.onnx") else None


SELECTED = sorted(name for name in ALL_CASES if op_under_test(name) in CLAIMED_OPS)


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


def run_llmc(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LLMC), "compile", str(path), "--emit=onnx-ir", "-o", os.devnull,
                           "--quiet"], capture_output=True, text=True, timeout=120)


def test_selection_covers_every_claimed_op():
    """Every claimed op has node tests, and at least one that must import (natively or
    retargeted), so that a rename in onnx cannot quietly empty this file."""
    assert set(CLAIMED_OPS) - {op_under_test(name) for name in SELECTED} == set()
    imported = {op_under_test(name) for name in SELECTED if out_of_scope(ALL_CASES[name]) is None}
    imported |= {op_under_test(name.split("@")[0]) for name, model in RETARGETED.items()
                 if out_of_scope(model) is None}
    assert set(CLAIMED_OPS) - imported == set()


def check_import(model: onnx.ModelProto, path: Path) -> None:
    onnx.save(model, path)
    result = run_llmc(path)
    stderr = result.stderr.strip()
    assert "Stack dump" not in stderr and "Sanitizer" not in stderr and \
        "LLVM ERROR" not in stderr, f"llmc crashed:\n{stderr}"
    assert result.returncode in (0, 1), f"exit code {result.returncode}:\n{stderr}"
    reason = out_of_scope(model)
    if reason is None:
        assert result.returncode == 0, f"import failed: {stderr}"
        return
    # Out of scope: one clear error line and exit code 1.
    assert result.returncode == 1, f"expected an error ({reason}), but the import succeeded"
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmc: error: "), \
        f"expected one 'llmc: error:' line ({reason}), got:\n{stderr}"


@pytest.mark.parametrize("name", SELECTED)
def test_node(name: str, model_dir: Path):
    """The node test as onnx writes it."""
    check_import(ALL_CASES[name], model_dir / f"{name}.onnx")


@pytest.mark.parametrize("name", sorted(RETARGETED))
def test_node_retargeted(name: str, model_dir: Path):
    """The node test at an opset and IR version llmc reads, with unchanged semantics."""
    check_import(RETARGETED[name], model_dir / f"{name.replace('@', '-')}.onnx")
