// Sampling cost per token on one core, for 32K, 128K and 152K vocabularies
// (Llama-2 / Mistral, Llama-3, Qwen), by setting: greedy; temperature 1 with
// top_p 0.95 (what a request without sampling fields gets from a model
// without generation_config.json); top_k 20; temperature 0.7 + top_p 0.8 +
// min_p 0.05 + repetition and presence penalties over 2,000 prompt tokens;
// logprobs with 5 alternatives. Logits: N(0, 2²) with 20 spikes of +8..12
// (a peaked row, as real models give) and, separately, N(0, 0.5²) (a flat
// row: random-weight models, the worst case for top_p). Each figure is the
// median of 300 Sample() calls on fresh rows (thread CPU time would be the
// same: one thread).
//
// Then a batched step's draws: 8 / 32 / 128 rows of T=1 top_p=0.95 (peaked),
// a Sampler each, drawn one after another on one thread and over a
// ThreadPool of --threads (default: the machine's) as the scheduler's
// sample pool does (SchedulerOptions::sample_pool): ms per step, median of
// 30, and the ratio.
//
// Usage: sampler_bench [--reps N] [--threads N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "engine/sampler.h"
#include "util/thread_pool.h"

namespace {

using llmhost::bench::Now;

std::vector<std::vector<float>> Rows(int64_t vocab, bool peaked, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, peaked ? 2.0f : 0.5f);
  std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
  std::uniform_real_distribution<float> spike(8.0f, 12.0f);
  std::vector<std::vector<float>> rows(static_cast<size_t>(count), std::vector<float>(static_cast<size_t>(vocab)));
  for (auto& r : rows) {
    for (float& v : r) v = normal(rng);
    if (peaked) {
      for (int i = 0; i < 20; ++i) r[static_cast<size_t>(pick(rng))] += spike(rng);
    }
  }
  return rows;
}

struct Setting {
  const char* name;
  llmhost::SamplingParams p;
  bool prompt;  // 2,000 prompt tokens for the repetition penalty
};

// A step's draws, one Sampler a row, on one thread and over the pool.
void BatchedStep(int threads) {
  llmhost::ThreadPool pool(threads);
  std::printf("\nA step's draws, T=1 top_p=0.95, peaked rows: ms a step, one thread / %d threads (ratio)\n\n",
              pool.size());
  std::printf("| rows | 32000 | 128256 | 151936 |\n|---|---|---|---|\n");
  const int64_t vocabs[] = {32000, 128256, 151936};
  for (int n : {8, 32, 128}) {
    std::printf("| %d |", n);
    for (int64_t v : vocabs) {
      const std::vector<std::vector<float>> rows = Rows(v, true, n, 12);
      std::vector<llmhost::Sampler> samplers;
      llmhost::SamplingParams p;
      p.top_p = 0.95;
      for (int i = 0; i < n; ++i) {
        p.seed = static_cast<uint64_t>(i);
        samplers.emplace_back(p, std::vector<int32_t>{}, v);
      }
      std::vector<int32_t> ids(static_cast<size_t>(n));
      auto median_ms = [&](bool pooled) {
        std::vector<double> t;
        for (int r = 0; r < 33; ++r) {
          const double t0 = Now();
          auto draw = [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) ids[static_cast<size_t>(i)] = samplers[static_cast<size_t>(i)].Sample(rows[static_cast<size_t>(i)].data()).id;
          };
          if (pooled) {
            pool.ParallelFor(n, 1, draw);
          } else {
            draw(0, n);
          }
          if (r >= 3) t.push_back(Now() - t0);
        }
        std::nth_element(t.begin(), t.begin() + static_cast<ptrdiff_t>(t.size() / 2), t.end());
        return t[t.size() / 2] * 1e3;
      };
      const double one = median_ms(false), many = median_ms(true);
      std::printf(" %.2f / %.2f (%.1fx) |", one, many, one / many);
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 300, threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (std::string(argv[i]) == "--threads" && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
  }
  std::vector<Setting> settings;
  {
    Setting s{"greedy", {}, false};
    s.p.temperature = 0;
    settings.push_back(s);
  }
  {
    Setting s{"T=1 top_p=0.95", {}, false};
    s.p.top_p = 0.95;
    settings.push_back(s);
  }
  {
    Setting s{"T=1 top_k=20", {}, false};
    s.p.top_k = 20;
    settings.push_back(s);
  }
  {
    Setting s{"T=0.7 p=0.8 min_p=0.05 pen", {}, true};
    s.p.temperature = 0.7;
    s.p.top_p = 0.8;
    s.p.min_p = 0.05;
    s.p.repetition_penalty = 1.1;
    s.p.presence_penalty = 0.5;
    settings.push_back(s);
  }
  {
    Setting s{"T=1 p=0.95 logprobs 5", {}, false};
    s.p.top_p = 0.95;
    s.p.logprobs = true;
    s.p.top_logprobs = 5;
    settings.push_back(s);
  }
  std::printf("sampler_bench: median us per Sample() over %d rows, one thread\n\n", reps);
  std::printf("| setting | row | 32000 | 128256 | 151936 |\n|---|---|---|---|---|\n");
  const int64_t vocabs[] = {32000, 128256, 151936};
  for (bool peaked : {true, false}) {
    std::vector<std::vector<std::vector<float>>> rows;
    for (int64_t v : vocabs) rows.push_back(Rows(v, peaked, 32, 11));
    for (const Setting& s : settings) {
      std::printf("| %s | %s |", s.name, peaked ? "peaked" : "flat");
      for (size_t vi = 0; vi < 3; ++vi) {
        std::vector<int32_t> prompt;
        for (int i = 0; s.prompt && i < 2000; ++i) prompt.push_back(static_cast<int32_t>((i * 7919) % vocabs[vi]));
        llmhost::SamplingParams p = s.p;
        p.seed = 1;
        llmhost::Sampler sampler(p, prompt, vocabs[vi]);
        std::vector<double> t;
        int64_t sink = 0;
        for (int r = 0; r < reps + 10; ++r) {
          const std::vector<float>& row = rows[vi][static_cast<size_t>(r) % rows[vi].size()];
          const double t0 = Now();
          sink += sampler.Sample(row.data()).id;
          if (r >= 10) t.push_back(Now() - t0);
        }
        std::nth_element(t.begin(), t.begin() + static_cast<ptrdiff_t>(t.size() / 2), t.end());
        std::printf(" %.0f |", t[t.size() / 2] * 1e6 + static_cast<double>(sink % 1));
      }
      std::printf("\n");
    }
  }
  BatchedStep(threads);
  return 0;
}
