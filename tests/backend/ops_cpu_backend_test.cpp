// CpuBackend as a device: buffer accounting (in use, peak, count, limit),
// copies, zero-copy weight preparation, and ops dispatched through the
// interface (embedding with scale, fill, add, bias).
#include <gtest/gtest.h>

#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace llmhost::ops_cpu_backend_test {
namespace {

TEST(OpsCpuBackendTest, MemoryAccounting) {
  CpuBackend b(nullptr, Precision::kReference, /*limit=*/1 << 16);
  EXPECT_EQ(b.kind(), DeviceKind::kCpu);
  auto x = b.Allocate(1000, "x");
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x->data) % 64, 0u);
  auto y = b.Allocate(5000, "y");
  ASSERT_TRUE(y.ok());
  MemoryStats s = b.memory_stats();
  EXPECT_EQ(s.buffer_count, 2u);
  EXPECT_EQ(s.bytes_in_use, 1024u + 5056u);  // rounded to 64 bytes
  auto big = b.Allocate(1 << 16, "too big");
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("too big"), std::string::npos);
  b.Free(*x);
  EXPECT_FALSE(x->valid());
  b.Free(*x);  // freeing an invalid buffer is a no-op
  s = b.memory_stats();
  EXPECT_EQ(s.bytes_in_use, 5056u);
  EXPECT_EQ(s.peak_bytes, 1024u + 5056u);
  EXPECT_EQ(s.buffer_count, 1u);
  b.Free(*y);
  EXPECT_EQ(b.memory_stats().bytes_in_use, 0u);
}

// Ops and copies return nothing; what goes wrong is kept (the first error)
// and returned by every Synchronize from then on.
TEST(OpsCpuBackendTest, ErrorsAreStickyUntilSynchronizeReportsThem) {
  CpuBackend b(nullptr);
  auto buf = b.Allocate(64, "buf");
  ASSERT_TRUE(buf.ok());
  EXPECT_TRUE(b.Synchronize().ok());
  const std::vector<uint8_t> host(100, 7);
  b.CopyToDevice(*buf, 0, host.data(), 64);
  EXPECT_TRUE(b.Synchronize().ok()) << "a copy inside the buffer";
  b.CopyToDevice(*buf, 32, host.data(), 40);  // past the end: not written, recorded
  const Status first = b.Synchronize();
  EXPECT_EQ(first.code(), StatusCode::kInternal);
  EXPECT_NE(first.message().find("CopyToDevice: 40 bytes at offset 32"), std::string::npos) << first.ToString();
  WeightMatrix bad;  // no data: the kernels cannot use it
  bad.rows = 2;
  bad.cols = 4;
  float x[4] = {1, 2, 3, 4}, y[2] = {0, 0};
  b.MatMul(bad, x, 1, y, RowKind::kPrompt);
  EXPECT_EQ(b.Synchronize().message(), first.message()) << "the first error stays";
  CpuBackend fresh(nullptr);
  fresh.MatMul(bad, x, 1, y, RowKind::kPrompt);
  EXPECT_NE(fresh.Synchronize().message().find("MatMul"), std::string::npos);
  b.Free(*buf);
}

TEST(OpsCpuBackendTest, CopiesAndOps) {
  CpuBackend b(nullptr);
  auto buf = b.Allocate(16 * sizeof(float), "buf");
  ASSERT_TRUE(buf.ok());
  const std::vector<float> host = {1, 2, 3, 4};
  b.CopyToDevice(*buf, 0, host.data(), 16);
  b.CopyDeviceToDevice(*buf, 16, *buf, 0, 16);
  float* d = buf->as<float>();
  b.Add(d, d + 4, 4, d + 8);       // 2, 4, 6, 8
  b.AddBias(d + 8, 2, 2, 2, d);    // rows (2,4),(6,8) + (1,2)
  b.Scale(d + 8, 4, 0.5f);
  b.Synchronize();
  std::vector<float> back(4);
  b.CopyToHost(back.data(), *buf, 8 * sizeof(float), 16);
  EXPECT_EQ(back, (std::vector<float>{1.5f, 3, 3.5f, 5}));
  b.Fill(d, 16, 0.25f);
  EXPECT_EQ(d[15], 0.25f);
  b.Free(*buf);
}

TEST(OpsCpuBackendTest, WeightsAreZeroCopyViewsAndEmbeddingScales) {
  CpuBackend b(nullptr);
  // bf16 table of 3 rows x 2: 1, 2 / 3, 4 / -1, 0.5
  const std::vector<uint16_t> table = {0x3f80, 0x4000, 0x4040, 0x4080, 0xbf80, 0x3f00};
  WeightMatrix w;
  w.format = WeightFormat::kBF16;
  w.rows = 3;
  w.cols = 2;
  w.data = table.data();
  auto prepared = b.PrepareWeight(w);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->data, table.data());  // the same bytes, not a copy
  EXPECT_EQ(b.memory_stats().mapped_weight_bytes, 12u);
  EXPECT_EQ(b.memory_stats().bytes_in_use, 0u);
  auto ids = b.Allocate(3 * sizeof(int32_t), "ids");
  auto out = b.Allocate(6 * sizeof(float), "out");
  ASSERT_TRUE(ids.ok() && out.ok());
  const std::vector<int32_t> want = {2, 0, 2};
  b.CopyToDevice(*ids, 0, want.data(), 12);
  b.Embedding(*prepared, ids->as<int32_t>(), 3, 8.0f, out->as<float>());
  EXPECT_EQ(std::vector<float>(out->as<float>(), out->as<float>() + 6),
            (std::vector<float>{-8, 4, 8, 16, -8, 4}));
  b.ReleaseWeight(*prepared);
  EXPECT_EQ(b.memory_stats().mapped_weight_bytes, 0u);
  b.Free(*ids);
  b.Free(*out);
}

}  // namespace
}  // namespace llmhost::ops_cpu_backend_test
