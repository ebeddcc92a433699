// Tensor parallelism on CPU backends standing in for GPUs (the in-process
// collective): a model split over 2 or 4 ranks gives the logits of the
// unsplit model within the reference path's bound and the same greedy tokens,
// on every fixture architecture and weight format that splits (the others are
// refused with a message naming the dimension); rows stay batch invariant;
// the sharded KV cache's blocks go out and back in whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/device.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/tensor_parallel.h"
#include "model/weight_slice.h"
#include "model_test_util.h"
#include "test_util.h"
#include "util/file.h"
#include "util/thread_pool.h"

namespace llmhost::tensor_parallel_test {
namespace {

// `n` CPU backends at the reference precision, each with a pool of its own.
struct Ranks {
  explicit Ranks(int n) {
    for (int r = 0; r < n; ++r) {
      pools.push_back(std::make_unique<ThreadPool>(1));
      backends.push_back(std::make_unique<CpuBackend>(pools.back().get(), Precision::kReference));
      ptrs.push_back(backends.back().get());
    }
  }
  std::vector<std::unique_ptr<ThreadPool>> pools;
  std::vector<std::unique_ptr<CpuBackend>> backends;
  std::vector<Backend*> ptrs;
};

std::unique_ptr<Model> LoadOn(const std::string& path, Ranks& ranks) {
  auto m = Model::Load(path, std::span<Backend* const>(ranks.ptrs));
  EXPECT_TRUE(m.ok()) << path << ": " << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

// Every position's logits of `tokens`, then `steps` greedy tokens.
struct GenRun {
  std::vector<float> logits;
  std::vector<int32_t> greedy;
};
GenRun Generate(Model& m, const std::vector<int32_t>& tokens, int steps) {
  GenRun run;
  auto cache = m.CreateKvCache(2, 16);
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  if (!cache.ok()) return run;
  KvSequence seq;
  ForwardItem item{&seq, tokens, LogitsRows::kAll};
  ForwardOutput out;
  Status st = m.Forward({&item, 1}, **cache, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return run;
  run.logits = std::vector<float>(out.logits);
  const int64_t V = out.vocab;
  int32_t next = static_cast<int32_t>(std::max_element(out.Row(0, static_cast<int64_t>(tokens.size()) - 1),
                                                       out.Row(0, static_cast<int64_t>(tokens.size()) - 1) + V) -
                                      out.Row(0, static_cast<int64_t>(tokens.size()) - 1));
  for (int s = 0; s < steps; ++s) {
    run.greedy.push_back(next);
    ForwardItem step{&seq, {&run.greedy.back(), 1}, LogitsRows::kLast};
    st = m.Forward({&step, 1}, **cache, &out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) break;
    next = static_cast<int32_t>(std::max_element(out.Row(0, 0), out.Row(0, 0) + V) - out.Row(0, 0));
  }
  return run;
}

// max over rows of max|a - b| / max|b| (the golden tests' measure).
double WorstRowError(const std::vector<float>& a, const std::vector<float>& b, int64_t vocab) {
  double worst = 0;
  for (size_t r = 0; r * vocab < b.size(); ++r) {
    double diff = 0, scale = 1e-30;
    for (int64_t v = 0; v < vocab; ++v) {
      const size_t i = r * static_cast<size_t>(vocab) + static_cast<size_t>(v);
      diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
      scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

const std::vector<int32_t> kPrompt = {1, 15, 27, 200, 31, 7, 99, 64, 12, 250, 3, 42};

// Split over `n` ranks vs whole: the logits within 1e-4 (the sums of a row-
// parallel matmul are added in another order), the greedy tokens equal.
void ExpectSplitMatchesWhole(const std::string& path, int n) {
  SCOPED_TRACE(path + " over " + std::to_string(n) + " ranks");
  Ranks one(1), many(n);
  auto whole = LoadOn(path, one);
  auto split = LoadOn(path, many);
  ASSERT_TRUE(whole && split);
  EXPECT_EQ(split->tensor_parallel(), n);
  EXPECT_EQ(split->vocab_size(), whole->vocab_size());
  const GenRun a = Generate(*whole, kPrompt, 8), b = Generate(*split, kPrompt, 8);
  ASSERT_EQ(a.logits.size(), b.logits.size());
  ASSERT_FALSE(a.logits.empty());
  EXPECT_LE(WorstRowError(b.logits, a.logits, whole->vocab_size()), 1e-4);
  EXPECT_EQ(a.greedy, b.greedy);
}

std::string Fixture(const std::string& name) { return testing::ModelsRoot() + "/" + name; }

TEST(TensorParallelTest, FixturesSplitOverTwoRanksGiveTheWholeModelsTokens) {
  for (const char* name : {"llama3-tiny", "llama3-tiny-mlx4", "llama3-tiny-sharded", "qwen2-tiny", "qwen3-tiny",
                           "phi3-tiny", "gemma3-tiny", "mistral-tiny-swa", "qwen3moe-tiny"}) {
    ExpectSplitMatchesWhole(Fixture(name), 2);
  }
  ExpectSplitMatchesWhole(Fixture("llama-tiny-gguf/llama-tiny-q4_0.gguf"), 2);
  // 4 ranks over 2 KV heads: each head kept by two ranks, each with half its query heads.
  for (const char* name : {"llama3-tiny", "qwen2-tiny", "phi3-tiny", "qwen3moe-tiny"}) ExpectSplitMatchesWhole(Fixture(name), 4);
}

TEST(TensorParallelTest, RandomModelsOfEveryFormatSplit) {
  testing::ScopedTempDir dir;
  // 8 query heads over 4 KV heads: 2 and 4 ranks; groups of 32 columns.
  const std::string config = dir.Sub("tp.json");
  ASSERT_TRUE(WriteFileAtomic(config, R"({"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 8,
      "num_key_value_heads": 4, "intermediate_size": 256, "vocab_size": 301})").ok());
  for (const char* dtype : {"bf16", "mlx4", "mlx8", "gptq4", "awq4", "w4a16"}) {
    const std::string spec = RandomModelSpecString("llama", dtype, 32, config, 3);
    ExpectSplitMatchesWhole(spec, 2);
    ExpectSplitMatchesWhole(spec, 4);
  }
  // FP8's 128x128 blocks: down_proj's 256 columns split in two, not in four.
  ExpectSplitMatchesWhole(RandomModelSpecString("llama", "fp8", 32, config, 3), 2);
  ExpectSplitMatchesWhole(RandomModelSpecString("qwen3", "bf16", 32, config, 4), 4);
  // 8 ranks over 4 KV heads (each kept by two ranks).
  ExpectSplitMatchesWhole(RandomModelSpecString("llama", "bf16", 32, config, 5), 8);
}

TEST(TensorParallelTest, WhatDoesNotSplitIsRefusedWithTheReason) {
  Ranks three(3), two(2);
  auto heads = Model::Load(Fixture("llama3-tiny"), std::span<Backend* const>(three.ptrs));
  ASSERT_FALSE(heads.ok());
  EXPECT_NE(heads.status().message().find("key/value heads (2)"), std::string::npos) << heads.status().ToString();
  // o_proj's 128 input columns in groups of 128 cannot be halved.
  testing::ScopedTempDir dir;
  const std::string config = dir.Sub("tp.json");
  ASSERT_TRUE(WriteFileAtomic(config, R"({"hidden_size": 128, "num_hidden_layers": 1, "num_attention_heads": 8,
      "num_key_value_heads": 4, "intermediate_size": 256, "vocab_size": 301})").ok());
  auto groups = Model::Load(RandomModelSpecString("llama", "mlx8", 128, config, 1), std::span<Backend* const>(two.ptrs));
  ASSERT_FALSE(groups.ok());
  EXPECT_NE(groups.status().message().find("o_proj: tensor parallel rank 0 of 2: columns [0, 64) do not start and end "
                                           "on a scale group of 128 columns"),
            std::string::npos)
      << groups.status().ToString();
  // A scripted test model stays on one device.
  auto scripted = Model::Load(testing::TestDataDir() + "/no-such-model", std::span<Backend* const>(two.ptrs));
  ASSERT_FALSE(scripted.ok());
  EXPECT_EQ(scripted.status().code(), StatusCode::kNotFound);
}

TEST(TensorParallelTest, RowsAreBatchInvariantAndBlocksRoundTrip) {
  Ranks ranks(2);
  auto m = LoadOn(Fixture("llama3-tiny"), ranks);
  ASSERT_TRUE(m);
  auto cache = m->CreateKvCache(8, 16);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->ranks(), 2);
  EXPECT_EQ((*cache)->kv_dim(), m->spec().kv_dim() / 2);
  // Alone, then beside another sequence in one batch: the same bits.
  KvSequence alone, a, b;
  const std::vector<int32_t> other = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};
  ForwardItem item{&alone, kPrompt, LogitsRows::kAll};
  ForwardOutput solo, pair;
  ASSERT_TRUE(m->Forward({&item, 1}, **cache, &solo).ok());
  ForwardItem items[] = {{&b, other, LogitsRows::kAll}, {&a, kPrompt, LogitsRows::kAll}};
  ASSERT_TRUE(m->Forward(items, **cache, &pair).ok());
  const int64_t V = m->vocab_size();
  ASSERT_EQ(pair.n_rows[1], static_cast<int64_t>(kPrompt.size()));
  EXPECT_EQ(std::memcmp(pair.Row(1, 0), solo.Row(0, 0), kPrompt.size() * V * sizeof(float)), 0);

  // A full block of `a` read out (every rank's shard) and written into a
  // fresh block: a sequence on the copy continues as `a` does.
  std::vector<uint8_t> block((*cache)->block_bytes());
  EXPECT_EQ(block.size(), 2u * 2 * m->spec().n_layers * 16 * (*cache)->kv_dim() * sizeof(float));
  ASSERT_TRUE((*cache)->ReadBlock(a.block_table[0], block.data()).ok());
  auto fresh = (*cache)->allocator().Allocate();
  ASSERT_TRUE(fresh.has_value());
  (*cache)->WriteBlock(*fresh, block.data());
  KvSequence copy;
  copy.block_table = {*fresh};
  copy.length = 12;  // positions 0..11 of the first block
  KvSequence orig = (*cache)->Fork(a, 12);
  const int32_t next[] = {77};
  ForwardItem on_copy{&copy, next, LogitsRows::kLast}, on_orig{&orig, next, LogitsRows::kLast};
  ForwardOutput x, y;
  ASSERT_TRUE(m->Forward({&on_copy, 1}, **cache, &x).ok());
  ASSERT_TRUE(m->Forward({&on_orig, 1}, **cache, &y).ok());
  EXPECT_EQ(std::memcmp(x.Row(0, 0), y.Row(0, 0), V * sizeof(float)), 0);
}

// On GPUs (NCCL between them): the fixtures split over 2 GPUs give the
// one-GPU run's logits within the bound and its greedy tokens, at the
// reference precision and at serve's `auto`. Skipped with fewer than 2 GPUs.
TEST(TensorParallelTest, SplitOverTwoGpusMatchesOneGpu_Cuda) {
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs 2 GPUs (" << CudaDeviceCount() << " here)";
  for (Precision p : {Precision::kReference, Precision::kAuto}) {
    for (const char* name : {"llama3-tiny", "qwen3-tiny", "phi3-tiny", "gemma3-tiny", "qwen3moe-tiny"}) {
      SCOPED_TRACE(std::string(name) + " precision " + std::to_string(static_cast<int>(p)));
      auto one = MakeBackends(DeviceSpec{DeviceKind::kCuda, 0}, 1, p, nullptr);
      auto two = MakeBackends(DeviceSpec{DeviceKind::kCuda, 0}, 2, p, nullptr);
      ASSERT_TRUE(one.ok() && two.ok()) << (one.ok() ? two.status() : one.status()).ToString();
      std::vector<Backend*> r1 = {(*one)[0].get()}, r2 = {(*two)[0].get(), (*two)[1].get()};
      auto whole = Model::Load(Fixture(name), std::span<Backend* const>(r1));
      auto split = Model::Load(Fixture(name), std::span<Backend* const>(r2));
      ASSERT_TRUE(whole.ok() && split.ok()) << (whole.ok() ? split.status() : whole.status()).ToString();
      const GenRun a = Generate(**whole, kPrompt, 8), b = Generate(**split, kPrompt, 8);
      ASSERT_EQ(a.logits.size(), b.logits.size());
      EXPECT_LE(WorstRowError(b.logits, a.logits, (*whole)->vocab_size()), p == Precision::kReference ? 1e-4 : 1e-2);
      EXPECT_EQ(a.greedy, b.greedy);
    }
  }
}

TEST(TensorParallelTest, VocabularyRowsCoverEveryIdOnce) {
  for (int64_t vocab : {300, 301, 907, 32000, 128256}) {
    for (int n : {2, 3, 4, 8}) {
      int64_t at = 0;
      for (int r = 0; r < n; ++r) {
        const RowRange rows = VocabRows(vocab, r, n);
        EXPECT_EQ(rows.begin, at);
        EXPECT_GT(rows.end, rows.begin);
        at = rows.end;
      }
      EXPECT_EQ(at, vocab);
    }
  }
}

}  // namespace
}  // namespace llmhost::tensor_parallel_test
