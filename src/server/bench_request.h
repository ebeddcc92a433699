// The body of POST /admin/api/bench, checked: which model to measure and the
// run's size, bounded so that one request cannot tie the server up for long
// or queue more streams than an engine takes.
//   {"model": "qwen3-8b",          required: a model's id or alias
//    "prompt_tokens": 512,         the prefill prompt, about: 8 .. 16384
//    "max_tokens": 64,             tokens each decode stream generates: 2 .. 2048
//    "concurrency": [1, 4]}        1 .. 6 levels, each 1 .. 32 streams
// Unknown fields are refused (a misspelt bound would silently not apply).
#pragma once

#include <string>

#include "engine/bench_run.h"
#include "server/json_fields.h"

namespace llmhost::server {

inline constexpr int64_t kBenchMaxPromptTokens = 16384;
inline constexpr int64_t kBenchMaxDecodeTokens = 2048;
inline constexpr size_t kBenchMaxLevels = 6;
inline constexpr int kBenchMaxConcurrency = 32;

struct BenchRequest {
  std::string model;
  BenchParams params;
};

// A 400 naming the field at fault, or the request.
MaybeError ParseBenchRequest(const OJson& body, BenchRequest* out);

// The parameters as the request spells them (for stored results).
OJson BenchParamsJson(const BenchParams& params);

}  // namespace llmhost::server
