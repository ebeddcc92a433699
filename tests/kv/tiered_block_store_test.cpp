// TieredBlockStore: hot LRU and modes, the writer and its pending buffer,
// restart survival, corruption, the size cap, stale fingerprints, clearing,
// stats and concurrency. Checks go to the files on disk, not only the stats.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "kv/tiered_block_store.h"
#include "test_util.h"

namespace llmhost {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kLayers = 2, kBlock = 4, kDim = 8;
constexpr uint64_t kBytes = 2 * kLayers * kBlock * kDim * 4;  // 512

BlockMeta Meta(int i, const std::string& fp = "A", const std::string& model = "m") {
  BlockMeta m;
  m.key = Sha256Of("block " + fp + " " + std::to_string(i));
  m.fingerprint = Sha256Of("model " + fp);
  m.model = model;
  m.n_layers = kLayers;
  m.block_size = kBlock;
  m.kv_dim = kDim;
  m.token_count = kBlock;
  return m;
}

std::vector<uint8_t> Data(int i, const std::string& fp = "A") {
  std::vector<uint8_t> d(kBytes);
  uint32_t x = static_cast<uint32_t>(i * 2654435761u) ^ static_cast<uint32_t>(fp[0]);
  for (auto& b : d) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return d;
}

std::vector<BlockMeta> Chain(int from, int n, const std::string& fp = "A") {
  std::vector<BlockMeta> v;
  for (int i = from; i < from + n; ++i) v.push_back(Meta(i, fp));
  return v;
}

std::string PathOf(const std::string& dir, const BlockMeta& m) {
  std::string hex = ToHex(m.key);
  return dir + "/" + hex.substr(0, 1) + "/" + hex + ".safetensors";
}

// Sum of the sizes of every regular file under dir.
uint64_t DiskBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) n += e.file_size();
  }
  return n;
}

size_t FileCount(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

TieredStoreOptions Opts(const std::string& dir, CacheMode mode, uint64_t hot_blocks) {
  TieredStoreOptions o;
  o.mode = mode;
  o.cache_dir = dir;
  o.hot_max_bytes = hot_blocks * kBytes;
  o.ssd_max_bytes = uint64_t{1} << 30;
  return o;
}

std::unique_ptr<TieredBlockStore> OpenOrDie(TieredStoreOptions o) {
  auto r = TieredBlockStore::Open(std::move(o));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

void ExpectBlocks(const std::vector<BlockBytes>& got, int from, size_t n,
                  const std::string& fp = "A") {
  ASSERT_EQ(got.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(*got[i], Data(from + static_cast<int>(i), fp)) << "block " << from + i;
  }
}

// Makes the background writer wait on its first block until Release().
struct WriterGate {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  std::thread::id holder;
  std::function<void(const BlockKey&)> Hook() {
    return [this](const BlockKey&) {
      if (first.exchange(false)) {
        entered.set_value();
        released.wait();
      }
    };
  }
  void Release() { release.set_value(); }
};

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
  auto st = OpenOrDie(o);
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
  auto st = OpenOrDie(o);
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
  auto st = OpenOrDie(o);
  st->Save(Meta(0), Data(0));
  Status s = st->Flush(0.05);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("deadline"), std::string::npos) << s.ToString();
  gate.Release();
  EXPECT_TRUE(st->Flush(10).ok());
}

TEST(TieredBlockStoreTest, SurvivesARestartWithIdenticalBytes) {
  std::string dir = testing::MakeTempDir();
  {
    auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 8));
    for (int i = 0; i < 6; ++i) st->Save(Meta(i), Data(i));
    ASSERT_TRUE(st->Flush(30).ok());
  }
  auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 8));
  TierStats s = st->stats();
  EXPECT_EQ(s.ssd_files, 6u);
  EXPECT_EQ(s.ssd_bytes, DiskBytes(dir));
  EXPECT_EQ(s.errors, 0u);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(st->Contains(Meta(i).key));
  std::vector<BlockMeta> want = Chain(0, 6);
  for (BlockMeta& m : want) m.model = "renamed";  // model names may differ
  ExpectBlocks(st->LoadPrefix(want), 0, 6);
  s = st->stats();
  EXPECT_EQ(s.ssd_hits, 6u);
  EXPECT_EQ(s.hot_promotions, 6u);
  ExpectBlocks(st->LoadPrefix(want), 0, 6);
  EXPECT_EQ(st->stats().hot_hits, 6u);
  // Another fingerprint or shape under the same keys is a miss.
  std::vector<BlockMeta> other = Chain(0, 1);
  other[0].kv_dim = 4;
  EXPECT_TRUE(st->LoadPrefix(other).empty());
}

TEST(TieredBlockStoreTest, RestartRebuildsLruOrderFromMtimeAndEnforcesTheCap) {
  std::string dir = testing::MakeTempDir();
  {
    auto st = OpenOrDie(Opts(dir, CacheMode::kWriteThrough, 0));
    for (int i = 0; i < 6; ++i) st->Save(Meta(i), Data(i));
    ASSERT_TRUE(st->Flush(30).ok());
  }
  uint64_t file = fs::file_size(PathOf(dir, Meta(0)));
  // Age order 3, 5, 0, 1, 2, 4 (oldest first), unlike the key order.
  const int order[6] = {3, 5, 0, 1, 2, 4};
  for (int rank = 0; rank < 6; ++rank) {
    struct timespec t[2] = {{1000000 + rank * 10, 0}, {1000000 + rank * 10, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, PathOf(dir, Meta(order[rank])).c_str(), t, 0), 0);
  }
  TieredStoreOptions o = Opts(dir, CacheMode::kWriteBack, 0);
  o.ssd_max_bytes = 4 * file + file / 2;  // 6 files exceed it: down to 90% = 4 files
  auto st = OpenOrDie(o);
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(3))));
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(5))));
  for (int i : {0, 1, 2, 4}) EXPECT_TRUE(fs::exists(PathOf(dir, Meta(i)))) << i;
  EXPECT_EQ(st->stats().ssd_evictions, 2u);
  EXPECT_LE(DiskBytes(dir), o.ssd_max_bytes);
  EXPECT_EQ(st->stats().ssd_max_bytes, o.ssd_max_bytes);
}

TEST(TieredBlockStoreTest, StaleTempFilesAreRemovedAtStart) {
  std::string dir = testing::MakeTempDir();
  { OpenOrDie(Opts(dir, CacheMode::kWriteBack, 1)); }
  std::string tmp = dir + "/a/" + std::string(64, 'a') + ".safetensors.123-0.tmp";
  std::ofstream(tmp) << "half a block";
  std::string foreign = dir + "/a/notes.txt";
  std::ofstream(foreign) << "not ours";
  auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 1));
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_TRUE(fs::exists(foreign)) << "files that are not ours are left alone";
  EXPECT_EQ(st->stats().ssd_files, 0u);
}

TEST(TieredBlockStoreTest, CorruptTruncatedAndMissingFilesAreMisses) {
  std::string dir = testing::MakeTempDir();
  {
    auto st = OpenOrDie(Opts(dir, CacheMode::kWriteThrough, 0));
    for (int i = 0; i < 8; ++i) st->Save(Meta(i), Data(i));
    ASSERT_TRUE(st->Flush(30).ok());
  }
  {  // block 2: one flipped data byte
    std::fstream f(PathOf(dir, Meta(2)), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-3, std::ios::end);
    char c;
    f.get(c);
    f.seekp(-3, std::ios::end);
    f.put(static_cast<char>(c ^ 0x10));
  }
  fs::resize_file(PathOf(dir, Meta(5)), fs::file_size(PathOf(dir, Meta(5))) - 7);  // truncated
  std::ofstream(PathOf(dir, Meta(6)), std::ios::trunc) << "garbage header";
  auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 0));
  // The scan drops what is unreadable from the header or sizes: 5 and 6.
  EXPECT_EQ(st->stats().errors, 2u);
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(5))));
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(6))));
  EXPECT_TRUE(st->Contains(Meta(2).key)) << "a data flip is found on load only";
  // Load: 0, 1 valid; 2 corrupt -> the leading run is 2 blocks.
  ExpectBlocks(st->LoadPrefix(Chain(0, 8)), 0, 2);
  EXPECT_EQ(st->stats().errors, 3u);
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(2))));
  EXPECT_FALSE(st->Contains(Meta(2).key));
  ExpectBlocks(st->LoadPrefix(Chain(3, 2)), 3, 2);
  // Deleted behind the store's back.
  fs::remove(PathOf(dir, Meta(7)));
  ExpectBlocks(st->LoadPrefix(Chain(7, 1)), 7, 0);
  EXPECT_FALSE(st->Contains(Meta(7).key));
  EXPECT_EQ(st->stats().errors, 4u);
  EXPECT_EQ(st->stats().ssd_bytes, DiskBytes(dir));
}

TEST(TieredBlockStoreTest, DiskUseNeverExceedsTheCapOldestEvictedFirst) {
  std::string dir = testing::MakeTempDir();
  uint64_t file;
  {
    auto st = OpenOrDie(Opts(dir, CacheMode::kWriteBack, 0));
    st->Save(Meta(1000), Data(1000));
    ASSERT_TRUE(st->Flush(10).ok());
    file = DiskBytes(dir);
    st->ClearSsd();
  }
  TieredStoreOptions o = Opts(dir, CacheMode::kWriteBack, 0);
  o.ssd_max_bytes = 10 * file;
  auto st = OpenOrDie(o);
  for (int i = 0; i < 40; ++i) {
    st->Save(Meta(i), Data(i));
    ASSERT_TRUE(st->Flush(10).ok());
    uint64_t disk = DiskBytes(dir);
    ASSERT_LE(disk, o.ssd_max_bytes) << "after save " << i;
    ASSERT_EQ(st->stats().ssd_bytes, disk);
    ASSERT_TRUE(fs::exists(PathOf(dir, Meta(i)))) << "the newest block is kept";
  }
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(0))));
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(39))));
  // Whatever survives is a contiguous run of the newest blocks.
  size_t files = FileCount(dir);
  EXPECT_GE(files, 9u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(fs::exists(PathOf(dir, Meta(i))), i >= 40 - static_cast<int>(files)) << i;
  }
  EXPECT_GT(st->stats().ssd_evictions, 0u);
  EXPECT_EQ(st->stats().ssd_effective_max_bytes, o.ssd_max_bytes);
}

TEST(TieredBlockStoreTest, StaleFingerprintsAreKeptUntilTheCapThenGoFirst) {
  std::string dir = testing::MakeTempDir();
  uint64_t file;
  {
    auto st = OpenOrDie(Opts(dir, CacheMode::kWriteThrough, 0));
    for (int i = 0; i < 3; ++i) st->Save(Meta(i, "B"), Data(i, "B"));  // older
    ASSERT_TRUE(st->Flush(10).ok());
    for (int i = 0; i < 5; ++i) st->Save(Meta(i, "A"), Data(i, "A"));  // newer, another model
    ASSERT_TRUE(st->Flush(10).ok());
    file = fs::file_size(PathOf(dir, Meta(0, "A")));
  }
  TieredStoreOptions o = Opts(dir, CacheMode::kWriteThrough, 0);
  o.ssd_max_bytes = 8 * file + file / 2;
  auto st = OpenOrDie(o);
  EXPECT_EQ(st->stats().ssd_files, 8u) << "incompatible blocks are kept while they fit";
  // Only model B is used now.
  ExpectBlocks(st->LoadPrefix(Chain(0, 3, "B")), 0, 3, "B");
  st->Save(Meta(3, "B"), Data(3, "B"));  // 9 files > cap: down to 90% (6 files + the new one)
  ASSERT_TRUE(st->Flush(10).ok());
  EXPECT_LE(DiskBytes(dir), o.ssd_max_bytes);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(fs::exists(PathOf(dir, Meta(i, "B")))) << "B " << i;
  // A's blocks go first, oldest first, although B's are older.
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(0, "A"))));
  EXPECT_FALSE(fs::exists(PathOf(dir, Meta(1, "A"))));
  EXPECT_TRUE(fs::exists(PathOf(dir, Meta(4, "A"))));
  EXPECT_EQ(st->stats().ssd_files, FileCount(dir));
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

}  // namespace
}  // namespace llmhost
