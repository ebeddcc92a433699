// Identities that KV block keys are chained from, so that blocks computed by
// one model never match another (or the same model after its weights change).
//
//   full weights identity    = SHA-256 over config.json and, per weight file
//                              (sorted by name), its name, size and the digest
//                              of every byte of it (kv/weights_digest.h). A
//                              GGUF file is its own single weight file.
//   sampled weights identity = the same with 16 windows of 64 KiB per file
//                              instead of every byte (~1 MiB of I/O per file).
//   model fingerprint        = SHA-256 over a weights identity, the KV dtype,
//                              the block size, the layer layout (layers, KV
//                              heads, head size, each layer's sliding window,
//                              the tensor-parallel ranks when more than one)
//                              and the numerics that shape K/V (the backend's
//                              name and precision).
//
// Blocks that outlive the engine (the block store's RAM and SSD tiers) are
// keyed from the fingerprint of the full identity: any changed byte changes
// it. The engine's own in-memory index lives only as long as the weights it
// was computed with, so it starts from the sampled one, which is known at
// once (the full one is computed in the background: kv/weights_hasher.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"
#include "util/sha256.h"
#include "util/status.h"

namespace llmhost {

inline constexpr int kIdentityWindows = 16;
inline constexpr size_t kIdentityWindowBytes = 64 * 1024;

// What a weights identity is made of. PATH: a model directory (config.json +
// *.safetensors / *.gguf files) or a .gguf file. NotFound / IOError naming
// the file when one cannot be read; InvalidArgument for a directory without
// weight files.
struct WeightFiles {
  std::optional<std::string> config_json;  // its text; none for a GGUF file
  std::vector<std::string> files;          // sorted paths
};
Result<WeightFiles> ListWeightFiles(const std::string& path);

// A random-weights spec (model/random_model.h) has no files: its identity is
// the exact one of its spec.
Result<Sha256Digest> SampledWeightsIdentity(const std::string& path);
// `digests[i]`: the content digest of `w.files[i]` (WeightFileDigest).
Sha256Digest FullWeightsIdentity(const WeightFiles& w, const std::vector<Sha256Digest>& digests);

// The hash of one weight file's name, size and 16 windows (the unit that
// SampledWeightsIdentity folds in per file).
Result<Sha256Digest> WeightFileIdentity(const std::string& file);

struct KvLayout {
  std::string kv_dtype = "f32";
  int64_t block_size = 0;
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  std::vector<int64_t> windows;  // per layer: sliding window, 0 = full attention
  std::string numerics;          // backend name + precision (K/V depend on them)
  int tensor_parallel = 1;       // ranks the K/V heads are sharded over (a block holds every rank's shard)
};

// The layout of `model`'s KV cache with blocks of `block_size` positions of `kv_dtype`.
KvLayout LayoutOf(const Model& model, int64_t block_size, DType kv_dtype = DType::kF32);

Sha256Digest ModelFingerprint(const Sha256Digest& weights_identity, const KvLayout& layout);

// SampledWeightsIdentity(model.path()) folded with LayoutOf(model, block_size).
Result<Sha256Digest> SampledModelFingerprint(const Model& model, int64_t block_size);

}  // namespace llmhost
