// TieredBlockStore: hot LRU and modes, the writer and its pending buffer,
// clearing, stats and concurrency. Checks go to the files on disk, not only
// the stats. (Restart, corruption and the cap: ssd_tier_test.cpp.)
#include <gtest/gtest.h>

#include "kv/block_store_test_util.h"

namespace llmhost::tiered_block_store_test {
namespace {

using namespace kvtest;  // NOLINT
namespace fs = std::filesystem;

TEST(TieredBlockStoreTest, OpenValidatesOptions) {
  TieredStoreOptions o;
  o.mode = CacheMode::kWriteBack;
  auto r = TieredBlockStore::Open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/file") << "x";
  o.cache_dir = dir + "/file/cache";  // under a regular file
  r = TieredBlockStore::Open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIOError);
  EXPECT_NE(r.status().message().find(dir), std::string::npos);
  o = Opts(dir + "/c", CacheMode::kWriteBack, 1);
  o.load_threads = 0;
  EXPECT_FALSE(TieredBlockStore::Open(o).ok());
  o = Opts(dir + "/c", CacheMode::kHotOnly, 1);
  o.cache_dir.clear();
  EXPECT_TRUE(TieredBlockStore::Open(o).ok()) << "hot-only needs no cache dir";
}

TEST(TieredBlockStoreTest, HotLruEvictsLeastRecentlyUsedByBudget) {
  auto st = OpenOrDie(Opts("", CacheMode::kHotOnly, 3));
  for (int i = 0; i < 3; ++i) st->Save(Meta(i), Data(i));
  ExpectBlocks(st->LoadPrefix(Chain(0, 1)), 0, 1);  // 0 becomes most recent: 1 is LRU
  st->Save(Meta(3), Data(3));
  EXPECT_TRUE(st->Contains(Meta(0).key));
  EXPECT_FALSE(st->Contains(Meta(1).key));
  EXPECT_TRUE(st->Contains(Meta(2).key));
  EXPECT_TRUE(st->Contains(Meta(3).key));
  EXPECT_TRUE(st->LoadPrefix(Chain(1, 3)).empty()) << "stops at the first miss";
  ExpectBlocks(st->LoadPrefix(Chain(2, 2)), 2, 2);
  TierStats s = st->stats();
  EXPECT_EQ(s.saves, 4u);
  EXPECT_EQ(s.hot_evictions, 1u);
  EXPECT_EQ(s.hot_blocks, 3u);
  EXPECT_EQ(s.hot_bytes, 3 * kBytes);
  EXPECT_EQ(st->ram_bytes(), 3 * kBytes);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.loads, 3u);
  EXPECT_EQ(s.hot_hits, 3u);
  st->Save(Meta(3), Data(3));
  EXPECT_EQ(st->stats().duplicate_saves, 1u);
}

TEST(TieredBlockStoreTest, HotOnlyNeverTouchesTheDisk) {
  std::string dir = testing::MakeTempDir();
  auto st = OpenOrDie(Opts(dir, CacheMode::kHotOnly, 2));
  for (int i = 0; i < 6; ++i) st->Save(Meta(i), Data(i));
  EXPECT_TRUE(st->Flush(10).ok());
  st->ClearHot();
  EXPECT_TRUE(st->LoadPrefix(Chain(0, 6)).empty()) << "hot-only evictions are lost";
  st.reset();
  EXPECT_TRUE(fs::is_empty(dir)) << "hot-only created something in the cache dir";
}

TEST(TieredBlockStoreTest, WriteBackWritesDirtyEvictionsAndDropsCleanOnes) {
  std::string dir = testing::MakeTempDir();
  {
    auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 2));
    for (int i = 0; i < 3; ++i) st->Save(Meta(i), Data(i));  // evicts 0 (dirty)
    ExpectBlocks(st->LoadPrefix(Chain(0, 3)), 0, 3);         // 0 from pending or disk
  }  // the destructor drains the writer but writes no dirty hot block
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(0))));
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(1))));
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(2))));
  {
    auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 2));
    ExpectBlocks(st->LoadPrefix(Chain(0, 1)), 0, 1);  // from disk, promoted clean
    TierStats s = st->stats();
    EXPECT_EQ(s.ssd_hits, 1u);
    EXPECT_EQ(s.hot_promotions, 1u);
    st->Save(Meta(5), Data(5));
    st->Save(Meta(6), Data(6));  // evicts 0, clean: dropped, not rewritten
    ASSERT_TRUE(st->Flush(10).ok());
    s = st->stats();
    EXPECT_EQ(s.hot_evictions, 1u);
    EXPECT_EQ(s.ssd_writes, 2u) << "only the flushed dirty blocks 5 and 6";
    EXPECT_EQ(s.ssd_files, 3u);
  }
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(5))));
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(6))));
}

TEST(TieredBlockStoreTest, WriteThroughWritesAtOnceAndKeepsAHotCopy) {
  std::string dir = testing::MakeTempDir();
  auto st = OpenOrDie(Opts(dir, CacheMode::kWriteThrough, 4));
  st->Save(Meta(0), Data(0));
  st->Save(Meta(1), Data(1));
  ASSERT_TRUE(st->Flush(10).ok());
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(0))));
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(1))));
  TierStats s = st->stats();
  EXPECT_EQ(s.ssd_writes, 2u);
  EXPECT_EQ(s.hot_blocks, 2u);
  ExpectBlocks(st->LoadPrefix(Chain(0, 2)), 0, 2);
  EXPECT_EQ(st->stats().hot_hits, 2u);
}

TEST(TieredBlockStoreTest, PressureSendsSavesToTheSsdOnly) {
  std::string dir = testing::MakeTempDir();
  auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 4));
  st->SetPressure(true);
  st->Save(Meta(0), Data(0));
  ASSERT_TRUE(st->Flush(10).ok());
  EXPECT_EQ(st->stats().hot_blocks, 0u);
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(0))));
  ExpectBlocks(st->LoadPrefix(Chain(0, 1)), 0, 1);
  EXPECT_EQ(st->stats().hot_blocks, 0u) << "no promotion under pressure";
  st->SetPressure(false);
  ExpectBlocks(st->LoadPrefix(Chain(0, 1)), 0, 1);
  EXPECT_EQ(st->stats().hot_blocks, 1u);

  auto hot = OpenOrDie(Opts("", CacheMode::kHotOnly, 4));
  hot->SetPressure(true);
  hot->Save(Meta(0), Data(0));
  EXPECT_FALSE(hot->Contains(Meta(0).key));
  EXPECT_EQ(hot->stats().dropped_saves, 1u);
  EXPECT_EQ(hot->stats().saves, 0u);
}

TEST(TieredBlockStoreTest, PendingBufferServesQueuedBlocks) {
  std::string dir = testing::MakeTempDir();
  WriterGate gate;
  TieredStoreOptions o = Opts(dir, CacheMode::kWriteBack, 0);  // no hot tier: straight to the writer
  o.before_write_for_test = gate.Hook();
  o.writer_threads = 1;  // the gate holds the only writer
  auto st = OpenOrDie(o);
  GateGuard guard{&gate};
  st->Save(Meta(0), Data(0));
  st->Save(Meta(1), Data(1));
  gate.entered.get_future().wait();  // the writer holds block 0
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(0))));
  EXPECT_TRUE(st->Contains(Meta(1).key));
  ExpectBlocks(st->LoadPrefix(Chain(0, 2)), 0, 2);
  TierStats s = st->stats();
  EXPECT_EQ(s.pending_hits, 2u);
  EXPECT_EQ(s.pending_blocks, 2u);
  EXPECT_EQ(s.pending_bytes, 2 * kBytes);
  EXPECT_EQ(st->ram_bytes(), 2 * kBytes);
  gate.Release();
  ASSERT_TRUE(st->Flush(10).ok());
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(0))));
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(1))));
  EXPECT_EQ(st->stats().pending_blocks, 0u);
  EXPECT_EQ(st->ram_bytes(), 0u);
}

TEST(TieredBlockStoreTest, FullQueueWritesInlineAndDropsNothing) {
  std::string dir = testing::MakeTempDir();
  WriterGate gate;
  TieredStoreOptions o = Opts(dir, CacheMode::kWriteBack, 0);
  o.writer_queue_blocks = 1;
  o.inline_after_s = 0;
  o.before_write_for_test = gate.Hook();
  o.writer_threads = 1;  // the gate holds the only writer
  auto st = OpenOrDie(o);
  GateGuard guard{&gate};
  st->Save(Meta(0), Data(0));
  gate.entered.get_future().wait();  // writer busy with 0, queue empty
  st->Save(Meta(1), Data(1));        // queued
  st->Save(Meta(2), Data(2));        // queue full: written here
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(2)))) << "an inline write completes within Save";
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(1))));
  EXPECT_EQ(st->stats().inline_writes, 1u);
  gate.Release();
  ASSERT_TRUE(st->Flush(10).ok());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(fs::exists(PathOf(dir, Meta(i)))) << i;
  EXPECT_EQ(st->stats().ssd_writes, 3u);
}

TEST(TieredBlockStoreTest, FlushTimesOutWhileTheWriterIsStuck) {
  std::string dir = testing::MakeTempDir();
  WriterGate gate;
  TieredStoreOptions o = Opts(dir, CacheMode::kWriteBack, 4);
  o.before_write_for_test = gate.Hook();
  o.writer_threads = 1;  // the gate holds the only writer
  auto st = OpenOrDie(o);
  GateGuard guard{&gate};
  st->Save(Meta(0), Data(0));
  Status s = st->Flush(0.05);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("deadline"), std::string::npos) << s.ToString();
  gate.Release();
  EXPECT_TRUE(st->Flush(10).ok());
}

TEST(TieredBlockStoreTest, ClearHotWritesDirtyBlocksAndClearSsdDeletesFiles) {
  std::string dir = testing::MakeTempDir();
  auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 8));
  for (int i = 0; i < 3; ++i) st->Save(Meta(i), Data(i));
  EXPECT_EQ(st->ShrinkHot(kBytes), 2 * kBytes);
  st->ClearHot();
  EXPECT_EQ(st->stats().hot_blocks, 0u);
  ASSERT_TRUE(st->Flush(10).ok());
  EXPECT_EQ(FileCount(dir), 3u) << "dirty blocks reach the SSD when the hot tier is cleared";
  ExpectBlocks(st->LoadPrefix(Chain(0, 3)), 0, 3);
  st->ClearHot();
  EXPECT_EQ(st->ClearSsd(), 3u);
  EXPECT_EQ(FileCount(dir), 0u);
  EXPECT_FALSE(st->Contains(Meta(0).key));
  EXPECT_TRUE(st->LoadPrefix(Chain(0, 3)).empty());
  TierStats s = st->stats();
  EXPECT_EQ(s.ssd_files, 0u);
  EXPECT_EQ(s.ssd_bytes, 0u);
}

TEST(TieredBlockStoreTest, BadSavesAreCountedAndOffStoresNothing) {
  auto st = OpenOrDie(Opts("", CacheMode::kHotOnly, 4));
  std::vector<uint8_t> short_data(kBytes - 1);
  st->Save(Meta(0), short_data);
  EXPECT_FALSE(st->Contains(Meta(0).key));
  EXPECT_EQ(st->stats().errors, 1u);
  auto off = OpenOrDie(Opts("", CacheMode::kOff, 4));
  off->Save(Meta(0), Data(0));
  EXPECT_FALSE(off->Contains(Meta(0).key));
  EXPECT_TRUE(off->LoadPrefix(Chain(0, 1)).empty());
}

TEST(TieredBlockStoreTest, StatsPerModel) {
  std::string dir = testing::MakeTempDir();
  auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 3));
  for (int i = 0; i < 2; ++i) st->Save(Meta(i, "A", "alpha"), Data(i, "A"));
  for (int i = 0; i < 3; ++i) st->Save(Meta(i, "B", "beta"), Data(i, "B"));  // evicts 2 alpha
  std::vector<BlockMeta> want = Chain(0, 2, "A");
  for (BlockMeta& m : want) m.model = "alpha";
  ExpectBlocks(st->LoadPrefix(want), 0, 2, "A");
  ASSERT_TRUE(st->Flush(10).ok());
  auto by = st->stats_by_model();
  ASSERT_TRUE(by.count("alpha"));
  ASSERT_TRUE(by.count("beta"));
  EXPECT_EQ(by["alpha"].saves, 2u);
  EXPECT_EQ(by["beta"].saves, 3u);
  EXPECT_EQ(by["alpha"].loads, 2u);
  EXPECT_EQ(by["alpha"].hits, 1u);
  EXPECT_EQ(by["beta"].loads, 0u);
  EXPECT_EQ(by["alpha"].ssd_files, 2u);
  TierStats total = st->stats();
  EXPECT_EQ(total.saves, 5u);
  EXPECT_EQ(total.hot_blocks, by["alpha"].hot_blocks + by["beta"].hot_blocks);
  EXPECT_EQ(total.ssd_files, FileCount(dir));
  EXPECT_EQ(total.ssd_bytes, by["alpha"].ssd_bytes + by["beta"].ssd_bytes);
}

TEST(TieredBlockStoreTest, ConcurrentSavesAndLoads) {
  std::string dir = testing::MakeTempDir();
  TieredStoreOptions o = Opts(dir, CacheMode::kWriteBack, 6);
  o.writer_queue_blocks = 2;
  o.inline_after_s = 0.001;
  o.load_threads = 3;
  o.ssd_max_bytes = 60 * 2048;  // small enough that the cap evicts too
  auto st = OpenOrDie(o);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        int id = (t * 40 + i) % 50;  // threads overlap on keys
        st->Save(Meta(id), Data(id));
        int from = (id * 7) % 45;
        std::vector<BlockBytes> got = st->LoadPrefix(Chain(from, 5));
        for (size_t k = 0; k < got.size(); ++k) {
          if (*got[k] != Data(from + static_cast<int>(k))) ++wrong;
        }
        if (i % 10 == 0) st->ShrinkHot(2 * kBytes);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  ASSERT_TRUE(st->Flush(30).ok());
  TierStats s = st->stats();
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.ssd_bytes, DiskBytes(dir));
  EXPECT_LE(DiskBytes(dir), o.ssd_max_bytes);
  EXPECT_EQ(s.pending_blocks, 0u);
}

TEST(TieredBlockStoreTest, ConcurrentClearsFlushesAndPressure) {
  std::string dir = testing::MakeTempDir();
  TieredStoreOptions o = Opts(dir, CacheMode::kWriteBack, 4);
  o.writer_queue_blocks = 1;
  o.inline_after_s = 0;
  auto st = OpenOrDie(o);
  std::atomic<int> wrong{0};
  std::atomic<bool> done{false};
  std::thread admin([&] {
    for (int i = 0; !done.load(); ++i) {
      switch (i % 4) {
        case 0: st->ClearSsd(); break;
        case 1: st->ClearHot(); break;
        case 2: (void)st->Flush(1); break;
        case 3: st->SetPressure(i % 8 == 3); break;
      }
      (void)st->stats_by_model();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        int id = (t * 17 + i) % 30;
        st->Save(Meta(id), Data(id));
        std::vector<BlockBytes> got = st->LoadPrefix(Chain(id / 2, 4));
        for (size_t k = 0; k < got.size(); ++k) {
          if (*got[k] != Data(id / 2 + static_cast<int>(k))) ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  done = true;
  admin.join();
  EXPECT_EQ(wrong.load(), 0);
  st->SetPressure(false);
  ASSERT_TRUE(st->Flush(30).ok());
  TierStats s = st->stats();
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.pending_blocks, 0u);
  EXPECT_EQ(s.ssd_files, FileCount(dir)) << "no file outside the index, none missing";
  EXPECT_EQ(s.ssd_bytes, DiskBytes(dir));
}

}  // namespace
}  // namespace llmhost::tiered_block_store_test
