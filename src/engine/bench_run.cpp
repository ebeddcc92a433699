#include "engine/bench_run.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <sstream>
#include <thread>

namespace llmhost {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kWarmWords = 64;
constexpr int64_t kShortWords = 32;  // the decode and concurrency prompts

// About `words` tokens of text: common words (one token each in most
// vocabularies) after a random one that keeps caches from matching.
std::string PromptText(int64_t words, std::mt19937_64& rng) {
  static constexpr const char* kWords[] = {"the", "time",  "people", "water", "year", "way",  "day",
                                           "man", "thing", "world",  "life",  "hand", "part", "child",
                                           "eye", "place", "work",   "week",  "case", "point"};
  std::ostringstream out;
  out << "bench" << rng() % 1000000;
  for (int64_t i = 1; i < words; ++i) out << ' ' << kWords[rng() % (sizeof kWords / sizeof *kWords)];
  return out.str();
}

double PerSecond(double n, double seconds) { return seconds > 0 ? n / seconds : 0; }

BenchLevel Sweep(const BenchStreamFn& stream, int concurrency, int64_t max_tokens, std::mt19937_64& rng,
                 std::string* error) {
  std::vector<std::string> prompts;
  for (int i = 0; i < concurrency; ++i) prompts.push_back(PromptText(kShortWords, rng));
  std::vector<BenchSample> samples(concurrency);
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < concurrency; ++i) {
    threads.emplace_back([&, i] { samples[i] = stream(prompts[i], max_tokens); });
  }
  for (std::thread& t : threads) t.join();
  BenchLevel l;
  l.concurrency = concurrency;
  l.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  for (const BenchSample& s : samples) {
    if (!s.error.empty()) *error = s.error;
    l.generated_tokens += s.completion_tokens;
    l.mean_ttft_s += s.ttft_s / concurrency;
  }
  return l;
}

}  // namespace

double BenchResult::prefill_tokens_per_s() const {
  return PerSecond(static_cast<double>(prefill.prompt_tokens - prefill.cached_tokens), prefill.ttft_s);
}

double BenchResult::decode_tokens_per_s() const {
  return PerSecond(static_cast<double>(decode.completion_tokens - 1), decode.decode_s);
}

Result<BenchResult> RunBench(const BenchParams& params, const BenchStreamFn& stream,
                             const std::function<void(const BenchProgress&)>& progress,
                             const std::atomic<bool>* cancel) {
  const int steps = 4 + static_cast<int>(params.concurrency.size());
  int step = 0;
  // Reports the next step; false when the run was cancelled.
  auto next = [&](const std::string& phase) {
    if (cancel && cancel->load()) return false;
    if (progress) progress(BenchProgress{phase, step, steps});
    ++step;
    return true;
  };
  const Status cancelled = Status::ResourceExhausted("cancelled");
  auto failed = [](const std::string& phase, const std::string& error) {
    return Status::Internal(phase + ": " + error);
  };
  std::mt19937_64 rng(std::random_device{}());
  if (!next("warm-up")) return cancelled;
  const BenchSample warm = stream(PromptText(kWarmWords, rng), 1);
  if (!warm.error.empty()) return failed("the warm-up request", warm.error);
  // Words for prompt_tokens tokens, at the warm-up prompt's tokens per word.
  const double tokens_per_word = static_cast<double>(std::max<int64_t>(warm.prompt_tokens, 1)) / kWarmWords;
  const int64_t words =
      std::max<int64_t>(8, static_cast<int64_t>(static_cast<double>(params.prompt_tokens) / tokens_per_word));
  const std::string long_prompt = PromptText(words, rng);

  BenchResult r;
  if (!next("prefill")) return cancelled;
  r.prefill = stream(long_prompt, 1);
  if (!r.prefill.error.empty()) return failed("prefill", r.prefill.error);
  if (!next("cached prefix")) return cancelled;
  r.cached = stream(long_prompt, 1);
  if (!r.cached.error.empty()) return failed("cached prefix", r.cached.error);
  if (!next("decode")) return cancelled;
  r.decode = stream(PromptText(kShortWords, rng), params.decode_tokens);
  if (!r.decode.error.empty()) return failed("decode", r.decode.error);
  for (int c : params.concurrency) {
    const std::string phase = "concurrency " + std::to_string(c);
    if (!next(phase)) return cancelled;
    std::string error;
    r.levels.push_back(Sweep(stream, c, params.decode_tokens, rng, &error));
    if (!error.empty()) return failed(phase, error);
  }
  if (progress) progress(BenchProgress{"done", steps, steps});
  return r;
}

nlohmann::ordered_json BenchResultJson(const BenchResult& r) {
  using Json = nlohmann::ordered_json;
  Json sweep = Json::array();
  for (const BenchLevel& l : r.levels) {
    sweep.push_back({{"concurrency", l.concurrency},
                     {"generated_tokens", l.generated_tokens},
                     {"wall_s", l.wall_s},
                     {"tokens_per_s", PerSecond(static_cast<double>(l.generated_tokens), l.wall_s)},
                     {"mean_ttft_ms", l.mean_ttft_s * 1000}});
  }
  return Json{{"prefill",
               {{"prompt_tokens", r.prefill.prompt_tokens},
                {"cached_tokens", r.prefill.cached_tokens},
                {"ttft_ms", r.prefill.ttft_s * 1000},
                {"tokens_per_s", r.prefill_tokens_per_s()}}},
              {"cached_prefix",
               {{"prompt_tokens", r.cached.prompt_tokens},
                {"cached_tokens", r.cached.cached_tokens},
                {"ttft_ms", r.cached.ttft_s * 1000}}},
              {"decode",
               {{"prompt_tokens", r.decode.prompt_tokens},
                {"ttft_ms", r.decode.ttft_s * 1000},
                {"generated_tokens", r.decode.completion_tokens},
                {"tokens_per_s", r.decode_tokens_per_s()}}},
              {"concurrency", std::move(sweep)}};
}

}  // namespace llmhost
