// Block saves leave the executor: Publish hands each new full block to the
// saver thread with a reference on it (the block is not reused meanwhile)
// and returns; ReapSaves drops the reference once the store has it. A saver
// that falls behind makes Publish save inline, so nothing is lost.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>

#include "backend/cpu/cpu_backend.h"
#include "kv/prefix_cache.h"

namespace llmhost::block_saver_test {
namespace {

constexpr int64_t kBs = 4;

// Holds saves made on any thread but the test's until Open().
class GatedStore : public BlockStore {
 public:
  explicit GatedStore(std::thread::id owner) : owner_(owner) {}
  void Save(const BlockMeta& meta, std::vector<uint8_t> data) override {
    std::unique_lock<std::mutex> lock(mu_);
    const bool inline_save = std::this_thread::get_id() == owner_;
    if (!inline_save) cv_.wait(lock, [&] { return open_; });
    EXPECT_EQ(data.size(), meta.data_bytes());
    keys_.push_back(meta.key);
    (inline_save ? inline_saves_ : thread_saves_)++;
  }
  std::vector<BlockBytes> LoadPrefix(std::span<const BlockMeta>) override { return {}; }
  bool Contains(const BlockKey& key) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return std::find(keys_.begin(), keys_.end(), key) != keys_.end();
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int inline_saves() const {
    std::lock_guard<std::mutex> lock(mu_);
    return inline_saves_;
  }
  int thread_saves() const {
    std::lock_guard<std::mutex> lock(mu_);
    return thread_saves_;
  }

 private:
  std::thread::id owner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  std::vector<BlockKey> keys_;
  int inline_saves_ = 0, thread_saves_ = 0;
};

class BlockSaverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = KvCache::Create(&backend_, 2, 8, kBs, 32);
    ASSERT_TRUE(c.ok());
    kv_ = std::move(c).value();
    pc_ = std::make_unique<PrefixCache>(kv_.get(), Sha256Digest{});
    store_ = std::make_shared<GatedStore>(std::this_thread::get_id());
    Sha256Digest fp{};
    fp.fill(7);
    pc_->AttachStore(store_, "m", [fp] { return PrefixCache::StoreFingerprint{false, fp}; });
  }
  // A sequence of `blocks` full blocks, stored and published.
  CachedSequence Publish(int64_t blocks) {
    CachedSequence s;
    s.tokens.resize(static_cast<size_t>(blocks * kBs));
    std::iota(s.tokens.begin(), s.tokens.end(), 1);
    EXPECT_TRUE(kv_->Reserve(&s.kv, blocks * kBs).ok());
    s.kv.length = blocks * kBs;
    pc_->Publish(&s);
    return s;
  }
  CpuBackend backend_{nullptr};
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<PrefixCache> pc_;
  std::shared_ptr<GatedStore> store_;
};

TEST_F(BlockSaverTest, PublishHandsBlocksOverAndReapDropsTheirReferences) {
  CachedSequence s = Publish(2);  // returns although the store holds the saver
  EXPECT_EQ(pc_->saves_in_flight(), 2u);
  const std::vector<int32_t> ids = s.kv.block_table;
  for (int32_t id : ids) EXPECT_EQ(kv_->allocator().refcount(id), 2) << "the sequence's and the saver's";
  pc_->Release(&s);
  for (int32_t id : ids) EXPECT_EQ(kv_->allocator().refcount(id), 1) << "still the saver's: not reusable";
  EXPECT_EQ(kv_->allocator().free_blocks(), 30);
  EXPECT_EQ(pc_->stats().store_saves, 2u);
  store_->Open();
  pc_->WaitForSaves();
  EXPECT_EQ(store_->thread_saves(), 2);
  EXPECT_EQ(store_->inline_saves(), 0);
  EXPECT_EQ(pc_->saves_in_flight(), 0u);
  for (int32_t id : ids) EXPECT_EQ(kv_->allocator().refcount(id), 0);
  EXPECT_EQ(kv_->allocator().free_blocks(), 32);
}

TEST_F(BlockSaverTest, ASaverBehindMakesPublishSaveInline) {
  const int64_t n = static_cast<int64_t>(BlockSaver::kMaxInFlight) + 3;
  CachedSequence s = Publish(n);
  EXPECT_EQ(pc_->saves_in_flight(), BlockSaver::kMaxInFlight);
  EXPECT_EQ(store_->inline_saves(), 3);
  store_->Open();
  pc_->WaitForSaves();
  EXPECT_EQ(store_->thread_saves(), static_cast<int>(BlockSaver::kMaxInFlight));
  for (int32_t id : s.kv.block_table) EXPECT_EQ(kv_->allocator().refcount(id), 1) << "the sequence's only";
  EXPECT_EQ(pc_->stats().store_saves, static_cast<uint64_t>(n));
}

// Destroying the cache finishes the saves handed over (nothing lost at shutdown).
TEST_F(BlockSaverTest, DestructionFinishesTheSavesHandedOver) {
  CachedSequence s = Publish(3);
  pc_->Release(&s);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    store_->Open();
  });
  pc_.reset();
  opener.join();
  EXPECT_EQ(store_->thread_saves(), 3);
}

}  // namespace
}  // namespace llmhost::block_saver_test
