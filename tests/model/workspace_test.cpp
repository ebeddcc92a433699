// The forward pass lays its workspace out by batch bucket (BatchBucket):
// batches of one bucket use the same buffer at the same size, so a device
// backend's captured graph finds its arrays where it left them; a batch of a
// larger bucket grows it.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "model/model.h"
#include "model/model_test_util.h"

namespace llmhost::workspace_test {
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

// Every per-step upload comes from the backend's staging memory (pinned on
// a GPU), never from a host vector that may die before the copy runs.
class StagingWatch : public CpuBackend {
 public:
  StagingWatch() : CpuBackend(nullptr, Precision::kFast) {}
  Result<DeviceBuffer> AllocateStaging(size_t bytes, const std::string& tag) override {
    auto b = CpuBackend::AllocateStaging(bytes, tag);
    if (b.ok()) {
      staging_ = b->as<char>();
      staging_bytes_ = b->bytes;
      ++allocations_;
    }
    return b;
  }
  void CopyToDevice(const DeviceBuffer& dst, size_t off, const void* src, size_t bytes) override {
    const char* p = static_cast<const char*>(src);
    if (staging_ && p >= staging_ && p + bytes <= staging_ + staging_bytes_) {
      ++staged_;
    } else {
      ++unstaged_;
    }
    CpuBackend::CopyToDevice(dst, off, src, bytes);
  }
  const char* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  int allocations_ = 0, staged_ = 0, unstaged_ = 0;
};

TEST(ForwardWorkspace, UploadsComeFromTheBackendsStagingMemory) {
  testing::Golden g;
  if (!testing::LoadGolden("llama3-tiny", &g) || !FileExists(g.model_path)) GTEST_SKIP() << "fixture not available";
  StagingWatch backend;
  auto model = Model::Load(g.model_path, &backend);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Model& m = **model;
  auto cache = m.CreateKvCache(16, 16);
  ASSERT_TRUE(cache.ok());
  backend.unstaged_ = 0;  // the load's uploads (weights, RoPE tables) are not per step
  for (int64_t tokens : {5, 40, 3}) {
    KvSequence seq;
    std::vector<int32_t> ids(static_cast<size_t>(tokens), 3);
    ForwardItem it{&seq, ids, LogitsRows::kLast};
    ForwardOutput out;
    ASSERT_TRUE(m.Forward({&it, 1}, **cache, &out).ok());
    (*cache)->Release(&seq);
  }
  EXPECT_GT(backend.staged_, 0);
  EXPECT_EQ(backend.unstaged_, 0);
  EXPECT_LE(backend.allocations_, 2) << "grown, not allocated per step";
}

}  // namespace
}  // namespace llmhost::workspace_test
