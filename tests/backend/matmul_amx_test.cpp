// MatMulPrecision::kFastBf16: AMX-BF16 tiles or AVX512_BF16 dot products on
// CPUs that have them (matmul_amx.cpp), kFast elsewhere. The tests below run
// whichever this CPU has (and, on an AMX CPU, the AVX-512 kernel too) and skip
// on CPUs with neither (docs/benchmarks.md records where they ran).
//
// Batches of >= kAmxMinRows rows run AMX; smaller ones are kFast, bit for bit.
// Tolerances on AMX, every format:
//   against float64 sums of the bf16-rounded x and weights: |y - exact| <=
//   2e-5 * Σ|x·w| per output (only the f32 summation differs);
//   against the exact f32 reference: per output row of >= 16 outputs,
//   ‖y - y_ref‖ / ‖y_ref‖ <= 3e-2 (x, and weights that are not bf16, rounded
//   to 8 significant bits: ~2^-9 relative each; seen 1.3e-2 on 32-column
//   rows, printed).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "quant_test_util.h"
#include "util/thread_pool.h"

namespace llmhost::matmul_amx_test {
namespace {

using testing::FormatSpec;
using testing::OwnedWeight;

std::vector<float> MulOf(const WeightMatrix& w, const std::vector<float>& x, int64_t n, MatMulPrecision p,
                         ThreadPool* pool) {
  std::vector<float> y(n * w.rows, -7.0f);
  MatMul(w, x.data(), n, y.data(), p, pool);
  return y;
}

float RoundBf16(float v) { return Bf16ToF32(F32ToBf16(v)); }

std::vector<int64_t> ColsFor(const FormatSpec& s) {
  const int64_t m = s.ColMultiple();
  if (m == 1) return {7, 32, 100, 2048};  // 7, 100: a zero-padded last column tile
  if (m == 256) return {256, 768};
  return {m, 3 * m, 2048};
}

// On CPUs without a bf16 matmul (or with LLMHOST_CPU_ISA=avx2) kFastBf16 is kFast, bit for bit.
TEST(MatMulBf16, IsFastWithoutAmx) {
  const CpuIsa saved = ActiveCpuIsa();
  if (HasBf16Matmul(saved)) SetActiveCpuIsaForTesting(CpuIsa::kAvx2);
  ThreadPool pool(2);
  for (const FormatSpec& spec : {testing::Plain(WeightFormat::kBF16), testing::Mlx(4, 64)}) {
    SCOPED_TRACE(spec.Name());
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, 37, 128, 5, &ow);
    for (int64_t n : {1, 9, 40}) {
      const std::vector<float> x = testing::RandomVector(n * 128, static_cast<uint32_t>(n));
      const std::vector<float> fast = MulOf(ow.w, x, n, MatMulPrecision::kFast, &pool);
      const std::vector<float> bf16 = MulOf(ow.w, x, n, MatMulPrecision::kFastBf16, &pool);
      ASSERT_EQ(0, std::memcmp(fast.data(), bf16.data(), fast.size() * sizeof(float))) << "n " << n;
    }
  }
  SetActiveCpuIsaForTesting(saved);
}

TEST(MatMulAmx, MatchesBf16RoundedProductsEveryFormat) {
  if (!HasBf16Matmul(BestCpuIsa())) GTEST_SKIP() << "no AMX-BF16 on this CPU (or not granted by the OS)";
  ThreadPool pool(4);
  double worst_vs_ref = 0;
  for (const FormatSpec& spec : testing::AllFormats()) {
    for (int64_t cols : ColsFor(spec)) {
      for (int64_t rows : {1, 17, 32, 45, 64}) {
        OwnedWeight ow;
        testing::MakeRandomWeight(spec, rows, cols, static_cast<uint32_t>(rows * 31 + cols), &ow);
        std::vector<float> wf(rows * cols);
        DequantizeRows(ow.w, 0, rows, wf.data());
        for (int64_t n : {16, 17, 33, 70}) {
          if (rows * cols * n > 3'000'000) continue;
          SCOPED_TRACE(spec.Name() + " rows " + std::to_string(rows) + " cols " + std::to_string(cols) +
                       " n " + std::to_string(n));
          const std::vector<float> x = testing::RandomVector(n * cols, static_cast<uint32_t>(n + cols));
          const std::vector<float> ref = MulOf(ow.w, x, n, MatMulPrecision::kReference, &pool);
          const std::vector<float> y = MulOf(ow.w, x, n, MatMulPrecision::kFastBf16, &pool);
          for (int64_t t = 0; t < n; ++t) {
            for (int64_t r = 0; r < rows; ++r) {
              double exact = 0, mag = 0;
              for (int64_t c = 0; c < cols; ++c) {
                const double p = double(RoundBf16(x[t * cols + c])) * RoundBf16(wf[r * cols + c]);
                exact += p;
                mag += std::fabs(p);
              }
              ASSERT_LE(std::fabs(y[t * rows + r] - exact), 2e-5 * mag) << "x row " << t << " output " << r;
            }
            if (rows >= 16) {
              const double e = testing::RelErr(&y[t * rows], &ref[t * rows], rows);
              worst_vs_ref = std::max(worst_vs_ref, e);
              ASSERT_LE(e, 3e-2) << "x row " << t;
            }
          }
        }
      }
    }
  }
  std::printf("worst AMX-vs-reference row relative error: %.3g\n", worst_vs_ref);
}

// A row of x gives the same bits in every batch of >= kAmxMinRows rows: at
// other positions of a 16-token block, next to other blocks, past the 512-row
// chunk, with or without threads. Below kAmxMinRows: kFast's bits, and
// kBf16Tiles' bits equal the large batch's at every size.
TEST(MatMulAmx, BatchInvariantBitForBit) {
  if (!HasBf16Matmul(BestCpuIsa())) GTEST_SKIP() << "no AMX-BF16 on this CPU (or not granted by the OS)";
  ThreadPool pool(4);
  for (const FormatSpec& spec : {testing::Plain(WeightFormat::kBF16), testing::Plain(WeightFormat::kF32),
                                 testing::Mlx(4, 64), testing::Ggml(GgmlType::kQ8_0)}) {
    SCOPED_TRACE(spec.Name());
    const int64_t cols = 256, rows = 70;
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, rows, cols, 9, &ow);
    const int64_t big = 530;
    const std::vector<float> x = testing::RandomVector(big * cols, 11);
    const std::vector<float> all = MulOf(ow.w, x, big, MatMulPrecision::kFastBf16, &pool);
    for (int64_t t : {0, 5, 15, 16, 31, 100, 515, 529}) {
      for (int64_t n : {1, 7, 15, 16, 17, 40}) {
        // Row t of x placed at position n - 1 of a batch of n (other rows: other data).
        std::vector<float> xs(n * cols);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t src = i == n - 1 ? t : (t + 37 * (i + 1)) % big;
          std::memcpy(&xs[i * cols], &x[src * cols], cols * sizeof(float));
        }
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          // kBf16Tiles: the same bits at every batch size, a batch of < 16 rows too.
          const std::vector<float> tiles = MulOf(ow.w, xs, n, MatMulPrecision::kBf16Tiles, p);
          ASSERT_EQ(0, std::memcmp(&tiles[(n - 1) * rows], &all[t * rows], rows * sizeof(float)))
              << "kBf16Tiles: row " << t << " in a batch of " << n << (p ? " (threads)" : "");
          const std::vector<float> y = MulOf(ow.w, xs, n, MatMulPrecision::kFastBf16, p);
          if (n >= kAmxMinRows) {
            ASSERT_EQ(0, std::memcmp(&y[(n - 1) * rows], &all[t * rows], rows * sizeof(float)))
                << "row " << t << " in a batch of " << n << (p ? " (threads)" : "");
          } else {
            const std::vector<float> fast = MulOf(ow.w, xs, n, MatMulPrecision::kFast, p);
            ASSERT_EQ(0, std::memcmp(y.data(), fast.data(), y.size() * sizeof(float))) << "batch of " << n;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace llmhost::matmul_amx_test
