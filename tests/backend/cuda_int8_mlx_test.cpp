// MLX 4-bit rows against int8 activations on the GPU (cuda/matmul_int8.cuh):
// generated rows at kAuto and every row at kFastInt8. Held to the CPU's
// kFastInt8 path (the same quantized x and exact integer sums: only the f32
// summation order differs), to the exact sum within the error bound the
// quantization of x allows, and bit for bit to itself alone, in batches and
// fused with a second weight. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/quant_formats.h"
#include "backend/device.h"
#include "cuda_matmul_fixture.h"
#include "quant_test_util.h"

namespace llmhost::cuda_int8_mlx_test {
namespace {

class CudaInt8MlxTest : public testing::CudaMatMulTest {
 protected:
  void SetUp() override {
    CudaMatMulTest::SetUp();
    if (IsSkipped()) return;
    unsetenv("LLMHOST_CUDA_MLX_INT8");  // the default
    cpu_ = std::make_unique<CpuBackend>(nullptr, Precision::kFastInt8);
  }
  void TearDown() override { unsetenv("LLMHOST_CUDA_MLX_INT8"); }

  void Check(const testing::FormatSpec& spec, int64_t rows, int64_t cols) {
    SCOPED_TRACE(spec.Name() + " " + std::to_string(rows) + "x" + std::to_string(cols));
    constexpr int64_t kTokens = 32;
    testing::OwnedWeight ow, ow2;
    testing::MakeRandomWeight(spec, rows, cols, static_cast<uint32_t>(rows * 29 + cols), &ow);
    testing::MakeRandomWeight(spec, 45, cols, static_cast<uint32_t>(cols + 7), &ow2);  // a second fused weight
    auto dw = b_->PrepareWeight(ow.w);
    auto dw2 = b_->PrepareWeight(ow2.w);
    ASSERT_TRUE(dw.ok() && dw2.ok());
    std::vector<float> x = testing::RandomVector(kTokens * cols, static_cast<uint32_t>(cols * 3 + rows));
    for (int64_t c = 0; c < cols; c += 7) x[5 * cols + c] *= 40.0f;  // uneven chunk maxima
    std::fill(x.begin() + 9 * cols, x.begin() + 9 * cols + 32, 0.0f);  // an all-zero chunk
    auto dx = b_->Allocate(x.size() * 4, "x");
    auto dy = b_->Allocate(kTokens * rows * 4, "y");
    auto dy2 = b_->Allocate(kTokens * 45 * 4, "y2");
    ASSERT_TRUE(dx.ok() && dy.ok() && dy2.ok());
    b_->CopyToDevice(*dx, 0, x.data(), x.size() * 4);
    const std::vector<float> batch = Run(*dw, *dx, 0, kTokens, *dy);

    // The CPU's int8 path: the same quantized x and integer sums.
    std::vector<float> cpu(kTokens * rows);
    auto cw = cpu_->PrepareWeight(ow.w);
    ASSERT_TRUE(cw.ok());
    cpu_->MatMul(*cw, x.data(), kTokens, cpu.data(), RowKind::kGenerated);
    std::vector<float> wref(cols);
    const int64_t groups = cols / spec.group_size;
    for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 37)) {
      quant::DequantizeRangeScalar(ow.w, r, 0, cols, wref.data());
      for (int64_t t = 0; t < kTokens; ++t) {
        // Each x rounded by at most dx / 2 (dx = max|x| / 127 of its 32
        // columns), met by the centred weight scale · (q - 8) = w - bias - 8 · scale.
        double exact = 0, mag = 0, bound = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const float* chunk = &x[t * cols + c / 32 * 32];
          float amax = 0;
          for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(chunk[j]));
          const double v = static_cast<double>(wref[c]) * x[t * cols + c];
          exact += v;
          mag += std::abs(v);
          const int64_t g = r * groups + c / spec.group_size;
          const double scale = quant::MlxParam(ow.w, ow.w.scales, g), bias = quant::MlxParam(ow.w, ow.w.biases, g);
          bound += std::abs(wref[c] - bias - 8.0 * scale) * amax / 127.0 / 2.0;
        }
        const float got = batch[t * rows + r];
        ASSERT_NEAR(got, cpu[t * rows + r], 2e-6 * mag + 1e-6) << "token " << t << " row " << r << " vs the CPU";
        ASSERT_NEAR(got, exact, bound * 1.001 + 1e-5 * mag + 1e-6) << "token " << t << " row " << r << " vs exact";
      }
    }
    // Alone and in batches of every token-tile width, at the batch's start and end.
    for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}, int64_t{17}}) {
      for (int64_t first : {int64_t{0}, kTokens - m}) {
        const std::vector<float> part = Run(*dw, *dx, first, m, *dy);
        for (int64_t t = 0; t < m; ++t) {
          ASSERT_EQ(0, std::memcmp(part.data() + t * rows, batch.data() + (first + t) * rows, rows * 4))
              << "token " << first + t << " at " << t << " of a batch of " << m;
        }
      }
    }
    // Fused with a second weight (as q/k/v or gate/up): each y as MatMul's.
    ExpectFusedAsAlone(*dw, *dy, batch, *dw2, *dy2, Run(*dw2, *dx, 0, kTokens, *dy2), *dx);
    // kFastInt8 takes prompt rows through the same kernel.
    b_->set_precision(Precision::kFastInt8);
    const std::vector<float> prompt = Run(*dw, *dx, 0, kTokens, *dy, RowKind::kPrompt);
    EXPECT_EQ(0, std::memcmp(prompt.data(), batch.data(), prompt.size() * 4)) << "kFastInt8 prompt rows";
    b_->set_precision(Precision::kAuto);
    // Switched off, kAuto's generated rows take another kernel: other bits, near the same values.
    setenv("LLMHOST_CUDA_MLX_INT8", "off", 1);
    const std::vector<float> off = Run(*dw, *dx, 0, kTokens, *dy);
    unsetenv("LLMHOST_CUDA_MLX_INT8");
    EXPECT_NE(0, std::memcmp(off.data(), batch.data(), off.size() * 4)) << "LLMHOST_CUDA_MLX_INT8=off";
    EXPECT_LT(testing::RelErr(off.data(), cpu.data(), static_cast<int64_t>(off.size())), 1.5e-2);
    cpu_->ReleaseWeight(*cw);
    b_->ReleaseWeight(*dw);
    b_->ReleaseWeight(*dw2);
    b_->Free(*dx);
    b_->Free(*dy);
    b_->Free(*dy2);
  }

  std::unique_ptr<CpuBackend> cpu_;
};

// Every group size and scale type, odd row counts, chunks that do not fill the lanes' last stride.
TEST_F(CudaInt8MlxTest, SmallShapes) {
  for (int group : {32, 64, 128}) {
    for (DType sd : {DType::kBF16, DType::kF16, DType::kF32}) {
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 128}, {13, 384}, {300, 1024}}) {
        Check(testing::Mlx(4, group, sd), rows, cols);
      }
    }
  }
  Check(testing::Mlx(4, 32), 20, 4128);  // 129 chunks: one past the lanes' four-chunk stride
}

// The Llama-3-8B shapes: q / o, gate / up, down.
TEST_F(CudaInt8MlxTest, Llama8bShapes) {
  for (int group : {32, 64}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4096, 4096}, {14336, 4096}, {4096, 14336}}) {
      Check(testing::Mlx(4, group), rows, cols);
    }
  }
}

}  // namespace
}  // namespace llmhost::cuda_int8_mlx_test
