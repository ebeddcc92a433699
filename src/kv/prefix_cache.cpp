#include "kv/prefix_cache.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

namespace llmhost {

PrefixCache::PrefixCache(KvCache* cache, const Sha256Digest& model_fingerprint)
    : cache_(cache),
      fingerprint_(model_fingerprint),
      key_of_(static_cast<size_t>(cache->allocator().max_blocks())),
      indexed_(static_cast<size_t>(cache->allocator().max_blocks()), 0) {
  // The chain's root: the fingerprint under a domain tag, so that a root is
  // never equal to a block key.
  Sha256 h;
  h.Update("llmhost kv root v1");
  h.Update(model_fingerprint.data(), model_fingerprint.size());
  root_ = h.Finish();
  cache_->allocator().set_allocate_hook([this](int32_t id) { OnAllocate(id); });
}

PrefixCache::~PrefixCache() {
  saver_.reset();  // finishes the saves handed over
  WaitForRestores();
  cache_->allocator().set_allocate_hook(nullptr);
}

void PrefixCache::AttachStore(std::shared_ptr<BlockStore> store, std::string model_id,
                              StoreFingerprintFn store_fingerprint) {
  store_ = std::move(store);
  model_id_ = std::move(model_id);
  store_fingerprint_fn_ = std::move(store_fingerprint);
}

bool PrefixCache::PollStoreFingerprint() const {
  if (!store_) return false;
  if (store_ready_.load(std::memory_order_acquire)) return true;
  std::lock_guard<std::mutex> lock(store_fp_mu_);
  if (store_ready_.load(std::memory_order_relaxed)) return true;
  if (store_never_.load()) return false;
  const StoreFingerprint fp = store_fingerprint_fn_ ? store_fingerprint_fn_() : StoreFingerprint{true, {}};
  if (fp.never) store_never_ = true;
  if (!fp.fingerprint) return false;
  store_fp_ = *fp.fingerprint;
  store_ready_.store(true, std::memory_order_release);
  return true;
}

bool PrefixCache::StoreActive() {
  if (!PollStoreFingerprint()) return false;
  if (!store_caught_up_) {
    store_caught_up_ = true;
    // Blocks indexed while the fingerprint was unknown were not saved.
    std::vector<std::pair<int32_t, BlockKey>> indexed;
    for (const auto& [key, id] : index_) indexed.emplace_back(id, key);
    for (const auto& [id, key] : indexed) SaveToStore(id, key);
  }
  return true;
}

BlockKey PrefixCache::StoreKeyOf(const BlockKey& index_key) const {
  Sha256 h;
  h.Update("llmhost store key v1");
  h.Update(store_fp_.data(), store_fp_.size());
  h.Update(index_key.data(), index_key.size());
  return h.Finish();
}

BlockMeta PrefixCache::StoreMetaOf(const BlockKey& index_key) const {
  BlockMeta m;
  m.key = StoreKeyOf(index_key);
  m.fingerprint = store_fp_;
  m.model = model_id_;
  m.token_count = cache_->block_size();
  m.n_layers = cache_->n_layers();
  m.block_size = cache_->block_size();
  m.kv_dim = cache_->kv_dim() * cache_->ranks();  // every rank's shard (KvCache::ReadBlock's layout)
  m.dtype = DTypeName(cache_->dtype());
  return m;
}

BlockKey PrefixCache::KeyOf(const BlockKey& parent, std::span<const int32_t> block_tokens) const {
  Sha256 h;
  h.Update(parent.data(), parent.size());
  // Token ids as little-endian int32, whatever the host order.
  uint8_t buf[4 * 64];
  size_t n = 0;
  for (int32_t t : block_tokens) {
    const uint32_t u = static_cast<uint32_t>(t);
    for (int b = 0; b < 4; ++b) buf[n++] = static_cast<uint8_t>(u >> (8 * b));
    if (n == sizeof(buf)) {
      h.Update(buf, n);
      n = 0;
    }
  }
  h.Update(buf, n);
  return h.Finish();
}

void PrefixCache::ExtendKeys(CachedSequence* seq) const {
  const size_t bs = static_cast<size_t>(block_size());
  const size_t full = seq->tokens.size() / bs;
  while (seq->keys.size() < full) {
    const size_t i = seq->keys.size();
    const BlockKey& parent = i == 0 ? root_ : seq->keys[i - 1];
    seq->keys.push_back(KeyOf(parent, std::span<const int32_t>(seq->tokens).subspan(i * bs, bs)));
  }
}

int64_t PrefixCache::Acquire(CachedSequence* seq, RestoreMode mode) {
  seq->restore.reset();
  seq->kv = KvSequence{};
  seq->published = 0;
  ExtendKeys(seq);
  WalkIndex(seq);
  RestoreNext(seq, mode);
  SetLengthFromBlocks(seq);
  return seq->kv.length;
}

void PrefixCache::WalkIndex(CachedSequence* seq) {
  BlockAllocator& alloc = cache_->allocator();
  for (size_t i = seq->kv.block_table.size(); i < seq->keys.size(); ++i) {
    auto it = index_.find(seq->keys[i]);
    if (it == index_.end()) break;
    alloc.Ref(it->second);  // revives it from the free list when unreferenced
    seq->kv.block_table.push_back(it->second);
  }
}

void PrefixCache::SetLengthFromBlocks(CachedSequence* seq) const {
  const int64_t blocks = static_cast<int64_t>(seq->kv.block_table.size());
  seq->published = static_cast<size_t>(blocks);
  int64_t len = blocks * block_size();
  if (len > 0 && len >= static_cast<int64_t>(seq->tokens.size())) len = static_cast<int64_t>(seq->tokens.size()) - 1;
  seq->kv.length = len;
}

void PrefixCache::RecordLookup(const CachedSequence& seq) {
  ++counters_.lookups;
  const uint64_t blocks = seq.kv.block_table.size();
  if (blocks > 0) {
    ++counters_.hits;
    counters_.hit_blocks += blocks;
    counters_.cached_tokens += static_cast<uint64_t>(seq.kv.length);
  } else {
    ++counters_.misses;
  }
}

void PrefixCache::Publish(CachedSequence* seq) {
  const int64_t bs = block_size();
  const size_t full = static_cast<size_t>(std::min<int64_t>(
      seq->kv.length, static_cast<int64_t>(seq->tokens.size())) / bs);
  if (seq->published >= full) return;
  ExtendKeys(seq);
  for (size_t i = seq->published; i < full; ++i) {
    const int32_t id = seq->kv.block_table[i];
    const BlockKey& key = seq->keys[i];
    const size_t b = static_cast<size_t>(id);
    if (indexed_[b] && key_of_[b] == key) continue;
    if (index_.count(key)) continue;  // an equal block is already findable
    Index(id, key);
    if (StoreActive()) SaveToStore(id, key);
  }
  seq->published = full;
}

void PrefixCache::Index(int32_t id, const BlockKey& key) {
  const size_t b = static_cast<size_t>(id);
  if (indexed_[b]) Unindex(id);
  std::lock_guard<std::mutex> lock(index_mu_);
  index_.emplace(key, id);
  key_of_[b] = key;
  indexed_[b] = 1;
}

void PrefixCache::SaveToStore(int32_t id, const BlockKey& key) {
  const BlockMeta meta = StoreMetaOf(key);
  // Held already (e.g. computed again after a partial restore), or on its way.
  if (saving_.count(meta.key) || store_->Contains(meta.key)) return;
  ++counters_.store_saves;
  if (!saver_) saver_ = std::make_unique<BlockSaver>(cache_, store_, restore_done_hook_);
  if (saver_->in_flight() < BlockSaver::kMaxInFlight) {
    cache_->allocator().Ref(id);  // not reused until the saver is done with it
    if (saver_->Submit(id, meta)) {
      saving_.insert(meta.key);
      return;
    }
    cache_->allocator().Unref(id);
  }
  // The saver is behind: copy here (backpressure on the steps, nothing lost).
  std::vector<uint8_t> data(cache_->block_bytes());
  if (cache_->ReadBlock(id, data.data()).ok()) store_->Save(meta, std::move(data));
}

void PrefixCache::ReapSaves() {
  if (!saver_) return;
  for (const BlockSaver::Done& d : saver_->TakeDone()) {
    saving_.erase(d.key);
    cache_->allocator().Unref(d.id);
  }
}

void PrefixCache::WaitForSaves() {
  if (!saver_) return;
  saver_->Drain();
  ReapSaves();
}

void PrefixCache::Release(CachedSequence* seq) {
  seq->restore.reset();  // a running restore goes on; ReapRestores merges it
  cache_->Release(&seq->kv);
  seq->published = 0;
}

void PrefixCache::Clear() {
  std::lock_guard<std::mutex> lock(index_mu_);
  index_.clear();
  std::fill(indexed_.begin(), indexed_.end(), 0);
}

int64_t PrefixCache::CachedPrefixBlocks(std::span<const int32_t> tokens) const {
  CachedSequence s;
  s.tokens.assign(tokens.begin(), tokens.end());
  ExtendKeys(&s);
  int64_t n = 0;
  {
    std::lock_guard<std::mutex> lock(index_mu_);
    while (n < static_cast<int64_t>(s.keys.size()) && index_.count(s.keys[static_cast<size_t>(n)])) ++n;
  }
  if (PollStoreFingerprint()) {
    while (n < static_cast<int64_t>(s.keys.size()) && store_->Contains(StoreKeyOf(s.keys[static_cast<size_t>(n)]))) ++n;
  }
  return n;
}

void PrefixCache::OnAllocate(int32_t id) {
  if (indexed_[static_cast<size_t>(id)]) {
    Unindex(id);
    ++counters_.evictions;
  }
}

void PrefixCache::Unindex(int32_t id) {
  const size_t b = static_cast<size_t>(id);
  std::lock_guard<std::mutex> lock(index_mu_);
  auto it = index_.find(key_of_[b]);
  if (it != index_.end() && it->second == id) index_.erase(it);
  indexed_[b] = 0;
}

PrefixCacheStats PrefixCache::stats() const {
  PrefixCacheStats s = counters_;
  s.store_ready = store_ready();
  const BlockAllocator& a = cache_->allocator();
  s.blocks_total = a.total_blocks();
  s.blocks_free = a.free_blocks();
  s.blocks_used = s.blocks_total - s.blocks_free;
  s.blocks_indexed = static_cast<int64_t>(index_.size());
  for (int32_t id = 0; id < a.total_blocks(); ++id) {
    if (indexed_[static_cast<size_t>(id)] && a.refcount(id) == 0) ++s.blocks_cached;
  }
  return s;
}

}  // namespace llmhost
