//===- LoraAdapter.h - a PEFT LoRA adapter, matched to an artifact -*- C++ -*-===//
//
// A LoRA adapter as PEFT saves it (adapter_config.json and
// adapter_model.safetensors in one directory) changes some linear layers of
// a model: y = x W + scaling * (x A^T) B^T, A [rank, in] and B [out, rank]
// per layer, named by module path. Loading matches every changed layer to one
// of the artifact's LoRA sites (step.lora_sites) and keeps, per site, A^T and
// scaling * B^T, the layouts the row products read (LoraProducts.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_LORA_LORAADAPTER_H
#define LLMC_RUNTIME_LORA_LORAADAPTER_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmc::runtime {

/// vLLM's default max_lora_rank.
inline constexpr int64_t kDefaultMaxLoraRank = 16;

class LoraAdapter {
public:
  /// One site's low-rank weights: `down` is A^T [in, paddedRank()], `up` is
  /// scaling * B^T [rank, out]; rank 0 where the adapter leaves the site be.
  struct SiteWeights {
    int64_t rank = 0;
    std::vector<float> down, up;
    /// The rank rounded up to 16: `down`'s row length, its extra columns zeros.
    int64_t paddedRank() const { return (rank + 15) / 16 * 16; }
  };

  /// Loads the adapter in `directory` for an artifact with `sites`. Throws
  /// Error, naming the directory and the fault, for what it cannot serve
  /// exactly: no adapter_model.safetensors (a pickled .bin is not read), a
  /// PEFT type other than LORA, DoRA, trained biases, modules_to_save,
  /// embedding or LM head LoRA, a layer the artifact has no site for, shapes
  /// that disagree with the site, a rank above `maxRank`.
  static std::shared_ptr<const LoraAdapter> load(const std::string &directory,
                                                 const std::vector<LoraSite> &sites,
                                                 int64_t maxRank);

  const std::string &directory() const { return dir; }
  /// The largest rank of its layers.
  int64_t rank() const { return maxRankOfSites; }
  /// A checksum of its config and weights: two adapters with equal files
  /// share it (and so their prefix cache entries).
  uint64_t fingerprint() const { return contentHash; }
  /// Site i's weights (the artifact's site order).
  const SiteWeights &site(int64_t i) const { return sites[size_t(i)]; }
  int64_t numSites() const { return int64_t(sites.size()); }

private:
  std::string dir;
  int64_t maxRankOfSites = 0;
  uint64_t contentHash = 0;
  std::vector<SiteWeights> sites;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_LORA_LORAADAPTER_H
