// RoPE inverse frequencies for every rope type transformers knows (default,
// linear, dynamic NTK, YaRN, llama3, LongRoPE), computed as its
// modeling_rope_utils does, so that positions rotate by the same angles.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/hf_config.h"
#include "util/status.h"

namespace llmhost {

struct RopeFrequencies {
  std::vector<float> inv_freq;   // rot_dim / 2 values
  float attention_scaling = 1;   // multiplies cos and sin (YaRN, LongRoPE)
  int64_t rot_dim = 0;           // rotated dimensions of a head (partial rotary)
};

// True when the frequencies change with the sequence length: dynamic NTK
// (beyond max_position_embeddings) and LongRoPE (short/long factors). As in
// transformers, the length is that of the step's longest position + 1.
bool RopeDependsOnLength(const RopeConfig& rope);

// Frequencies for a head of `head_dim` values. `max_position_embeddings` is
// the config's; `seq_len` matters only where RopeDependsOnLength (0 = at
// initialization, as transformers before its first forward).
// InvalidArgument for an unsupported type ("other") or inconsistent values.
Result<RopeFrequencies> ComputeRopeFrequencies(const RopeConfig& rope, int64_t head_dim,
                                               int64_t max_position_embeddings, int64_t seq_len);

}  // namespace llmhost
