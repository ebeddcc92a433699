// The KV cache and the batched step: decoding incrementally (chunks of any
// size, single tokens, several sequences in one batch, blocks of 16 positions
// interleaved between sequences) gives the logits of one full forward pass
// over the whole sequence; forked sequences share blocks and copy on write.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "backend/cpu/cpu_backend.h"
#include "model/model.h"
#include "model/model_test_util.h"

namespace llmhost::incremental_test {
namespace {

using testing::Golden;

// Fixtures with a 300-token prompt crossing sliding windows, MoE, fused
// projections, GGUF interleaved RoPE and MLX weights.
const char* const kFixtures[] = {"llama3-tiny",  "mistral-tiny-swa", "gemma3-tiny",
                                 "qwen3moe-tiny", "phi3-tiny",        "qwen2-tiny",
                                 "qwen3-tiny-mlx8", "llama-tiny-q4_0"};

// Tight: the same arithmetic on both sides, only the batch composition differs.
constexpr double kTolerance = 1e-5;

std::vector<float> FullLogits(Model& m, const std::vector<int32_t>& ids) {
  auto cache = m.CreateKvCache(static_cast<int64_t>(ids.size()) / 256 + 1);
  EXPECT_TRUE(cache.ok());
  KvSequence seq;
  ForwardItem it{&seq, ids, LogitsRows::kAll};
  ForwardOutput out;
  EXPECT_TRUE(m.Forward({&it, 1}, **cache, &out).ok());
  return std::vector<float>(out.logits);
}

struct Case {
  Golden g;
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<Model> model;
};

bool Open(const std::string& name, Precision precision, Case* c) {
  if (!FileExists(testing::GoldenRoot() + "/" + name + ".json")) return false;
  if (!testing::LoadGolden(name, &c->g) || !FileExists(c->g.model_path)) return false;
  c->backend = std::make_unique<CpuBackend>(&ThreadPool::Default(), precision);
  auto m = Model::Load(c->g.model_path, c->backend.get());
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return false;
  c->model = std::move(m).value();
  return true;
}

const testing::GoldenPrompt& Longest(const Golden& g) {
  return *std::max_element(g.prompts.begin(), g.prompts.end(), [](const auto& a, const auto& b) {
    return a.input_ids.size() < b.input_ids.size();
  });
}

class IncrementalTest : public ::testing::TestWithParam<const char*> {};

// Two sequences advance together in every step with different chunk sizes
// (prefill chunks, single-token decodes, mixed), sharing one cache with
// 16-position blocks so that their block tables interleave. Every logits row
// must equal the full forward pass of its own sequence.
void RunIncremental(const char* name, Precision precision) {
  Case c;
  if (!Open(name, precision, &c)) GTEST_SKIP() << name << " not available";
  Model& m = *c.model;
  const std::vector<int32_t>& a = Longest(c.g).input_ids;
  const std::vector<int32_t>& b = c.g.prompts.front().input_ids == a ? c.g.prompts.back().input_ids
                                                                     : c.g.prompts.front().input_ids;
  const std::vector<float> ref_a = FullLogits(m, a), ref_b = FullLogits(m, b);
  const int64_t V = m.vocab_size();
  auto cache = m.CreateKvCache(static_cast<int64_t>(a.size() + b.size()) / 16 + 4, 16);
  ASSERT_TRUE(cache.ok());
  KvSequence sa, sb;
  const int64_t chunks_a[] = {5, 1, 1, 1, 17, 1, 40};
  const int64_t chunks_b[] = {1, 9, 1, 1, 1, 3, 1};
  size_t step = 0;
  double worst = 0;
  while (sa.length < static_cast<int64_t>(a.size()) || sb.length < static_cast<int64_t>(b.size())) {
    std::vector<ForwardItem> items;
    std::vector<const std::vector<float>*> refs;
    std::vector<int64_t> starts;
    auto add = [&](KvSequence& s, const std::vector<int32_t>& ids, int64_t chunk,
                   const std::vector<float>& ref) {
      const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(ids.size()) - s.length);
      if (n <= 0) return;
      items.push_back({&s, std::span<const int32_t>(ids).subspan(s.length, n), LogitsRows::kAll});
      refs.push_back(&ref);
      starts.push_back(s.length);
    };
    // Alternate which sequence comes first in the batch.
    if (step % 2 == 0) {
      add(sa, a, chunks_a[step % 7], ref_a);
      add(sb, b, chunks_b[step % 7], ref_b);
    } else {
      add(sb, b, chunks_b[step % 7], ref_b);
      add(sa, a, chunks_a[step % 7], ref_a);
    }
    ForwardOutput out;
    Status st = m.Forward(items, **cache, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t i = 0; i < items.size(); ++i) {
      for (int64_t j = 0; j < out.n_rows[i]; ++j) {
        const double e = testing::RowRelError(out.Row(i, j), refs[i]->data() + (starts[i] + j) * V, V);
        worst = std::max(worst, e);
        ASSERT_LE(e, kTolerance) << name << ": step " << step << ", position " << starts[i] + j;
      }
    }
    ++step;
  }
  std::printf("  %s: %zu steps, worst row rel vs full forward %.3g\n", name, step, worst);
  // Both sequences hold their blocks until released.
  EXPECT_EQ(static_cast<int64_t>(sa.block_table.size()), cache.value()->BlocksFor(sa.length));
  cache.value()->Release(&sa);
  cache.value()->Release(&sb);
  EXPECT_EQ(cache.value()->allocator().free_blocks(), cache.value()->allocator().total_blocks());
}

TEST_P(IncrementalTest, MatchesFullForwardReference) { RunIncremental(GetParam(), Precision::kReference); }
TEST_P(IncrementalTest, MatchesFullForwardFast) { RunIncremental(GetParam(), Precision::kFast); }

INSTANTIATE_TEST_SUITE_P(Fixtures, IncrementalTest, ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// A forked sequence shares the parent's blocks; writing into the shared,
// partly filled block copies it first, so each branch sees only its own tokens.
TEST(KvForkTest, BranchesMatchTheirOwnFullForward) {
  Case c;
  if (!Open("llama3-tiny", Precision::kReference, &c)) GTEST_SKIP();
  Model& m = *c.model;
  const std::vector<int32_t> prefix(c.g.prompts.front().input_ids.begin(),
                                    c.g.prompts.front().input_ids.begin() + 20);
  const std::vector<int32_t> tail_a = {5, 6, 7}, tail_b = {300, 301};
  auto cache = m.CreateKvCache(8, 16);
  ASSERT_TRUE(cache.ok());
  KvCache& kv = **cache;
  KvSequence parent;
  ForwardItem p{&parent, prefix, LogitsRows::kNone};
  ForwardOutput out;
  ASSERT_TRUE(m.Forward({&p, 1}, kv, &out).ok());
  EXPECT_TRUE(out.logits.empty());
  KvSequence child = kv.Fork(parent, 20);
  EXPECT_EQ(child.block_table, parent.block_table);
  EXPECT_EQ(kv.allocator().refcount(parent.block_table[1]), 2);

  ForwardItem items[] = {{&parent, tail_a, LogitsRows::kAll}, {&child, tail_b, LogitsRows::kAll}};
  ASSERT_TRUE(m.Forward(items, kv, &out).ok());
  // Block 0 (full, read-only) stays shared; block 1 was copied for one branch.
  EXPECT_EQ(child.block_table[0], parent.block_table[0]);
  EXPECT_NE(child.block_table[1], parent.block_table[1]);
  auto full = [&](const std::vector<int32_t>& tail) {
    std::vector<int32_t> ids = prefix;
    ids.insert(ids.end(), tail.begin(), tail.end());
    return FullLogits(m, ids);
  };
  const int64_t V = m.vocab_size();
  const std::vector<float> ra = full(tail_a), rb = full(tail_b);
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_LE(testing::RowRelError(out.Row(0, j), ra.data() + (20 + j) * V, V), kTolerance);
  }
  for (int64_t j = 0; j < 2; ++j) {
    EXPECT_LE(testing::RowRelError(out.Row(1, j), rb.data() + (20 + j) * V, V), kTolerance);
  }
}

TEST(ForwardErrorsTest, RejectsBadBatchesWithoutChangingSequences) {
  Case c;
  if (!Open("qwen2-tiny", Precision::kReference, &c)) GTEST_SKIP();
  Model& m = *c.model;
  auto cache = m.CreateKvCache(1, 16);
  ASSERT_TRUE(cache.ok());
  KvSequence s;
  ForwardOutput out;
  std::vector<int32_t> ids(20, 5);
  ForwardItem too_long{&s, ids, LogitsRows::kLast};
  Status st = m.Forward({&too_long, 1}, **cache, &out);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_EQ(s.length, 0);
  EXPECT_TRUE(s.block_table.empty());

  std::vector<int32_t> bad = {1, static_cast<int32_t>(m.vocab_size())};
  ForwardItem oov{&s, bad, LogitsRows::kLast};
  st = m.Forward({&oov, 1}, **cache, &out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("1024"), std::string::npos) << st.message();

  std::vector<int32_t> one = {3};
  ForwardItem twice[] = {{&s, one, LogitsRows::kLast}, {&s, one, LogitsRows::kLast}};
  EXPECT_EQ(m.Forward(twice, **cache, &out).code(), StatusCode::kInvalidArgument);
  ForwardItem empty{&s, {}, LogitsRows::kLast};
  EXPECT_EQ(m.Forward({&empty, 1}, **cache, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.length, 0);

  // qwen2-tiny pads its vocabulary: logits come for all 1024 rows.
  ForwardItem ok{&s, one, LogitsRows::kLast};
  ASSERT_TRUE(m.Forward({&ok, 1}, **cache, &out).ok());
  EXPECT_EQ(out.vocab, 1024);
  EXPECT_EQ(out.logits.size(), 1024u);
}

}  // namespace
}  // namespace llmhost::incremental_test
