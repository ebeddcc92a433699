// Identities that KV block keys are chained from, so that blocks computed by
// one model never match another (or the same model after its weights change).
//
//   weights identity  = SHA-256 over config.json and, per weight file (sorted
//                       by name), its name, size and the SHA-256 of 16 windows
//                       of 64 KiB spread evenly through it. A GGUF file is its
//                       own single weight file (and has no config.json).
//   model fingerprint = SHA-256 over the weights identity, the KV dtype, the
//                       block size, the layer layout (layers, KV heads, head
//                       size, each layer's sliding window) and the numerics
//                       that shape K/V (the backend's name and precision).
//
// Reading 16 windows costs ~1 MiB of I/O per file, even for a 100 GB model,
// yet a fine-tune with the same shapes changes (almost surely) some window.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"
#include "util/sha256.h"
#include "util/status.h"

namespace llmhost {

inline constexpr int kIdentityWindows = 16;
inline constexpr size_t kIdentityWindowBytes = 64 * 1024;

// PATH: a model directory (config.json + *.safetensors / *.gguf files) or a
// .gguf file. NotFound / IOError naming the file when one cannot be read;
// InvalidArgument for a directory without weight files.
Result<Sha256Digest> WeightsIdentity(const std::string& path);

// The hash of one weight file's name, size and 16 windows (the unit that
// WeightsIdentity folds in per file).
Result<Sha256Digest> WeightFileIdentity(const std::string& file);

struct KvLayout {
  std::string kv_dtype = "f32";
  int64_t block_size = 0;
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  std::vector<int64_t> windows;  // per layer: sliding window, 0 = full attention
  std::string numerics;          // backend name + precision (K/V depend on them)
};

// The layout of `model`'s KV cache with blocks of `block_size` positions.
KvLayout LayoutOf(const Model& model, int64_t block_size);

Sha256Digest ModelFingerprint(const Sha256Digest& weights_identity, const KvLayout& layout);

// WeightsIdentity(model.path()) folded with LayoutOf(model, block_size).
Result<Sha256Digest> ModelFingerprint(const Model& model, int64_t block_size);

}  // namespace llmhost
