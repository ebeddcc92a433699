// engine/bench_run.h over a fake stream: the steps in order, the prefill
// prompt sized from the warm-up's tokens per word, the cached step sending
// the same prompt, each concurrency level's streams at once, errors naming
// their step, and cancellation between steps.
#include <atomic>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "engine/bench_run.h"

namespace llmhost::bench_run_test {
namespace {

int64_t Words(const std::string& text) {
  int64_t n = 1;
  for (char c : text) n += c == ' ';
  return n;
}

// Two tokens a word; records every call.
struct FakeStream {
  std::mutex mu;
  std::vector<std::pair<std::string, int64_t>> calls;
  int64_t fail_max_tokens = -1;  // calls for this many tokens fail

  BenchSample operator()(const std::string& prompt, int64_t max_tokens) {
    std::lock_guard<std::mutex> lock(mu);
    calls.emplace_back(prompt, max_tokens);
    BenchSample s;
    s.prompt_tokens = 2 * Words(prompt);
    s.cached_tokens = calls.size() == 3 ? 64 : 0;  // the cached-prefix step
    s.completion_tokens = max_tokens;
    s.ttft_s = 0.25;
    s.decode_s = 0.5;
    if (max_tokens == fail_max_tokens) s.error = "boom";
    return s;
  }
};

BenchStreamFn Fn(FakeStream* f) {
  return [f](const std::string& p, int64_t n) { return (*f)(p, n); };
}

TEST(BenchRun, RunsEveryStepInOrder) {
  FakeStream fake;
  BenchParams params{200, 9, {1, 3}};
  std::vector<std::string> phases;
  Result<BenchResult> r = RunBench(params, Fn(&fake), [&](const BenchProgress& p) {
    phases.push_back(p.phase + " " + std::to_string(p.step) + "/" + std::to_string(p.steps));
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(phases, (std::vector<std::string>{"warm-up 0/6", "prefill 1/6", "cached prefix 2/6", "decode 3/6",
                                              "concurrency 1 4/6", "concurrency 3 5/6", "done 6/6"}));
  ASSERT_EQ(fake.calls.size(), 4u + 1u + 3u);
  EXPECT_EQ(fake.calls[0].second, 1);  // the warm-up: one token out
  // Two tokens a word: about 200 tokens is 100 words.
  EXPECT_EQ(Words(fake.calls[1].first), 100);
  EXPECT_EQ(fake.calls[1].first, fake.calls[2].first) << "the cached step resends the prefill prompt";
  EXPECT_EQ(fake.calls[3].second, 9);
  std::set<std::string> prompts;
  for (const auto& [prompt, max_tokens] : fake.calls) prompts.insert(prompt);
  EXPECT_EQ(prompts.size(), fake.calls.size() - 1) << "every other prompt starts differently";
  EXPECT_EQ(r->prefill.prompt_tokens, 200);
  EXPECT_DOUBLE_EQ(r->prefill_tokens_per_s(), 200 / 0.25);
  EXPECT_EQ(r->cached.cached_tokens, 64);
  EXPECT_DOUBLE_EQ(r->decode_tokens_per_s(), 8 / 0.5);
  ASSERT_EQ(r->levels.size(), 2u);
  EXPECT_EQ(r->levels[1].concurrency, 3);
  EXPECT_EQ(r->levels[1].generated_tokens, 27);
  EXPECT_DOUBLE_EQ(r->levels[1].mean_ttft_s, 0.25);

  const nlohmann::ordered_json j = BenchResultJson(*r);
  EXPECT_EQ(j["cached_prefix"]["cached_tokens"], 64);
  EXPECT_EQ(j["concurrency"][1]["generated_tokens"], 27);
  EXPECT_DOUBLE_EQ(j["prefill"]["ttft_ms"].get<double>(), 250.0);
}

TEST(BenchRun, AnErrorNamesItsStep) {
  FakeStream fake;
  fake.fail_max_tokens = 7;  // the decode step and the sweep
  Result<BenchResult> r = RunBench(BenchParams{64, 7, {2}}, Fn(&fake));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "decode: boom");
}

TEST(BenchRun, StopsBetweenStepsWhenCancelled) {
  FakeStream fake;
  std::atomic<bool> cancel{false};
  Result<BenchResult> r = RunBench(BenchParams{64, 4, {1}}, Fn(&fake),
                                   [&](const BenchProgress& p) { if (p.phase == "prefill") cancel = true; }, &cancel);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "cancelled");
  EXPECT_EQ(fake.calls.size(), 2u) << "the step in progress finishes, no other starts";
}

}  // namespace
}  // namespace llmhost::bench_run_test
