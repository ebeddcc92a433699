#include "backend/cpu/ops_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/convert_rows.h"
#include "backend/cpu/ops_attention_kernels.h"

namespace llmhost::cpu {

void StoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n,
             int64_t kv_dim, const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype,
             ThreadPool* pool) {
  (void)pool;  // a copy per row: bandwidth-bound, one thread is enough
  if (kv_dtype == DType::kF32) {
    const size_t row_bytes = static_cast<size_t>(kv_dim) * sizeof(float);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t slot = slots[i];
      std::memcpy(static_cast<float*>(k_cache) + slot * kv_dim, k + i * k_stride, row_bytes);
      std::memcpy(static_cast<float*>(v_cache) + slot * kv_dim, v + i * v_stride, row_bytes);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t slot = slots[i];
    FloatsToKv(k + i * k_stride, k_cache, slot * kv_dim, kv_dim, kv_dtype);
    FloatsToKv(v + i * v_stride, v_cache, slot * kv_dim, kv_dim, kv_dtype);
  }
}

namespace {

// Σ a[i]·b[i] with eight interleaved partial sums (i mod 8), reduced as a tree.
float Dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float s = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

void AttendGroupScalar(const float* q, const void* k_cache, const void* v_cache,
                       const AttentionSeq& s, int64_t row, int64_t pos, int64_t kv_head,
                       const AttentionParams& p, float* scores, float* out) {
  const int64_t kv_dim = p.n_kv_heads * p.head_dim;
  const int64_t d = p.head_dim;
  const int64_t group = p.n_heads / p.n_kv_heads;
  const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
  const int64_t n_keys = pos - lo + 1;
  const float* qg = q + row * p.q_stride + kv_head * group * d;
  float* og = out + row * p.out_stride + kv_head * group * d;
  auto key_offset = [&](int64_t j) {
    const int64_t slot = static_cast<int64_t>(s.block_table[j / p.block_size]) * p.block_size +
                         j % p.block_size;
    return slot * kv_dim + kv_head * d;
  };
  // A K or V row of this head as f32 (narrower rows widened into `wide`).
  thread_local std::vector<float> wide;
  wide.resize(static_cast<size_t>(d));
  auto row_of = [&](const void* cache, int64_t j) -> const float* {
    if (p.kv_dtype == DType::kF32) return static_cast<const float*>(cache) + key_offset(j);
    KvToFloats(cache, key_offset(j), wide.data(), d, p.kv_dtype);
    return wide.data();
  };
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* kr = row_of(k_cache, lo + j);
    for (int64_t h = 0; h < group; ++h) {
      float sc = Dot(qg + h * d, kr, d) * p.scale;
      if (p.softcap > 0) sc = p.softcap * std::tanh(sc / p.softcap);
      scores[h * n_keys + j] = sc;
    }
  }
  for (int64_t h = 0; h < group; ++h) {
    float* sh = scores + h * n_keys;
    const float mx = *std::max_element(sh, sh + n_keys);
    double sum = 0;
    for (int64_t j = 0; j < n_keys; ++j) {
      sh[j] = std::exp(sh[j] - mx);
      sum += sh[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < n_keys; ++j) sh[j] *= inv;  // probabilities, as softmax then matmul
    std::fill(og + h * d, og + (h + 1) * d, 0.0f);
  }
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* vr = row_of(v_cache, lo + j);
    for (int64_t h = 0; h < group; ++h) {
      const float w = scores[h * n_keys + j];
      float* o = og + h * d;
      for (int64_t c = 0; c < d; ++c) o[c] += w * vr[c];
    }
  }
}

namespace {

// The reference path: one query row and KV head per work item.
void AttentionReference(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                        int64_t n_seqs, const AttentionParams& p, float* out, ThreadPool* pool) {
  struct Row {
    int32_t seq;
    int32_t index;  // among the sequence's new tokens
  };
  std::vector<Row> rows;
  int64_t max_kv = 0;
  for (int64_t s = 0; s < n_seqs; ++s) {
    for (int64_t i = 0; i < seqs[s].n_new; ++i) rows.push_back({static_cast<int32_t>(s), static_cast<int32_t>(i)});
    max_kv = std::max(max_kv, seqs[s].kv_len);
  }
  const int64_t group = p.n_heads / p.n_kv_heads;
  std::reverse(rows.begin(), rows.end());  // later rows of a prefill see more keys: first
  const int64_t n_items = static_cast<int64_t>(rows.size()) * p.n_kv_heads;
  auto body = [&](int64_t i0, int64_t i1) {
    std::vector<float> scores(static_cast<size_t>(std::max<int64_t>(max_kv, 1) * group));
    for (int64_t it = i0; it < i1; ++it) {
      const Row& r = rows[static_cast<size_t>(it / p.n_kv_heads)];
      const AttentionSeq& s = seqs[r.seq];
      AttendGroupScalar(q, k_cache, v_cache, s, s.q_row + r.index, s.kv_len - s.n_new + r.index,
                        it % p.n_kv_heads, p, scores.data(), out);
    }
  };
  if (pool && n_items > 1) {
    pool->ParallelFor(n_items, 1, body);
  } else {
    body(0, n_items);
  }
}

}  // namespace

void Attention(const float* q, const void* k_cache, const void* v_cache,
               const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p, float* out,
               bool fast, ThreadPool* pool) {
  const AttendTileFns fns = fast ? AttendTileAvx2() : AttendTileFns{};
  if (!fns.segment) {
    AttentionReference(q, k_cache, v_cache, seqs, n_seqs, p, out, pool);
    return;
  }
  // Tiles of up to kQueryTile new rows of a sequence; each against every KV
  // head, over the key segments its rows see.
  struct Tile {
    int32_t seq;
    int32_t first;  // among the sequence's new tokens
    int32_t count;
    int32_t seg_first, seg_count;
  };
  std::vector<Tile> tiles;
  for (int64_t s = 0; s < n_seqs; ++s) {
    for (int64_t i = 0; i < seqs[s].n_new; i += kQueryTile) {
      const int32_t count = static_cast<int32_t>(std::min(kQueryTile, seqs[s].n_new - i));
      const int64_t pos0 = seqs[s].kv_len - seqs[s].n_new + i;
      const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos0 - p.window + 1) : 0;
      const int64_t first = lo / kKeySegment, last = (pos0 + count - 1) / kKeySegment;
      tiles.push_back({static_cast<int32_t>(s), static_cast<int32_t>(i), count, static_cast<int32_t>(first),
                       static_cast<int32_t>(last - first + 1)});
    }
  }
  std::reverse(tiles.begin(), tiles.end());  // later tiles of a prefill see more keys: first
  const int64_t group = p.n_heads / p.n_kv_heads, ps = PartialStride(p.head_dim);
  // Few (tile, head) pairs for the threads (decodes): one item per segment,
  // partials in `parts`, combined by whichever item finishes its pair last.
  // The arithmetic is the same either way (ops_attention_kernels.h).
  const int threads = pool ? pool->size() : 1;
  const bool split = threads > 1 && static_cast<int64_t>(tiles.size()) * p.n_kv_heads < 4 * threads;
  struct Item {
    int32_t tile, kv_head;
    int32_t seg;   // this segment only (split), or -1: every segment of the tile
    int64_t part;  // split: offset of the pair's partials in `parts`
    int32_t pair;  // split: index of the pair's counter
  };
  std::vector<Item> items;
  int64_t parts_size = 0;
  int32_t pairs = 0;
  for (size_t t = 0; t < tiles.size(); ++t) {
    for (int64_t h = 0; h < p.n_kv_heads; ++h) {
      const Tile& tl = tiles[t];
      if (!split || tl.seg_count == 1) {
        items.push_back({static_cast<int32_t>(t), static_cast<int32_t>(h), -1, 0, 0});
        continue;
      }
      const int64_t pair_size = static_cast<int64_t>(tl.count) * group * ps;
      for (int32_t sg = 0; sg < tl.seg_count; ++sg) {
        items.push_back({static_cast<int32_t>(t), static_cast<int32_t>(h), sg, parts_size, pairs});
      }
      parts_size += pair_size * tl.seg_count;
      ++pairs;
    }
  }
  std::vector<float> parts(static_cast<size_t>(parts_size));
  std::vector<std::atomic<int32_t>> done(static_cast<size_t>(pairs));
  for (auto& d : done) d.store(0, std::memory_order_relaxed);
  auto body = [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> own;  // an unsplit item's partials
    for (int64_t it = i0; it < i1; ++it) {
      const Item& item = items[static_cast<size_t>(it)];
      const Tile& t = tiles[static_cast<size_t>(item.tile)];
      const AttentionSeq& s = seqs[t.seq];
      const int64_t row0 = s.q_row + t.first, pos0 = s.kv_len - s.n_new + t.first;
      const int64_t seg_size = static_cast<int64_t>(t.count) * group * ps;
      auto run = [&](int32_t sg, float* part) {
        const int64_t j0 = static_cast<int64_t>(t.seg_first + sg) * kKeySegment;
        fns.segment(q, k_cache, v_cache, s, row0, pos0, t.count, item.kv_head, p, j0, j0 + kKeySegment, part);
      };
      if (item.seg < 0) {
        if (own.size() < static_cast<size_t>(seg_size * t.seg_count)) own.resize(static_cast<size_t>(seg_size * t.seg_count));
        for (int32_t sg = 0; sg < t.seg_count; ++sg) run(sg, own.data() + sg * seg_size);
        fns.combine(own.data(), t.seg_count, row0, t.count, item.kv_head, p, out);
        continue;
      }
      float* pair_parts = parts.data() + item.part;
      run(item.seg, pair_parts + item.seg * seg_size);
      if (done[static_cast<size_t>(item.pair)].fetch_add(1, std::memory_order_acq_rel) + 1 == t.seg_count) {
        fns.combine(pair_parts, t.seg_count, row0, t.count, item.kv_head, p, out);
      }
    }
  };
  const int64_t n_items = static_cast<int64_t>(items.size());
  if (pool && n_items > 1) {
    pool->ParallelFor(n_items, 1, body);
  } else {
    body(0, n_items);
  }
}

}  // namespace llmhost::cpu
