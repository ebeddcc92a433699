// TieredBlockStore: the facade over the hot tier (kv/hot_tier.h) and the SSD
// tier (kv/ssd_tier.h). Lock order: mu_ (hot tier) -> the SSD tier's mutex
// -> the stats book's. No file I/O of block data happens under mu_.
#include "kv/tiered_block_store.h"

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "kv/hot_tier.h"
#include "kv/ssd_tier.h"
#include "kv/tier_stats_book.h"
#include "util/log.h"

namespace llmhost {

struct TieredBlockStore::Impl {
  explicit Impl(TieredStoreOptions o)
      : options(std::move(o)),
        hot(options.mode == CacheMode::kOff ? 0 : options.hot_max_bytes, &stats) {}

  // Under mu: hands dirty evicted blocks to the SSD's pending buffer (so a
  // reader finds them in between); returns the keys to Submit after unlocking.
  std::vector<BlockKey> PendEvictedLocked(std::vector<HotTier::Entry>* evicted) {
    std::vector<BlockKey> submit;
    for (HotTier::Entry& e : *evicted) {
      if (e.dirty && ssd && ssd->AddPending(e.meta, std::move(e.data))) submit.push_back(e.meta.key);
    }
    evicted->clear();
    return submit;
  }
  void SubmitAll(const std::vector<BlockKey>& keys) {
    for (const BlockKey& k : keys) ssd->Submit(k);
  }
  bool CanUseHot() const {
    return !pressure.load() && hot.max_bytes() > 0 && options.mode != CacheMode::kOff;
  }

  TieredStoreOptions options;
  TierStatsBook stats;
  mutable std::mutex mu;  // guards hot
  HotTier hot;
  std::unique_ptr<SsdTier> ssd;  // null: hot-only or off
  std::atomic<bool> pressure{false};
};

TieredBlockStore::TieredBlockStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TieredBlockStore::~TieredBlockStore() {
  impl_->ssd.reset();  // drains the writer's queue
}

Result<std::unique_ptr<TieredBlockStore>> TieredBlockStore::Open(TieredStoreOptions options) {
  bool wants_ssd = options.mode == CacheMode::kWriteBack || options.mode == CacheMode::kWriteThrough;
  if (wants_ssd && options.cache_dir.empty()) {
    return Status::InvalidArgument(std::string("kv cache: cache mode ") +
                                   CacheModeName(options.mode) + " needs a cache dir");
  }
  if (options.writer_queue_blocks < 1) {
    return Status::InvalidArgument("kv cache: writer_queue_blocks must be at least 1");
  }
  if (options.writer_threads < 1 || options.writer_threads > 64) {
    return Status::InvalidArgument("kv cache: writer_threads must be in [1, 64]");
  }
  if (options.load_threads < 1 || options.load_threads > 256) {
    return Status::InvalidArgument("kv cache: load_threads must be in [1, 256]");
  }
  if (!std::isfinite(options.inline_after_s) || options.inline_after_s < 0) {
    return Status::InvalidArgument("kv cache: inline_after_s must be a finite number >= 0");
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  if (wants_ssd) {
    const TieredStoreOptions& o = impl->options;
    SsdTierOptions so;
    so.dir = o.cache_dir;
    so.max_bytes = o.ssd_max_bytes;
    so.auto_size = o.ssd_auto;
    so.queue_blocks = o.writer_queue_blocks;
    so.writer_threads = o.writer_threads;
    so.inline_after_s = o.inline_after_s;
    so.before_write = o.before_write_for_test;
    ASSIGN_OR_RETURN(impl->ssd, SsdTier::Open(std::move(so), &impl->stats));
  }
  return std::unique_ptr<TieredBlockStore>(new TieredBlockStore(std::move(impl)));
}

void TieredBlockStore::Save(const BlockMeta& meta, std::vector<uint8_t> data) {
  Impl& s = *impl_;
  if (s.options.mode == CacheMode::kOff) return;
  if (data.empty() || data.size() != meta.data_bytes()) {
    LOG_WARN("kv cache: ignoring a block of " << data.size() << " bytes; its meta says "
                                              << meta.data_bytes());
    s.stats.Add(meta.model, &TierStats::errors);
    return;
  }
  BlockBytes bytes = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  if (s.ssd) s.ssd->NoteFingerprint(meta.fingerprint);
  std::vector<BlockKey> submit;
  bool duplicate = false;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.hot.Find(meta.key) || (s.ssd && s.ssd->Contains(meta.key))) {
      duplicate = true;
    } else {
      bool stored = false;
      if (s.CanUseHot()) {
        std::vector<HotTier::Entry> evicted;
        bool dirty = s.options.mode == CacheMode::kWriteBack;
        stored = s.hot.Add(meta, bytes, dirty, &evicted) == HotTier::Insert::kInserted;
        submit = s.PendEvictedLocked(&evicted);
        if (stored && s.options.mode == CacheMode::kWriteThrough && s.ssd->AddPending(meta, bytes)) {
          submit.push_back(meta.key);
        }
      }
      if (!stored && s.ssd && s.ssd->AddPending(meta, bytes)) {  // pressure, no hot tier, too big
        submit.push_back(meta.key);
        stored = true;
      }
      s.stats.Add(meta.model, stored ? &TierStats::saves : &TierStats::dropped_saves);
    }
  }
  if (duplicate) {
    if (s.ssd) s.ssd->Touch(meta.key);
    s.stats.Add(meta.model, &TierStats::duplicate_saves);
  }
  s.SubmitAll(submit);
}

std::vector<BlockBytes> TieredBlockStore::LoadPrefix(std::span<const BlockMeta> want) {
  Impl& s = *impl_;
  std::vector<BlockBytes> out;
  if (want.empty() || s.options.mode == CacheMode::kOff) return out;
  const std::string& model = want[0].model;
  if (s.ssd) s.ssd->NoteFingerprint(want[0].fingerprint);
  // Plan each block, in order: hot, pending writes, disk; stop at the first
  // block held nowhere.
  enum Source : uint8_t { kHot, kPending, kDisk };
  std::vector<BlockBytes> got;
  std::vector<Source> from;
  std::vector<size_t> disk;  // indexes into got
  for (const BlockMeta& w : want) {
    BlockBytes b;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      const HotTier::Entry* e = s.hot.Find(w.key);
      if (e && e->meta.SameShape(w)) b = e->data;
    }
    if (b) {
      from.push_back(kHot);
    } else if (s.ssd && (b = s.ssd->FindPending(w))) {
      from.push_back(kPending);
    } else if (s.ssd && s.ssd->Indexed(w.key)) {
      from.push_back(kDisk);
      disk.push_back(got.size());
    } else {
      break;
    }
    got.push_back(std::move(b));
  }
  // Disk reads in parallel; reads past the first failure are skipped.
  std::atomic<size_t> next{0}, first_fail{got.size()};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < disk.size();) {
      size_t g = disk[k];
      if (g > first_fail.load()) continue;
      got[g] = s.ssd->Read(want[g]);
      if (!got[g]) {
        size_t cur = first_fail.load();
        while (g < cur && !first_fail.compare_exchange_weak(cur, g)) {
        }
      }
    }
  };
  size_t n_threads = std::min<size_t>(s.options.load_threads, disk.size());
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n_threads; ++t) threads.emplace_back(work);
  if (n_threads > 0) work();
  for (std::thread& t : threads) t.join();
  // The leading valid run; what came from disk is promoted to the hot tier.
  size_t run = 0;
  while (run < got.size() && got[run]) ++run;
  uint64_t counts[3] = {0, 0, 0}, promoted = 0;
  std::vector<BlockKey> submit;
  for (size_t g = 0; g < run; ++g) {
    ++counts[from[g]];
    if (from[g] == kDisk && s.CanUseHot()) {
      std::lock_guard<std::mutex> lock(s.mu);
      std::vector<HotTier::Entry> evicted;
      if (s.hot.Add(want[g], got[g], false, &evicted) == HotTier::Insert::kInserted) ++promoted;
      for (BlockKey& k : s.PendEvictedLocked(&evicted)) submit.push_back(k);
    }
    out.push_back(std::move(got[g]));
  }
  s.SubmitAll(submit);
  s.stats.Add(model, &TierStats::hot_hits, static_cast<int64_t>(counts[kHot]));
  s.stats.Add(model, &TierStats::pending_hits, static_cast<int64_t>(counts[kPending]));
  s.stats.Add(model, &TierStats::ssd_hits, static_cast<int64_t>(counts[kDisk]));
  s.stats.Add(model, &TierStats::hot_promotions, static_cast<int64_t>(promoted));
  s.stats.Add(model, &TierStats::loads, static_cast<int64_t>(out.size()));
  s.stats.Add(model, out.empty() ? &TierStats::misses : &TierStats::hits);
  return out;
}

bool TieredBlockStore::Contains(const BlockKey& key) const {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->hot.Contains(key)) return true;
  }
  return impl_->ssd && impl_->ssd->Contains(key);
}

Status TieredBlockStore::Flush(double timeout_s) {
  Impl& s = *impl_;
  if (!s.ssd) return Status::OK();
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(std::max(0.0, timeout_s)));
  std::vector<HotTier::Entry> dirty;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    dirty = s.hot.Dirty();
  }
  size_t not_queued = dirty.size();
  for (HotTier::Entry& e : dirty) {
    if (std::chrono::steady_clock::now() > deadline) break;
    if (s.ssd->AddPending(e.meta, e.data)) s.ssd->Submit(e.meta.key);
    std::lock_guard<std::mutex> lock(s.mu);
    s.hot.MarkClean(e.meta.key, e.data);
    --not_queued;
  }
  size_t left = s.ssd->WaitIdle(deadline);
  if (not_queued > 0 || left > 0) {
    return Status::ResourceExhausted("kv cache flush deadline exceeded: " +
                                     std::to_string(not_queued) + " dirty blocks not written, " +
                                     std::to_string(left) + " writes still pending");
  }
  return Status::OK();
}

void TieredBlockStore::SetPressure(bool under_pressure) { impl_->pressure.store(under_pressure); }

uint64_t TieredBlockStore::ShrinkHot(uint64_t target_bytes) {
  Impl& s = *impl_;
  std::vector<BlockKey> submit;
  uint64_t released;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    uint64_t before = s.hot.bytes();
    std::vector<HotTier::Entry> evicted;
    s.hot.EvictTo(target_bytes, &evicted);
    released = before - s.hot.bytes();
    submit = s.PendEvictedLocked(&evicted);
  }
  s.SubmitAll(submit);
  return released;
}

void TieredBlockStore::ClearHot() { ShrinkHot(0); }

uint64_t TieredBlockStore::ClearSsd() { return impl_->ssd ? impl_->ssd->Clear() : 0; }

uint64_t TieredBlockStore::ram_bytes() const {
  uint64_t hot;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    hot = impl_->hot.bytes();
  }
  return hot + (impl_->ssd ? impl_->ssd->pending_bytes() : 0);
}

TierStats TieredBlockStore::stats() const {
  TierStats t = impl_->stats.Total();
  t.hot_max_bytes = impl_->hot.max_bytes();
  if (impl_->ssd) {
    t.ssd_max_bytes = impl_->ssd->configured_max_bytes();
    t.ssd_effective_max_bytes = impl_->ssd->effective_max_bytes();
    t.ssd_writable = impl_->ssd->writable();
  }
  return t;
}

std::map<std::string, TierStats> TieredBlockStore::stats_by_model() const {
  return impl_->stats.ByModel();
}

const TieredStoreOptions& TieredBlockStore::options() const { return impl_->options; }

}  // namespace llmhost
