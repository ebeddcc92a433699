#include "backend/host_floats.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace llmhost {
namespace {

// A counting allocator standing in for a GPU's page-locked memory; `refuse`
// makes it return nullptr, as cudaHostAlloc does when it fails.
struct Counts {
  int allocated = 0, released = 0;
  bool refuse = false;
};
Counts counts;
void* CountingAllocate(size_t bytes) {
  if (counts.refuse) return nullptr;
  ++counts.allocated;
  return std::malloc(bytes);
}
void CountingRelease(void* p) {
  ++counts.released;
  std::free(p);
}
const HostAllocator kCounting{CountingAllocate, CountingRelease};

TEST(HostFloats, ResizeKeepsThePrefixAndZeroFillsTheRest) {
  HostFloats f;
  EXPECT_TRUE(f.empty());
  f.resize(3);
  f[0] = 1, f[1] = 2, f[2] = 3;
  f.resize(1000);  // grows: a new block, the prefix copied
  ASSERT_EQ(f.size(), 1000u);
  EXPECT_EQ(f[0], 1);
  EXPECT_EQ(f[2], 3);
  EXPECT_EQ(f[3], 0);
  EXPECT_EQ(f[999], 0);
  f.resize(2);
  f.resize(4, -5.0f);  // within capacity: the added elements get the value
  EXPECT_EQ(f[1], 2);
  EXPECT_EQ(f[2], -5.0f);
  EXPECT_EQ(f[3], -5.0f);
  const std::vector<float> v(f);
  EXPECT_EQ(v, (std::vector<float>{1, 2, -5, -5}));
  f.clear();
  EXPECT_TRUE(f.empty());
}

TEST(HostFloats, ResizeForOverwriteKeepsCapacityAndCopiesNothingOver) {
  counts = {};
  HostFloats f;
  f.set_allocator(kCounting);
  f.resize(4, 7.0f);
  f.resize_for_overwrite(2);  // within capacity: the values stay where they are
  EXPECT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1], 7.0f);
  f.resize_for_overwrite(4);
  EXPECT_EQ(f[3], 7.0f);  // not filled
  EXPECT_EQ(counts.allocated, 1);
  f.resize_for_overwrite(1000);  // grows: a new block, nothing copied over
  EXPECT_EQ(f.size(), 1000u);
  EXPECT_EQ(counts.allocated, 2);
  EXPECT_EQ(counts.released, 1);
}

TEST(HostFloats, MemoryComesFromTheAllocatorAndGoesBackToIt) {
  counts = {};
  {
    HostFloats f;
    f.set_allocator(kCounting);
    f.resize(16);
    EXPECT_TRUE(f.from_allocator());
    EXPECT_EQ(counts.allocated, 1);
    f.resize(17);  // grows: the old block goes back
    EXPECT_EQ(counts.allocated, 2);
    EXPECT_EQ(counts.released, 1);
    f.resize(20);  // within the grown capacity (half again)
    EXPECT_EQ(counts.allocated, 2);
    HostFloats copy = f;  // copies keep the allocator
    EXPECT_TRUE(copy.from_allocator());
    EXPECT_EQ(std::vector<float>(copy), std::vector<float>(f));
    HostFloats moved = std::move(copy);
    EXPECT_TRUE(moved.from_allocator());
    EXPECT_EQ(moved.size(), 20u);
  }
  EXPECT_EQ(counts.allocated, 3);
  EXPECT_EQ(counts.released, 3);  // every block went back to the allocator
}

TEST(HostFloats, AFailedAllocationFallsBackToTheHeap) {
  counts = {};
  counts.refuse = true;
  HostFloats f;
  f.set_allocator(kCounting);
  f.resize(8, 1.5f);
  EXPECT_FALSE(f.from_allocator());
  EXPECT_EQ(f[7], 1.5f);
  counts.refuse = false;
  f.resize(100);  // the next block comes from the allocator again
  EXPECT_TRUE(f.from_allocator());
  EXPECT_EQ(f[7], 1.5f);
  EXPECT_EQ(counts.released, 0);  // the heap block went to free(), not to the allocator
}

}  // namespace
}  // namespace llmhost
