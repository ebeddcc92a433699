// The GPU's own memory budget (spec rule 11 on device memory): models priced
// in the GPU's memory are admitted under its ceiling with the accumulator
// floor, evicted to make room there, refused with 507 naming it, and their KV
// growth is claimed from it, never from the host's.
//
// The fake GPU: 20 GiB, all free; its ceiling 19 GiB (total less max(512 MiB,
// 5%)), the balanced tier's soft target below that. The host's custom ceiling
// (10 GiB) never binds here: these models hold nothing of the host's.
#include <gtest/gtest.h>

#include "fake_engine.h"
#include "pool/engine_pool.h"

namespace llmhost {
namespace {

using testing::kGB;
using testing::FakeModelSpec;
using testing::PoolFixture;

FakeModelSpec Gpu(uint64_t resident, uint64_t device_active = 0) {
  FakeModelSpec s;
  s.resident = resident;
  s.device_active = device_active;
  s.on_gpu = true;
  s.dims.n_layers = 4;
  s.dims.n_heads = 8;
  s.dims.n_kv_heads = 8;
  s.dims.head_dim = 128;
  s.dims.hidden = 1024;
  s.dims.intermediate = 4096;
  return s;
}

void AddGpu(PoolFixture& f, uint64_t total = 20 * kGB) { f.probe->set_gpus({GpuMemory{0, "H200", total, total, 0}}); }

// The seed's regression on the device budget: both live device readings are
// 0, the accumulator shows the pair over-commits, the second evicts the first.
TEST(DeviceBudget, TheAccumulatorEvictsWhenLiveDeviceReadingsUndercount) {
  PoolFixture f;
  AddGpu(f);
  f.factory->Set("a", Gpu(10 * kGB));
  f.factory->Set("b", Gpu(10 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  const MemorySnapshot m = f.pool->Memory();
  ASSERT_TRUE(m.has_device);
  EXPECT_EQ(m.device_active[1], 0u);
  EXPECT_EQ(m.committed[1], 10 * kGB);
  EXPECT_EQ(m.committed[0], 0u);  // nothing of the host's
  ASSERT_TRUE(f.Touch("b").ok());  // 10 + 10 > the soft target: a goes
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  EXPECT_TRUE(f.factory->Last("a")->stopped);
  EXPECT_EQ(f.pool->Memory().committed[1], 10 * kGB);
}

TEST(DeviceBudget, APairUnderTheGpusTargetStaysLoaded) {
  PoolFixture f;
  AddGpu(f);
  f.factory->Set("a", Gpu(6 * kGB));
  f.factory->Set("b", Gpu(6 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(f.pool->Memory().committed[1], 12 * kGB);
}

TEST(DeviceBudget, TheGpuCeilingSettingBinds) {
  PoolFixture f;
  AddGpu(f);
  f.options.guard.gpu_ceiling_bytes = 8 * kGB;  // --gpu-memory-guard-gb 8
  f.factory->Set("a", Gpu(5 * kGB));
  f.factory->Set("b", Gpu(5 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  EXPECT_LE(f.pool->Memory().device.admission_ceiling, 8 * kGB);
}

TEST(DeviceBudget, AModelLargerThanTheGpuIsRefusedNamingIt) {
  PoolFixture f;
  AddGpu(f);
  f.factory->Set("big", Gpu(25 * kGB));
  f.Start({"big"});
  const PoolError e = f.Touch("big");
  EXPECT_EQ(e.code, PoolErrorCode::kTooLarge);
  EXPECT_NE(e.message.find("device memory"), std::string::npos) << e.message;
  EXPECT_TRUE(f.LoadedIds().empty());
}

TEST(DeviceBudget, AGpuModelWithoutAGpuIsRefused) {
  PoolFixture f;  // the probe reports no GPU
  f.factory->Set("a", Gpu(kGB));
  f.Start({"a"});
  const PoolError e = f.Touch("a");
  EXPECT_NE(e.code, PoolErrorCode::kOk);
  EXPECT_NE(e.message.find("no GPU"), std::string::npos) << e.message;
}

// KV growth of a GPU model is counted in the GPU's committed bytes and
// granted under the GPU's ceiling, whatever the host's budget says.
TEST(DeviceBudget, KvClaimsOfAGpuModelCountInTheGpusBudget) {
  PoolFixture f;
  AddGpu(f);
  f.factory->Set("a", Gpu(4 * kGB));
  f.Start({"a"});  // host custom ceiling 10 GiB
  ASSERT_TRUE(f.Touch("a").ok());
  KvBudget& b = *f.factory->Last("a")->kv_budget;
  EXPECT_TRUE(b.Claim(11 * kGB)) << "past the host's ceiling: the GPU's is what counts";
  MemorySnapshot m = f.pool->Memory();
  EXPECT_EQ(m.committed[1], 15 * kGB);
  EXPECT_EQ(m.committed[0], 0u);
  EXPECT_FALSE(b.Claim(5 * kGB)) << "never above the GPU's ceiling (19 GiB)";
  b.Return(11 * kGB);
  EXPECT_EQ(f.pool->Memory().committed[1], 4 * kGB);
}

}  // namespace
}  // namespace llmhost
