// Collectives (backend/collective.h): every rank's AllReduceSum gives the
// rank-order sum bit for bit, whatever the count, call after call; on CPU
// backends (the in-process stand-in) and on GPUs (NCCL, where there are two
// or more, through device graphs too). And the groups MakeCollectives
// refuses, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/collective.h"
#include "backend/device.h"

namespace llmhost::collective_test {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Rank `rank`'s element i in round `round`: signs and magnitudes (2^-8 to
// 2^24) mixed, so that adding in another order would change the bits.
float Input(int rank, int round, int64_t i) {
  const uint64_t h = Mix(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(rank) * 1000003u +
                         static_cast<uint64_t>(round) * 7919u + 1);
  const float mantissa = 1.0f + static_cast<float>(h & 0xFFFFFF) / 16777216.0f;
  const int exponent = static_cast<int>((h >> 24) % 33) - 8;
  return ((h >> 40) & 1 ? -1.0f : 1.0f) * std::ldexp(mantissa, exponent);
}

// What every rank must hold: ((in_0 + in_1) + in_2) + ... in f32.
float RankOrderSum(int size, int round, int64_t i) {
  float s = Input(0, round, i);
  for (int r = 1; r < size; ++r) s += Input(r, round, i);
  return s;
}

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

// Each rank's thread runs `rounds` rounds of AllReduceSum over every count
// (fresh inputs each time) through Backend::Enqueue, a key per count: a GPU
// runs a step plainly, then records it, then replays it. Each thread checks
// its results against the host's rank-order sum, bit for bit.
void ExpectRankOrderSums(const std::vector<Backend*>& backends, const std::vector<int64_t>& counts, int rounds) {
  const int size = static_cast<int>(backends.size());
  auto group = MakeCollectives(backends);
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  ASSERT_EQ(group->size(), backends.size());
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ((*group)[static_cast<size_t>(r)]->rank(), r);
    EXPECT_EQ((*group)[static_cast<size_t>(r)]->size(), size);
  }
  const int64_t max_count = *std::max_element(counts.begin(), counts.end());
  std::vector<DeviceBuffer> bufs;
  for (Backend* b : backends) {
    auto buf = b->Allocate(static_cast<size_t>(max_count) * sizeof(float), "collective test");
    ASSERT_TRUE(buf.ok()) << buf.status().ToString();
    bufs.push_back(*buf);
  }
  std::vector<std::string> failures(static_cast<size_t>(size));
  std::vector<Status> synced(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      const auto ur = static_cast<size_t>(r);
      Backend& b = *backends[ur];
      Collective& c = *(*group)[ur];
      float* dev = bufs[ur].as<float>();
      std::vector<float> in, out;
      for (int round = 0; round < rounds; ++round) {
        for (size_t k = 0; k < counts.size(); ++k) {
          const int64_t count = counts[k];
          const size_t bytes = static_cast<size_t>(count) * sizeof(float);
          in.resize(static_cast<size_t>(count));
          out.assign(static_cast<size_t>(count), 0.0f);
          for (int64_t i = 0; i < count; ++i) in[static_cast<size_t>(i)] = Input(r, round, i);
          b.CopyToDevice(bufs[ur], 0, in.data(), bytes);
          b.Enqueue(k + 1, [&] { c.AllReduceSum(dev, count); });
          b.CopyToHost(out.data(), bufs[ur], 0, bytes);
          for (int64_t i = 0; i < count && failures[ur].empty(); ++i) {
            const float want = RankOrderSum(size, round, i), got = out[static_cast<size_t>(i)];
            if (Bits(want) == Bits(got)) continue;
            std::ostringstream m;
            m << b.name() << " (rank " << r << " of " << size << "), round " << round << ", count " << count
              << ", element " << i << ": want " << want << " (0x" << std::hex << Bits(want) << "), got " << std::dec
              << got << " (0x" << std::hex << Bits(got) << ")";
            failures[ur] = m.str();
          }
        }
      }
      synced[ur] = b.Synchronize();
    });
  }
  for (std::thread& t : threads) t.join();
  const char* graphs = std::getenv("LLMHOST_CUDA_GRAPHS");
  const bool recorded = rounds >= 4 && !(graphs && std::string(graphs) == "off");  // run, record, replay
  for (size_t r = 0; r < backends.size(); ++r) {
    EXPECT_TRUE(synced[r].ok()) << backends[r]->name() << ": " << synced[r].ToString();
    EXPECT_TRUE(failures[r].empty()) << failures[r];
    if (size > 1 && backends[r]->kind() == DeviceKind::kCuda && recorded) {
      EXPECT_GT(backends[r]->graph_replays(), 0u) << backends[r]->name() << ": no step was replayed from a graph";
    }
    backends[r]->Free(bufs[r]);
  }
}

std::vector<std::unique_ptr<Backend>> Make(DeviceKind kind, int n) {
  std::vector<std::unique_ptr<Backend>> out;
  for (int i = 0; i < n; ++i) {
    auto b = MakeBackend(DeviceSpec{kind, kind == DeviceKind::kCuda ? i : 0}, Precision::kReference, nullptr);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (b.ok()) out.push_back(std::move(*b));
  }
  return out;
}

std::vector<Backend*> Ptrs(const std::vector<std::unique_ptr<Backend>>& owned) {
  std::vector<Backend*> out;
  for (const auto& b : owned) out.push_back(b.get());
  return out;
}

TEST(Collective, CpuRanksGetTheRankOrderSumBitForBit) {
  for (int size : {1, 2, 3, 4}) {
    SCOPED_TRACE("cpu ranks: " + std::to_string(size));
    auto owned = Make(DeviceKind::kCpu, size);
    ASSERT_EQ(owned.size(), static_cast<size_t>(size));
    ExpectRankOrderSums(Ptrs(owned), {1, 7, 1000}, 3);
  }
}

TEST(Collective, GpuRanksGetTheRankOrderSumBitForBit) {
  if (CudaDeviceCount() < 2) {
    GTEST_SKIP() << (CudaBuilt() ? "fewer than 2 GPUs here (" + std::to_string(CudaDeviceCount()) + ")"
                                 : std::string("built without CUDA"));
  }
  // Two ranks use ncclAllReduce, more the all-gather and the sum kernel; the
  // last count crosses a step of the all-gather (64 MiB gathered).
  for (int size = 2; size <= std::min(CudaDeviceCount(), 4); ++size) {
    SCOPED_TRACE("GPU ranks: " + std::to_string(size));
    auto owned = Make(DeviceKind::kCuda, size);
    ASSERT_EQ(owned.size(), static_cast<size_t>(size));
    auto probe = MakeCollectives(Ptrs(owned));
    if (!probe.ok() && probe.status().message().find("could not be loaded") != std::string::npos) {
      GTEST_SKIP() << probe.status().ToString();
    }
    ASSERT_TRUE(probe.ok()) << probe.status().ToString();
    probe->clear();  // one group at a time
    ExpectRankOrderSums(Ptrs(owned), {1, 7, 1000, (int64_t{6} << 20) + 3}, 4);
  }
}

TEST(Collective, OneGpuIsAGroupOfOne) {
  if (CudaDeviceCount() < 1) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
  auto owned = Make(DeviceKind::kCuda, 1);
  ASSERT_EQ(owned.size(), 1u);
  ExpectRankOrderSums(Ptrs(owned), {1, 7, 1000}, 2);
}

TEST(Collective, RefusesNoRanksAndANullRank) {
  auto none = MakeCollectives(std::vector<Backend*>{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  auto cpus = Make(DeviceKind::kCpu, 1);
  ASSERT_EQ(cpus.size(), 1u);
  auto null_rank = MakeCollectives(std::vector<Backend*>{cpus[0].get(), nullptr});
  ASSERT_FALSE(null_rank.ok());
  EXPECT_EQ(null_rank.status().code(), StatusCode::kInvalidArgument);
}

TEST(Collective, RefusesMixedKindsAndAGpuNamedTwice) {
  if (CudaDeviceCount() < 1) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
  auto cpus = Make(DeviceKind::kCpu, 1);
  auto gpu = Make(DeviceKind::kCuda, 1);
  ASSERT_EQ(cpus.size(), 1u);
  ASSERT_EQ(gpu.size(), 1u);
  auto mixed = MakeCollectives(std::vector<Backend*>{cpus[0].get(), gpu[0].get()});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(mixed.status().message().find("cuda:0"), std::string::npos) << mixed.status().message();

  auto again = MakeBackend(DeviceSpec{DeviceKind::kCuda, 0}, Precision::kReference, nullptr);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  auto twice = MakeCollectives(std::vector<Backend*>{gpu[0].get(), again->get()});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(twice.status().message().find("cuda:0 is named twice"), std::string::npos) << twice.status().message();
}

}  // namespace
}  // namespace llmhost::collective_test
