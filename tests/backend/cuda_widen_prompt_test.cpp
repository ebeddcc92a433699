// Prompt rows of quantized weights on the GPU at kAuto: widened to bf16
// (cuda/dequantize.cuh) and multiplied on cuBLASLt. Near the exact sum over
// the CPU reference's dequantized weights (bf16 rounding of each weight),
// the same bits for a row whatever the prompt chunk it falls in, and
// LLMHOST_CUDA_WIDEN_PROMPT=off keeps llmhost's own kernel. Skips without a
// GPU (or without cuBLASLt, where the widened path does not apply).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/quant_formats.h"
#include "backend/device.h"
#include "cuda_matmul_fixture.h"
#include "quant_test_util.h"

namespace llmhost::cuda_widen_prompt_test {
namespace {

class CudaWidenPromptTest : public testing::CudaMatMulTest {
 protected:
  void SetUp() override {
    CudaMatMulTest::SetUp();
    if (IsSkipped()) return;
    unsetenv("LLMHOST_CUDA_WIDEN_PROMPT");
  }
  void TearDown() override { unsetenv("LLMHOST_CUDA_WIDEN_PROMPT"); }

  std::vector<float> Prompt(const WeightMatrix& w, const DeviceBuffer& x, int64_t first, int64_t n,
                            const DeviceBuffer& y) {
    return Run(w, x, first, n, y, RowKind::kPrompt);
  }

  void Check(const testing::FormatSpec& spec, int64_t rows, int64_t cols) {
    SCOPED_TRACE(spec.Name() + " " + std::to_string(rows) + "x" + std::to_string(cols));
    constexpr int64_t kTokens = 48;
    testing::OwnedWeight ow;
    testing::MakeRandomWeight(spec, rows, cols, static_cast<uint32_t>(rows * 13 + cols), &ow);
    auto dw = b_->PrepareWeight(ow.w);
    ASSERT_TRUE(dw.ok());
    const std::vector<float> x = testing::RandomVector(kTokens * cols, static_cast<uint32_t>(cols + 11));
    auto dx = b_->Allocate(x.size() * 4, "x");
    auto dy = b_->Allocate(kTokens * rows * 4, "y");
    ASSERT_TRUE(dx.ok() && dy.ok());
    b_->CopyToDevice(*dx, 0, x.data(), x.size() * 4);
    const std::vector<float> all = Prompt(*dw, *dx, 0, kTokens, *dy);
    // Each weight and x rounded to bf16 (2^-9 relative at most each: a
    // product within 2^-8 of its exact value), f32 sums.
    std::vector<float> wref(cols);
    for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 29)) {
      quant::DequantizeRangeScalar(ow.w, r, 0, cols, wref.data());
      for (int64_t t : {int64_t{0}, int64_t{17}, kTokens - 1}) {
        double exact = 0, mag = 0;
        for (int64_t c = 0; c < cols; ++c) {
          exact += static_cast<double>(wref[c]) * x[t * cols + c];
          mag += std::abs(static_cast<double>(wref[c]) * x[t * cols + c]);
        }
        ASSERT_NEAR(all[t * rows + r], exact, mag / 200 + 1e-5) << "token " << t << " row " << r;
      }
    }
    // A prompt cut into chunks: each row the same bits.
    for (auto [first, m] : {std::pair<int64_t, int64_t>{0, 1}, {5, 16}, {21, 27}}) {
      const std::vector<float> part = Prompt(*dw, *dx, first, m, *dy);
      ASSERT_EQ(0, std::memcmp(part.data(), all.data() + first * rows, part.size() * 4))
          << "rows " << first << ".." << first + m;
    }
    // Off: llmhost's own tensor-core kernel, near the same values.
    setenv("LLMHOST_CUDA_WIDEN_PROMPT", "off", 1);
    const std::vector<float> own = Prompt(*dw, *dx, 0, kTokens, *dy);
    unsetenv("LLMHOST_CUDA_WIDEN_PROMPT");
    EXPECT_LT(testing::RelErr(own.data(), all.data(), static_cast<int64_t>(own.size())), 4e-3);
    b_->ReleaseWeight(*dw);
    b_->Free(*dx);
    b_->Free(*dy);
  }
};

TEST_F(CudaWidenPromptTest, QuantizedFormats) {
  Check(testing::Mlx(4, 64), 132, 512);
  Check(testing::Mlx(8, 32), 64, 256);
  Check(testing::Mlx(4, 128, DType::kF32), 256, 1024);  // GPTQ/AWQ repacks: f32 scales
  Check(testing::Ggml(GgmlType::kQ4_K), 128, 512);
  Check(testing::Ggml(GgmlType::kQ8_0), 36, 256);
  Check(testing::Fp8(128), 128, 256);
}

}  // namespace
}  // namespace llmhost::cuda_widen_prompt_test
