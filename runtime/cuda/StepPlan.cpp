//===- StepPlan.cpp - parse, check and resolve step_plan.json -------------===//
#include "runtime/cuda/StepPlan.h"

#include "runtime/core/Error.h"

#include "llmc/Runtime/StepPlanSchema.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <iterator>
#include <limits>

namespace llmc::runtime::cuda {
namespace {
using nlohmann::json;
using namespace llmc::stepplan;

constexpr int64_t kWorkspaceAlignment = 256;

// The schema's lists are in the order of the Symbol, Buffer and
// KernelArg::Kind enumerators.
static_assert(std::size(kSymbols) == static_cast<size_t>(Symbol::PrefillTokens) + 1);
static_assert(std::size(kBuffers) == kNumBuffers);
static_assert(std::size(kArgKinds) == static_cast<size_t>(KernelArg::Kind::F32) + 1);

/// "a, b, c": the names an error message offers.
template <size_t N> std::string listed(const char *const (&names)[N]) {
  std::string list;
  for (const char *name : names) list += (list.empty() ? "" : ", ") + std::string(name);
  return list;
}

[[noreturn]] void fail(const std::string &where, const std::string &fault) {
  throw Error("step_plan.json: " + where + ": " + fault);
}

std::string child(const std::string &parent, const std::string &name) {
  return parent.empty() ? name : parent + "." + name;
}
std::string element(const std::string &parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

/// The field `name` of `object`; fails naming it when it is missing.
const json &field(const json &object, const std::string &where, const char *name) {
  if (!object.is_object()) fail(where, "must be an object");
  auto found = object.find(name);
  if (found == object.end()) fail(child(where, name), "is missing");
  return *found;
}

int64_t integer(const json &value, const std::string &where, int64_t minimum) {
  if (!value.is_number_integer() || value.get<int64_t>() < minimum)
    fail(where, "must be an integer >= " + std::to_string(minimum));
  return value.get<int64_t>();
}

int64_t integerField(const json &object, const std::string &where, const char *name,
                     int64_t minimum) {
  return integer(field(object, where, name), child(where, name), minimum);
}

std::string stringField(const json &object, const std::string &where, const char *name) {
  const json &value = field(object, where, name);
  if (!value.is_string()) fail(child(where, name), "must be a string");
  return value.get<std::string>();
}

float numberField(const json &object, const std::string &where, const char *name) {
  const json &value = field(object, where, name);
  if (!value.is_number()) fail(child(where, name), "must be a number");
  return value.get<float>();
}

const json &arrayField(const json &object, const std::string &where, const char *name) {
  const json &value = field(object, where, name);
  if (!value.is_array()) fail(child(where, name), "must be a list");
  return value;
}

/// A field that may be absent or null.
const json *optionalField(const json &object, const char *name) {
  auto found = object.find(name);
  return found == object.end() || found->is_null() ? nullptr : &*found;
}

Symbol parseSymbol(const json &value, const std::string &where) {
  std::string name = value.get<std::string>();
  for (size_t i = 0; i < std::size(kSymbols); ++i)
    if (name == kSymbols[i]) return static_cast<Symbol>(i);
  fail(where, "'" + name + "' is not a symbol (" + listed(kSymbols) + ")");
}

/// An integer, a symbol, [symbol, mul, div] or [symbol, mul, div, add].
Dim parseDim(const json &value, const std::string &where) {
  Dim dim;
  if (value.is_number_integer()) {
    dim.constant = value.get<int64_t>();
  } else if (value.is_string()) {
    dim.symbol = parseSymbol(value, where);
  } else if (value.is_array() && (value.size() == 3 || value.size() == 4) &&
             value[0].is_string()) {
    dim.symbol = parseSymbol(value[0], element(where, 0));
    dim.mul = integer(value[1], element(where, 1), 1);
    dim.div = integer(value[2], element(where, 2), 1);
    if (value.size() == 4) dim.add = integer(value[3], element(where, 3), 0);
  } else {
    fail(where, "must be an integer, a symbol, [symbol, mul, div] or [symbol, mul, div, add]");
  }
  return dim;
}

std::vector<Dim> parseDims(const json &object, const std::string &where, const char *name) {
  const json &list = arrayField(object, where, name);
  std::vector<Dim> dims;
  for (size_t i = 0; i < list.size(); ++i)
    dims.push_back(parseDim(list[i], element(child(where, name), i)));
  return dims;
}

/// grid or block: three dimensions, the constant ones positive.
std::array<Dim, 3> parseExtent(const json &object, const std::string &where, const char *name) {
  std::vector<Dim> dims = parseDims(object, where, name);
  if (dims.size() != 3) fail(child(where, name), "must have three dimensions (x, y, z)");
  for (size_t i = 0; i < 3; ++i)
    if (!dims[i].symbol && dims[i].constant < 1)
      fail(element(child(where, name), i), "must be at least 1");
  return {dims[0], dims[1], dims[2]};
}

Location parseLocation(const json &value, const std::string &where) {
  Location location;
  location.where = where;
  std::string name = stringField(value, where, kBufferKey);
  size_t index = 0;
  while (index < kNumBuffers && name != kBuffers[index])
    ++index;
  if (index == kNumBuffers)
    fail(child(where, kBufferKey), "'" + name + "' is not a buffer (" + listed(kBuffers) + ")");
  location.buffer = static_cast<Buffer>(index);
  location.offset = integerField(value, where, kOffsetKey, 0);
  return location;
}

KernelArg parseArg(const json &value, const std::string &where) {
  if (!value.is_object()) fail(where, "must be an object");
  KernelArg arg;
  arg.where = where;
  size_t kinds = 0;
  for (size_t i = 0; i < std::size(kArgKinds); ++i)
    if (value.contains(kArgKinds[i])) {
      arg.kind = static_cast<KernelArg::Kind>(i);
      ++kinds;
    }
  if (kinds != 1) fail(where, "must have exactly one of " + listed(kArgKinds));
  switch (arg.kind) {
  case KernelArg::Kind::Memref:
    arg.location = parseLocation(value.at(kMemrefArg), child(where, kMemrefArg));
    arg.sizes = parseDims(value, where, kSizesKey);
    arg.strides = parseDims(value, where, kStridesKey);
    if (arg.sizes.size() != arg.strides.size())
      fail(where, "has " + std::to_string(arg.sizes.size()) + " sizes and " +
                      std::to_string(arg.strides.size()) + " strides");
    break;
  case KernelArg::Kind::Ptr:
    arg.location = parseLocation(value.at(kPtrArg), child(where, kPtrArg));
    break;
  case KernelArg::Kind::Index:
  case KernelArg::Kind::I64:
  case KernelArg::Kind::I32: {
    const char *name = kArgKinds[static_cast<size_t>(arg.kind)];
    arg.value = parseDim(value.at(name), child(where, name));
    break;
  }
  case KernelArg::Kind::F32:
    arg.number = numberField(value, where, kF32Arg);
    break;
  }
  return arg;
}

LaunchStep parseLaunch(const json &value, const std::string &where) {
  LaunchStep launch;
  std::string module = stringField(value, where, kModuleKey);
  if (module == kKernelsModule)
    launch.module = Module::Kernels;
  else if (module == kAttentionModule)
    launch.module = Module::Attention;
  else
    fail(child(where, kModuleKey), "'" + module + "' is not a module (" +
                                       std::string(kKernelsModule) + ", " + kAttentionModule + ")");
  launch.kernel = stringField(value, where, kKernelKey);
  if (launch.kernel.empty()) fail(child(where, kKernelKey), "must name a kernel");
  launch.grid = parseExtent(value, where, kGridKey);
  launch.block = parseExtent(value, where, kBlockKey);
  if (optionalField(value, kSharedBytesKey))
    launch.sharedBytes = integerField(value, where, kSharedBytesKey, 0);
  const json &args = arrayField(value, where, kArgsKey);
  for (size_t i = 0; i < args.size(); ++i)
    launch.args.push_back(parseArg(args[i], element(child(where, kArgsKey), i)));
  return launch;
}

/// A leading dimension: at least the row it strides over.
int64_t leadingDimension(const json &value, const std::string &where, const char *name,
                         int64_t rowLength, const char *rowName) {
  int64_t ld = integerField(value, where, name, 1);
  if (ld < rowLength)
    fail(child(where, name),
         std::to_string(ld) + " is less than " + rowName + " = " + std::to_string(rowLength));
  return ld;
}

GemmStep parseGemm(const json &value, const std::string &where, DType storageDtype) {
  GemmStep gemm;
  gemm.m = parseDim(field(value, where, kMKey), child(where, kMKey));
  gemm.n = integerField(value, where, kNKey, 1);
  gemm.k = integerField(value, where, kKKey, 1);
  gemm.a = parseLocation(field(value, where, kAKey), child(where, kAKey));
  gemm.lda = leadingDimension(value, where, kLdaKey, gemm.k, kKKey);
  gemm.b = parseLocation(field(value, where, kBKey), child(where, kBKey));
  std::string layout = stringField(value, where, kBLayoutKey);
  if (layout != kBLayoutNK && layout != kBLayoutKN)
    fail(child(where, kBLayoutKey),
         "'" + layout + "' is not " + kBLayoutNK + " or " + kBLayoutKN);
  gemm.bIsNByK = layout == kBLayoutNK;
  gemm.ldb = gemm.bIsNByK ? leadingDimension(value, where, kLdbKey, gemm.k, kKKey)
                          : leadingDimension(value, where, kLdbKey, gemm.n, kNKey);
  gemm.d = parseLocation(field(value, where, kDKey), child(where, kDKey));
  gemm.ldd = leadingDimension(value, where, kLddKey, gemm.n, kNKey);
  std::string dDtype = stringField(value, where, kDDtypeKey);
  std::optional<DType> parsed = parseDType(dDtype);
  if (!parsed) fail(child(where, kDDtypeKey), "'" + dDtype + "' is not bf16, f16 or f32");
  gemm.dDtype = *parsed;
  if (optionalField(value, kBetaKey)) gemm.beta = numberField(value, where, kBetaKey);
  if (const json *c = optionalField(value, kCKey)) {
    gemm.c = parseLocation(*c, child(where, kCKey));
    gemm.ldc = leadingDimension(value, where, kLdcKey, gemm.n, kNKey);
    // cuBLASLt reads C in D's type; the plan stores C in the storage dtype.
    if (gemm.dDtype != storageDtype)
      fail(where, std::string("a gemm with c must have d_dtype ") + dtypeName(storageDtype) +
                      ", the storage dtype (cuBLASLt reads C in D's type)");
  } else if (gemm.beta != 0) {
    fail(child(where, kBetaKey), "must be 0 when c is null");
  }
  if (const json *bias = optionalField(value, kBiasKey)) {
    gemm.bias = parseLocation(*bias, child(where, kBiasKey));
    // cuBLASLt reads the bias in D's type; the plan stores it in the storage dtype.
    if (gemm.dDtype != storageDtype)
      fail(where, std::string("a gemm with a bias must have d_dtype ") + dtypeName(storageDtype) +
                      ", the storage dtype (cuBLASLt reads the bias in D's type)");
  }
  return gemm;
}
} // namespace

int64_t SymbolValues::operator[](Symbol symbol) const {
  switch (symbol) {
  case Symbol::Tokens:
    return tokens;
  case Symbol::Seqs:
    return seqs;
  case Symbol::MaxQueryLen:
    return maxQueryLen;
  case Symbol::BlockTableWidth:
    return blockTableWidth;
  case Symbol::NumBlocks:
    return numBlocks;
  case Symbol::PrefillTokens:
    return maxQueryLen > 1 ? tokens : 0;
  }
  return 0;
}

int64_t Dim::resolve(const SymbolValues &values) const {
  if (!symbol) return constant;
  return (values[*symbol] * mul + div - 1) / div + add;
}

const char *bufferName(Buffer buffer) { return kBuffers[static_cast<size_t>(buffer)]; }

const char *moduleName(Module module) {
  return module == Module::Kernels ? kKernelsModule : kAttentionModule;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::F32:
    return "f32";
  }
  return "";
}

std::optional<DType> parseDType(const std::string &name) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    if (name == dtypeName(dtype)) return dtype;
  return std::nullopt;
}

int64_t StepPlan::workspaceAllocationBytes() const {
  auto roundUp = [](int64_t bytes) {
    return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  };
  return roundUp(workspaceBytes) + roundUp(scratchBytes);
}

bool StepPlan::launchesFrom(Module module) const {
  for (const PlanStep &step : steps)
    if (const auto *launch = std::get_if<LaunchStep>(&step.op))
      if (launch->module == module) return true;
  return false;
}

StepPlan parseStepPlan(const std::string &text, DType storageDtype) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error &error) {
    throw Error("step_plan.json: not valid JSON (at byte " + std::to_string(error.byte) + ")");
  }
  if (!document.is_object()) throw Error("step_plan.json: must be a JSON object");
  int64_t version = integerField(document, "", kFormatVersionKey, 0);
  if (version != stepplan::kVersion)
    throw Error("step_plan.json: format_version " + std::to_string(version) +
                " is not one this runtime reads (it reads " + std::to_string(stepplan::kVersion) +
                "): recompile with this llmc");
  StepPlan plan;
  plan.workspaceBytes = integerField(document, "", kWorkspaceBytesKey, 0);
  plan.scratchBytes = integerField(document, "", kScratchBytesKey, 0);
  const json &steps = arrayField(document, "", kStepsKey);
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string where = element(kStepsKey, i);
    std::string op = stringField(steps[i], where, kOpKey);
    PlanStep step;
    step.where = where;
    if (op == kLaunchOp)
      step.op = parseLaunch(steps[i], where);
    else if (op == kGemmOp)
      step.op = parseGemm(steps[i], where, storageDtype);
    else
      fail(child(where, kOpKey), "'" + op + "' is not " + kLaunchOp + " or " + kGemmOp);
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

void checkLocations(const StepPlan &plan, const PerBuffer<int64_t> &bufferBytes) {
  auto check = [&](const Location &location) {
    int64_t size = at(bufferBytes, location.buffer);
    if (location.offset > size)
      fail(location.where, "offset " + std::to_string(location.offset) + " is past the end of " +
                               bufferName(location.buffer) + " (" + std::to_string(size) +
                               " bytes)");
  };
  for (const PlanStep &step : plan.steps) {
    if (const auto *launch = std::get_if<LaunchStep>(&step.op)) {
      for (const KernelArg &arg : launch->args)
        if (arg.kind == KernelArg::Kind::Memref || arg.kind == KernelArg::Kind::Ptr)
          check(arg.location);
    } else {
      const auto &gemm = std::get<GemmStep>(step.op);
      for (const Location *location : {&gemm.a, &gemm.b, &gemm.d})
        check(*location);
      if (gemm.bias) check(*gemm.bias);
      if (gemm.c) check(*gemm.c);
    }
  }
}

template <typename T> void KernelParams::append(T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "kernel parameters are 4 or 8 bytes");
  size_t offset = (used + sizeof(T) - 1) / sizeof(T) * sizeof(T);
  used = offset + sizeof(T);
  storage.resize((used + 7) / 8);
  std::memcpy(reinterpret_cast<unsigned char *>(storage.data()) + offset, &value, sizeof(T));
  parameterOffsets.push_back(offset);
}

KernelParams::KernelParams(const std::vector<KernelArg> &args, const SymbolValues &symbols,
                           const PerBuffer<uint64_t> &addresses) {
  auto address = [&](const Location &location) {
    return at(addresses, location.buffer) + static_cast<uint64_t>(location.offset);
  };
  for (const KernelArg &arg : args) {
    switch (arg.kind) {
    case KernelArg::Kind::Memref: {
      uint64_t pointer = address(arg.location);
      append(pointer); // allocated
      append(pointer); // aligned
      append(int64_t(0));
      for (const Dim &size : arg.sizes)
        append(size.resolve(symbols));
      for (const Dim &stride : arg.strides)
        append(stride.resolve(symbols));
      break;
    }
    case KernelArg::Kind::Ptr:
      append(address(arg.location));
      break;
    case KernelArg::Kind::Index:
    case KernelArg::Kind::I64:
      append(arg.value.resolve(symbols));
      break;
    case KernelArg::Kind::I32: {
      int64_t value = arg.value.resolve(symbols);
      if (value < std::numeric_limits<int32_t>::min() ||
          value > std::numeric_limits<int32_t>::max())
        fail(arg.where, "i32 value " + std::to_string(value) + " does not fit in 32 bits");
      append(static_cast<int32_t>(value));
      break;
    }
    case KernelArg::Kind::F32:
      append(arg.number);
      break;
    }
  }
  // The storage is complete: it no longer moves.
  auto *base = reinterpret_cast<unsigned char *>(storage.data());
  for (size_t offset : parameterOffsets)
    parameterPointers.push_back(base + offset);
}

} // namespace llmc::runtime::cuda
