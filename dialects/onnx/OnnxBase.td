//===- OnnxBase.td - ONNX import dialect definition --------*- tablegen -*-===//
//
// The `onnx` dialect is llmc's import dialect: one op per ONNX node, for the
// subset of ONNX (and onnxruntime's com.microsoft domain) that decoder-only
// LLM exports use. Ops keep ONNX's names, operand order and attribute names so
// that an imported graph reads like the file it came from. Opset differences
// are resolved by the importer: each op here has the form of the newest opset
// llmc supports (for example reduction axes are always an operand).
//
// An omitted optional input is an SSA value of type `none` made by
// `onnx.None`, so every op has a fixed operand list.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_DIALECT_ONNX_BASE
#define LLMC_DIALECT_ONNX_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "OnnxInterfaces.td"

def Onnx_Dialect : Dialect {
  let name = "onnx";
  let cppNamespace = "::llmc::onnx";
  let summary = "ONNX operators as imported, one op per node";
  let description = [{
    The import dialect. Each op mirrors one ONNX operator (default domain or
    com.microsoft) with ONNX's operand order and attribute names. The
    importer normalises opset differences, so an op always has the form of
    the newest supported opset. Shape inference and folding of shape
    subgraphs run on this dialect; `raise-onnx-to-llm` then replaces the
    patterns decoder exports write with `llm` ops.
  }];
  let hasConstantMaterializer = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// ONNX INT attributes are signed (axes count from the back): unlike MLIR's
// I64Attr, whose getter returns uint64_t, the getters return int64_t.
def Onnx_IntAttr : TypedSignlessIntegerAttrBase<I64, "int64_t", "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

def Onnx_NoneType : Type<CPred<"::llvm::isa<::mlir::NoneType>($_self)">,
                         "none (an omitted optional input)">,
                    BuildableType<"$_builder.getType<::mlir::NoneType>()">;
def Onnx_Tensor : AnyTypeOf<[AnyRankedTensor, AnyUnrankedTensor]>;
def Onnx_OptTensor : AnyTypeOf<[AnyRankedTensor, AnyUnrankedTensor, Onnx_NoneType]>;

//===----------------------------------------------------------------------===//
// Op classes
//===----------------------------------------------------------------------===//

class Onnx_Op<string mnemonic, list<Trait> traits = []>
    : Op<Onnx_Dialect, mnemonic,
         !listconcat(traits, [DeclareOpInterfaceMethods<Onnx_ShapeInferenceOpInterface>])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

class Onnx_PureOp<string mnemonic, list<Trait> traits = []>
    : Onnx_Op<mnemonic, !listconcat(traits, [Pure])>;

// Family classes define shape inference once for all their ops.
class Onnx_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Onnx_PureOp<mnemonic, traits> {
  let summary = "elementwise " # mnemonic;
  let arguments = (ins Onnx_Tensor:$X);
  let results = (outs Onnx_Tensor:$Y);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferShapes(
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes) {
      return inferUnaryShapes(getOperation(), resultTypes);
    }
  }];
}

class Onnx_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Onnx_PureOp<mnemonic, traits> {
  let summary = "elementwise " # mnemonic # " with numpy broadcasting";
  let arguments = (ins Onnx_Tensor:$A, Onnx_Tensor:$B);
  let results = (outs Onnx_Tensor:$C);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferShapes(
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes) {
      return inferBroadcastShapes(getOperation(), resultTypes);
    }
  }];
}

class Onnx_VariadicOp<string mnemonic, list<Trait> traits = []>
    : Onnx_PureOp<mnemonic, traits> {
  let summary = "elementwise " # mnemonic # " of any number of inputs, broadcasting";
  let arguments = (ins Variadic<Onnx_Tensor>:$data_0);
  let results = (outs Onnx_Tensor:$result);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferShapes(
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes) {
      return inferBroadcastShapes(getOperation(), resultTypes);
    }
  }];
}

class Onnx_ReduceOp<string mnemonic> : Onnx_PureOp<mnemonic> {
  let summary = mnemonic # " over the given axes (all when none)";
  let arguments = (ins Onnx_Tensor:$data, Onnx_OptTensor:$axes,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$keepdims,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$noop_with_empty_axes);
  let results = (outs Onnx_Tensor:$reduced);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferShapes(
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes) {
      return inferReduceShapes(getOperation(), getKeepdims(),
                               getNoopWithEmptyAxes(), resultTypes);
    }
  }];
}

#endif // LLMC_DIALECT_ONNX_BASE
