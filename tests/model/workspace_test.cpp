// The forward pass lays its workspace out by batch bucket (BatchBucket):
// batches of one bucket use the same buffer at the same size, so a device
// backend's captured graph finds its arrays where it left them; a batch of a
// larger bucket grows it.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "model/model.h"
#include "model/model_test_util.h"

namespace llmhost {
namespace {

TEST(BatchBucket, PowersOfTwoThenMultiplesOf64) {
  const std::pair<int64_t, int64_t> kCases[] = {{0, 1},  {1, 1},   {2, 2},    {3, 4},    {5, 8},   {16, 16},
                                                {17, 32}, {64, 64}, {65, 128}, {129, 192}, {520, 576}};
  for (auto [n, bucket] : kCases) EXPECT_EQ(BatchBucket(n), bucket) << n;
}

TEST(ForwardWorkspace, BatchesOfOneBucketShareTheBuffer) {
  testing::Golden g;
  if (!testing::LoadGolden("llama3-tiny", &g) || !FileExists(g.model_path)) GTEST_SKIP() << "fixture not available";
  CpuBackend backend(nullptr, Precision::kFast);
  auto model = Model::Load(g.model_path, &backend);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Model& m = **model;
  auto cache = m.CreateKvCache(16, 16);
  ASSERT_TRUE(cache.ok());
  auto step = [&](int64_t tokens) {
    KvSequence seq;
    std::vector<int32_t> ids(static_cast<size_t>(tokens), 3);
    ForwardItem it{&seq, ids, LogitsRows::kAll};
    ForwardOutput out;
    EXPECT_TRUE(m.Forward({&it, 1}, **cache, &out).ok());
    (*cache)->Release(&seq);
    return backend.memory_stats();
  };
  const MemoryStats five = step(5);
  const MemoryStats seven = step(7);  // bucket 8, as 5
  EXPECT_EQ(seven.bytes_in_use, five.bytes_in_use);
  EXPECT_EQ(seven.peak_bytes, five.peak_bytes) << "no second workspace was allocated";
  const MemoryStats nine = step(9);  // bucket 16: the workspace grows
  EXPECT_GT(nine.bytes_in_use, seven.bytes_in_use);
}

}  // namespace
}  // namespace llmhost
