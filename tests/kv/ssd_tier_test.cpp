// The SSD tier through TieredBlockStore: restart survival with identical
// bytes, LRU order from mtime, stale temp files, corrupt / truncated /
// missing files, the size cap (checked by walking the folder after every
// save) and stale fingerprints evicted first.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include "kv/block_store_test_util.h"

namespace llmhost::ssd_tier_test {
namespace {

using namespace kvtest;  // NOLINT
namespace fs = std::filesystem;

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

// A cache folder on a read-only filesystem that already holds blocks: the
// store opens, serves them, and says at start that it cannot save (the
// read-only view is a bind mount, which needs root: skipped otherwise).
TEST(TieredBlockStoreTest, AReadOnlyFolderServesItsBlocksAndSaysItCannotSave) {
  const std::string dir = testing::MakeTempDir(), view = testing::MakeTempDir();
  {
    auto st = OpenOrDie(Opts(dir, CacheMode::kWriteThrough, 8));
    for (int i = 0; i < 3; ++i) st->Save(Meta(i), Data(i));
    ASSERT_TRUE(st->Flush(30).ok());
  }
  const std::string bind = "mount --bind " + dir + " " + view + " 2>/dev/null && mount -o remount,ro,bind " + view +
                           " 2>/dev/null";
  if (std::system(bind.c_str()) != 0) {
    std::system(("umount " + view + " 2>/dev/null").c_str());
    GTEST_SKIP() << "cannot make a read-only bind mount here (needs root)";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { std::system(("umount " + path).c_str()); }
  } unmount{view};
  {
    auto st = OpenOrDie(Opts(view, CacheMode::kWriteThrough, 8));
    ASSERT_TRUE(st);
    EXPECT_FALSE(st->stats().ssd_writable);
    EXPECT_EQ(st->stats().ssd_files, 3u);
    ExpectBlocks(st->LoadPrefix(Chain(0, 3)), 0, 3);
    st->Save(Meta(9), Data(9));  // fails on disk, counted, never fatal
    st->Flush(10);
  }
  auto writable = OpenOrDie(Opts(dir, CacheMode::kWriteThrough, 8));
  EXPECT_TRUE(writable->stats().ssd_writable);
}

}  // namespace
}  // namespace llmhost::ssd_tier_test
