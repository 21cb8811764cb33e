//===- RowMath.cpp - the maths both targets' row kernels share ------------===//
#include "passes/Codegen/Common/RowMath.h"

#include "dialects/llm/LlmDialect.h"

using namespace mlir;

namespace llmc::codegen {

std::pair<double, bool> normKind(Operation *op) {
  if (auto rms = dyn_cast<llm::RmsNormOp>(op)) return {rms.getEpsilon().convertToFloat(), false};
  if (auto fused = dyn_cast<llm::AddRmsNormOp>(op))
    return {fused.getEpsilon().convertToFloat(), false};
  if (auto fused = dyn_cast<llm::AddLayerNormOp>(op))
    return {fused.getEpsilon().convertToFloat(), true};
  return {cast<llm::LayerNormOp>(op).getEpsilon().convertToFloat(), true};
}

Value scaledBy(KernelBuilder &kb, Value value, double scale) {
  return scale == 1.0 ? value : kb.mul(value, kb.f32(scale));
}

void emitRotatedPair(KernelBuilder &kb, const Rotation &rotation, Value position, Value i,
                     function_ref<Value(Value)> read, function_ref<void(Value, Value)> write) {
  int64_t half = rotation.halfRotary;
  Value cosine, sine;
  if (rotation.cosCache) {
    Value p = kb.toIndex(position);
    cosine = kb.load(rotation.cosCache, {p, i});
    sine = kb.load(rotation.sinCache, {p, i});
  } else {
    Value angle = kb.mul(kb.toF32(position), kb.load(rotation.invFreq, {i}));
    cosine = scaledBy(kb, kb.cos(angle), rotation.scale);
    sine = scaledBy(kb, kb.sin(angle), rotation.scale);
  }
  // rotate_half pairs feature i with i + rotary/2; interleaved, 2i with 2i+1.
  Value first = rotation.interleaved ? kb.mulIndex(i, kb.index(2)) : i;
  Value second = kb.addIndex(first, kb.index(rotation.interleaved ? 1 : half));
  Value a = read(first), c = read(second);
  write(first, kb.sub(kb.mul(a, cosine), kb.mul(c, sine)));
  write(second, kb.add(kb.mul(c, cosine), kb.mul(a, sine)));
}

} // namespace llmc::codegen
