// The measurements of `llmhost bench` and the dashboard's Bench page, over
// any way of streaming one greedy completion (a BenchStreamFn: through a
// server's /v1/completions, or straight into an Engine: engine_bench_stream.h):
//   warm-up        64 words, one token out: loads the model, and gives the
//                  tokens per word, so that the prefill prompt has about
//                  prompt_tokens tokens
//   prefill        that prompt, one token out: uncached tokens / TTFT
//   cached prefix  the same prompt again: TTFT, tokens reused
//   decode         a short prompt, decode_tokens out: tokens after the
//                  first / time between the first and the last
//   concurrency    for each level, that many such requests at once (one
//                  thread each): generated tokens / wall time, mean TTFT
// Prompts start with a random word, so that no earlier run's cache helps.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

struct BenchParams {
  int64_t prompt_tokens = 512;       // the prefill prompt's length, about
  int64_t decode_tokens = 64;        // tokens each decode request generates
  std::vector<int> concurrency = {1, 4};  // streams at once, one level each
};

// One streamed request's figures.
struct BenchSample {
  double ttft_s = 0;    // from the request to the first generated token
  double decode_s = 0;  // from the first generated token to the last
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  std::string error;  // "" when it succeeded
};

// Streams `prompt`, greedy and ignoring EOS, `max_tokens` out. Called from
// several threads at once by the concurrency sweep.
using BenchStreamFn = std::function<BenchSample(const std::string& prompt, int64_t max_tokens)>;

struct BenchLevel {
  int concurrency = 0;
  int64_t generated_tokens = 0;
  double wall_s = 0, mean_ttft_s = 0;
};

struct BenchResult {
  BenchSample prefill, cached, decode;
  std::vector<BenchLevel> levels;
  double prefill_tokens_per_s() const;  // uncached prompt tokens / TTFT
  double decode_tokens_per_s() const;   // one stream's tokens after the first / their time
};

// Where a run is: `step` of `steps` done, now in `phase` ("warm-up",
// "prefill", "cached prefix", "decode", "concurrency N").
struct BenchProgress {
  std::string phase;
  int step = 0, steps = 0;
};

// Runs every measurement in order. An error names the step that failed
// ("prefill: ..."); `cancel` (may be null) is checked between steps
// (ResourceExhausted "cancelled"). `progress` (may be empty) is called before each step, on
// the calling thread.
Result<BenchResult> RunBench(const BenchParams& params, const BenchStreamFn& stream,
                             const std::function<void(const BenchProgress&)>& progress = {},
                             const std::atomic<bool>* cancel = nullptr);

// {"prefill": {prompt_tokens, cached_tokens, ttft_ms, tokens_per_s},
//  "cached_prefix": {prompt_tokens, cached_tokens, ttft_ms},
//  "decode": {generated_tokens, tokens_per_s},
//  "concurrency": [{concurrency, generated_tokens, wall_s, tokens_per_s, mean_ttft_ms}]}
nlohmann::ordered_json BenchResultJson(const BenchResult& result);

}  // namespace llmhost
