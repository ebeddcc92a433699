// Helpers of the TieredBlockStore tests: small blocks with known bytes, the
// file path of a block, directory walks, a gate that holds the writer back.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include "kv/tiered_block_store.h"
#include "test_util.h"

namespace llmhost::kvtest {

namespace fs = std::filesystem;

constexpr int64_t kLayers = 2, kBlock = 4, kDim = 8;
constexpr uint64_t kBytes = 2 * kLayers * kBlock * kDim * 4;  // 512

inline BlockMeta Meta(int i, const std::string& fp = "A", const std::string& model = "m") {
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

inline std::vector<uint8_t> Data(int i, const std::string& fp = "A") {
  std::vector<uint8_t> d(kBytes);
  uint32_t x = static_cast<uint32_t>(i * 2654435761u) ^ static_cast<uint32_t>(fp[0]);
  for (auto& b : d) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return d;
}

inline std::vector<BlockMeta> Chain(int from, int n, const std::string& fp = "A") {
  std::vector<BlockMeta> v;
  for (int i = from; i < from + n; ++i) v.push_back(Meta(i, fp));
  return v;
}

inline std::string PathOf(const std::string& dir, const BlockMeta& m) {
  std::string hex = ToHex(m.key);
  return dir + "/" + hex.substr(0, 1) + "/" + hex + ".safetensors";
}

// Sum of the sizes of every regular file under dir.
inline uint64_t DiskBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) n += e.file_size();
  }
  return n;
}

inline size_t FileCount(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

inline TieredStoreOptions Opts(const std::string& dir, CacheMode mode, uint64_t hot_blocks) {
  TieredStoreOptions o;
  o.mode = mode;
  o.cache_dir = dir;
  o.hot_max_bytes = hot_blocks * kBytes;
  o.ssd_max_bytes = uint64_t{1} << 30;
  return o;
}

inline std::unique_ptr<TieredBlockStore> OpenOrDie(TieredStoreOptions o) {
  auto r = TieredBlockStore::Open(std::move(o));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

inline void ExpectBlocks(const std::vector<BlockBytes>& got, int from, size_t n,
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
  std::function<void(const BlockKey&)> Hook() {
    return [this](const BlockKey&) {
      if (first.exchange(false)) {
        entered.set_value();
        released.wait();
      }
    };
  }
  void Release() {
    if (!released_once.exchange(true)) release.set_value();
  }
  std::atomic<bool> released_once{false};
};

// Declared after the store: releases the gate before the store's destructor
// joins the writer, so that a failing test cannot hang.
struct GateGuard {
  WriterGate* gate;
  ~GateGuard() { gate->Release(); }
};

}  // namespace llmhost::kvtest
