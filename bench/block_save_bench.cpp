// What saving a prefilled prompt's KV blocks to the block store costs the
// engine's executor (the thread every stream's steps run on):
//
//   inline     ReadBlock + BlockStore::Save on the calling thread (what
//              Publish did before the block saver existed; still its path
//              when 16 blocks are in flight)
//   handed     PrefixCache::Publish with the BlockSaver thread: a reference
//              and a queued job per block; `drain` is the time until the
//              store holds every block
//
// Each "step" publishes --per-step blocks (a 512-token prefill chunk is 2
// blocks of 256), then sleeps --step-ms (the forward pass the saver overlaps).
// Default layout: Qwen3-8B's KV (36 layers, 8 KV heads x 128, bf16, blocks of
// 256 positions: 37.7 MB a block).
//
// Usage: block_save_bench [--layers 36] [--kv-dim 1024] [--block 256]
//          [--blocks 32] [--per-step 2] [--step-ms 20] [--dir DIR (write-through; default hot RAM only)]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "bench_util.h"
#include "kv/prefix_cache.h"
#include "kv/tiered_block_store.h"

namespace {

using llmhost::bench::Now;
using namespace llmhost;

struct Args {
  int64_t layers = 36, kv_dim = 1024, block = 256, blocks = 32, per_step = 2;
  double step_ms = 20;
  std::string dir;
};

std::unique_ptr<TieredBlockStore> OpenStore(const Args& a, uint64_t bytes) {
  TieredStoreOptions o;
  if (a.dir.empty()) {
    o.mode = CacheMode::kHotOnly;
    o.hot_max_bytes = bytes * 4;
  } else {
    o.mode = CacheMode::kWriteThrough;
    o.hot_max_bytes = bytes * 4;
    o.cache_dir = a.dir;
    o.ssd_max_bytes = bytes * 4;
  }
  auto s = TieredBlockStore::Open(o);
  if (!s.ok()) {
    std::fprintf(stderr, "store: %s\n", s.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(s).value();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--layers") a.layers = std::atoll(v);
    else if (k == "--kv-dim") a.kv_dim = std::atoll(v);
    else if (k == "--block") a.block = std::atoll(v);
    else if (k == "--blocks") a.blocks = std::atoll(v);
    else if (k == "--per-step") a.per_step = std::atoll(v);
    else if (k == "--step-ms") a.step_ms = std::atof(v);
    else if (k == "--dir") a.dir = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  CpuBackend backend(nullptr);
  auto kv = KvCache::Create(&backend, a.layers, a.kv_dim, a.block, a.blocks + 1, DType::kBF16);
  if (!kv.ok()) {
    std::fprintf(stderr, "kv cache: %s\n", kv.status().ToString().c_str());
    return 1;
  }
  KvCache& cache = **kv;
  const uint64_t block_bytes = cache.block_bytes();
  std::printf("layout: %lld layers x %lld KV width, bf16, blocks of %lld: %.1f MB a block, %lld blocks, %lld per step, "
              "%.0f ms steps, store %s\n",
              static_cast<long long>(a.layers), static_cast<long long>(a.kv_dim), static_cast<long long>(a.block),
              block_bytes / 1e6, static_cast<long long>(a.blocks), static_cast<long long>(a.per_step), a.step_ms,
              a.dir.empty() ? "hot RAM" : ("write-through " + a.dir).c_str());
  // Touch every block once so that page faults are not what is measured.
  CachedSequence s;
  s.tokens.resize(static_cast<size_t>(a.blocks * a.block));
  if (!cache.Reserve(&s.kv, a.blocks * a.block).ok()) return 1;
  s.kv.length = a.blocks * a.block;
  {
    std::vector<uint8_t> fill(block_bytes, 1);
    for (int32_t id : s.kv.block_table) cache.WriteBlock(id, fill.data());
  }
  const uint64_t store_bytes = block_bytes * static_cast<uint64_t>(a.blocks) * 2;

  // inline: the copy and the store's Save on this thread.
  double inline_s = 0;
  {
    auto store = OpenStore(a, store_bytes);
    std::vector<uint8_t> data;
    for (int64_t b = 0; b < a.blocks; ++b) {
      BlockMeta m;
      m.key = Sha256Of("inline " + std::to_string(b));
      m.n_layers = a.layers;
      m.block_size = a.block;
      m.kv_dim = a.kv_dim;
      m.token_count = a.block;
      m.dtype = "BF16";
      m.model = "bench";
      const double t0 = Now();
      data.resize(block_bytes);
      cache.ReadBlock(s.kv.block_table[static_cast<size_t>(b)], data.data());
      store->Save(m, std::move(data));
      inline_s += Now() - t0;
      data = {};
      if ((b + 1) % a.per_step == 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(a.step_ms));
    }
  }

  // handed: Publish through the prefix cache and its saver.
  double handed_s = 0, drain_s = 0;
  uint64_t saves = 0;
  {
    std::shared_ptr<TieredBlockStore> store = OpenStore(a, store_bytes);
    PrefixCache pc(&cache, Sha256Digest{});
    Sha256Digest fp{};
    fp.fill(3);
    pc.AttachStore(store, "bench", [fp] { return PrefixCache::StoreFingerprint{false, fp}; });
    std::iota(s.tokens.begin(), s.tokens.end(), 1);
    const int64_t full = s.kv.length;
    const double t_start = Now();
    for (int64_t b = a.per_step; b <= a.blocks; b += a.per_step) {
      s.kv.length = b * a.block;  // as after a prefill chunk
      const double t0 = Now();
      pc.ReapSaves();
      pc.Publish(&s);
      handed_s += Now() - t0;
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(a.step_ms));
    }
    s.kv.length = full;
    const double t_wait = Now();
    pc.WaitForSaves();
    drain_s = Now() - t_wait;
    (void)t_start;
    saves = pc.stats().store_saves;
  }
  const double n = static_cast<double>(a.blocks);
  std::printf("inline:  %.2f ms of the executor per block (%.1f ms in all)\n", inline_s / n * 1e3, inline_s * 1e3);
  std::printf("handed:  %.3f ms of the executor per block (%.2f ms in all, %llu saves); the store had every "
              "block %.1f ms after the last step\n",
              handed_s / n * 1e3, handed_s * 1e3, static_cast<unsigned long long>(saves), drain_s * 1e3);
  std::printf("ratio:   %.0fx less executor time\n", inline_s / std::max(handed_s, 1e-9));
  return 0;
}
