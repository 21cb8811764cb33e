//===- Argmax.cpp - the greedy token of a logits row ----------------------===//
#include "runtime/core/Argmax.h"

#include <algorithm>

namespace llmc::runtime {

int32_t argmax(const float *values, int64_t count) {
  // The largest value in 8 independent running maxima (one dependent
  // compare per element would bound the loop by its latency), then its
  // first index. Only `>` compares, as a plain scan's would: a NaN never
  // becomes the maximum unless it is values[0], which then stays the answer.
  constexpr int64_t kLanes = 8;
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, values[0]);
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int64_t lane = 0; lane < kLanes; ++lane)
      if (values[i + lane] > lanes[lane]) lanes[lane] = values[i + lane];
  float best = values[0];
  for (float lane : lanes)
    if (lane > best) best = lane;
  for (; i < count; ++i)
    if (values[i] > best) best = values[i];
  for (int64_t at = 0; at < count; ++at)
    if (values[at] == best) return static_cast<int32_t>(at);
  return 0;
}

} // namespace llmc::runtime
