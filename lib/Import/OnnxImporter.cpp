//===- OnnxImporter.cpp - ONNX protobuf to the onnx dialect ---------------===//
//
// The importer walks the graph in dependency order, creates one onnx dialect
// op per node (local functions are inlined, If subgraphs become regions) and
// types each result with the op's shape inference as soon as it is created.
//
//===----------------------------------------------------------------------===//
#include "llmc/Import/OnnxImporter.h"

#include "OpRegistry.h"
#include "TensorImport.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx.pb.h"

#include <google/protobuf/io/coded_stream.h>

using namespace mlir;

namespace llmc {

namespace {
using import::OpSchema;
using Nodes = google::protobuf::RepeatedPtrField<::onnx::NodeProto>;

/// Values visible while importing one graph; subgraphs see their parents'.
struct Scope {
  llvm::StringMap<Value> values;
  const Scope *parent = nullptr;

  Value lookup(llvm::StringRef name) const {
    for (const Scope *s = this; s; s = s->parent)
      if (auto it = s->values.find(name); it != s->values.end()) return it->second;
    return nullptr;
  }
};

/// Attributes a local function's body may refer to by ref_attr_name.
using AttributeBindings = llvm::StringMap<const ::onnx::AttributeProto *>;

void collectReads(const ::onnx::NodeProto &node, llvm::SetVector<llvm::StringRef> &reads);

/// The names a subgraph reads from enclosing scopes: what its nodes read
/// that the subgraph does not define itself.
void collectOuterReads(const ::onnx::GraphProto &graph, llvm::SetVector<llvm::StringRef> &reads) {
  llvm::StringSet<> defined;
  for (const auto &input : graph.input()) defined.insert(input.name());
  for (const auto &initializer : graph.initializer()) defined.insert(initializer.name());
  for (const auto &inner : graph.node())
    for (const auto &output : inner.output()) defined.insert(output);
  llvm::SetVector<llvm::StringRef> inner;
  for (const auto &node : graph.node()) collectReads(node, inner);
  for (llvm::StringRef name : inner)
    if (!defined.contains(name)) reads.insert(name);
}

/// The values a node reads: its inputs, and what its subgraphs (If
/// branches) read from the enclosing graph.
void collectReads(const ::onnx::NodeProto &node, llvm::SetVector<llvm::StringRef> &reads) {
  for (const auto &input : node.input()) reads.insert(input);
  for (const auto &attribute : node.attribute()) {
    if (attribute.has_g()) collectOuterReads(attribute.g(), reads);
    for (const auto &graph : attribute.graphs()) collectOuterReads(graph, reads);
  }
}

std::string describeNode(const ::onnx::NodeProto &node) {
  std::string name = node.name().empty() ? (node.output_size() ? node.output(0) : "") : node.name();
  return "node '" + name + "'";
}

class GraphImporter {
public:
  GraphImporter(MLIRContext &context, const ImportOptions &options, std::string baseDir,
                llvm::StringRef fileName)
      : context(context), builder(&context), options(options),
        tensors(context, std::move(baseDir), options.inlineConstantLimit),
        fileLoc(FileLineColLoc::get(&context, fileName, 0, 0)) {}

  OwningOpRef<ModuleOp> importModel(const ::onnx::ModelProto &model);

private:
  LogicalResult checkVersions(const ::onnx::ModelProto &model);
  LogicalResult importGraphBody(const ::onnx::GraphProto &graph, Scope &scope,
                                const AttributeBindings *bindings);
  LogicalResult importNodes(const Nodes &nodes, Scope &scope, const AttributeBindings *bindings);
  LogicalResult importNode(const ::onnx::NodeProto &node, Scope &scope,
                           const AttributeBindings *bindings);
  LogicalResult importConstantNode(const ::onnx::NodeProto &node, Scope &scope, Location loc,
                                   const AttributeBindings *bindings);
  LogicalResult importIf(const ::onnx::NodeProto &node, Scope &scope, Location loc,
                         const AttributeBindings *bindings);
  LogicalResult inlineFunction(const ::onnx::FunctionProto &function,
                               const ::onnx::NodeProto &node, Scope &scope,
                               const AttributeBindings *bindings);
  LogicalResult defineValue(Scope &scope, llvm::StringRef name, Value value, Location loc);
  FailureOr<Value> useValue(const Scope &scope, llvm::StringRef name,
                            const ::onnx::NodeProto &node, Location loc);
  FailureOr<Type> importType(const ::onnx::TypeProto &type, llvm::StringRef name,
                             SmallVectorImpl<Attribute> *dimParams);
  Attribute convertAttribute(const ::onnx::AttributeProto &attribute, llvm::StringRef name,
                             Location loc);
  /// Checks a new op and types its results by shape inference; errors name
  /// `node`, the ONNX node the op was made from.
  LogicalResult typeResults(Operation *op, const ::onnx::NodeProto &node);
  Location nodeLoc(const ::onnx::NodeProto &node);
  Value noneValue();
  /// The node's attributes, by the node's names, with references into a
  /// function's bindings resolved to the caller's values.
  SmallVector<std::pair<llvm::StringRef, const ::onnx::AttributeProto *>>
  resolvedAttributes(const ::onnx::NodeProto &node, const AttributeBindings *bindings);

  MLIRContext &context;
  OpBuilder builder;
  const ImportOptions &options;
  import::TensorImporter tensors;
  Location fileLoc;
  llvm::StringMap<int64_t> opsets;
  llvm::StringMap<const ::onnx::FunctionProto *> functions;
  /// Function-inlining depth, to stop recursive local functions.
  int inlineDepth = 0;
};

Location GraphImporter::nodeLoc(const ::onnx::NodeProto &node) {
  std::string name = node.name().empty() ? (node.output_size() ? node.output(0) : node.op_type())
                                         : node.name();
  return NameLoc::get(builder.getStringAttr(name), fileLoc);
}

Value GraphImporter::noneValue() {
  return onnx::NoneOp::create(builder, builder.getUnknownLoc(), builder.getNoneType());
}

LogicalResult GraphImporter::checkVersions(const ::onnx::ModelProto &model) {
  int64_t ir = model.ir_version();
  if (ir < kMinIrVersion || ir > kMaxIrVersion)
    return emitError(fileLoc) << "ONNX IR version " << ir << " is not supported (llmc reads IR "
                              << kMinIrVersion << "-" << kMaxIrVersion << ")";
  for (const auto &opset : model.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    opsets[domain] = opset.version();
  }
  auto it = opsets.find("");
  if (it == opsets.end())
    return emitError(fileLoc) << "the model imports no opset of the default ONNX domain";
  if (it->second < kMinDefaultOpset || it->second > kMaxDefaultOpset)
    return emitError(fileLoc) << "default-domain opset " << it->second
                              << " is not supported (llmc reads opsets " << kMinDefaultOpset
                              << "-" << kMaxDefaultOpset << ")";
  return success();
}

FailureOr<Type> GraphImporter::importType(const ::onnx::TypeProto &type, llvm::StringRef name,
                                          SmallVectorImpl<Attribute> *dimParams) {
  if (!type.has_tensor_type())
    return emitError(fileLoc) << "value '" << name << "' is not a tensor";
  const auto &tensor = type.tensor_type();
  Type element = onnx::elementTypeForOnnxDataType(&context, tensor.elem_type());
  if (!element)
    return emitError(fileLoc) << "value '" << name << "' has unsupported element type "
                              << import::dataTypeName(tensor.elem_type());
  if (!tensor.has_shape()) return Type(UnrankedTensorType::get(element));
  SmallVector<int64_t> shape;
  for (const auto &dim : tensor.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0 || dim.dim_value() > import::kMaxDim)
        return emitError(fileLoc) << "value '" << name << "' has invalid dim " << dim.dim_value();
      shape.push_back(dim.dim_value());
    } else {
      shape.push_back(ShapedType::kDynamic);
    }
    if (dimParams)
      dimParams->push_back(builder.getStringAttr(dim.has_dim_param() ? dim.dim_param() : ""));
  }
  return Type(RankedTensorType::get(shape, element));
}

LogicalResult GraphImporter::defineValue(Scope &scope, llvm::StringRef name, Value value,
                                         Location loc) {
  if (name.empty()) return success();
  if (!scope.values.try_emplace(name, value).second)
    return emitError(loc) << "value '" << name << "' is defined twice";
  return success();
}

FailureOr<Value> GraphImporter::useValue(const Scope &scope, llvm::StringRef name,
                                         const ::onnx::NodeProto &node, Location loc) {
  if (name.empty()) return noneValue();
  if (Value value = scope.lookup(name)) return value;
  return emitError(loc) << describeNode(node) << " (" << node.op_type() << ") reads '" << name
                        << "', which no input, initializer or node defines";
}

Attribute GraphImporter::convertAttribute(const ::onnx::AttributeProto &attribute,
                                          llvm::StringRef name, Location loc) {
  using A = ::onnx::AttributeProto;
  switch (attribute.type()) {
  case A::FLOAT: return builder.getF32FloatAttr(attribute.f());
  case A::INT: return builder.getI64IntegerAttr(attribute.i());
  case A::STRING: return builder.getStringAttr(attribute.s());
  case A::TENSOR: return tensors.convert(attribute.t(), loc);
  case A::INTS: return builder.getDenseI64ArrayAttr(
      SmallVector<int64_t>(attribute.ints().begin(), attribute.ints().end()));
  case A::FLOATS: return builder.getDenseF32ArrayAttr(
      SmallVector<float>(attribute.floats().begin(), attribute.floats().end()));
  case A::STRINGS: {
    SmallVector<Attribute> strings;
    for (const auto &s : attribute.strings()) strings.push_back(builder.getStringAttr(s));
    return builder.getArrayAttr(strings);
  }
  default:
    emitError(loc) << "attribute '" << name << "' has unsupported kind "
                   << A::AttributeType_Name(attribute.type());
    return nullptr;
  }
}

SmallVector<std::pair<llvm::StringRef, const ::onnx::AttributeProto *>>
GraphImporter::resolvedAttributes(const ::onnx::NodeProto &node,
                                  const AttributeBindings *bindings) {
  SmallVector<std::pair<llvm::StringRef, const ::onnx::AttributeProto *>> result;
  for (const auto &attribute : node.attribute()) {
    if (attribute.ref_attr_name().empty()) {
      result.emplace_back(attribute.name(), &attribute);
      continue;
    }
    // A reference to the enclosing function's attribute; dropped when unset.
    if (!bindings) continue;
    auto it = bindings->find(attribute.ref_attr_name());
    if (it != bindings->end()) result.emplace_back(attribute.name(), it->second);
  }
  return result;
}

LogicalResult GraphImporter::typeResults(Operation *op, const ::onnx::NodeProto &node) {
  auto inference = dyn_cast<onnx::ShapeInferenceOpInterface>(op);
  if (!inference) return success();
  // The op's own diagnostics do not know the node; collect them and report
  // them under the node's name.
  SmallVector<std::string> messages;
  LogicalResult typed = success();
  {
    ScopedDiagnosticHandler collect(&context, [&](Diagnostic &diagnostic) {
      messages.push_back(diagnostic.str());
      return success();
    });
    // Check the op's operand kinds and attributes before inference reads
    // them (a required input given as "", a missing or mistyped attribute).
    // The results get a placeholder type that satisfies the op until inferred.
    auto placeholder = UnrankedTensorType::get(builder.getF32Type());
    for (OpResult result : op->getResults()) result.setType(placeholder);
    SmallVector<Type> types;
    typed = succeeded(op->getName().verifyInvariants(op)) &&
                    succeeded(inference.inferShapes(types)) &&
                    types.size() == op->getNumResults()
                ? success()
                : failure();
    if (succeeded(typed))
      for (auto [result, type] : llvm::zip(op->getResults(), types)) result.setType(type);
  }
  for (const std::string &message : messages)
    emitError(op->getLoc()) << describeNode(node) << " (" << node.op_type() << "): " << message;
  if (failed(typed) && messages.empty())
    emitError(op->getLoc()) << describeNode(node) << " (" << node.op_type()
                            << "): shape inference failed";
  return typed;
}

LogicalResult GraphImporter::importConstantNode(const ::onnx::NodeProto &node, Scope &scope,
                                                Location loc, const AttributeBindings *bindings) {
  auto attributes = resolvedAttributes(node, bindings);
  if (attributes.size() != 1 || node.output_size() != 1)
    return emitError(loc) << describeNode(node) << " (Constant) must have one value attribute";
  auto [kind, attributePtr] = attributes.front();
  const auto &attribute = *attributePtr;
  ElementsAttr value;
  if (kind == "value") {
    value = tensors.convert(attribute.t(), loc);
    if (!value) return failure();
  } else if (kind == "value_float") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, builder.getF32Type()), attribute.f());
  } else if (kind == "value_int") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, builder.getI64Type()),
                                   int64_t(attribute.i()));
  } else if (kind == "value_floats") {
    SmallVector<float> v(attribute.floats().begin(), attribute.floats().end());
    value = DenseElementsAttr::get(RankedTensorType::get({int64_t(v.size())}, builder.getF32Type()),
                                   ArrayRef<float>(v));
  } else if (kind == "value_ints") {
    SmallVector<int64_t> v(attribute.ints().begin(), attribute.ints().end());
    value = DenseElementsAttr::get(RankedTensorType::get({int64_t(v.size())}, builder.getI64Type()),
                                   ArrayRef<int64_t>(v));
  } else {
    return emitError(loc) << describeNode(node) << " (Constant) has unsupported attribute '"
                          << kind << "'";
  }
  auto constant = onnx::ConstantOp::create(builder, loc, value.getType(), value);
  return defineValue(scope, node.output(0), constant, loc);
}

LogicalResult GraphImporter::importIf(const ::onnx::NodeProto &node, Scope &scope, Location loc,
                                      const AttributeBindings *bindings) {
  if (node.input_size() != 1) return emitError(loc) << describeNode(node) << " (If) needs one input";
  FailureOr<Value> cond = useValue(scope, node.input(0), node, loc);
  if (failed(cond)) return failure();
  const ::onnx::GraphProto *thenGraph = nullptr, *elseGraph = nullptr;
  for (auto [name, attribute] : resolvedAttributes(node, bindings)) {
    if (name == "then_branch") thenGraph = &attribute->g();
    if (name == "else_branch") elseGraph = &attribute->g();
  }
  if (!thenGraph || !elseGraph)
    return emitError(loc) << describeNode(node) << " (If) lacks then_branch or else_branch";
  for (const auto *graph : {thenGraph, elseGraph})
    if (graph->output_size() != node.output_size())
      return emitError(loc) << describeNode(node) << " (If): a branch yields "
                            << graph->output_size() << " values for " << node.output_size()
                            << " outputs";

  SmallVector<Type> placeholders(node.output_size(), builder.getNoneType());
  auto ifOp = onnx::IfOp::create(builder, loc, placeholders, *cond);
  for (auto [region, graph] : {std::pair(&ifOp.getThenBranch(), thenGraph),
                               std::pair(&ifOp.getElseBranch(), elseGraph)}) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&region->emplaceBlock());
    Scope branchScope;
    branchScope.parent = &scope;
    if (failed(importGraphBody(*graph, branchScope, bindings))) return failure();
    SmallVector<Value> yielded;
    for (const auto &output : graph->output()) {
      Value value = branchScope.lookup(output.name());
      if (!value)
        return emitError(loc) << describeNode(node) << " (If): branch output '" << output.name()
                              << "' is not defined";
      yielded.push_back(value);
    }
    onnx::YieldOp::create(builder, loc, yielded);
  }
  if (failed(typeResults(ifOp, node))) return failure();
  for (auto [name, result] : llvm::zip(node.output(), ifOp.getResults()))
    if (failed(defineValue(scope, name, result, loc))) return failure();
  return success();
}

LogicalResult GraphImporter::inlineFunction(const ::onnx::FunctionProto &function,
                                            const ::onnx::NodeProto &node, Scope &scope,
                                            const AttributeBindings *bindings) {
  Location loc = nodeLoc(node);
  if (++inlineDepth > 64)
    return emitError(loc) << "local function '" << function.name() << "' is recursive";
  llvm::scope_exit leave([&] { --inlineDepth; });
  if (node.input_size() > function.input_size() || node.output_size() > function.output_size())
    return emitError(loc) << describeNode(node) << " passes more inputs or outputs than function '"
                          << function.name() << "' declares";
  // A function body sees only its formal inputs.
  Scope body;
  for (int i = 0; i < function.input_size(); ++i) {
    llvm::StringRef actual = i < node.input_size() ? llvm::StringRef(node.input(i)) : "";
    FailureOr<Value> value = useValue(scope, actual, node, loc);
    if (failed(value) || failed(defineValue(body, function.input(i), *value, loc)))
      return failure();
  }
  AttributeBindings functionBindings;
  for (const auto &defaultValue : function.attribute_proto())
    functionBindings[defaultValue.name()] = &defaultValue;
  for (auto [name, attribute] : resolvedAttributes(node, bindings))
    functionBindings[name] = attribute;
  // The body's ops are read at the function's own opsets (the model's where
  // the function imports none).
  llvm::StringMap<int64_t> callerOpsets = opsets;
  for (const auto &opset : function.opset_import())
    opsets[opset.domain() == "ai.onnx" ? "" : opset.domain()] = opset.version();
  LogicalResult imported = importNodes(function.node(), body, &functionBindings);
  opsets = std::move(callerOpsets);
  if (failed(imported)) return failure();
  for (int i = 0; i < node.output_size(); ++i) {
    Value value = body.lookup(function.output(i));
    if (!value)
      return emitError(loc) << "function '" << function.name() << "' does not define its output '"
                            << function.output(i) << "'";
    if (failed(defineValue(scope, node.output(i), value, loc))) return failure();
  }
  return success();
}

LogicalResult GraphImporter::importNode(const ::onnx::NodeProto &node, Scope &scope,
                                        const AttributeBindings *bindings) {
  Location loc = nodeLoc(node);
  std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  if (auto it = functions.find(domain + ":" + node.op_type()); it != functions.end())
    return inlineFunction(*it->second, node, scope, bindings);
  if (domain.empty() && node.op_type() == "Constant")
    return importConstantNode(node, scope, loc, bindings);

  auto opsetIt = opsets.find(domain);
  if (opsetIt == opsets.end())
    return emitError(loc) << describeNode(node) << " uses operator '" << node.op_type()
                          << "' of domain '" << domain << "', which the model does not import";
  int64_t opset = opsetIt->second;
  const OpSchema *schema = import::lookupOpSchema(domain, node.op_type(), opset);
  if (!schema) {
    std::string qualified = domain.empty() ? node.op_type() : domain + "." + node.op_type();
    int64_t first = import::firstKnownOpset(domain, node.op_type());
    if (first > opset)
      return emitError(loc) << "operator '" << qualified << "' at " << describeNode(node)
                            << " needs opset " << first << " but the model imports opset "
                            << opset;
    return emitError(loc) << "unsupported operator '" << qualified << "' (opset " << opset
                          << ") at " << describeNode(node);
  }
  if (schema->opType == "If") return importIf(node, scope, loc, bindings);

  OperationState state(loc, schema->dialectOp);
  SmallVector<Value> operands;
  for (const auto &input : node.input()) {
    FailureOr<Value> value = useValue(scope, input, node, loc);
    if (failed(value)) return failure();
    operands.push_back(*value);
  }
  for (auto [name, attribute] : resolvedAttributes(node, bindings)) {
    if (schema->rewrite == import::OpsetRewrite::AxesAttributeToInput && name == "axes") {
      SmallVector<int64_t> axes(attribute->ints().begin(), attribute->ints().end());
      auto type = RankedTensorType::get({int64_t(axes.size())}, builder.getI64Type());
      auto attr = DenseElementsAttr::get(type, ArrayRef<int64_t>(axes));
      operands.push_back(onnx::ConstantOp::create(builder, loc, type, attr));
      continue;
    }
    Attribute value = convertAttribute(*attribute, name, loc);
    if (!value) return failure();
    state.addAttribute(name, value);
  }
  if (schema->numInputs >= 0) {
    if (int(operands.size()) > schema->numInputs)
      return emitError(loc) << describeNode(node) << " (" << node.op_type() << ") has "
                            << operands.size() << " inputs; at most " << schema->numInputs
                            << " are defined";
    while (int(operands.size()) < schema->numInputs) operands.push_back(noneValue());
  }
  state.addOperands(operands);
  int numOutputs = schema->numOutputs >= 0 ? schema->numOutputs : node.output_size();
  if (node.output_size() > numOutputs)
    return emitError(loc) << describeNode(node) << " (" << node.op_type() << ") has "
                          << node.output_size() << " outputs; at most " << numOutputs
                          << " are defined";
  state.addTypes(SmallVector<Type>(numOutputs, builder.getNoneType()));
  NamedAttrList given = state.attributes;
  Operation *op = builder.create(state);
  // An attribute of the wrong kind (a float `axis`) does not become the op's
  // property; say so rather than run with the default.
  for (NamedAttribute attribute : given) {
    std::optional<Attribute> stored = op->getInherentAttr(attribute.getName());
    if (stored && *stored != attribute.getValue())
      return emitError(loc) << describeNode(node) << " (" << node.op_type() << "): attribute '"
                            << attribute.getName().getValue() << "' has the wrong kind";
  }
  if (failed(typeResults(op, node))) return failure();
  for (auto [name, result] : llvm::zip(node.output(), op->getResults()))
    if (failed(defineValue(scope, name, result, loc))) return failure();
  return success();
}

LogicalResult GraphImporter::importNodes(const Nodes &nodes, Scope &scope,
                                         const AttributeBindings *bindings) {
  // Import in dependency order (ONNX requires topological order, but not
  // every writer honours it); what cannot be ordered is a cycle.
  llvm::StringMap<int> producer;
  for (int i = 0; i < nodes.size(); ++i)
    for (const auto &output : nodes[i].output())
      if (!output.empty()) producer.try_emplace(output, i);
  std::vector<int> pendingInputs(nodes.size(), 0);
  std::vector<std::vector<int>> consumers(nodes.size());
  for (int i = 0; i < nodes.size(); ++i) {
    llvm::SetVector<llvm::StringRef> reads;
    collectReads(nodes[i], reads);
    for (llvm::StringRef input : reads) {
      auto it = producer.find(input);
      if (it == producer.end()) continue;
      ++pendingInputs[i];
      consumers[it->second].push_back(i);
    }
  }
  std::vector<int> ready;
  for (int i = nodes.size() - 1; i >= 0; --i)
    if (pendingInputs[i] == 0) ready.push_back(i);
  int imported = 0;
  while (!ready.empty()) {
    int i = ready.back();
    ready.pop_back();
    if (failed(importNode(nodes[i], scope, bindings))) return failure();
    ++imported;
    for (int consumer : llvm::reverse(consumers[i]))
      if (--pendingInputs[consumer] == 0) ready.push_back(consumer);
  }
  if (imported != nodes.size()) {
    for (int i = 0; i < nodes.size(); ++i)
      if (pendingInputs[i] > 0)
        return emitError(nodeLoc(nodes[i])) << "the graph has a cycle through "
                                            << describeNode(nodes[i]) << " ("
                                            << nodes[i].op_type() << ")";
  }
  return success();
}

LogicalResult GraphImporter::importGraphBody(const ::onnx::GraphProto &graph, Scope &scope,
                                             const AttributeBindings *bindings) {
  for (const auto &initializer : graph.initializer()) {
    if (scope.values.count(initializer.name())) continue; // an input overrides its default
    Location loc = NameLoc::get(builder.getStringAttr(initializer.name()), fileLoc);
    ElementsAttr value = tensors.convert(initializer, loc);
    if (!value) return failure();
    auto constant = onnx::ConstantOp::create(builder, loc, value.getType(), value);
    if (failed(defineValue(scope, initializer.name(), constant, loc))) return failure();
  }
  if (graph.sparse_initializer_size())
    return emitError(fileLoc) << "sparse initializers are not supported";
  return importNodes(graph.node(), scope, bindings);
}

OwningOpRef<ModuleOp> GraphImporter::importModel(const ::onnx::ModelProto &model) {
  if (failed(checkVersions(model))) return nullptr;
  for (const auto &function : model.functions())
    functions[function.domain() + ":" + function.name()] = &function;

  const ::onnx::GraphProto &graph = model.graph();
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, "main_graph", builder.getFunctionType({}, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  Scope scope;
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (const auto &input : graph.input()) {
    SmallVector<Attribute> dimParams;
    FailureOr<Type> type = importType(input.type(), input.name(), &dimParams);
    if (failed(type)) return nullptr;
    Location loc = NameLoc::get(builder.getStringAttr(input.name()), fileLoc);
    auto tensorType = cast<TensorType>(*type);
    if (options.bindUseCacheBranch && input.name() == "use_cache_branch" &&
        tensorType.getElementType().isInteger(1) && tensorType.hasStaticShape() &&
        tensorType.getNumElements() == 1) {
      auto value = DenseElementsAttr::get(tensorType, true);
      if (failed(defineValue(scope, input.name(),
                             onnx::ConstantOp::create(builder, loc, tensorType, value), loc)))
        return nullptr;
      continue;
    }
    BlockArgument arg = entry->addArgument(*type, loc);
    if (failed(defineValue(scope, input.name(), arg, loc))) return nullptr;
    argTypes.push_back(*type);
    SmallVector<NamedAttribute> attrs = {builder.getNamedAttr("onnx.name", builder.getStringAttr(input.name()))};
    if (llvm::any_of(dimParams, [](Attribute a) { return !cast<StringAttr>(a).empty(); }))
      attrs.push_back(builder.getNamedAttr("onnx.dim_params", builder.getArrayAttr(dimParams)));
    argAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  if (failed(importGraphBody(graph, scope, nullptr))) return nullptr;

  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  llvm::StringSet<> outputNames;
  for (const auto &output : graph.output()) {
    if (!outputNames.insert(output.name()).second) {
      emitError(fileLoc) << "graph output '" << output.name() << "' is listed twice";
      return nullptr;
    }
    Value value = scope.lookup(output.name());
    if (!value) {
      emitError(fileLoc) << "graph output '" << output.name() << "' is not defined by any node";
      return nullptr;
    }
    results.push_back(value);
    resultAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr("onnx.name", builder.getStringAttr(output.name()))}));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  if (failed(verify(*module))) return nullptr;
  return module;
}
} // namespace

OwningOpRef<ModuleOp> importOnnxModelFromBuffer(MLIRContext &context, llvm::StringRef bytes,
                                                llvm::StringRef baseDir, llvm::StringRef bufferName,
                                                const ImportOptions &options) {
  context.loadDialect<onnx::OnnxDialect, func::FuncDialect>();
  ::onnx::ModelProto model;
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t *>(bytes.data()),
                                                int(bytes.size()));
  stream.SetRecursionLimit(64);
  if (bytes.size() > size_t(INT32_MAX) || !model.ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage()) {
    emitError(FileLineColLoc::get(&context, bufferName, 0, 0))
        << "not a valid ONNX model (the protobuf does not parse; is the file truncated?)";
    return nullptr;
  }
  if (!model.has_graph()) {
    emitError(FileLineColLoc::get(&context, bufferName, 0, 0)) << "the ONNX model has no graph";
    return nullptr;
  }
  GraphImporter importer(context, options, baseDir.str(), bufferName);
  return importer.importModel(model);
}

OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context, llvm::StringRef path,
                                      const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(&context, path, 0, 0))
        << "cannot read '" << path << "': " << buffer.getError().message();
    return nullptr;
  }
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty()) dir = ".";
  return importOnnxModelFromBuffer(context, (*buffer)->getBuffer(), dir, path, options);
}

} // namespace llmc
