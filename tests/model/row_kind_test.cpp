// Precision::kAuto computes prompt rows and generated rows differently
// (backend.h): each row's kind comes from its position in its sequence
// (ForwardItem::generated_from), so a request's logits are the same bits
// alone, beside another request's prefill, or recomputed in one chunk after
// a preemption; and each kind gets the precision backend.h names.
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_features.h"
#include "model/model.h"
#include "model/model_test_util.h"

namespace llmhost::row_kind_test {
namespace {

// 8-bit MLX (prompt rows kFast without AMX), 4-bit MLX and GGUF Q4_0 (int8
// for both kinds without AMX), float weights (int8 = f32 path).
const char* const kFixtures[] = {"qwen3-tiny-mlx8", "llama3-tiny-mlx4", "llama-tiny-q4_0", "qwen3-tiny"};

struct Loaded {
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<Model> model;
};

bool Load(const std::string& name, Precision precision, Loaded* l) {
  testing::Golden g;
  if (!FileExists(testing::GoldenRoot() + "/" + name + ".json")) return false;
  if (!testing::LoadGolden(name, &g) || !FileExists(g.model_path)) return false;
  l->backend = std::make_unique<CpuBackend>(&ThreadPool::Default(), precision);
  auto m = Model::Load(g.model_path, l->backend.get());
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return false;
  l->model = std::move(m).value();
  return true;
}

std::vector<int32_t> Ids(int64_t n, int64_t vocab, uint32_t salt) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 7919 + salt * 104729) % (vocab - 2)));
  return ids;
}

std::vector<float> Row(const ForwardOutput& out, size_t item, int64_t j) {
  return std::vector<float>(out.Row(item, j), out.Row(item, j) + out.vocab);
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class RowKindTest : public ::testing::TestWithParam<const char*> {};

// A: a 20-token prompt then 3 generated tokens; B: a 37-token prompt.
TEST_P(RowKindTest, AutoIsBatchInvariantBitForBit) {
  Loaded l;
  if (!Load(GetParam(), Precision::kAuto, &l)) GTEST_SKIP() << GetParam() << " not available";
  Model& m = *l.model;
  ASSERT_TRUE(l.backend->RowKindMatters());
  const int64_t V = m.vocab_size();
  const std::vector<int32_t> pa = Ids(20, V, 1), pb = Ids(37, V, 2);
  const int32_t gen[3] = {5, 9, 11};  // A's generated tokens (chosen, not sampled)
  const int64_t from = static_cast<int64_t>(pa.size());

  // Alone: A's prompt, then one generated token per step; B's prompt.
  std::vector<std::vector<float>> alone_a;
  std::vector<float> alone_b;
  {
    auto cache = m.CreateKvCache(8, 16);
    ASSERT_TRUE(cache.ok());
    KvSequence sa, sb;
    ForwardOutput out;
    ForwardItem a{&sa, pa, LogitsRows::kLast, from};
    ASSERT_TRUE(m.Forward({&a, 1}, **cache, &out).ok());
    alone_a.push_back(Row(out, 0, 0));
    for (const int32_t& t : gen) {
      ForwardItem d{&sa, {&t, 1}, LogitsRows::kLast, from};
      ASSERT_TRUE(m.Forward({&d, 1}, **cache, &out).ok());
      alone_a.push_back(Row(out, 0, 0));
    }
    ForwardItem b{&sb, pb, LogitsRows::kLast, static_cast<int64_t>(pb.size())};
    ASSERT_TRUE(m.Forward({&b, 1}, **cache, &out).ok());
    alone_b = Row(out, 0, 0);
  }

  // Mixed: A's first generated token in one step with B's whole prompt (B's
  // rows first, so runs of both kinds alternate within each MatMul).
  {
    auto cache = m.CreateKvCache(8, 16);
    ASSERT_TRUE(cache.ok());
    KvSequence sa, sb;
    ForwardOutput out;
    ForwardItem a{&sa, pa, LogitsRows::kLast, from};
    ASSERT_TRUE(m.Forward({&a, 1}, **cache, &out).ok());
    EXPECT_TRUE(SameBits(Row(out, 0, 0), alone_a[0]));
    ForwardItem items[2] = {{&sb, pb, LogitsRows::kLast, static_cast<int64_t>(pb.size())},
                            {&sa, {&gen[0], 1}, LogitsRows::kLast, from}};
    ASSERT_TRUE(m.Forward(items, **cache, &out).ok());
    EXPECT_TRUE(SameBits(Row(out, 0, 0), alone_b)) << "B's prompt beside A's decode";
    EXPECT_TRUE(SameBits(Row(out, 1, 0), alone_a[1])) << "A's decode beside B's prompt";
  }

  // Recomputed (as after a preemption): A's prompt and generated tokens in
  // one chunk; the rows at generated positions are generated rows.
  {
    auto cache = m.CreateKvCache(8, 16);
    ASSERT_TRUE(cache.ok());
    KvSequence sa;
    ForwardOutput out;
    std::vector<int32_t> all = pa;
    all.insert(all.end(), gen, gen + 3);
    ForwardItem a{&sa, all, LogitsRows::kAll, from};
    ASSERT_TRUE(m.Forward({&a, 1}, **cache, &out).ok());
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_TRUE(SameBits(Row(out, 0, from - 1 + j), alone_a[static_cast<size_t>(j)])) << "position " << from - 1 + j;
    }
  }
}

// Each kind gets its precision: the prompt computed at the prompt rows'
// precision and the next token at kFastInt8 give kAuto's bits.
TEST_P(RowKindTest, AutoUsesEachKindsPrecision) {
  Loaded l;
  if (!Load(GetParam(), Precision::kAuto, &l)) GTEST_SKIP() << GetParam() << " not available";
  Model& m = *l.model;
  const std::vector<int32_t> pa = Ids(20, m.vocab_size(), 3);
  const int64_t from = static_cast<int64_t>(pa.size());
  const int32_t next = 7;
  auto run = [&](Precision prompt_precision, Precision generated_precision) {
    auto cache = m.CreateKvCache(4, 16);
    EXPECT_TRUE(cache.ok());
    KvSequence s;
    ForwardOutput out;
    l.backend->set_precision(prompt_precision);
    // Every prompt row's logits, so that the output head also sees 20 rows.
    ForwardItem a{&s, pa, LogitsRows::kAll, from};
    EXPECT_TRUE(m.Forward({&a, 1}, **cache, &out).ok());
    std::vector<float> rows(out.logits);
    l.backend->set_precision(generated_precision);
    ForwardItem d{&s, {&next, 1}, LogitsRows::kLast, from};
    EXPECT_TRUE(m.Forward({&d, 1}, **cache, &out).ok());
    const std::vector<float> r = Row(out, 0, 0);
    rows.insert(rows.end(), r.begin(), r.end());
    return rows;
  };
  const bool eight_bit = std::string(GetParam()) == "qwen3-tiny-mlx8";
  // Every MatMul of the 20-token prompt (the output head's too) has >=
  // kAmxMinRows rows, where kFastBf16 is kBf16Tiles.
  const Precision prompt = HasBf16Matmul(ActiveCpuIsa()) ? Precision::kFastBf16
                           : eight_bit                    ? Precision::kFast
                                                          : Precision::kFastInt8;
  const std::vector<float> expected = run(prompt, Precision::kFastInt8);
  const std::vector<float> got = run(Precision::kAuto, Precision::kAuto);
  EXPECT_TRUE(SameBits(got, expected));
  // Not vacuous for quantized weights: prompt rows in int8 throughout differ
  // from kAuto's prompt rows where kAuto does not use int8 for them.
  if (eight_bit || HasBf16Matmul(ActiveCpuIsa())) {
    EXPECT_FALSE(SameBits(got, run(Precision::kFastInt8, Precision::kFastInt8)));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RowKindTest, ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace llmhost::row_kind_test
