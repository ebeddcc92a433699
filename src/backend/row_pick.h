// RowPick: how one logits row's token is chosen where the logits are
// (Backend::PickRows), so that a step sends back ids instead of rows of a
// whole vocabulary. The sampler's filters with nothing before them (no
// penalty, bias, mask or logprobs): temperature, then top_k, top_p, min_p,
// and a draw at `u`.
#pragma once

#include <cstdint>

namespace llmhost {

// Largest top_k a backend picks by itself; a larger one is drawn on the host.
inline constexpr int32_t kMaxPickTopK = 1024;

struct RowPick {
  double temperature = 0;  // 0: greedy (the lowest id of the largest logit)
  double top_p = 1;        // (0, 1]; 1: off
  double min_p = 0;        // [0, 1]; 0: off
  double u = 0;            // the request's uniform draw in [0, 1) for this token (not read when greedy)
  int32_t top_k = 0;       // 0: off; at most kMaxPickTopK
  int32_t reserved = 0;
};
static_assert(sizeof(RowPick) == 40, "RowPick is copied to devices as it is");

}  // namespace llmhost
