//===- GraphLibraryWriter.cpp - graph.so and graph.json -------------------===//
#include "llmc/Artifact/GraphLibrary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace llmc {
namespace {

constexpr llvm::StringLiteral kGraphFunction = "main_graph";

/// numpy's name of an onnx element type, or "" when numpy (with ml_dtypes)
/// has none llmc supports.
std::string numpyName(Type type) {
  if (type.isF16()) return "float16";
  if (type.isBF16()) return "bfloat16";
  if (type.isF32()) return "float32";
  if (type.isF64()) return "float64";
  if (type.isInteger(1)) return "bool";
  if (auto integer = dyn_cast<IntegerType>(type))
    return (integer.isUnsigned() ? "uint" : "int") + std::to_string(integer.getWidth());
  return "";
}

FailureOr<GraphValue> describe(func::FuncOp func, Type type, DictionaryAttr attrs, StringRef what,
                               unsigned index) {
  GraphValue value;
  auto name = attrs ? attrs.getAs<StringAttr>("onnx.name") : StringAttr();
  value.name = name ? name.str() : (what + std::to_string(index)).str();
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return func.emitError("graph ") << what << " '" << value.name << "' has type " << type
                                    << ": a graph library needs static shapes";
  value.dtype = numpyName(tensor.getElementType());
  if (value.dtype.empty())
    return func.emitError("graph ") << what << " '" << value.name << "' has element type "
                                    << tensor.getElementType() << ", which has no numpy name";
  value.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  return value;
}

llvm::json::Array toJson(const std::vector<GraphValue> &values) {
  llvm::json::Array array;
  for (const GraphValue &value : values)
    array.push_back(llvm::json::Object{{"name", value.name},
                                       {"dtype", value.dtype},
                                       {"shape", llvm::json::Array(value.shape)}});
  return array;
}

} // namespace

FailureOr<GraphSignature> readGraphSignature(ModuleOp module) {
  auto func = module.lookupSymbol<func::FuncOp>(kGraphFunction);
  if (!func) return module.emitError("no ") << kGraphFunction << " function to compile";
  GraphSignature signature;
  FunctionType type = func.getFunctionType();
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    auto value = describe(func, type.getInput(i), func.getArgAttrDict(i), "input", i);
    if (failed(value)) return failure();
    signature.inputs.push_back(*value);
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    auto value = describe(func, type.getResult(i), func.getResultAttrDict(i), "output", i);
    if (failed(value)) return failure();
    signature.outputs.push_back(*value);
  }
  return signature;
}

LogicalResult writeGraphLibrary(ModuleOp module, const GraphSignature &signature,
                                StringRef directory, const CpuTargetInfo &target,
                                const CodeUnitCache &kernelCache) {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return module.emitError("cannot create ") << directory << ": " << ec.message();
  auto pathOf = [&](StringRef file) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, file);
    return std::string(path);
  };
  llvm::sys::fs::remove(pathOf("graph.json"));

  auto func = module.lookupSymbol<func::FuncOp>(kGraphFunction);
  if (!func) return module.emitError("no ") << kGraphFunction << " function to compile";
  // The names were read into the signature; LLVM has no use for them.
  for (unsigned i = 0; i < func.getNumArguments(); ++i) func.removeArgAttr(i, "onnx.name");
  // The C interface takes every memref as a pointer to its descriptor.
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(module.getContext()));
  if (failed(emitCpuSharedObject(module, target, pathOf("graph.so"), kernelCache)))
    return failure();

  llvm::json::Object description{
      {"format", "llmc-graph"},
      {"format_version", 1},
      {"library", "graph.so"},
      {"entry", ("_mlir_ciface_" + kGraphFunction).str()},
      {"target", llvm::json::Object{{"triple", target.triple}, {"cpu", target.cpu}}},
      {"inputs", toJson(signature.inputs)},
      {"outputs", toJson(signature.outputs)},
  };
  std::error_code ec;
  llvm::raw_fd_ostream out(pathOf("graph.json"), ec, llvm::sys::fs::OF_Text);
  if (ec) return module.emitError("cannot write graph.json: ") << ec.message();
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(description))) << "\n";
  return success();
}

} // namespace llmc
