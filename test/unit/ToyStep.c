/*===- ToyStep.c - a TEST DOUBLE for a compiled model's kernels.so -------===//
 *
 * NOT A MODEL. The unit tests copy this library into a test artifact as its
 * kernels.so so that the artifact loader, Model::step and the Generator loop
 * can be checked deterministically without `llmc compile`. It honours the
 * step ABI (llmc/Runtime/StepABI.h) in a way that makes paging mistakes show:
 *
 *   1. For each token t with slot_mapping[t] >= 0, it writes tokens[t] to K
 *      and positions[t] to V at that slot (head 0, element 0, every layer).
 *   2. For each sequence n it walks its block table over positions
 *      0 .. context_lens[n] - 1 of the last layer and sums the K values there
 *      (into the workspace, one int64 per sequence); a V that is not its
 *      position marks the sum invalid (-1).
 *   3. logits[n][v] = bias[v] + (v == sum % vocab ? 1 : 0), with bias the f32
 *      [vocab] array at offset 0 of weights.bin (no peak for an invalid sum).
 *
 * So greedy generation continues a context c_0 .. c_k with
 * (c_0 + ... + c_k) % vocab, as long as each bias is below 1 and the KV cache
 * keeps every position the step wrote. Steps 2 and 3 run through the host
 * API's parallel_for, one sequence per index.
 *===----------------------------------------------------------------------===*/
#include "llmc/Runtime/StepABI.h"

typedef struct ToyStep {
  const LlmcMemRef1 *contextLens;
  const LlmcMemRef2 *blockTables;
  const LlmcMemRef6 *kvPool;
  const float *bias;
  int64_t *sums;
  const LlmcMemRef2 *logits;
} ToyStep;

static float *kvElement(const LlmcMemRef6 *kv, int64_t layer, int64_t slot, int64_t kOrV) {
  int64_t blockSize = kv->sizes[4];
  return (float *)kv->aligned + kv->offset + layer * kv->strides[0] +
         (slot / blockSize) * kv->strides[1] + kOrV * kv->strides[2] +
         (slot % blockSize) * kv->strides[4];
}

static int32_t elementI32(const LlmcMemRef1 *memref, int64_t i) {
  return ((const int32_t *)memref->aligned)[memref->offset + i * memref->strides[0]];
}

static void sumContexts(void *closure, int64_t begin, int64_t end) {
  const ToyStep *toy = (const ToyStep *)closure;
  const LlmcMemRef6 *kv = toy->kvPool;
  int64_t lastLayer = kv->sizes[0] - 1, blockSize = kv->sizes[4];
  const LlmcMemRef2 *tables = toy->blockTables;
  for (int64_t seq = begin; seq < end; ++seq) {
    const int32_t *table = (const int32_t *)tables->aligned + tables->offset +
                           seq * tables->strides[0];
    int64_t sum = 0;
    for (int64_t position = 0; position < elementI32(toy->contextLens, seq); ++position) {
      int64_t slot = table[position / blockSize] * blockSize + position % blockSize;
      if (*kvElement(kv, lastLayer, slot, 1) != (float)position) {
        sum = -1;
        break;
      }
      sum += (int64_t)*kvElement(kv, lastLayer, slot, 0);
    }
    toy->sums[seq] = sum;
  }
}

static void writeLogits(void *closure, int64_t begin, int64_t end) {
  const ToyStep *toy = (const ToyStep *)closure;
  int64_t vocab = toy->logits->sizes[1];
  for (int64_t seq = begin; seq < end; ++seq) {
    float *row = (float *)toy->logits->aligned + toy->logits->offset +
                 seq * toy->logits->strides[0];
    for (int64_t v = 0; v < vocab; ++v) row[v] = toy->bias[v];
    if (toy->sums[seq] >= 0) row[toy->sums[seq] % vocab] += 1.0f;
  }
}

void _mlir_ciface_llmc_step(const LlmcCpuHostApi *api, LlmcMemRef1 *tokens,
                            LlmcMemRef1 *positions, LlmcMemRef1 *cu_seqlens_q,
                            LlmcMemRef1 *context_lens, LlmcMemRef2 *block_tables,
                            LlmcMemRef1 *slot_mapping, LlmcMemRef1 *logits_indices,
                            LlmcMemRef6 *kv_pool, LlmcMemRef1 *weights,
                            LlmcMemRef1 *workspace, LlmcMemRef2 *logits) {
  for (int64_t t = 0; t < tokens->sizes[0]; ++t) {
    int32_t slot = elementI32(slot_mapping, t);
    if (slot < 0) continue;
    for (int64_t layer = 0; layer < kv_pool->sizes[0]; ++layer) {
      *kvElement(kv_pool, layer, slot, 0) = (float)elementI32(tokens, t);
      *kvElement(kv_pool, layer, slot, 1) = (float)elementI32(positions, t);
    }
  }
  ToyStep toy = {context_lens,
                 block_tables,
                 kv_pool,
                 (const float *)((const char *)weights->aligned + weights->offset),
                 (int64_t *)((char *)workspace->aligned + workspace->offset),
                 logits};
  int64_t numSeqs = context_lens->sizes[0];
  api->parallel_for(api->context, numSeqs, sumContexts, &toy);
  api->parallel_for(api->context, numSeqs, writeLogits, &toy);
}
