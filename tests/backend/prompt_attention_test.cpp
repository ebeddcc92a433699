// Prompt rows' attention on the tensor cores (cuda/prompt_attention.cuh) at
// `auto` and `fast-bf16` (q and the probabilities as one 16-bit term; two at
// `auto` with LLMHOST_CUDA_PROMPT_SPLIT=on):
// a row's bits do not depend on its batch (sequences before it, its place in
// a block's rows, the chunk of the prompt it came in), the rows stay near the
// CPU reference, and rows marked generated keep the f32 path. Skipped where
// there is no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu_attention_fixture.h"
#include "test_util.h"

namespace llmhost::prompt_attention_test {
namespace {

using testing::GpuAttentionTest;
using testing::Part;
using testing::Shape;
using testing::WorstRowError;

class PromptAttentionTest : public GpuAttentionTest {
 protected:
  void SetUp() override {
    GpuAttentionTest::SetUp();
    setenv("LLMHOST_CUDA_PROMPT_ATTENTION", "on", 1);  // the default, whatever the environment says
  }
};

// A precision, and whether prompt rows split their 16-bit inputs in two terms.
struct Setting {
  Precision precision;
  bool split;
};
constexpr Setting kSettings[] = {{Precision::kAuto, false}, {Precision::kAuto, true}, {Precision::kFastBf16, false}};

TEST_F(PromptAttentionTest, RowsAreBatchInvariantAndClose) {
  const Shape shapes[] = {
      {32, 8, 128, 0, 0.0f, DType::kBF16},   // Llama-3-8B's
      {8, 2, 64, 0, 0.0f, DType::kBF16},     // head_dim 64 (wgmma's other width)
      {8, 8, 128, 20, 0.0f, DType::kBF16},   // no GQA (warpgroups of different positions), a window
      {16, 2, 128, 0, 30.0f, DType::kBF16},  // group 8, soft-capping, on the wgmma kernel
      {8, 4, 64, 40, 0.0f, DType::kBF16},    // group 2, a window, head_dim 64
      {4, 4, 64, 50, 0.0f, DType::kF16},     // no GQA, a window
      {16, 2, 256, 0, 30.0f, DType::kBF16},  // group 8, soft-capping
      {6, 3, 80, 0, 0.0f, DType::kBF16},     // head_dim below its kernel's
      {9, 3, 64, 0, 0.0f, DType::kF16},      // group 3: the f32 kernel
  };
  std::mt19937 rng(21);
  for (const Shape& s : shapes) {
    devs_.clear();
    caches_.clear();
    tables_.clear();
    q_.clear();
    // Sequence 0: the one followed; 1: a prompt before it; 2: a decode.
    const int64_t len = 300, n = 70;
    Build(s, {len, 77, 130}, rng);
    const int64_t w = s.heads * s.head_dim;
    // kAuto rounds q and the probabilities to one 16-bit term as kFastBf16
    // does, or splits them into two with LLMHOST_CUDA_PROMPT_SPLIT=on.
    std::vector<float> auto_alone;
    for (const Setting& st : kSettings) {
      const Precision p = st.precision;
      gpu_->set_precision(p);
      std::optional<testing::EnvSwitch> split;
      if (st.split) split.emplace("LLMHOST_CUDA_PROMPT_SPLIT", "on");
      SCOPED_TRACE(std::string(PrecisionName(p)) + (st.split ? " split" : "") + " heads " + std::to_string(s.heads) + "/" +
                   std::to_string(s.kv_heads) + " d " + std::to_string(s.head_dim) + " kv " + DTypeName(s.kv));
      const std::vector<float> alone = Run({{0, n, len}}, 0);
      // kAuto's one term is kFastBf16's rounding, bit for bit.
      if (p == Precision::kAuto && !st.split) auto_alone = alone;
      if (p == Precision::kFastBf16) {
        EXPECT_EQ(0, std::memcmp(alone.data(), auto_alone.data(), alone.size() * 4));
      }
      {
        // Hopper's wgmma kernel where it takes the shape (bf16, head_dim 64 or
        // 128, one term; LLMHOST_CUDA_PROMPT_ATTENTION_WGMMA=on), and mma.sync
        // in blocks of 64 rows: the same bits as mma.sync's 128-row blocks.
        {
          const testing::EnvSwitch wgmma("LLMHOST_CUDA_PROMPT_ATTENTION_WGMMA", "on");
          const std::vector<float> wg = Run({{0, n, len}}, 0);
          EXPECT_EQ(0, std::memcmp(wg.data(), alone.data(), alone.size() * 4)) << "wgmma";
          const std::vector<float> wg_mixed = Run({{1, 5, 77}, {0, n, len}, {2, 1, 130, 129}}, 0);
          EXPECT_EQ(0, std::memcmp(Rows(wg_mixed, 5, n).data(), alone.data(), alone.size() * 4)) << "wgmma, in a batch";
        }
        const testing::EnvSwitch four("LLMHOST_CUDA_PROMPT_ATTENTION_WARPS", "4");
        const std::vector<float> narrow = Run({{0, n, len}}, 0);
        EXPECT_EQ(0, std::memcmp(narrow.data(), alone.data(), alone.size() * 4)) << "mma.sync, 64-row blocks";
      }
      // Behind 5 rows of another prompt (other row tiles), beside a decode.
      const std::vector<Part> batch = {{1, 5, 77}, {0, n, len}, {2, 1, 130, 129}};
      const std::vector<float> mixed = Run(batch, 0);
      EXPECT_EQ(0, std::memcmp(Rows(mixed, 5, n).data(), alone.data(), alone.size() * 4)) << "in a batch";
      // The same rows in two chunks of the prompt.
      const int64_t cut = 33;
      const std::vector<float> c1 = Run({{0, cut, len - n + cut}}, 0), c2 = Run({{0, n - cut, len}}, 0);
      EXPECT_EQ(0, std::memcmp(c1.data(), alone.data(), c1.size() * 4)) << "first chunk";
      EXPECT_EQ(0, std::memcmp(c2.data(), alone.data() + cut * w, c2.size() * 4)) << "second chunk";
      // A short prompt behind a longer one: its rows' indices pass its positions.
      const std::vector<float> short_alone = Run({{2, 20, 20}}, 0), behind = Run({{1, 40, 77}, {2, 20, 20}}, 0);
      EXPECT_EQ(0, std::memcmp(Rows(behind, 40, 20).data(), short_alone.data(), short_alone.size() * 4))
          << "behind a longer prompt";
      // Near the reference: prompt rows by the precision's rounding, the
      // generated row by the f32 path's.
      const std::vector<float> ref = Run(batch, 1);
      const double tol = st.split ? 1e-4 : 1.5e-2;
      EXPECT_LE(WorstRowError(Rows(mixed, 0, 5 + n), Rows(ref, 0, 5 + n), s.head_dim), tol) << "prompt rows";
      EXPECT_LE(WorstRowError(Rows(mixed, 5 + n, 1), Rows(ref, 5 + n, 1), s.head_dim), 1e-4) << "generated row";
      // The last 3 rows generated: the others keep their bits.
      const std::vector<float> tail = Run({{0, n, len, len - 3}}, 0);
      EXPECT_EQ(0, std::memcmp(tail.data(), alone.data(), (n - 3) * w * 4)) << "beside generated rows";
      const std::vector<float> tail_ref = Run({{0, n, len, len - 3}}, 1);
      EXPECT_LE(WorstRowError(Rows(tail, n - 3, 3), Rows(tail_ref, n - 3, 3), s.head_dim), 1e-4) << "generated rows";
    }
    gpu_->set_precision(Precision::kAuto);
  }
}

}  // namespace
}  // namespace llmhost::prompt_attention_test
