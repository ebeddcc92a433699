// How an encoder's token states become one vector: the sentence-transformers
// layout of a model directory.
//
//   modules.json           [{"type": "sentence_transformers.models.Pooling",
//                             "path": "1_Pooling"}, {"type": "...Normalize"}, ...]
//   1_Pooling/config.json  {"pooling_mode_cls_token": true, ...}
//
// The rule when those files are absent:
//   - pooling_config.json in the directory (the shared bert fixture's
//     stand-in, same keys as 1_Pooling/config.json): its mode, normalized
//     (it stands for the Pooling + Normalize pair of the real layout);
//   - neither: mean pooling (what sentence-transformers builds for a bare
//     transformer), normalized (unit vectors, as OpenAI's API returns).
// A modules.json without a Pooling module means mean pooling too; it
// normalizes only with a Normalize module.
// Exactly one of cls / mean / last-token may be set; the other modes
// (max, mean_sqrt_len, weighted mean), combinations, and modules other than
// Transformer / Pooling / Normalize (Dense) are NotSupported.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/status.h"

namespace llmhost {

enum class PoolingMode { kCls, kMean, kLastToken };

struct EncoderPooling {
  PoolingMode mode = PoolingMode::kMean;
  bool normalize = true;
  bool include_prompt = true;  // the Pooling config's include_prompt: false keeps a prompt out of the mean
};

Result<EncoderPooling> LoadEncoderPooling(const std::string& dir);

// One sequence's vector from its states [len, dim] (len >= 1), L2-normalized
// (v / max(‖v‖, 1e-12)) when `pooling.normalize`. A mean is over rows
// [mean_from, len) (none left: zeros, as sentence-transformers' masked mean).
std::vector<float> PoolStates(std::span<const float> states, int64_t len, int64_t dim,
                              const EncoderPooling& pooling, int64_t mean_from = 0);

}  // namespace llmhost
