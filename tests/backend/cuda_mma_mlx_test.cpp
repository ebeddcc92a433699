// Generated rows of MLX 4- and 8-bit weights on the tensor cores
// (cuda/matmul_mma_mlx.cuh), at kAuto (x as hi + lo bf16 terms) and
// kFastBf16 (x rounded once): a token's row is the same bits alone, at any
// place in batches of every tile count, and fused with other weights; and it
// stays near the exact sum over the CPU reference's dequantized weights.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/quant_formats.h"
#include "backend/device.h"
#include "cuda_matmul_fixture.h"
#include "quant_test_util.h"

namespace llmhost::cuda_mma_mlx_test {
namespace {

class CudaMmaMlxTest : public testing::CudaMatMulTest {
 protected:
  void SetUp() override {
    CudaMatMulTest::SetUp();
    if (IsSkipped()) return;
    setenv("LLMHOST_CUDA_MLX_MMA", "on", 1);  // the default, whatever the environment says
    setenv("LLMHOST_CUDA_MLX_INT8", "off", 1);  // 4-bit rows at kAuto would go to the int8 kernel
  }
  void TearDown() override {
    unsetenv("LLMHOST_CUDA_MLX_MMA");
    unsetenv("LLMHOST_CUDA_MLX_INT8");
  }

  // The checks of one weight of `spec`, [rows, cols].
  void Check(const testing::FormatSpec& spec, int64_t rows, int64_t cols) {
    const std::string name = spec.Name() + " " + std::to_string(rows) + "x" + std::to_string(cols);
    constexpr int64_t kTokens = 32;
    testing::OwnedWeight ow, ow2;
    testing::MakeRandomWeight(spec, rows, cols, static_cast<uint32_t>(rows * 31 + cols), &ow);
    testing::MakeRandomWeight(spec, 45, cols, static_cast<uint32_t>(cols + 5), &ow2);  // a second fused weight
    auto dw = b_->PrepareWeight(ow.w);
    auto dw2 = b_->PrepareWeight(ow2.w);
    ASSERT_TRUE(dw.ok() && dw2.ok()) << name;
    const std::vector<float> x = testing::RandomVector(kTokens * cols, static_cast<uint32_t>(cols));
    auto dx = b_->Allocate(x.size() * 4, "x");
    auto dy = b_->Allocate(kTokens * rows * 4, "y");
    auto dy2 = b_->Allocate(kTokens * 45 * 4, "y2");
    ASSERT_TRUE(dx.ok() && dy.ok() && dy2.ok());
    b_->CopyToDevice(*dx, 0, x.data(), x.size() * 4);
    // Sampled rows, dequantized by the CPU reference.
    std::vector<int64_t> sample;
    for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 23)) sample.push_back(r);
    sample.push_back(rows - 1);
    std::vector<float> wref(sample.size() * cols);
    for (size_t k = 0; k < sample.size(); ++k) quant::DequantizeRangeScalar(ow.w, sample[k], 0, cols, &wref[k * cols]);

    for (Precision p : {Precision::kAuto, Precision::kFastBf16}) {
      b_->set_precision(p);
      SCOPED_TRACE(name + " " + PrecisionName(p));
      const std::vector<float> batch = Run(*dw, *dx, 0, kTokens, *dy);
      // Near the exact sum: |err| within a bound scaled by sum |w x| (x's
      // rounding: 2^-9 relative for one bf16 term, ~2^-17 for two).
      const double rel = p == Precision::kAuto ? 1e-5 : 8e-3;
      for (int64_t t : {int64_t{0}, int64_t{13}, kTokens - 1}) {
        for (size_t k = 0; k < sample.size(); ++k) {
          double exact = 0, mag = 0;
          for (int64_t c = 0; c < cols; ++c) {
            const double v = static_cast<double>(wref[k * cols + c]) * x[t * cols + c];
            exact += v;
            mag += std::abs(v);
          }
          ASSERT_NEAR(batch[t * rows + sample[k]], exact, rel * mag + 1e-6) << "token " << t << " row " << sample[k];
        }
      }
      // Alone and in batches of 1..4 token tiles, at the batch's start and end.
      for (int64_t m : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{17}}) {
        for (int64_t first : {int64_t{0}, kTokens - m}) {
          const std::vector<float> part = Run(*dw, *dx, first, m, *dy);
          for (int64_t t = 0; t < m; ++t) {
            ASSERT_EQ(0, std::memcmp(part.data() + t * rows, batch.data() + (first + t) * rows, rows * 4))
                << "token " << first + t << " at " << t << " of a batch of " << m;
          }
        }
      }
      // One token tile with its loads pipelined (LLMHOST_CUDA_MLX_PIPELINE=on): the same bits.
      setenv("LLMHOST_CUDA_MLX_PIPELINE", "on", 1);
      for (int64_t m : {int64_t{1}, int64_t{3}, int64_t{8}}) {
        const std::vector<float> piped = Run(*dw, *dx, kTokens - m, m, *dy);
        EXPECT_EQ(0, std::memcmp(piped.data(), batch.data() + (kTokens - m) * rows, m * rows * 4))
            << "pipelined, n " << m;
      }
      unsetenv("LLMHOST_CUDA_MLX_PIPELINE");
      // Fused with a second weight (as q/k/v or gate/up): each y as MatMul's.
      ExpectFusedAsAlone(*dw, *dy, batch, *dw2, *dy2, Run(*dw2, *dx, 0, kTokens, *dy2), *dx);
    }
    b_->set_precision(Precision::kAuto);
    b_->ReleaseWeight(*dw);
    b_->ReleaseWeight(*dw2);
    b_->Free(*dx);
    b_->Free(*dy);
    b_->Free(*dy2);
  }
};

// Odd row counts (partial 15-row tiles, a single row), the smallest cols.
TEST_F(CudaMmaMlxTest, SmallShapes) {
  for (int bits : {4, 8}) {
    for (int group : {32, 64}) {
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 128}, {37, 128}, {300, 1024}, {46, 384}}) {
        Check(testing::Mlx(bits, group), rows, cols);
      }
    }
    Check(testing::Mlx(bits, 64, DType::kF16), 300, 1024);
  }
  Check(testing::Mlx(8, 32), 20, 192);  // 8-bit rows need cols a multiple of 64 only
}

// The Llama-3-8B shapes: q / o, gate / up, down (8-bit at group 64, MLX's default).
TEST_F(CudaMmaMlxTest, Llama8bShapes) {
  for (auto [bits, group] : {std::pair<int, int>{4, 32}, {4, 64}, {8, 64}}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4096, 4096}, {14336, 4096}, {4096, 14336}}) {
      Check(testing::Mlx(bits, group), rows, cols);
    }
  }
}

}  // namespace
}  // namespace llmhost::cuda_mma_mlx_test
