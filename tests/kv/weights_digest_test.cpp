// Digests of every byte of weight files (a change anywhere changes them,
// whatever the thread count), the digest cache keyed by file version
// (device, inode, size, mtime, ctime) across reopenings, the background
// hasher (ready at once for remembered files, failed for unreadable ones),
// and the full identity that the block store's keys start from.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "kv/fingerprint.h"
#include "kv/weights_digest.h"
#include "kv/weights_hasher.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::weights_digest_test {
namespace {

namespace fs = std::filesystem;

void WriteBytes(const std::string& path, uint64_t size, uint32_t seed) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  std::string chunk(1 << 20, '\0');
  uint32_t x = seed;
  for (uint64_t done = 0; done < size;) {
    for (char& c : chunk) {
      x = x * 1103515245u + 12345u;
      c = static_cast<char>(x >> 24);
    }
    const uint64_t n = std::min<uint64_t>(chunk.size(), size - done);
    f.write(chunk.data(), static_cast<std::streamsize>(n));
    done += n;
  }
}

// Overwrites one byte in place: same size, same inode.
void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x01);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

Sha256Digest DigestOf(const std::string& path, int threads) {
  auto d = DigestFiles({path}, threads);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? (*d)[0] : Sha256Digest{};
}

TEST(WeightsDigest, EveryByteCountsWhateverTheThreads) {
  const std::string dir = testing::MakeTempDir();
  const std::string f = dir + "/w.safetensors";
  const uint64_t size = kDigestChunkBytes * 2 + 12345;  // three chunks, the last one short
  WriteBytes(f, size, 7);
  const Sha256Digest one = DigestOf(f, 1);
  EXPECT_EQ(DigestOf(f, 3), one);
  EXPECT_EQ(DigestOf(f, 8), one);
  // A byte far from the sampled identity's 16 windows, in each chunk.
  const Sha256Digest sampled = *SampledWeightsIdentity(f);
  for (uint64_t off : {uint64_t{3} << 20, kDigestChunkBytes + 777, size - 5}) {
    FlipByte(f, off);
    EXPECT_NE(DigestOf(f, 4), one) << off;
    FlipByte(f, off);
  }
  EXPECT_EQ(DigestOf(f, 2), one);
  FlipByte(f, uint64_t{3} << 20);
  EXPECT_EQ(*SampledWeightsIdentity(f), sampled) << "the sampled identity does not see this byte (by design)";
  // Several files at once: one digest each, in order.
  const std::string g = dir + "/g.gguf";
  WriteBytes(g, 1000, 9);
  auto both = DigestFiles({f, g}, 4);
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[1], DigestOf(g, 1));
  EXPECT_EQ(DigestFiles({dir + "/missing"}, 2).status().code(), StatusCode::kNotFound);
  std::atomic<bool> cancel{true};
  EXPECT_FALSE(DigestFiles({f}, 2, false, &cancel).ok());
}

TEST(WeightsDigest, CacheIsKeyedByTheFileVersion) {
  const std::string dir = testing::MakeTempDir();
  const std::string f = dir + "/w.safetensors", db = dir + "/home/weights_digests.json";
  WriteBytes(f, 5000, 1);
  const FileStamp s1 = *StampOf(f);
  {
    WeightsDigestCache cache(db);
    EXPECT_FALSE(cache.Lookup(s1));
    cache.Remember(f, s1, DigestOf(f, 1));
  }
  WeightsDigestCache reopened(db);
  ASSERT_TRUE(reopened.Lookup(s1));
  EXPECT_EQ(*reopened.Lookup(s1), DigestOf(f, 1));
  // Rewritten in place with the same size, mtime put back: ctime still moves.
  const auto mtime = fs::last_write_time(f);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  FlipByte(f, 2500);
  fs::last_write_time(f, mtime);
  const FileStamp s2 = *StampOf(f);
  EXPECT_EQ(s2.size, s1.size);
  EXPECT_EQ(s2.mtime_ns, s1.mtime_ns);
  EXPECT_FALSE(s2 == s1);
  EXPECT_FALSE(reopened.Lookup(s2));
  // A damaged cache file is replaced, never fatal.
  ASSERT_TRUE(WriteFileAtomic(db, "{\"format\": 3").ok());
  WeightsDigestCache damaged(db);
  EXPECT_EQ(damaged.size(), 0u);
  damaged.Remember(f, s2, DigestOf(f, 1));
  EXPECT_EQ(WeightsDigestCache(db).size(), 1u);
}

TEST(WeightsHasher, RemembersAndHashesInTheBackground) {
  const std::string dir = testing::MakeTempDir();
  const std::string model = dir + "/m";
  fs::create_directories(model);
  ASSERT_TRUE(WriteFileAtomic(model + "/config.json", R"({"model_type": "llama"})").ok());
  WriteBytes(model + "/model-00001-of-00002.safetensors", 3 << 20, 3);
  WriteBytes(model + "/model-00002-of-00002.safetensors", 1 << 20, 4);
  WeightsHasherOptions o;
  o.cache_path = dir + "/weights_digests.json";
  o.threads = 2;
  o.inline_max_bytes = 0;  // every model in the background here
  Sha256Digest first{};
  {
    WeightsHasher hasher(o);
    auto h = hasher.Identify(model);
    ASSERT_TRUE(h->Wait(std::chrono::seconds(60)));
    ASSERT_EQ(h->state(), WeightsIdentityHandle::State::kReady) << h->error();
    EXPECT_FALSE(h->from_cache());
    EXPECT_EQ(h->bytes_hashed(), uint64_t{4} << 20);
    first = *h->Get();
    // The same as computing it inline.
    WeightFiles files = *ListWeightFiles(model);
    EXPECT_EQ(FullWeightsIdentity(files, *DigestFiles(files.files, 1)), first);
    EXPECT_NE(first, *SampledWeightsIdentity(model));
  }
  {
    // A new process: ready on return, nothing read.
    WeightsHasher hasher(o);
    auto h = hasher.Identify(model);
    EXPECT_EQ(h->state(), WeightsIdentityHandle::State::kReady);
    EXPECT_TRUE(h->from_cache());
    EXPECT_EQ(h->bytes_hashed(), 0u);
    EXPECT_EQ(*h->Get(), first);
    // One byte changed in place: hashed again, another identity.
    FlipByte(model + "/model-00002-of-00002.safetensors", 100);
    auto changed = hasher.Identify(model);
    ASSERT_TRUE(changed->Wait(std::chrono::seconds(60)));
    ASSERT_TRUE(changed->Get());
    EXPECT_NE(*changed->Get(), first);
    EXPECT_EQ(changed->bytes_hashed(), uint64_t{1} << 20) << "only the changed file is read";
    // config.json is part of the identity.
    ASSERT_TRUE(WriteFileAtomic(model + "/config.json", R"({"model_type": "llama", "x": 1})").ok());
    auto config = hasher.Identify(model);
    ASSERT_TRUE(config->Wait(std::chrono::seconds(60)));
    EXPECT_NE(*config->Get(), *changed->Get());
    // A small model is hashed by Identify itself: ready on return.
    WeightsHasherOptions small = o;
    small.cache_path = "";
    small.inline_max_bytes = uint64_t{8} << 20;
    WeightsHasher inline_hasher(small);
    auto now = inline_hasher.Identify(model);
    EXPECT_EQ(now->state(), WeightsIdentityHandle::State::kReady);
    EXPECT_FALSE(now->from_cache());
    EXPECT_EQ(*now->Get(), *config->Get());
    // No weights: failed at once, with the reason.
    auto missing = hasher.Identify(dir + "/nothing-here");
    EXPECT_EQ(missing->state(), WeightsIdentityHandle::State::kFailed);
    EXPECT_FALSE(missing->error().empty());
  }
}

}  // namespace
}  // namespace llmhost::weights_digest_test
