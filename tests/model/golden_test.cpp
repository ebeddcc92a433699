// Every causal-LM fixture against the transformers / gguf-py goldens:
// logits at every position within 1e-4 relative error per row on the f32
// reference path (a documented tolerance on the fast path), and greedy
// decoding through the KV cache reproducing `greedy_tokens` wherever the
// golden's top-2 margin exceeds twice this run's largest absolute logit error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/device.h"
#include "model/model.h"
#include "model/model_test_util.h"

namespace llmhost::golden_test {
namespace {

using testing::Golden;
using testing::GoldenPrompt;

struct FixtureCase {
  const char* name;
  double int8_tolerance;  // documented kFastInt8 relative error per row
  bool bf16_compared = true;  // false: see kFastBf16 below
};

// Documented tolerances. kFast: 1e-4 for every fixture (weights are exact in
// f32 on both paths; summation order and a polynomial exp differ; measured
// <= 6e-6). kFastInt8 quantizes activations to int8 per 32 values for MLX and
// GGUF block weights (as ggml's q8 activations); on these tiny random models
// (hidden 64 / 256) that costs up to 2.4e-2 (GGUF) and 7.5e-2 (MLX) per row:
// tolerances 3e-2 and 1e-1 (float weights are unaffected: 1e-4). `serve`
// uses it for quantized weights by default (kAuto), as llama.cpp does;
// `generate` and `score` default to kFast and f32. kFastBf16 (AMX CPUs
// only; elsewhere it is kFast) rounds activations, and weights that are not
// bf16, to bf16 for prefill-sized batches: kBf16Tolerance per row (measured
// on an AMX machine: <= 3.6e-2 on every dense fixture). Not compared:
// qwen3moe-tiny, a random MoE whose expert choice flips under that rounding
// on its 'chat' prompt (0.785 row error, and the same 0.785 from rounding the
// activations to bf16 in front of the f32 kernels: the routing, not the
// kernel; its other prompts: <= 1.7e-2).
const FixtureCase kFixtures[] = {
    {"llama3-tiny", 1e-4},        {"llama3-tiny-sharded", 1e-4}, {"mistral-tiny-swa", 1e-4},
    {"qwen2-tiny", 1e-4},         {"qwen3-tiny", 1e-4},          {"qwen3moe-tiny", 1e-4, false},
    {"phi3-tiny", 1e-4},          {"gemma3-tiny", 1e-4},         {"llama3-tiny-mlx4", 1e-1},
    {"qwen3-tiny-mlx8", 1e-1},    {"qwen3-realtok-tiny", 1e-4},  {"llama-tiny-f32", 1e-4},
    {"llama-tiny-q8_0", 3e-2},    {"llama-tiny-q4_0", 3e-2},     {"llama-tiny-q4_k", 3e-2},
    {"llama-tiny-q6_k", 3e-2},
};

constexpr double kBf16Tolerance = 5e-2;
// A 16-bit KV cache (bf16 or f16 K and V, f32 arithmetic) on the fast path.
// f16 keeps 11 significant bits: measured <= 1.5e-3 per row on every
// fixture, bound 2e-2. bf16 keeps 8, as bf16 activations do, and costs as
// much on these tiny random models (hidden 64 / 256): measured <= 2.9e-2
// (phi3-tiny 'long'), bound kBf16Tolerance; qwen3moe-tiny's expert routing
// flips on its 'long' prompt under bf16 K/V (0.495), as under bf16
// activations: not compared.
constexpr double kF16KvTolerance = 2e-2;
struct PromptResult {
  double worst_rel = 0;
  double max_abs = 0;
};

// Scores the prompt in one forward pass (block size 16, so long prompts span
// many blocks), then decodes greedily through the cache.
PromptResult RunPrompt(Model& model, const GoldenPrompt& p, double tolerance,
                       const std::string& label, bool check_greedy, DType kv_dtype = DType::kF32) {
  PromptResult r;
  const int64_t total = static_cast<int64_t>(p.input_ids.size() + p.greedy_tokens.size());
  auto cache = model.CreateKvCache(total / 16 + 2, 16, kv_dtype);
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  if (!cache.ok()) return r;
  KvSequence seq;
  ForwardItem item{&seq, p.input_ids, p.last_only ? LogitsRows::kLast : LogitsRows::kAll};
  ForwardOutput out;
  Status st = model.Forward({&item, 1}, **cache, &out);
  EXPECT_TRUE(st.ok()) << label << ": " << st.ToString();
  if (!st.ok()) return r;
  EXPECT_EQ(out.vocab, p.vocab) << label;
  if (out.vocab != p.vocab) return r;
  const int64_t rows = out.n_rows[0];
  for (int64_t i = 0; i < rows; ++i) {
    const float* ref = p.logits.data() + i * p.vocab;
    const double rel = testing::RowRelError(out.Row(0, i), ref, p.vocab);
    r.worst_rel = std::max(r.worst_rel, rel);
    r.max_abs = std::max(r.max_abs, testing::MaxAbsError(out.Row(0, i), ref, p.vocab));
    EXPECT_LE(rel, tolerance) << label << ": row " << i;
  }
  if (!check_greedy) return r;
  // Greedy continuation, one token per step through the cache.
  std::vector<int32_t> got;
  int32_t next = testing::ArgMax(out.Row(0, rows - 1), out.vocab);
  for (size_t step = 0; step < p.greedy_tokens.size(); ++step) {
    got.push_back(next);
    if (step + 1 == p.greedy_tokens.size()) break;
    ForwardItem d{&seq, {&got.back(), 1}, LogitsRows::kLast, static_cast<int64_t>(p.input_ids.size())};
    st = model.Forward({&d, 1}, **cache, &out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return r;
    next = testing::ArgMax(out.Row(0, 0), out.vocab);
  }
  if (p.min_top2_margin > 2 * r.max_abs) {
    EXPECT_EQ(got, p.greedy_tokens) << label << ": greedy tokens (margin " << p.min_top2_margin
                                    << ", max abs error " << r.max_abs << ")";
  } else {
    std::printf("  %s: greedy not compared (margin %.3g <= 2 x %.3g)\n", label.c_str(),
                p.min_top2_margin, r.max_abs);
  }
  return r;
}

class GoldenTest : public ::testing::TestWithParam<FixtureCase> {};

void RunFixture(const FixtureCase& fc, Precision precision, DType kv_dtype = DType::kF32,
                DeviceKind device = DeviceKind::kCpu) {
  if (device == DeviceKind::kCuda && CudaDeviceCount() == 0) {
    GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
  }
  const std::string json = testing::GoldenRoot() + "/" + fc.name + ".json";
  if (!FileExists(json)) GTEST_SKIP() << fc.name << ": golden not available here";
  Golden g;
  ASSERT_TRUE(testing::LoadGolden(fc.name, &g));
  if (!FileExists(g.model_path)) GTEST_SKIP() << g.model_path << ": fixture not available here";
  DeviceSpec spec;
  spec.kind = device;
  auto backend = MakeBackend(spec, precision, &ThreadPool::Default());
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  auto model = Model::Load(g.model_path, backend->get());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  // kAuto: int8 where the weights are quantized, bf16 tiles for prompts on AMX.
  const bool amx = HasBf16Matmul(BestCpuIsa());
  double tol = precision == Precision::kFastInt8   ? fc.int8_tolerance
               : precision == Precision::kFastBf16 ? kBf16Tolerance
               : precision == Precision::kAuto     ? std::max(fc.int8_tolerance, amx ? kBf16Tolerance : 0.0)
                                                   : 1e-4;
  // The CUDA backend: f32 (the reference's arithmetic) at 1e-4; at kAuto its
  // prompt rows' MatMuls and attention round activations to bf16 (f16 for
  // f16 weights) on the tensor cores, quantized weights widened to bf16 for
  // them: the CPU's AMX rounding, kBf16Tolerance.
  if (device == DeviceKind::kCuda) tol = precision != Precision::kAuto ? 1e-4 : kBf16Tolerance;
  std::string tag = device == DeviceKind::kCuda ? " (cuda)" : "";
  tag += precision == Precision::kReference  ? ""
                    : precision == Precision::kFast     ? " (fast)"
                    : precision == Precision::kFastInt8 ? " (fast-int8)"
                    : precision == Precision::kAuto     ? " (auto)"
                                                        : " (fast-bf16)";
  if (kv_dtype != DType::kF32) {
    tol = std::max(tol, kv_dtype == DType::kF16 ? kF16KvTolerance : kBf16Tolerance);
    tag += std::string(" kv ") + KvDtypeName(kv_dtype);
  }
  // kAuto's generated rows of quantized weights are int8 rows, whose error the
  // prompt rows (kFast for 8-bit MLX) do not measure: their greedy tokens are
  // held by FastInt8Path, and kAuto's bits to kFastInt8's by row_kind_test.
  const bool check_greedy =
      device == DeviceKind::kCuda || !(precision == Precision::kAuto && fc.int8_tolerance > 1e-4);
  for (const GoldenPrompt& p : g.prompts) {
    const std::string label = std::string(fc.name) + "/" + p.name + tag;
    PromptResult r = RunPrompt(**model, p, tol, label, check_greedy, kv_dtype);
    std::printf("  %-34s worst row rel %.3g, max abs %.3g\n", label.c_str(), r.worst_rel, r.max_abs);
  }
}

TEST_P(GoldenTest, ReferencePath) { RunFixture(GetParam(), Precision::kReference); }
TEST_P(GoldenTest, FastPath) { RunFixture(GetParam(), Precision::kFast); }
TEST_P(GoldenTest, FastInt8Path) { RunFixture(GetParam(), Precision::kFastInt8); }
TEST_P(GoldenTest, FastPathBf16Kv) {
  if (!GetParam().bf16_compared) GTEST_SKIP() << "expert routing flips under bf16 K/V (see kF16KvTolerance)";
  RunFixture(GetParam(), Precision::kFast, DType::kBF16);
}
TEST_P(GoldenTest, FastPathF16Kv) { RunFixture(GetParam(), Precision::kFast, DType::kF16); }
TEST_P(GoldenTest, AutoPath) {
  if (HasBf16Matmul(BestCpuIsa()) && !GetParam().bf16_compared) {
    GTEST_SKIP() << "expert routing flips under bf16 activations (see kBf16Tolerance)";
  }
  RunFixture(GetParam(), Precision::kAuto);
}
// The CUDA backend against the same goldens (skipped without a GPU).
TEST_P(GoldenTest, CudaReferencePath) {
  RunFixture(GetParam(), Precision::kReference, DType::kF32, DeviceKind::kCuda);
}
TEST_P(GoldenTest, CudaAutoPath) {
  if (!GetParam().bf16_compared) GTEST_SKIP() << "expert routing flips under 16-bit activations (see kBf16Tolerance)";
  RunFixture(GetParam(), Precision::kAuto, DType::kF32, DeviceKind::kCuda);
}
TEST_P(GoldenTest, CudaAutoPathF16Kv) {
  if (!GetParam().bf16_compared) GTEST_SKIP() << "expert routing flips under bf16 activations (see kBf16Tolerance)";
  RunFixture(GetParam(), Precision::kAuto, DType::kF16, DeviceKind::kCuda);
}
TEST_P(GoldenTest, CudaAutoPathBf16Kv) {
  if (!GetParam().bf16_compared) GTEST_SKIP() << "expert routing flips under bf16 K/V (see kF16KvTolerance)";
  RunFixture(GetParam(), Precision::kAuto, DType::kBF16, DeviceKind::kCuda);
}
TEST_P(GoldenTest, FastBf16Path) {
  if (!HasBf16Matmul(BestCpuIsa())) GTEST_SKIP() << "no AMX-BF16 here: fast-bf16 is the fast path";
  if (!GetParam().bf16_compared) GTEST_SKIP() << "expert routing flips under bf16 activations (see kBf16Tolerance)";
  RunFixture(GetParam(), Precision::kFastBf16);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest, ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<FixtureCase>& i) {
                           std::string n = i.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace llmhost::golden_test
