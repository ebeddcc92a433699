// A simple generation loop over Model::Forward: prefill the prompt, then
// decode one token at a time (greedy, or temperature sampling with a seed)
// until a stop id or the token budget. The engine's sampler and scheduler
// (issue 4) replace this for serving; the CLI and tests use it.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost {

struct GenerateOptions {
  int64_t max_tokens = 256;
  double temperature = 0;       // <= 0: greedy (ties: lowest id)
  uint64_t seed = 0;
  std::vector<int32_t> stop_ids;  // generation ends after emitting one of these
  DType kv_dtype = DType::kF32;   // the KV cache's element type
};

// Greedy argmax (lowest id on ties), or a draw from softmax(logits / T).
int32_t SampleToken(const float* logits, int64_t vocab, double temperature, std::mt19937_64& rng);

// Runs the prompt (at least one id) and generates up to max_tokens ids;
// `on_token` sees each id as it is produced (a stop id included) and may
// return false to stop. The generated ids are returned.
Result<std::vector<int32_t>> Generate(Model& model, std::span<const int32_t> prompt,
                                      const GenerateOptions& options,
                                      const std::function<bool(int32_t)>& on_token);

// The ids that end generation for this model: generation_config.json's
// eos_token_id(s) and config.json's (or the GGUF file's eos), else the
// tokenizer's eos token (tokenizer_config.json), if any.
std::vector<int32_t> EosTokenIds(const Model& model, const Tokenizer* tokenizer);

}  // namespace llmhost
