#include "model/kv_cache.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "util/log.h"

namespace llmhost {

Result<std::optional<DType>> ParseKvDtype(std::string_view text) {
  if (text == "auto") return std::optional<DType>();
  if (text == "f32") return std::optional<DType>(DType::kF32);
  if (text == "bf16") return std::optional<DType>(DType::kBF16);
  if (text == "f16") return std::optional<DType>(DType::kF16);
  if (text == "fp8" || text == "fp8_e4m3") return std::optional<DType>(DType::kF8_E4M3);
  return Status::InvalidArgument("KV cache type '" + std::string(text) + "': expected auto, f32, bf16, f16 or fp8");
}

const char* KvDtypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kF8_E4M3: return "fp8";
    default: return DTypeName(t);
  }
}

BlockAllocator::BlockAllocator(int32_t max_blocks, int32_t usable)
    : refs_(static_cast<size_t>(max_blocks), 0),
      prev_(static_cast<size_t>(max_blocks), kNone),
      next_(static_cast<size_t>(max_blocks), kNone),
      in_free_(static_cast<size_t>(max_blocks), 0),
      usable_(usable < 0 ? max_blocks : std::min(usable, max_blocks)) {
  for (int32_t i = 0; i < usable_; ++i) PushBack(i);  // block 0 comes out first
}

void BlockAllocator::Grow(int32_t n) {
  const int32_t to = std::min(max_blocks(), usable_ + std::max(n, 0));
  // Pushed to the front in reverse so that the lowest new id comes out first.
  for (int32_t id = to - 1; id >= usable_; --id) PushFront(id);
  usable_ = to;
}

bool BlockAllocator::ShrinkTo(int32_t usable) {
  usable = std::max(usable, 0);
  if (usable >= usable_) return true;
  for (int32_t id = usable; id < usable_; ++id) {
    if (refs_[static_cast<size_t>(id)] > 0) return false;
  }
  for (int32_t id = usable; id < usable_; ++id) {
    if (in_free_[static_cast<size_t>(id)]) Unlink(id);
    if (hook_) hook_(id);  // its contents are about to go
  }
  usable_ = usable;
  return true;
}

int32_t BlockAllocator::HighestReferenced() const {
  for (int32_t id = usable_ - 1; id >= 0; --id) {
    if (refs_[static_cast<size_t>(id)] > 0) return id;
  }
  return -1;
}

void BlockAllocator::PushFront(int32_t id) {
  const size_t i = static_cast<size_t>(id);
  prev_[i] = kNone;
  next_[i] = head_;
  if (head_ != kNone) prev_[static_cast<size_t>(head_)] = id;
  else tail_ = id;
  head_ = id;
  in_free_[i] = 1;
  ++n_free_;
}

void BlockAllocator::PushBack(int32_t id) {
  const size_t i = static_cast<size_t>(id);
  prev_[i] = tail_;
  next_[i] = kNone;
  if (tail_ != kNone) next_[static_cast<size_t>(tail_)] = id;
  else head_ = id;
  tail_ = id;
  in_free_[i] = 1;
  ++n_free_;
}

void BlockAllocator::Unlink(int32_t id) {
  const size_t i = static_cast<size_t>(id);
  if (prev_[i] != kNone) next_[static_cast<size_t>(prev_[i])] = next_[i];
  else head_ = next_[i];
  if (next_[i] != kNone) prev_[static_cast<size_t>(next_[i])] = prev_[i];
  else tail_ = prev_[i];
  prev_[i] = next_[i] = kNone;
  in_free_[i] = 0;
  --n_free_;
}

std::optional<int32_t> BlockAllocator::Allocate() {
  if (head_ == kNone) return std::nullopt;
  const int32_t id = head_;
  Unlink(id);
  refs_[static_cast<size_t>(id)] = 1;
  if (hook_) hook_(id);
  return id;
}

void BlockAllocator::Ref(int32_t id) {
  if (in_free_[static_cast<size_t>(id)]) Unlink(id);
  ++refs_[static_cast<size_t>(id)];
}

void BlockAllocator::Unref(int32_t id) {
  int32_t& r = refs_[static_cast<size_t>(id)];
  if (r > 0 && --r == 0) PushBack(id);
}

Result<std::unique_ptr<KvCache>> KvCache::Create(Backend* backend, int64_t n_layers,
                                                 int64_t kv_dim, int64_t block_size,
                                                 int64_t n_blocks, DType dtype, int64_t max_blocks) {
  Backend* const one[] = {backend};
  return Create(std::span<Backend* const>(one), n_layers, kv_dim, block_size, n_blocks, dtype, max_blocks);
}

Result<std::unique_ptr<KvCache>> KvCache::Create(std::span<Backend* const> ranks, int64_t n_layers,
                                                 int64_t kv_dim, int64_t block_size,
                                                 int64_t n_blocks, DType dtype, int64_t max_blocks) {
  if (max_blocks <= 0) max_blocks = n_blocks;
  if (ranks.empty() || n_layers <= 0 || kv_dim <= 0 || block_size <= 0 || n_blocks <= 0 || max_blocks > (1 << 30) ||
      n_blocks > max_blocks) {
    return Status::InvalidArgument("kv cache: ranks, layers, kv_dim, block_size and blocks must be positive "
                                   "(and the blocks at most max_blocks)");
  }
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16 && dtype != DType::kF8_E4M3) {
    return Status::InvalidArgument(std::string("kv cache: element type ") + DTypeName(dtype) +
                                   " is not supported (F32, BF16, F16 or F8_E4M3)");
  }
  // Address space for max_blocks; where the system refuses that much (strict
  // overcommit accounting ignores MAP_NORESERVE), half as much, down to the
  // blocks asked for.
  for (;;) {
    std::unique_ptr<KvCache> c(
        new KvCache(ranks, n_layers, kv_dim, block_size, static_cast<int32_t>(max_blocks), dtype));
    // A chunk: the fewest blocks whose per-layer bytes are whole commit units (on every rank).
    const size_t lbb = c->layer_block_bytes();
    size_t chunk = 1;
    for (Backend* b : ranks) {
      const size_t g = std::max<size_t>(b->commit_granularity(), 1);
      chunk = std::lcm(chunk, g / std::gcd(lbb, g));
    }
    c->chunk_blocks_ = static_cast<int64_t>(chunk);
    const size_t bytes = static_cast<size_t>(max_blocks) * lbb;
    Status st = Status::OK();
    for (size_t r = 0; r < ranks.size() && st.ok(); ++r) {
      const std::string on = ranks.size() > 1 ? ", rank " + std::to_string(r) : "";
      for (int64_t l = 0; l < n_layers && st.ok(); ++l) {
        LayerBuffers b;
        auto k = ranks[r]->Reserve(bytes, "kv cache K, layer " + std::to_string(l) + on);
        if (!k.ok()) {
          st = k.status();
          break;
        }
        b.k = *k;
        auto v = ranks[r]->Reserve(bytes, "kv cache V, layer " + std::to_string(l) + on);
        if (!v.ok()) {
          ranks[r]->Free(b.k);
          st = v.status();
          break;
        }
        b.v = *v;
        c->layers_.push_back(b);
      }
    }
    if (!st.ok()) {
      if (max_blocks <= n_blocks) return st;
      LOG_WARN("kv cache: " << st.message() << "; reserving half as much");
      max_blocks = std::max(n_blocks, max_blocks / 2);
      continue;  // `c` frees what it reserved
    }
    ASSIGN_OR_RETURN(int64_t grown, c->Grow(n_blocks));
    (void)grown;
    return c;
  }
}

Status KvCache::CommitRange(int64_t from, int64_t to) {
  const size_t lbb = layer_block_bytes();
  const size_t off = static_cast<size_t>(from) * lbb, len = static_cast<size_t>(to - from) * lbb;
  for (size_t l = 0; l < layers_.size(); ++l) {
    Backend* b = backend_of(l);
    Status st = b->Commit(layers_[l].k, off, len);
    if (st.ok()) {
      st = b->Commit(layers_[l].v, off, len);
      if (!st.ok()) b->Decommit(layers_[l].k, off, len);
    }
    if (!st.ok()) {
      for (size_t u = 0; u < l; ++u) {
        backend_of(u)->Decommit(layers_[u].k, off, len);
        backend_of(u)->Decommit(layers_[u].v, off, len);
      }
      return st;
    }
  }
  return Status::OK();
}

void KvCache::DecommitRange(int64_t from, int64_t to) {
  const size_t lbb = layer_block_bytes();
  const size_t off = static_cast<size_t>(from) * lbb, len = static_cast<size_t>(to - from) * lbb;
  for (size_t l = 0; l < layers_.size(); ++l) {
    backend_of(l)->Decommit(layers_[l].k, off, len);
    backend_of(l)->Decommit(layers_[l].v, off, len);
  }
}

Result<int64_t> KvCache::Grow(int64_t blocks) {
  const int64_t have = alloc_.total_blocks(), max = alloc_.max_blocks();
  if (blocks <= 0 || have >= max) return int64_t{0};
  int64_t to = (have + blocks + chunk_blocks_ - 1) / chunk_blocks_ * chunk_blocks_;
  to = std::min(to, max);
  RETURN_IF_ERROR(CommitRange(have, to));
  alloc_.Grow(static_cast<int32_t>(to - have));
  return to - have;
}

int64_t KvCache::ShrinkTo(int64_t blocks) {
  const int64_t have = alloc_.total_blocks();
  int64_t to = std::max<int64_t>(blocks, alloc_.HighestReferenced() + 1);
  to = std::min(have, (to + chunk_blocks_ - 1) / chunk_blocks_ * chunk_blocks_);
  if (to >= have || !alloc_.ShrinkTo(static_cast<int32_t>(to))) return 0;
  DecommitRange(to, have);
  return have - to;
}

KvCache::~KvCache() {
  for (size_t l = 0; l < layers_.size(); ++l) {
    backend_of(l)->Free(layers_[l].k);
    backend_of(l)->Free(layers_[l].v);
  }
}

int64_t KvCache::BlocksNeeded(const KvSequence& seq, int64_t new_length) const {
  int64_t need = std::max<int64_t>(0, BlocksFor(new_length) -
                                          static_cast<int64_t>(seq.block_table.size()));
  // A shared block that the next write lands in must be copied first.
  if (new_length > seq.length && seq.length % block_size_ != 0) {
    const int32_t b = seq.block_table[static_cast<size_t>(seq.length / block_size_)];
    if (alloc_.refcount(b) > 1) ++need;
  }
  return need;
}

Status KvCache::Reserve(KvSequence* seq, int64_t new_length) {
  if (new_length <= seq->length) return Status::OK();
  const int64_t need = BlocksNeeded(*seq, new_length);
  if (need > alloc_.free_blocks()) {
    return Status::ResourceExhausted("kv cache: " + std::to_string(need) + " blocks needed, " +
                                     std::to_string(alloc_.free_blocks()) + " free");
  }
  if (seq->length % block_size_ != 0) {
    int32_t& b = seq->block_table[static_cast<size_t>(seq->length / block_size_)];
    if (alloc_.refcount(b) > 1) {
      const int32_t fresh = *alloc_.Allocate();
      CopyBlock(b, fresh);
      alloc_.Unref(b);
      b = fresh;
    }
  }
  while (static_cast<int64_t>(seq->block_table.size()) < BlocksFor(new_length)) {
    seq->block_table.push_back(*alloc_.Allocate());
  }
  return Status::OK();
}

KvSequence KvCache::Fork(const KvSequence& src, int64_t length) {
  KvSequence out;
  out.length = std::min(length, src.length);
  for (int64_t i = 0; i < BlocksFor(out.length); ++i) {
    const int32_t b = src.block_table[static_cast<size_t>(i)];
    alloc_.Ref(b);
    out.block_table.push_back(b);
  }
  return out;
}

void KvCache::Release(KvSequence* seq) {
  for (int32_t b : seq->block_table) alloc_.Unref(b);
  seq->block_table.clear();
  seq->length = 0;
}

void KvCache::CopyBlock(int32_t from, int32_t to) {
  const size_t block_bytes = layer_block_bytes();
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerBuffers& b = layers_[l];
    backend_of(l)->CopyDeviceToDevice(b.k, static_cast<size_t>(to) * block_bytes, b.k,
                                      static_cast<size_t>(from) * block_bytes, block_bytes);
    backend_of(l)->CopyDeviceToDevice(b.v, static_cast<size_t>(to) * block_bytes, b.v,
                                      static_cast<size_t>(from) * block_bytes, block_bytes);
  }
}

uint64_t KvCache::block_bytes() const {
  return 2 * static_cast<uint64_t>(n_layers_ * ranks()) * layer_block_bytes();
}

Status KvCache::ReadBlock(int32_t id, uint8_t* out) const {
  const size_t bytes = layer_block_bytes(), L = static_cast<size_t>(n_layers_);
  const size_t offset = static_cast<size_t>(id) * bytes;
  // A device backend may still be writing K/V (the copies wait for it).
  for (size_t r = 0; r < backends_.size(); ++r) {
    uint8_t* shard = out + r * 2 * L * bytes;
    for (size_t l = 0; l < L; ++l) {
      const LayerBuffers& b = layers_[r * L + l];
      backends_[r]->CopyToHost(shard + l * bytes, b.k, offset, bytes);
      backends_[r]->CopyToHost(shard + (L + l) * bytes, b.v, offset, bytes);
    }
  }
  // A failed device's error is sticky: the block is not to be kept.
  for (Backend* b : backends_) RETURN_IF_ERROR(b->Synchronize());
  return Status::OK();
}

void KvCache::WriteBlock(int32_t id, const uint8_t* in) {
  const size_t bytes = layer_block_bytes(), L = static_cast<size_t>(n_layers_);
  const size_t offset = static_cast<size_t>(id) * bytes;
  for (size_t r = 0; r < backends_.size(); ++r) {
    const uint8_t* shard = in + r * 2 * L * bytes;
    for (size_t l = 0; l < L; ++l) {
      const LayerBuffers& b = layers_[r * L + l];
      backends_[r]->CopyToDevice(b.k, offset, shard + l * bytes, bytes);
      backends_[r]->CopyToDevice(b.v, offset, shard + (L + l) * bytes, bytes);
    }
  }
  // `in` may be freed once this returns (errors: as in ReadBlock).
  for (Backend* b : backends_) (void)b->Synchronize();
}

}  // namespace llmhost
