#include "backend/cpu/ops_encoder.h"

#include "backend/cpu/ops_activation.h"
#include "backend/cpu/ops_encoder_kernels.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace llmhost::cpu {
namespace {

// Splits [0, n) over the pool when there is enough work to pay for it.
void ForRange(int64_t n, int64_t work_per_item, ThreadPool* pool,
              const std::function<void(int64_t, int64_t)>& body) {
  if (pool && n > 1 && n * work_per_item >= 16384) {
    pool->ParallelFor(n, 1, body);
  } else {
    body(0, n);
  }
}

}  // namespace

void LayerNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
               const float* bias, float eps, float* out, ThreadPool* pool) {
  ForRange(rows, dim, pool, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * stride;
      float* yr = out + r * stride;
      double sum = 0;
      for (int64_t i = 0; i < dim; ++i) sum += xr[i];
      const double mean = sum / static_cast<double>(dim);
      double ss = 0;
      for (int64_t i = 0; i < dim; ++i) ss += (xr[i] - mean) * (xr[i] - mean);
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
      for (int64_t i = 0; i < dim; ++i) {
        yr[i] = static_cast<float>((xr[i] - mean) * inv) * weight[i] + bias[i];
      }
    }
  });
}

void Gelu(float* x, int64_t n, bool fast, ThreadPool* pool) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const GeluRangeFn simd = fast ? GeluErfAvx2() : nullptr;
  ForRange(chunks, kChunk, pool, [&](int64_t c0, int64_t c1) {
    const int64_t end = std::min(n, c1 * kChunk);
    if (simd) return simd(x, c0 * kChunk, end);
    for (int64_t i = c0 * kChunk; i < end; ++i) {
      const double v = x[i];
      x[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v * M_SQRT1_2)));
    }
  });
}

void Tanh(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::tanh(static_cast<double>(x[i])));
}

namespace {

// Work items: (sequence, head, tile of kEncoderQueryTile query rows).
void EncoderAttentionTiled(EncoderTileFn tile, const float* q, const float* k, const float* v,
                           const EncoderSeq* seqs, int64_t n_seqs, const EncoderAttentionParams& p, float* out,
                           ThreadPool* pool) {
  struct Item {
    int64_t seq, head, i0, i1;
  };
  std::vector<Item> items;
  int64_t longest = 0;
  for (int64_t s = 0; s < n_seqs; ++s) {
    longest = std::max(longest, seqs[s].len);
    for (int64_t h = 0; h < p.n_heads; ++h) {
      for (int64_t i = 0; i < seqs[s].len; i += kEncoderQueryTile) {
        items.push_back({s, h, i, std::min(seqs[s].len, i + kEncoderQueryTile)});
      }
    }
  }
  const auto n = static_cast<int64_t>(items.size());
  ForRange(n, kEncoderQueryTile * longest * p.head_dim, pool, [&](int64_t i0, int64_t i1) {
    std::vector<float> scratch(static_cast<size_t>(EncoderTileScratch(longest, p.head_dim)));
    for (int64_t i = i0; i < i1; ++i) {
      const Item& it = items[static_cast<size_t>(i)];
      tile(q, k, v, seqs[it.seq], it.head, it.i0, it.i1, p, scratch.data(), out);
    }
  });
}

}  // namespace

void EncoderAttention(const float* q, const float* k, const float* v, const EncoderSeq* seqs,
                      int64_t n_seqs, const EncoderAttentionParams& p, float* out, bool fast, ThreadPool* pool) {
  if (EncoderTileFn tile = fast ? EncoderTileAvx2() : nullptr) {
    EncoderAttentionTiled(tile, q, k, v, seqs, n_seqs, p, out, pool);
    return;
  }
  // The reference: (sequence, head) pairs, plain loops.
  const int64_t d = p.head_dim, items = n_seqs * p.n_heads;
  int64_t longest = 0;
  for (int64_t s = 0; s < n_seqs; ++s) longest = std::max(longest, seqs[s].len);
  ForRange(items, longest * longest * d, pool, [&](int64_t i0, int64_t i1) {
    std::vector<float> scores;
    for (int64_t item = i0; item < i1; ++item) {
      const EncoderSeq& s = seqs[item / p.n_heads];
      const int64_t h = item % p.n_heads;
      scores.resize(static_cast<size_t>(s.len));
      for (int64_t i = 0; i < s.len; ++i) {
        const float* qi = q + (s.row + i) * p.qkv_stride + h * d;
        float max = -INFINITY;
        for (int64_t j = 0; j < s.len; ++j) {
          const float* kj = k + (s.row + j) * p.qkv_stride + h * d;
          float dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += qi[c] * kj[c];
          if (p.relative) {
            const float* r = p.relative + (i - j + p.max_distance - 1) * d;
            for (int64_t c = 0; c < d; ++c) dot += qi[c] * r[c];
            if (p.relative_keys) {
              for (int64_t c = 0; c < d; ++c) dot += kj[c] * r[c];
            }
          }
          scores[j] = dot * p.scale;
          max = std::max(max, scores[j]);
        }
        float sum = 0;
        for (int64_t j = 0; j < s.len; ++j) {
          scores[j] = std::exp(scores[j] - max);
          sum += scores[j];
        }
        float* oi = out + (s.row + i) * p.out_stride + h * d;
        std::fill(oi, oi + d, 0.0f);
        for (int64_t j = 0; j < s.len; ++j) {
          const float w = scores[j] / sum;
          const float* vj = v + (s.row + j) * p.qkv_stride + h * d;
          for (int64_t c = 0; c < d; ++c) oi[c] += w * vj[c];
        }
      }
    }
  });
}

}  // namespace llmhost::cpu
