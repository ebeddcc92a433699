// PassArena: carving within what a pass reserved, growth only when a pass
// needs more, copies in and out at the carved offsets.
#include "model/pass_arena.h"

#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"

namespace llmhost::pass_arena_test {
namespace {

TEST(PassArenaTest, GrowsOnlyForALargerPassAndRefusesWhatWasNotReserved) {
  CpuBackend cpu(nullptr, Precision::kReference);
  const uint64_t base = cpu.memory_stats().bytes_in_use;
  PassArena arena(&cpu);
  const size_t small = PassArena::Bytes<float>(100) + PassArena::Bytes<int32_t>(3);
  EXPECT_EQ(PassArena::Bytes<float>(100), 512u) << "rounded to 256 bytes";
  ASSERT_TRUE(arena.Begin(small, "test").ok());
  const uint64_t after_first = cpu.memory_stats().bytes_in_use;
  EXPECT_EQ(after_first - base, small);
  auto f = arena.Alloc<float>(100, "f");
  ASSERT_TRUE(f.ok());
  auto ids = arena.Put(std::vector<int32_t>{7, 8, 9}, "ids");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ((*ids)[2], 9);
  EXPECT_EQ(reinterpret_cast<char*>(*ids) - reinterpret_cast<char*>(*f), 512);
  auto over = arena.Alloc<float>(1, "one more");
  EXPECT_EQ(over.status().code(), StatusCode::kInternal) << "past what Begin reserved";

  // The same size again, then smaller: no new allocation, carving starts over.
  ASSERT_TRUE(arena.Begin(small, "test").ok());
  EXPECT_EQ(*arena.Alloc<float>(100, "f"), *f);
  ASSERT_TRUE(arena.Begin(64, "test").ok());
  EXPECT_EQ(cpu.memory_stats().bytes_in_use, after_first);
  // Larger: the buffer is replaced, not added to.
  ASSERT_TRUE(arena.Begin(4 * small, "test").ok());
  EXPECT_EQ(cpu.memory_stats().bytes_in_use - base, 4 * small);
  EXPECT_EQ(arena.capacity(), 4 * small);

  // CopyOut reads carved floats; a pointer outside the carved part is refused.
  auto data = arena.Put(std::vector<float>{1.5f, -2.0f}, "data");
  ASSERT_TRUE(data.ok());
  std::vector<float> out(2);
  ASSERT_TRUE(arena.CopyOut(*data, out).ok());
  EXPECT_EQ(out, (std::vector<float>{1.5f, -2.0f}));
  std::vector<float> too_many(100);
  EXPECT_EQ(arena.CopyOut(*data, too_many).code(), StatusCode::kInternal);
  float elsewhere = 0;
  EXPECT_EQ(arena.CopyOut(&elsewhere, out).code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace llmhost::pass_arena_test
