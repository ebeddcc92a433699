// Sampler: greedy ties, seed reproducibility, the top_k / top_p / min_p
// masks (which ids can ever be drawn), penalties against hand-computed
// logits, logprobs (a full distribution sums to 1, matches log_softmax),
// and validation messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "engine/sampler.h"

namespace llmhost::sampler_test {
namespace {

// Draws `n` tokens from the same logits (penalties off) and returns the set.
std::set<int32_t> Support(const SamplingParams& p, const std::vector<float>& logits, int n = 3000) {
  Sampler s(p, {}, static_cast<int64_t>(logits.size()));
  std::set<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.insert(s.Sample(logits.data()).id);
  return ids;
}

TEST(SamplerTest, GreedyTakesTheLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0;
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  Sampler s(p, {}, 5);
  EXPECT_EQ(s.Sample(l.data()).id, 1);
  EXPECT_EQ(s.Sample(l.data()).id, 1);
  // Greedy ignores the filters.
  p.top_k = 1;
  p.top_p = 0.1;
  Sampler s2(p, {}, 5);
  EXPECT_EQ(s2.Sample(l.data()).id, 1);
}

TEST(SamplerTest, SeedReproducesAndDiffers) {
  std::vector<float> l(50);
  for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(std::sin(i * 1.7) * 2);
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 1234;
  auto draw = [&](const SamplingParams& q) {
    Sampler s(q, {}, 50);
    std::vector<int32_t> ids;
    for (int i = 0; i < 64; ++i) ids.push_back(s.Sample(l.data()).id);
    return ids;
  };
  const std::vector<int32_t> a = draw(p), b = draw(p);
  EXPECT_EQ(a, b);
  SamplingParams q = p;
  q.seed = 1235;
  EXPECT_NE(draw(q), a);
  // Not a constant sequence: sampling really happened.
  EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 5u);
}

TEST(SamplerTest, TopKKeepsTheKMostLikely) {
  const std::vector<float> l = {1.0f, 5.0f, 3.0f, 4.0f, 2.0f, 0.0f};
  SamplingParams p;
  p.temperature = 5.0;  // flat: every kept id shows up
  p.seed = 1;
  p.top_k = 3;
  EXPECT_EQ(Support(p, l), (std::set<int32_t>{1, 2, 3}));
  p.top_k = 1;
  EXPECT_EQ(Support(p, l), (std::set<int32_t>{1}));
  p.top_k = 0;  // off
  EXPECT_EQ(Support(p, l).size(), 6u);
}

TEST(SamplerTest, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.5, 0.25, 0.125, 0.0625, 0.0625 (logits are log p).
  const std::vector<float> l = {std::log(0.125f), std::log(0.5f), std::log(0.0625f),
                                std::log(0.25f), std::log(0.0625f)};
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 2;
  p.top_p = 0.7;  // 0.5 < 0.7 -> keep the 0.25 too; 0.75 >= 0.7 -> stop
  EXPECT_EQ(Support(p, l), (std::set<int32_t>{1, 3}));
  p.top_p = 0.45;  // the first token alone reaches 0.45
  EXPECT_EQ(Support(p, l), (std::set<int32_t>{1}));
  p.top_p = 0.8;
  EXPECT_EQ(Support(p, l), (std::set<int32_t>{0, 1, 3}));
  // With top_k first: top_p applies to the renormalised top 2 (2/3, 1/3).
  p.top_k = 2;
  p.top_p = 0.6;
  EXPECT_EQ(Support(p, l), (std::set<int32_t>{1}));
}

TEST(SamplerTest, TopPOverALargeVocabularySortsPastTheFirstWindow) {
  // 1000 equal logits: top_p 0.5 must keep exactly 500 of them (more than
  // the 64 sorted first), the lowest ids on ties.
  std::vector<float> l(1000, 0.0f);
  SamplingParams p;
  p.seed = 3;
  p.top_p = 0.5;
  const std::set<int32_t> ids = Support(p, l, 5000);
  EXPECT_LE(*ids.rbegin(), 499);
  EXPECT_GT(ids.size(), 450u);
}

TEST(SamplerTest, TopPTiesOfSignedZerosGoByIdAlone) {
  // -0 and +0 are equal logits: the lowest ids are kept, whatever their sign.
  std::vector<float> l(1000);
  for (size_t i = 0; i < l.size(); ++i) l[i] = i % 3 == 0 ? -0.0f : 0.0f;
  SamplingParams p;
  p.seed = 4;
  p.top_p = 0.5;
  const std::set<int32_t> ids = Support(p, l, 5000);
  EXPECT_LE(*ids.rbegin(), 499);
  EXPECT_GT(ids.size(), 450u);
}

// top_p finds its set by bucketing weights, not by sorting: on random rows
// of a large vocabulary every drawn id is in the set a full sort (in double)
// keeps, and every id of that set with at least 0.2% of its mass shows up.
TEST(SamplerTest, TopPMatchesAFullSortOnRandomRows) {
  std::mt19937 rng(9);
  for (float spread : {0.5f, 3.0f}) {
    std::normal_distribution<float> normal(0.0f, spread);
    std::vector<float> l(4000);
    for (float& v : l) v = normal(rng);
    for (int i = 0; i < 10; ++i) l[static_cast<size_t>(i * 399)] += 9.0f;
    for (double temperature : {0.7, 1.0}) {
      for (double top_p : {0.5, 0.9}) {
        // The reference: sort by probability, keep while the mass before is < top_p.
        std::vector<int32_t> order(l.size());
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
        std::vector<double> w(l.size());
        double total = 0;
        for (size_t i = 0; i < l.size(); ++i) total += w[i] = std::exp((l[i] - l[order[0]]) / temperature);
        std::set<int32_t> keep;
        double cum = 0, kept_mass = 0;
        for (int32_t id : order) {
          if (cum >= top_p * total) break;
          cum += w[id];
          keep.insert(id);
        }
        kept_mass = cum;
        SamplingParams p;
        p.seed = 5;
        p.temperature = temperature;
        p.top_p = top_p;
        const std::set<int32_t> drawn = Support(p, l, 8000);
        for (int32_t id : drawn) EXPECT_TRUE(keep.count(id)) << "id " << id << " is outside the top_p set";
        for (int32_t id : keep) {
          if (w[id] / kept_mass >= 0.002) {
            EXPECT_TRUE(drawn.count(id)) << "id " << id << " was never drawn";
          }
        }
      }
    }
  }
}

TEST(SamplerTest, LogitBiasShiftsChosenTokens) {
  const std::vector<float> l = {1.0f, 3.0f, 2.0f, 0.5f};
  SamplingParams p;
  p.temperature = 0;
  p.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(Sampler(p, {}, 4).Sample(l.data()).id, 2) << "the greedy token is banned";
  p.logit_bias = {{3, 100.0f}};
  EXPECT_EQ(Sampler(p, {}, 4).Sample(l.data()).id, 3);
  // Sampling too; logprobs stay those of the raw logits.
  p.temperature = 1.0;
  p.seed = 7;
  p.logit_bias = {{0, -100.0f}, {1, -100.0f}, {2, -100.0f}};
  p.logprobs = true;
  Sampler s(p, {}, 4);
  for (int i = 0; i < 50; ++i) {
    const SampledToken t = s.Sample(l.data());
    EXPECT_EQ(t.id, 3);
    EXPECT_LT(t.logprob, -2.0f);
  }
  SamplingParams bad;
  bad.logit_bias = {{4, 1.0f}};
  EXPECT_NE(ValidateSamplingParams(bad, 4).message().find("token id 4"), std::string::npos);
  EXPECT_TRUE(ValidateSamplingParams(bad).ok()) << "without a vocabulary only the sign is checked";
  bad.logit_bias = {{1, 101.0f}};
  EXPECT_FALSE(ValidateSamplingParams(bad, 4).ok());
  bad.logit_bias = {{-1, 1.0f}};
  EXPECT_FALSE(ValidateSamplingParams(bad, 4).ok());
}

TEST(SamplerTest, MinPIsRelativeToTheMostLikely) {
  // p ∝ 1, 0.5, 0.2, 0.05: min_p 0.3 keeps those >= 0.3 × max.
  const std::vector<float> l = {std::log(0.05f), std::log(1.0f), std::log(0.2f), std::log(0.5f)};
  SamplingParams p;
  p.seed = 4;
  p.min_p = 0.3;
  EXPECT_EQ(Support(p, l), (std::set<int32_t>{1, 3}));
  p.min_p = 0.15;
  EXPECT_EQ(Support(p, l), (std::set<int32_t>{1, 2, 3}));
  p.min_p = 1.0;
  EXPECT_EQ(Support(p, l), (std::set<int32_t>{1}));
}

TEST(SamplerTest, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  // Greedy picks reveal the penalised order. Prompt holds ids 0 and 2.
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0;
  const std::vector<int32_t> prompt = {0, 2};
  // id 0: 3.0 -> 1.5 (below id 1's 2.0); id 2: -0.5 -> -1.0.
  std::vector<float> l = {3.0f, 2.0f, -0.5f, -0.8f};
  Sampler s(p, prompt, 4);
  EXPECT_EQ(s.Sample(l.data()).id, 1);  // now id 1 is in the output too
  // id 1: 2.0 -> 1.0, id 0: 1.5: id 0 wins again.
  EXPECT_EQ(s.Sample(l.data()).id, 0);
  // Negative logits get more negative: -0.8 now beats the penalised -0.5.
  std::vector<float> neg = {-5.0f, -5.0f, -0.5f, -0.8f};
  Sampler s2(p, prompt, 4);
  EXPECT_EQ(s2.Sample(neg.data()).id, 3);
  // Without the penalty, id 2.
  SamplingParams off = p;
  off.repetition_penalty = 1.0;
  Sampler s3(off, prompt, 4);
  EXPECT_EQ(s3.Sample(neg.data()).id, 2);
}

TEST(SamplerTest, PresenceAndFrequencyPenaltiesCountTheOutput) {
  SamplingParams p;
  p.temperature = 0;
  p.frequency_penalty = 0.4;
  const std::vector<float> l = {1.0f, 0.5f, 0.45f};
  const std::vector<int32_t> zeros = {0, 0, 0};
  Sampler s(p, zeros, 3);  // the prompt does not count
  EXPECT_EQ(s.Sample(l.data()).id, 0);  // 1.0
  EXPECT_EQ(s.Sample(l.data()).id, 0);  // 1.0 - 0.4 = 0.6 > 0.5
  EXPECT_EQ(s.Sample(l.data()).id, 1);  // 1.0 - 0.8 = 0.2 < 0.5
  SamplingParams q;
  q.temperature = 0;
  q.presence_penalty = 0.6;
  Sampler t(q, {}, 3);
  EXPECT_EQ(t.Sample(l.data()).id, 0);
  EXPECT_EQ(t.Sample(l.data()).id, 1);  // 0.4 < 0.5
  EXPECT_EQ(t.Sample(l.data()).id, 2);  // 0.4, -0.1, 0.45
  EXPECT_EQ(t.Sample(l.data()).id, 0);  // each present once: 0.4 > -0.1, -0.15
}

TEST(SamplerTest, LogprobsAreTheRawLogSoftmax) {
  const std::vector<float> l = {1.0f, 3.0f, 0.5f, 3.0f, -2.0f};
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = true;
  p.top_logprobs = 5;
  p.repetition_penalty = 1.5;  // penalties do not change the reported logprobs
  const std::vector<int32_t> one = {1};
  Sampler s(p, one, 5);
  const SampledToken t = s.Sample(l.data());
  double lse = 0;
  for (float v : l) lse += std::exp(static_cast<double>(v));
  lse = std::log(lse);
  EXPECT_EQ(t.id, 3);  // id 1 was penalised (3 / 1.5)
  EXPECT_NEAR(t.logprob, 3.0 - lse, 1e-5);
  ASSERT_EQ(t.top.size(), 5u);
  double sum = 0;
  for (const TokenLogprob& e : t.top) sum += std::exp(static_cast<double>(e.logprob));
  EXPECT_NEAR(sum, 1.0, 1e-5);
  EXPECT_EQ(t.top[0].id, 1);  // tie with id 3: the lower id first
  EXPECT_EQ(t.top[1].id, 3);
  EXPECT_EQ(t.top[2].id, 0);
  EXPECT_EQ(t.top[4].id, 4);
  EXPECT_NEAR(t.top[4].logprob, -2.0 - lse, 1e-5);
  // Only the chosen one without top_logprobs.
  p.top_logprobs = 0;
  Sampler s2(p, {}, 5);
  EXPECT_TRUE(s2.Sample(l.data()).top.empty());
}

TEST(SamplerTest, NonFiniteLogitsAndTinyTemperatures) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> l = {NAN, 1.0f, inf, -inf, 2.0f};
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = true;
  p.top_logprobs = 2;
  Sampler g(p, {}, 5);
  const SampledToken t = g.Sample(l.data());
  EXPECT_EQ(t.id, 2);  // +inf is the most likely; NaN counts as -inf
  EXPECT_EQ(t.top[0].id, 2);
  // A temperature so small that 1 / T overflows: still the argmax.
  p.temperature = 1e-320;
  p.seed = 5;
  Sampler tiny(p, {}, 5);
  const std::vector<float> finite = {0.5f, 1.0f, 3.0f, 2.9f, -1.0f};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(tiny.Sample(finite.data()).id, 2);
  // Nothing finite at all: some id, no crash.
  const std::vector<float> none = {NAN, NAN, -inf};
  p.temperature = 1;
  Sampler n(p, {}, 3);
  const int32_t id = n.Sample(none.data()).id;
  EXPECT_GE(id, 0);
  EXPECT_LT(id, 3);
}

TEST(SamplerTest, PlainGreedyPicksAsTheCleanedRowDoes) {
  // Greedy alone reads the raw row; with logprobs on it samples the cleaned
  // copy. Both must pick the same ids, NaN and infinities included.
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 2.0f);
  SamplingParams plain;
  plain.temperature = 0;
  SamplingParams cleaned = plain;
  cleaned.logprobs = true;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> l(static_cast<size_t>(1 + trial * 7));
    for (float& x : l) x = d(rng);
    for (int j = trial % 5; j > 0; --j) {
      const float specials[] = {NAN, inf, -inf};
      l[rng() % l.size()] = specials[rng() % 3];
    }
    if (trial % 11 == 0) std::fill(l.begin(), l.end(), -inf);
    const auto n = static_cast<int64_t>(l.size());
    Sampler a(plain, {}, n), b(cleaned, {}, n);
    EXPECT_EQ(a.Sample(l.data()).id, b.Sample(l.data()).id) << "trial " << trial;
  }
}

TEST(SamplerTest, ValidationNamesTheField) {
  SamplingParams p;
  EXPECT_TRUE(ValidateSamplingParams(p).ok());
  auto bad = [](auto edit, const std::string& field) {
    SamplingParams q;
    edit(q);
    Status st = ValidateSamplingParams(q);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(st.message().find(field), std::string::npos) << st.message();
  };
  bad([](SamplingParams& q) { q.temperature = -0.1; }, "temperature");
  bad([](SamplingParams& q) { q.temperature = NAN; }, "temperature");
  bad([](SamplingParams& q) { q.top_p = 0; }, "top_p");
  bad([](SamplingParams& q) { q.top_p = 1.5; }, "top_p");
  bad([](SamplingParams& q) { q.top_k = -1; }, "top_k");
  bad([](SamplingParams& q) { q.min_p = 2; }, "min_p");
  bad([](SamplingParams& q) { q.repetition_penalty = 0; }, "repetition_penalty");
  bad([](SamplingParams& q) { q.presence_penalty = 3; }, "presence_penalty");
  bad([](SamplingParams& q) { q.frequency_penalty = -2.5; }, "frequency_penalty");
  bad([](SamplingParams& q) { q.top_logprobs = 21; }, "top_logprobs");
}

}  // namespace
}  // namespace llmhost::sampler_test
