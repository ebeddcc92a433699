#include "backend/cpu/ops_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace llmhost::cpu {

void StoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n,
             int64_t kv_dim, const int32_t* slots, float* k_cache, float* v_cache,
             ThreadPool* pool) {
  (void)pool;  // a memcpy per row: bandwidth-bound, one thread is enough
  const size_t row_bytes = static_cast<size_t>(kv_dim) * sizeof(float);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t slot = slots[i];
    std::memcpy(k_cache + slot * kv_dim, k + i * k_stride, row_bytes);
    std::memcpy(v_cache + slot * kv_dim, v + i * v_stride, row_bytes);
  }
}

namespace {

// One query row of one head. scores: scratch of at least kv_len floats.
void AttendOne(const float* qh, const float* k_cache, const float* v_cache, const AttentionSeq& s,
               int64_t pos, int64_t kv_head, const AttentionParams& p, float* scores, float* oh) {
  const int64_t kv_dim = p.n_kv_heads * p.head_dim;
  const int64_t d = p.head_dim;
  const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
  const int64_t n_keys = pos - lo + 1;
  auto key_row = [&](int64_t j) {
    const int64_t slot = static_cast<int64_t>(s.block_table[j / p.block_size]) * p.block_size +
                         j % p.block_size;
    return slot * kv_dim + kv_head * d;
  };
  float mx = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* kr = k_cache + key_row(lo + j);
    float dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += qh[c] * kr[c];
    float sc = dot * p.scale;
    if (p.softcap > 0) sc = p.softcap * std::tanh(sc / p.softcap);
    scores[j] = sc;
    mx = std::max(mx, sc);
  }
  double sum = 0;
  for (int64_t j = 0; j < n_keys; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  std::fill(oh, oh + d, 0.0f);
  for (int64_t j = 0; j < n_keys; ++j) {
    const float w = scores[j] * inv;
    const float* vr = v_cache + key_row(lo + j);
    for (int64_t c = 0; c < d; ++c) oh[c] += w * vr[c];
  }
}

}  // namespace

void Attention(const float* q, const float* k_cache, const float* v_cache,
               const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p, float* out,
               ThreadPool* pool) {
  // Work items: (query row, head). Rows are listed with their sequence.
  struct RowRef {
    int32_t seq;
    int32_t index;  // among the sequence's new tokens
  };
  std::vector<RowRef> rows;
  int64_t max_kv = 0;
  for (int64_t s = 0; s < n_seqs; ++s) {
    for (int64_t i = 0; i < seqs[s].n_new; ++i) {
      rows.push_back({static_cast<int32_t>(s), static_cast<int32_t>(i)});
    }
    max_kv = std::max(max_kv, seqs[s].kv_len);
  }
  const int64_t group = p.n_heads / p.n_kv_heads;
  const int64_t n_items = static_cast<int64_t>(rows.size()) * p.n_heads;
  auto body = [&](int64_t i0, int64_t i1) {
    std::vector<float> scores(static_cast<size_t>(std::max<int64_t>(max_kv, 1)));
    for (int64_t it = i0; it < i1; ++it) {
      const RowRef& r = rows[static_cast<size_t>(it / p.n_heads)];
      const int64_t h = it % p.n_heads;
      const AttentionSeq& s = seqs[r.seq];
      const int64_t row = s.q_row + r.index;
      const int64_t pos = s.kv_len - s.n_new + r.index;
      AttendOne(q + row * p.q_stride + h * p.head_dim, k_cache, v_cache, s, pos, h / group, p,
                scores.data(), out + row * p.out_stride + h * p.head_dim);
    }
  };
  if (pool && n_items > 1) {
    pool->ParallelFor(n_items, 1, body);
  } else {
    body(0, n_items);
  }
}

}  // namespace llmhost::cpu
