// Block allocator and KV cache bookkeeping: allocation order, reference
// counts, reservation across block boundaries, copy-on-write of a shared
// partly filled block, exhaustion leaving sequences unchanged, and the
// backend's memory accounting of the cache.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "model/kv_cache.h"

namespace llmhost::kv_cache_test {
namespace {

TEST(BlockAllocatorTest, AllocatesRefcountsAndReuses) {
  BlockAllocator a(3);
  EXPECT_EQ(a.free_blocks(), 3);
  EXPECT_EQ(a.Allocate(), 0);
  EXPECT_EQ(a.Allocate(), 1);
  EXPECT_EQ(a.Allocate(), 2);
  EXPECT_FALSE(a.Allocate().has_value());
  a.Ref(1);
  a.Unref(1);
  EXPECT_EQ(a.free_blocks(), 0);
  a.Unref(1);
  EXPECT_EQ(a.free_blocks(), 1);
  EXPECT_EQ(a.Allocate(), 1);  // the freed block comes back
}

TEST(KvCacheTest, ReserveForkCopyOnWriteRelease) {
  CpuBackend backend(nullptr);
  auto c = KvCache::Create(&backend, /*layers=*/2, /*kv_dim=*/4, /*block_size=*/4, /*blocks=*/6);
  ASSERT_TRUE(c.ok());
  KvCache& kv = **c;
  EXPECT_EQ(backend.memory_stats().bytes_in_use, kv.bytes());
  EXPECT_EQ(kv.bytes(), 2u * 2 * 6 * 4 * 4 * sizeof(float));

  KvSequence a;
  ASSERT_TRUE(kv.Reserve(&a, 6).ok());
  EXPECT_EQ(a.block_table.size(), 2u);
  // Fill a's rows with recognisable values: row r of layer l = 100 l + r.
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t r = 0; r < 6 * 4; ++r) {
      for (int64_t d = 0; d < 4; ++d) static_cast<float*>(kv.k(l))[r * 4 + d] = static_cast<float*>(kv.v(l))[r * 4 + d] = 100.0f * l + r;
    }
  }
  a.length = 6;
  KvSequence b = kv.Fork(a, 6);
  EXPECT_EQ(b.length, 6);
  EXPECT_EQ(b.block_table, a.block_table);
  EXPECT_EQ(kv.allocator().refcount(a.block_table[1]), 2);
  EXPECT_EQ(kv.BlocksNeeded(b, 7), 1);  // position 6 lands in the shared block 1
  ASSERT_TRUE(kv.Reserve(&b, 7).ok());
  EXPECT_EQ(b.block_table[0], a.block_table[0]);
  ASSERT_NE(b.block_table[1], a.block_table[1]);
  EXPECT_EQ(kv.allocator().refcount(a.block_table[1]), 1);
  // The copy carries the shared positions 4 and 5 on every layer.
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t pos = 4; pos < 6; ++pos) {
      const int64_t src = a.block_table[1] * 4 + pos % 4, dst = b.block_table[1] * 4 + pos % 4;
      EXPECT_EQ(static_cast<float*>(kv.k(l))[dst * 4], static_cast<float*>(kv.k(l))[src * 4]);
      EXPECT_EQ(static_cast<float*>(kv.v(l))[dst * 4 + 3], 100.0f * l + src);
    }
  }
  // A fork at a block boundary shares everything and needs no copy.
  KvSequence c2 = kv.Fork(a, 4);
  EXPECT_EQ(c2.block_table.size(), 1u);
  EXPECT_EQ(kv.BlocksNeeded(c2, 5), 1);  // a fresh block, not a copy
  EXPECT_EQ(kv.allocator().free_blocks(), 3);
  // Exhaustion: nothing changes.
  KvSequence big;
  Status st = kv.Reserve(&big, 4 * 4);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(big.block_table.empty());
  EXPECT_EQ(kv.allocator().free_blocks(), 3);
  kv.Release(&a);
  kv.Release(&b);
  kv.Release(&c2);
  EXPECT_EQ(kv.allocator().free_blocks(), 6);
  EXPECT_TRUE(a.block_table.empty());
}

TEST(KvCacheTest, CreationFailsCleanlyOverTheDeviceLimit) {
  CpuBackend backend(nullptr, Precision::kReference, /*memory_limit_bytes=*/1 << 20);
  auto c = KvCache::Create(&backend, 4, 256, 256, 2);  // 4 layers x 2 x 512 KiB = 4 MiB
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(backend.memory_stats().bytes_in_use, 0u);
  EXPECT_EQ(KvCache::Create(&backend, 0, 4, 4, 1).status().code(), StatusCode::kInvalidArgument);
}

// A cache that grows: address space for max_blocks, memory for the blocks
// committed; fresh blocks are handed out before cached (freed) ones; the top
// blocks go back down to the highest one in use, and an index hears of each.
TEST(KvCacheTest, GrowsIntoItsReservationAndShrinksBack) {
  CpuBackend backend(nullptr);
  auto c = KvCache::Create(&backend, 2, 64, 16, 4, DType::kF32, 64);  // 4 KiB per layer block: chunks of 1
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  KvCache& kv = **c;
  const uint64_t block = kv.block_bytes();
  EXPECT_EQ(kv.allocator().total_blocks(), 4);
  EXPECT_EQ(kv.allocator().max_blocks(), 64);
  EXPECT_EQ(kv.bytes(), 4 * block);
  EXPECT_EQ(kv.max_bytes(), 64 * block);
  EXPECT_EQ(backend.memory_stats().bytes_in_use, 4 * block) << "only committed blocks count";
  // Use and free block 0: it is cached now; after growing, fresh ids come first.
  KvSequence a;
  ASSERT_TRUE(kv.Reserve(&a, 16).ok());
  EXPECT_EQ(a.block_table, std::vector<int32_t>{0});
  kv.Release(&a);
  ASSERT_EQ(*kv.Grow(10), 10);
  EXPECT_EQ(kv.allocator().total_blocks(), 14);
  EXPECT_EQ(backend.memory_stats().bytes_in_use, 14 * block);
  KvSequence b;
  ASSERT_TRUE(kv.Reserve(&b, 16 * 11).ok());  // 11 blocks
  EXPECT_EQ(b.block_table, (std::vector<int32_t>{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 1}))
      << "the fresh blocks first, then the free ones; the cached block 0 last";
  EXPECT_EQ(kv.allocator().HighestReferenced(), 13);
  // Shrinking stops above the highest block in use.
  std::vector<int32_t> retired;
  kv.allocator().set_allocate_hook([&](int32_t id) { retired.push_back(id); });
  EXPECT_EQ(kv.ShrinkTo(4), 0) << "block 13 is in use";
  EXPECT_EQ(kv.allocator().total_blocks(), 14);
  kv.Release(&b);
  EXPECT_EQ(kv.ShrinkTo(4), 10);
  EXPECT_EQ(kv.allocator().total_blocks(), 4);
  EXPECT_EQ(kv.allocator().free_blocks(), 4);
  EXPECT_EQ(retired.size(), static_cast<size_t>(10)) << "every block given back was announced";
  EXPECT_EQ(backend.memory_stats().bytes_in_use, 4 * block);
  // Capped at the reservation.
  ASSERT_EQ(*kv.Grow(1000), 60);
  EXPECT_EQ(*kv.Grow(1), 0);
  kv.allocator().set_allocate_hook(nullptr);
}

}  // namespace
}  // namespace llmhost::kv_cache_test
