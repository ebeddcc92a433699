// The CUDA backend at kAuto for the GPU MatMul tests, and the checks they
// share. Skips without a GPU.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "backend/device.h"

namespace llmhost::testing {

class CudaMatMulTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
    DeviceSpec d;
    d.kind = DeviceKind::kCuda;
    auto b = MakeBackend(d, Precision::kAuto, nullptr);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    b_ = std::move(*b);
  }

  // y[n, rows] of `w` over x's rows [first, first + n), copied to the host.
  std::vector<float> Run(const WeightMatrix& w, const DeviceBuffer& x, int64_t first, int64_t n,
                         const DeviceBuffer& y, RowKind kind = RowKind::kGenerated) {
    b_->MatMul(w, x.as<float>() + first * w.cols, n, y.as<float>(), kind);
    std::vector<float> out(n * w.rows);
    b_->CopyToHost(out.data(), y, 0, out.size() * 4);
    EXPECT_TRUE(b_->Synchronize().ok());
    return out;
  }

  // w and w2 in one MatMuls call (as q/k/v or gate/up) over x's first 1 and
  // 17 rows: each y the bits of its weight alone (`alone`, `alone2`).
  void ExpectFusedAsAlone(const WeightMatrix& w, const DeviceBuffer& y, const std::vector<float>& alone,
                          const WeightMatrix& w2, const DeviceBuffer& y2, const std::vector<float>& alone2,
                          const DeviceBuffer& x) {
    for (int64_t m : {int64_t{1}, int64_t{17}}) {
      const Backend::MatMulJob jobs[] = {{&w, y.as<float>()}, {&w2, y2.as<float>()}};
      b_->MatMuls(jobs, x.as<float>(), m, RowKind::kGenerated);
      std::vector<float> fused(m * w.rows), fused2(m * w2.rows);
      b_->CopyToHost(fused.data(), y, 0, fused.size() * 4);
      b_->CopyToHost(fused2.data(), y2, 0, fused2.size() * 4);
      ASSERT_TRUE(b_->Synchronize().ok());
      EXPECT_EQ(0, std::memcmp(fused.data(), alone.data(), fused.size() * 4)) << "fused, n " << m;
      EXPECT_EQ(0, std::memcmp(fused2.data(), alone2.data(), fused2.size() * 4)) << "fused second, n " << m;
    }
  }

  std::unique_ptr<Backend> b_;
};

}  // namespace llmhost::testing
