// The GPU's own memory budget (spec rule 11 on device memory): models priced
// in the GPU's memory are admitted under its ceiling with the accumulator
// floor, evicted to make room there, refused with 507 naming it, and their KV
// growth is claimed from it, never from the host's.
//
// The fake GPU: 20 GiB, all free; its ceiling 19 GiB (total less max(512 MiB,
// 5%)), the balanced tier's soft target below that. The host's custom ceiling
// (10 GiB) never binds here: these models hold nothing of the host's.
#include <algorithm>

#include <gtest/gtest.h>

#include "fake_engine.h"
#include "pool/engine_pool.h"

namespace llmhost::device_budget_test {
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

void AddGpu(PoolFixture& f, uint64_t total = 20 * kGB) { f.probe->set_gpus({GpuMemory{0, "H200", total, total, 0, {}}}); }

// NVML numbers GPUs by bus order and ignores CUDA_VISIBLE_DEVICES; CUDA puts
// the fastest first and renumbers: the budget's readings are the GPU at the
// served device's PCI location, whatever the numbers say.
TEST(DeviceBudget, SelectGpuMatchesByPciLocationThenByNumber) {
  const PciLocation a{0, 0x1b, 0}, b{0, 0x3b, 0}, c{1, 0x1b, 0};
  std::vector<GpuMemory> gpus = {{0, "A", 80 * kGB, 80 * kGB, 0, a}, {1, "B", 141 * kGB, 141 * kGB, 0, b},
                                 {2, "C", 24 * kGB, 24 * kGB, 0, c}};
  // CUDA_VISIBLE_DEVICES=1: CUDA's device 0 is NVML's 1.
  ASSERT_NE(SelectGpu(gpus, 0, b), nullptr);
  EXPECT_EQ(SelectGpu(gpus, 0, b)->name, "B");
  EXPECT_EQ(SelectGpu(gpus, 2, a)->name, "A");  // the domain counts too
  EXPECT_EQ(SelectGpu(gpus, 0, c)->name, "C");
  EXPECT_EQ(SelectGpu(gpus, 0, PciLocation{0, 0x99, 0}), nullptr);  // located, none there
  EXPECT_EQ(SelectGpu(gpus, 1, PciLocation{})->name, "B");          // no location: by number
  for (GpuMemory& g : gpus) g.pci = PciLocation{};                   // readings without locations
  EXPECT_EQ(SelectGpu(gpus, 2, b)->name, "C");
  EXPECT_EQ(SelectGpu(gpus, 5, b), nullptr);
  EXPECT_EQ(SelectGpu({}, 0, PciLocation{}), nullptr);
}

// The pool budgets the GPU it serves on, not the first the driver lists.
TEST(DeviceBudget, TheBudgetReadsTheServedGpu) {
  PoolFixture f;
  f.probe->set_gpus({GpuMemory{0, "small", 8 * kGB, 8 * kGB, 0, PciLocation{0, 0x1b, 0}},
                     GpuMemory{1, "large", 20 * kGB, 20 * kGB, 0, PciLocation{0, 0x3b, 0}}});
  f.options.gpus = {GpuTarget{0, PciLocation{0, 0x3b, 0}}};  // CUDA's 0, under CUDA_VISIBLE_DEVICES=1
  f.factory->Set("a", Gpu(10 * kGB));  // fits the large GPU only
  f.Start({"a"});
  ASSERT_TRUE(f.Touch("a").ok());
  const MemorySnapshot m = f.pool->Memory();
  ASSERT_NE(m.FirstDevice(), nullptr);
  EXPECT_EQ(m.FirstDevice()->gpu, 1);
  EXPECT_EQ(m.FirstDevice()->limits.total, 20 * kGB);
  EXPECT_EQ(m.committed[1], 10 * kGB);
}

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
  ASSERT_NE(m.FirstDevice(), nullptr);
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
  EXPECT_LE(f.pool->Memory().FirstDevice()->limits.admission_ceiling, 8 * kGB);
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

// ---- several GPUs: each its own budget ---------------------------------------

// Two 20 GiB GPUs (CUDA's 0 and 1, NVML numbering them the same way).
void AddTwoGpus(PoolFixture& f) {
  f.probe->set_gpus({GpuMemory{0, "H200", 20 * kGB, 20 * kGB, 0, {}}, GpuMemory{1, "H200", 20 * kGB, 20 * kGB, 0, {}}});
  f.options.gpus = {GpuTarget{0, {}}, GpuTarget{1, {}}};
}

uint64_t CommittedOn(const MemorySnapshot& m, int gpu) { return m.committed[BudgetIndex(GpuBudget(gpu))]; }

// A pair that over-commits one GPU fits two: the second model goes to the
// GPU where nothing has to go, and loads there.
TEST(DeviceBudget, ASecondModelGoesToTheGpuWithRoomInsteadOfEvicting) {
  PoolFixture f;
  AddTwoGpus(f);
  f.factory->Set("a", Gpu(12 * kGB));
  f.factory->Set("b", Gpu(12 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"a", "b"}));
  const int ga = f.factory->Last("a")->cuda_device, gb = f.factory->Last("b")->cuda_device;
  EXPECT_NE(ga, gb);
  ASSERT_TRUE(ga == 0 || ga == 1) << ga;
  const MemorySnapshot m = f.pool->Memory();
  EXPECT_EQ(CommittedOn(m, ga), 12 * kGB);
  EXPECT_EQ(CommittedOn(m, gb), 12 * kGB);
  EXPECT_EQ(m.committed[0], 0u);
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_TRUE(m.devices[0].present && m.devices[1].present);
  EXPECT_EQ(f.StatusOf("a").gpu, std::optional<int>(ga));
  EXPECT_EQ(f.StatusOf("b").gpu, std::optional<int>(gb));
}

// With every GPU full, the model goes where the fewest idle models must
// go, even where less room is left: GPU 0 holds three small models (two
// would have to go), GPU 1 one larger (it alone goes).
TEST(DeviceBudget, AModelGoesWhereTheFewestEvictionsMakeRoom) {
  PoolFixture f;
  AddTwoGpus(f);
  for (const char* id : {"x", "y", "u"}) f.factory->Set(id, Gpu(3 * kGB));
  f.factory->Set("z", Gpu(10 * kGB));
  f.factory->Set("w", Gpu(12 * kGB));
  f.Start({"u", "w", "x", "y", "z"});
  for (const char* id : {"x", "y", "u"}) ASSERT_TRUE(f.pool->UpdateSettings(id, {{"device", "cuda:0"}}).ok());
  ASSERT_TRUE(f.pool->UpdateSettings("z", {{"device", "cuda:1"}}).ok());
  for (const char* id : {"x", "y", "u", "z"}) {
    ASSERT_TRUE(f.Touch(id).ok()) << id;
    f.Advance(1);
  }
  EXPECT_EQ(f.factory->Last("z")->cuda_device, 1);
  EXPECT_EQ(f.factory->Last("x")->cuda_device, 0);
  ASSERT_TRUE(f.Touch("w").ok());
  EXPECT_EQ(f.factory->Last("w")->cuda_device, 1);
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"u", "w", "x", "y"}));
  const MemorySnapshot m = f.pool->Memory();
  EXPECT_EQ(CommittedOn(m, 0), 9 * kGB);
  EXPECT_EQ(CommittedOn(m, 1), 12 * kGB);
  for (int g = 0; g < 2; ++g) EXPECT_LE(CommittedOn(m, g), m.devices[g].limits.admission_ceiling);
}

// A model's device setting names its GPU; one the server does not compute
// on is refused saying which it does; "cpu" prices it in host memory.
TEST(DeviceBudget, TheDeviceSettingChoosesTheGpuOrTheHost) {
  PoolFixture f;
  AddTwoGpus(f);
  f.factory->Set("a", Gpu(2 * kGB));
  f.factory->Set("b", Gpu(2 * kGB));
  f.factory->Set("c", Gpu(2 * kGB));
  f.Start({"a", "b", "c"});
  ASSERT_TRUE(f.pool->UpdateSettings("a", {{"device", "cuda:1"}}).ok());
  ASSERT_TRUE(f.pool->UpdateSettings("b", {{"device", "cuda:7"}}).ok());
  ASSERT_TRUE(f.pool->UpdateSettings("c", {{"device", "cpu"}}).ok());
  EXPECT_FALSE(f.pool->UpdateSettings("c", {{"device", "gpu"}}).ok());
  ASSERT_TRUE(f.Touch("a").ok());
  EXPECT_EQ(f.factory->Last("a")->cuda_device, 1);
  const PoolError e = f.Touch("b");
  EXPECT_EQ(e.code, PoolErrorCode::kUnavailable);
  EXPECT_NE(e.message.find("cuda:7"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("cuda:0, cuda:1"), std::string::npos) << e.message;
  ASSERT_TRUE(f.Touch("c").ok());
  EXPECT_EQ(f.factory->Last("c")->cuda_device, -1);
  const MemorySnapshot m = f.pool->Memory();
  EXPECT_EQ(m.committed[0], 2 * kGB);
  EXPECT_EQ(CommittedOn(m, 1), 2 * kGB);
  EXPECT_EQ(CommittedOn(m, 0), 0u);
  EXPECT_FALSE(f.StatusOf("c").gpu.has_value());
}

// A model on the second GPU claims its KV growth there, under that GPU's
// ceiling; the first GPU's budget is untouched.
TEST(DeviceBudget, KvClaimsCountOnTheModelsOwnGpu) {
  PoolFixture f;
  AddTwoGpus(f);
  f.factory->Set("a", Gpu(4 * kGB));
  f.Start({"a"});
  ASSERT_TRUE(f.pool->UpdateSettings("a", {{"device", "cuda:1"}}).ok());
  ASSERT_TRUE(f.Touch("a").ok());
  KvBudget& b = *f.factory->Last("a")->kv_budget;
  EXPECT_TRUE(b.Claim(10 * kGB));
  MemorySnapshot m = f.pool->Memory();
  EXPECT_EQ(CommittedOn(m, 1), 14 * kGB);
  EXPECT_EQ(CommittedOn(m, 0), 0u);
  EXPECT_FALSE(b.Claim(6 * kGB)) << "never above GPU 1's ceiling (19 GiB)";
  b.Return(10 * kGB);
  EXPECT_EQ(CommittedOn(f.pool->Memory(), 1), 4 * kGB);
}

// A model split over two GPUs (tensor_parallel 2) is priced half on each,
// loads from the first GPU, is admitted only where both have room (a model
// on either GPU that stands in the way goes), claims its KV growth half on
// each, and is refused naming the GPUs when the server has too few.
TEST(DeviceBudget, ASplitModelTakesAShareOfEachOfItsGpus) {
  PoolFixture f;
  AddTwoGpus(f);
  f.factory->Set("s", Gpu(24 * kGB));
  f.factory->Set("b", Gpu(10 * kGB));
  f.factory->Set("w", Gpu(24 * kGB));
  f.Start({"b", "s", "w"});
  ASSERT_TRUE(f.pool->UpdateSettings("s", {{"tensor_parallel", 2}}).ok());
  ASSERT_TRUE(f.pool->UpdateSettings("w", {{"tensor_parallel", 4}}).ok());
  ASSERT_TRUE(f.pool->UpdateSettings("b", {{"device", "cuda:1"}}).ok());
  ASSERT_TRUE(f.Touch("s").ok());
  EXPECT_EQ(f.factory->Last("s")->cuda_device, 0);
  MemorySnapshot m = f.pool->Memory();
  EXPECT_EQ(CommittedOn(m, 0), 12 * kGB);
  EXPECT_EQ(CommittedOn(m, 1), 12 * kGB);
  EXPECT_EQ(m.committed[0], 0u);

  // Its KV cache grows by the same share on each GPU, never above either ceiling (19 GiB).
  KvBudget& kv = *f.factory->Last("s")->kv_budget;
  EXPECT_TRUE(kv.Claim(4 * kGB));
  m = f.pool->Memory();
  EXPECT_EQ(CommittedOn(m, 0), 14 * kGB);
  EXPECT_EQ(CommittedOn(m, 1), 14 * kGB);
  EXPECT_FALSE(kv.Claim(12 * kGB)) << "6 GiB more on each would pass the ceiling";
  // A settings change waits for the reload: the loaded model (leased, so it cannot drain meanwhile) keeps
  // the GPUs its admission gave it.
  {
    AcquireResult lease = f.pool->Acquire("s", 5);
    ASSERT_TRUE(lease.ok());
    ASSERT_TRUE(f.pool->UpdateSettings("s", {{"tensor_parallel", 1}}).ok());
    kv.Return(4 * kGB);
    m = f.pool->Memory();
    EXPECT_EQ(CommittedOn(m, 0), 12 * kGB);
    EXPECT_EQ(CommittedOn(m, 1), 12 * kGB);
    ASSERT_TRUE(f.pool->UpdateSettings("s", {{"tensor_parallel", 2}}).ok());
  }

  // b on GPU 1 does not fit beside s's half there: s goes (GPU 0 empties too).
  f.Advance(1);
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"b"}));
  m = f.pool->Memory();
  EXPECT_EQ(CommittedOn(m, 0), 0u);
  EXPECT_EQ(CommittedOn(m, 1), 10 * kGB);
  // s again: GPU 0 has room, GPU 1 does not until b goes.
  f.Advance(1);
  const PoolError again = f.Touch("s");
  ASSERT_TRUE(again.ok()) << again.message;
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"s"}));
  m = f.pool->Memory();
  for (int g = 0; g < 2; ++g) EXPECT_EQ(CommittedOn(m, g), 12 * kGB);

  const PoolError e = f.Touch("w");
  EXPECT_EQ(e.code, PoolErrorCode::kUnavailable);
  EXPECT_NE(e.message.find("split over 4 GPUs"), std::string::npos) << e.message;
  EXPECT_FALSE(f.pool->UpdateSettings("w", {{"tensor_parallel", 0}}).ok());
  EXPECT_FALSE(f.pool->UpdateSettings("w", {{"tensor_parallel", 65}}).ok());
}

// On four GPUs, split models take aligned pairs (0-1, 2-3): a second one
// goes to the free pair instead of evicting, a third evicts the pair used
// least recently, and a split model named "cuda:2" takes GPUs 2-3.
TEST(DeviceBudget, SplitModelsTakeRunsOfGpus) {
  PoolFixture f;
  std::vector<GpuMemory> gpus;
  f.options.gpus.clear();
  for (int g = 0; g < 4; ++g) {
    gpus.push_back(GpuMemory{g, "H200", 20 * kGB, 20 * kGB, 0, {}});
    f.options.gpus.push_back(GpuTarget{g, {}});
  }
  f.probe->set_gpus(gpus);
  for (const char* id : {"p", "q", "r", "t"}) f.factory->Set(id, Gpu(24 * kGB));
  f.Start({"p", "q", "r", "t"});
  for (const char* id : {"p", "q", "r", "t"}) ASSERT_TRUE(f.pool->UpdateSettings(id, {{"tensor_parallel", 2}}).ok());
  ASSERT_TRUE(f.pool->UpdateSettings("t", {{"device", "cuda:2"}}).ok());
  ASSERT_TRUE(f.Touch("p").ok());
  f.Advance(1);
  ASSERT_TRUE(f.Touch("q").ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"p", "q"}));
  const int gp = f.factory->Last("p")->cuda_device, gq = f.factory->Last("q")->cuda_device;
  EXPECT_TRUE((gp == 0 && gq == 2) || (gp == 2 && gq == 0)) << gp << " " << gq;
  MemorySnapshot m = f.pool->Memory();
  for (int g = 0; g < 4; ++g) EXPECT_EQ(CommittedOn(m, g), 12 * kGB) << "GPU " << g;
  // r: every pair is full; p was used least recently.
  f.Advance(1);
  ASSERT_TRUE(f.Touch("r").ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"q", "r"}));
  EXPECT_EQ(f.factory->Last("r")->cuda_device, gp);
  // t wants GPUs 2-3.
  f.Advance(1);
  ASSERT_TRUE(f.Touch("t").ok());
  EXPECT_EQ(f.factory->Last("t")->cuda_device, 2);
  m = f.pool->Memory();
  for (int g = 0; g < 4; ++g) EXPECT_LE(CommittedOn(m, g), m.devices[g].limits.admission_ceiling) << "GPU " << g;
  EXPECT_EQ(CommittedOn(m, 2), 12 * kGB);
  EXPECT_EQ(CommittedOn(m, 3), 12 * kGB);
  // cuda:1 starts no aligned pair.
  ASSERT_TRUE(f.pool->UpdateSettings("p", {{"device", "cuda:1"}}).ok());
  const PoolError e = f.Touch("p");
  EXPECT_EQ(e.code, PoolErrorCode::kUnavailable);
  EXPECT_NE(e.message.find("split over 2 GPUs (tensor_parallel) from cuda:1"), std::string::npos) << e.message;
}

// The swap test on two GPUs: three models that do not fit together, asked
// for in turn; every GPU's committed bytes stay under its ceiling, and the
// model that goes is the least recently used of all, whichever GPU holds it.
TEST(DeviceBudget, ThreeModelsThatDoNotFitTogetherSwapUnderEveryCeiling) {
  PoolFixture f;
  AddTwoGpus(f);
  for (const char* id : {"a", "b", "c"}) f.factory->Set(id, Gpu(15 * kGB));
  f.Start({"a", "b", "c"});
  for (int round = 0; round < 3; ++round) {
    for (const char* id : {"a", "b", "c"}) {
      ASSERT_TRUE(f.Touch(id).ok()) << id;
      f.Advance(1);
      const MemorySnapshot m = f.pool->Memory();
      for (int g = 0; g < 2; ++g) {
        EXPECT_LE(CommittedOn(m, g), m.devices[g].limits.admission_ceiling) << id << " GPU " << g;
      }
      EXPECT_LE(f.LoadedIds().size(), 2u);
      if (round > 0) {
        const char* previous = id[0] == 'a' ? "c" : id[0] == 'b' ? "a" : "b";
        std::vector<std::string> want = {id, previous};
        std::sort(want.begin(), want.end());
        EXPECT_EQ(f.LoadedIds(), want) << "after " << id;
      }
    }
  }
}

}  // namespace
}  // namespace llmhost::device_budget_test
