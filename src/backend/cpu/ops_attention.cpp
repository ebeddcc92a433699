#include "backend/cpu/ops_attention.h"

#include <algorithm>
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
    FloatsToHalves(k + i * k_stride, static_cast<uint16_t*>(k_cache) + slot * kv_dim, kv_dim, kv_dtype);
    FloatsToHalves(v + i * v_stride, static_cast<uint16_t*>(v_cache) + slot * kv_dim, kv_dim, kv_dtype);
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
  // A K or V row of this head as f32 (16-bit rows widened into `wide`).
  thread_local std::vector<float> wide;
  wide.resize(static_cast<size_t>(d));
  auto row_of = [&](const void* cache, int64_t j) -> const float* {
    if (p.kv_dtype == DType::kF32) return static_cast<const float*>(cache) + key_offset(j);
    HalvesToFloats(static_cast<const uint16_t*>(cache) + key_offset(j), wide.data(), d, p.kv_dtype);
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

void Attention(const float* q, const void* k_cache, const void* v_cache,
               const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p, float* out,
               bool fast, ThreadPool* pool) {
  const AttendTileFn tile = fast ? AttendTileAvx2() : nullptr;
  // Work items: (tile of a sequence's new rows, KV head). The fast path takes
  // up to kQueryTile rows per tile; the reference one row at a time.
  struct Tile {
    int32_t seq;
    int32_t first;  // among the sequence's new tokens
    int32_t count;
  };
  const int64_t rows_per_tile = tile ? kQueryTile : 1;
  std::vector<Tile> tiles;
  int64_t max_kv = 0;
  for (int64_t s = 0; s < n_seqs; ++s) {
    for (int64_t i = 0; i < seqs[s].n_new; i += rows_per_tile) {
      tiles.push_back({static_cast<int32_t>(s), static_cast<int32_t>(i),
                       static_cast<int32_t>(std::min(rows_per_tile, seqs[s].n_new - i))});
    }
    max_kv = std::max(max_kv, seqs[s].kv_len);
  }
  const int64_t group = p.n_heads / p.n_kv_heads;
  // Later tiles of a prefill see more keys: hand them out first.
  std::reverse(tiles.begin(), tiles.end());
  const int64_t n_items = static_cast<int64_t>(tiles.size()) * p.n_kv_heads;
  auto body = [&](int64_t i0, int64_t i1) {
    std::vector<float> scores(tile ? 0 : static_cast<size_t>(std::max<int64_t>(max_kv, 1) * group));
    for (int64_t it = i0; it < i1; ++it) {
      const Tile& t = tiles[static_cast<size_t>(it / p.n_kv_heads)];
      const AttentionSeq& s = seqs[t.seq];
      const int64_t row0 = s.q_row + t.first, pos0 = s.kv_len - s.n_new + t.first;
      const int64_t kv_head = it % p.n_kv_heads;
      if (tile) {
        tile(q, k_cache, v_cache, s, row0, pos0, t.count, kv_head, p, out);
      } else {
        for (int64_t i = 0; i < t.count; ++i) {
          AttendGroupScalar(q, k_cache, v_cache, s, row0 + i, pos0 + i, kv_head, p, scores.data(), out);
        }
      }
    }
  };
  if (pool && n_items > 1) {
    pool->ParallelFor(n_items, 1, body);
  } else {
    body(0, n_items);
  }
}

}  // namespace llmhost::cpu
