// Paged causal attention against a dense double-precision reference: several
// sequences at once (prefill chunks and single-token decodes), K/V written
// through scrambled block tables, GQA, sliding windows, soft-capping, a
// scale override and q rows inside wider (fused) rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <cstring>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/ops_attention.h"
#include "backend/cpu/ops_attention_kernels.h"

namespace llmhost::ops_attention_test {
namespace {

struct Seq {
  int64_t kv_len, n_new;
  std::vector<int32_t> table;
};

// out[h] for the query at `pos` of a sequence whose keys/values are the dense
// rows k[j], v[j] (j <= pos), computed in double from the definition.
std::vector<double> DenseReference(const std::vector<float>& q, const std::vector<std::vector<float>>& k,
                                   const std::vector<std::vector<float>>& v, int64_t pos,
                                   int64_t kv_head, const AttentionParams& p) {
  const int64_t d = p.head_dim;
  std::vector<double> s;
  std::vector<int64_t> keys;
  for (int64_t j = 0; j <= pos; ++j) {
    if (p.window > 0 && pos - j >= p.window) continue;
    double dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * k[j][kv_head * d + c];
    dot *= p.scale;
    if (p.softcap > 0) dot = p.softcap * std::tanh(dot / p.softcap);
    s.push_back(dot);
    keys.push_back(j);
  }
  const double mx = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - mx));
  std::vector<double> out(d, 0.0);
  for (size_t i = 0; i < keys.size(); ++i)
    for (int64_t c = 0; c < d; ++c) out[c] += s[i] / sum * v[keys[i]][kv_head * d + c];
  return out;
}

void RunCase(int64_t window, float softcap, float scale, bool fast) {
  const int64_t heads = 4, kv_heads = 2, hd = 8, bs = 4, kvd = kv_heads * hd;
  const int64_t q_stride = heads * hd + 2 * kvd;  // q inside a fused qkv row
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  // Three sequences: a prefill of 11, a decode at position 9, a chunk of 3 at 14..16.
  std::vector<Seq> seqs = {{11, 11, {}}, {10, 1, {}}, {17, 3, {}}};
  std::vector<int32_t> free_blocks(16);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);  // scrambled physical blocks
  size_t next_block = 0;
  for (Seq& s : seqs)
    for (int64_t b = 0; b < (s.kv_len + bs - 1) / bs; ++b) s.table.push_back(free_blocks[next_block++]);
  std::vector<float> k_cache(16 * bs * kvd, NAN), v_cache(16 * bs * kvd, NAN);
  std::vector<std::vector<std::vector<float>>> dense_k(3), dense_v(3);
  // Past positions go straight into the cache; new ones through StoreKv.
  std::vector<float> q, k_new, v_new;
  std::vector<int32_t> slots;
  std::vector<AttentionSeq> batch;
  int64_t row = 0;
  for (size_t si = 0; si < seqs.size(); ++si) {
    Seq& s = seqs[si];
    batch.push_back({row, s.n_new, s.kv_len, s.table.data()});
    for (int64_t j = 0; j < s.kv_len; ++j) {
      std::vector<float> kr(kvd), vr(kvd);
      for (auto& x : kr) x = u(rng);
      for (auto& x : vr) x = u(rng);
      dense_k[si].push_back(kr);
      dense_v[si].push_back(vr);
      const int32_t slot = s.table[j / bs] * bs + j % bs;
      if (j < s.kv_len - s.n_new) {
        std::copy(kr.begin(), kr.end(), k_cache.begin() + slot * kvd);
        std::copy(vr.begin(), vr.end(), v_cache.begin() + slot * kvd);
      } else {
        k_new.insert(k_new.end(), kr.begin(), kr.end());
        v_new.insert(v_new.end(), vr.begin(), vr.end());
        slots.push_back(slot);
        for (int64_t c = 0; c < q_stride; ++c) q.push_back(c < heads * hd ? u(rng) : 99.0f);
        ++row;
      }
    }
  }
  cpu::StoreKv(k_new.data(), kvd, v_new.data(), kvd, row, kvd, slots.data(), k_cache.data(),
               v_cache.data(), DType::kF32, nullptr);
  AttentionParams p;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.head_dim = hd;
  p.q_stride = q_stride;
  p.out_stride = heads * hd;
  p.block_size = bs;
  p.scale = scale;
  p.softcap = softcap;
  p.window = window;
  std::vector<float> out(row * heads * hd, -1);
  ThreadPool pool(3);
  cpu::Attention(q.data(), k_cache.data(), v_cache.data(), batch.data(), 3, p, out.data(), fast, &pool);
  for (size_t si = 0; si < seqs.size(); ++si) {
    for (int64_t i = 0; i < seqs[si].n_new; ++i) {
      const int64_t r = batch[si].q_row + i, pos = seqs[si].kv_len - seqs[si].n_new + i;
      for (int64_t h = 0; h < heads; ++h) {
        std::vector<float> qh(q.begin() + r * q_stride + h * hd, q.begin() + r * q_stride + (h + 1) * hd);
        std::vector<double> ref = DenseReference(qh, dense_k[si], dense_v[si], pos, h / 2, p);
        for (int64_t c = 0; c < hd; ++c) {
          EXPECT_NEAR(out[r * heads * hd + h * hd + c], ref[c], 2e-6)
              << "seq " << si << " pos " << pos << " head " << h;
        }
      }
    }
  }
}

// Both paths: the portable reference loops and the AVX2 ones (where present).
TEST(OpsAttentionTest, CausalGqaPaged) {
  RunCase(0, 0, 1 / std::sqrt(8.0f), false);
  RunCase(0, 0, 1 / std::sqrt(8.0f), true);
}
TEST(OpsAttentionTest, SlidingWindow) {
  RunCase(3, 0, 1 / std::sqrt(8.0f), false);
  RunCase(3, 0, 1 / std::sqrt(8.0f), true);
}
TEST(OpsAttentionTest, SoftcapAndScaleOverride) {
  RunCase(0, 0.5f, 2.0f, false);
  RunCase(0, 0.5f, 2.0f, true);
}
TEST(OpsAttentionTest, WindowOfOneSeesOnlyItself) {
  // With window 1 each query attends to its own value only.
  const int64_t hd = 4;
  std::vector<float> q = {1, 0, 0, 0, 0, 1, 0, 0};
  std::vector<float> k = {1, 2, 3, 4, 5, 6, 7, 8}, v = {10, 11, 12, 13, 20, 21, 22, 23};
  std::vector<int32_t> table = {0};
  AttentionSeq s{0, 2, 2, table.data()};
  AttentionParams p;
  p.n_heads = p.n_kv_heads = 1;
  p.head_dim = p.q_stride = p.out_stride = hd;
  p.block_size = 16;
  p.window = 1;
  std::vector<float> out(8);
  cpu::Attention(q.data(), k.data(), v.data(), &s, 1, p, out.data(), false, nullptr);
  EXPECT_EQ(out, v);
}

// The fast path in tiles of up to 16 query rows gives each row the bits it
// gets alone: an n-token prefill (tiles of 16 and a remainder) against n
// one-token decodes and a prefill split into chunks of 7, for head dims with
// and without a column tail, GQA groups of 1 and 4, windows and soft caps,
// keys across shuffled KV blocks of 12, more keys than the value pass's
// 128-key chunk (n = 300) and than one key segment (decodes split over
// threads by segment give the same bits).
void ExpectTilesMatchSingleRows(int64_t hd, int64_t heads, int64_t kv_heads, int64_t window, float softcap,
                                int64_t n = 45) {
  const int64_t bs = 12, blocks = (n + bs - 1) / bs, kvd = kv_heads * hd, qd = heads * hd;
  std::mt19937 rng(static_cast<uint32_t>(hd * 100 + heads + window));
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  std::vector<float> k_cache(blocks * bs * kvd), v_cache(blocks * bs * kvd), q(n * qd);
  for (auto* vec : {&k_cache, &v_cache, &q}) {
    for (float& x : *vec) x = u(rng);
  }
  AttentionParams p;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.head_dim = hd;
  p.q_stride = p.out_stride = qd;
  p.block_size = bs;
  p.scale = 1 / std::sqrt(static_cast<float>(hd));
  p.softcap = softcap;
  p.window = window;
  ThreadPool pool(3);
  std::vector<float> whole(n * qd, -1), single(n * qd, -2), chunked(n * qd, -3), split(n * qd, -4);
  AttentionSeq all{0, n, n, table.data()};
  cpu::Attention(q.data(), k_cache.data(), v_cache.data(), &all, 1, p, whole.data(), true, &pool);
  for (int64_t pos = 0; pos < n; ++pos) {
    AttentionSeq one{pos, 1, pos + 1, table.data()};
    cpu::Attention(q.data(), k_cache.data(), v_cache.data(), &one, 1, p, single.data(), true, nullptr);
    // With threads, a lone decode's key segments run as separate items.
    cpu::Attention(q.data(), k_cache.data(), v_cache.data(), &one, 1, p, split.data(), true, &pool);
  }
  for (int64_t start = 0; start < n; start += 7) {
    const int64_t len = std::min<int64_t>(7, n - start);
    AttentionSeq part{start, len, start + len, table.data()};
    cpu::Attention(q.data(), k_cache.data(), v_cache.data(), &part, 1, p, chunked.data(), true, &pool);
  }
  for (int64_t i = 0; i < n * qd; ++i) {
    ASSERT_EQ(std::memcmp(&whole[i], &single[i], 4), 0) << "element " << i << ": " << whole[i] << " vs " << single[i];
    ASSERT_EQ(std::memcmp(&whole[i], &chunked[i], 4), 0) << "element " << i;
    ASSERT_EQ(std::memcmp(&whole[i], &split[i], 4), 0) << "element " << i << " (segments on threads)";
  }
}

TEST(OpsAttentionTest, FastTilesAreBatchInvariantBitForBit) {
  ExpectTilesMatchSingleRows(64, 8, 2, 0, 0);
  ExpectTilesMatchSingleRows(72, 4, 4, 0, 0);   // 3 x 24 columns; group 1
  ExpectTilesMatchSingleRows(20, 4, 1, 9, 0);   // 16 + 4-column tail; window
  ExpectTilesMatchSingleRows(128, 4, 1, 0, 30.0f);
  ExpectTilesMatchSingleRows(64, 8, 2, 0, 0, 300);
  ExpectTilesMatchSingleRows(20, 4, 1, 200, 0, 300);
  // Keys in three segments of kKeySegment: windows across a segment's edge.
  ExpectTilesMatchSingleRows(64, 8, 2, 0, 0, 2 * cpu::kKeySegment + 300);
  ExpectTilesMatchSingleRows(72, 4, 1, cpu::kKeySegment + 100, 20.0f, 2 * cpu::kKeySegment + 300);
}

// A paged cache's worth of random K/V (and q) for n positions of one
// sequence, its blocks in a shuffled table: the inputs of the narrow-cache
// tests below.
struct PagedInputs {
  int64_t n, kvd, qd, bs = 16, blocks;
  std::vector<float> k, v, q;
  std::vector<int32_t> table, slots;
  AttentionParams p;
};

PagedInputs MakePagedInputs(int64_t heads, int64_t kv_heads, int64_t hd, int64_t n, uint32_t seed) {
  PagedInputs in;
  in.n = n;
  in.kvd = kv_heads * hd;
  in.qd = heads * hd;
  in.blocks = (n + in.bs - 1) / in.bs;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3, 3);
  in.k.resize(n * in.kvd);
  in.v.resize(n * in.kvd);
  in.q.resize(n * in.qd);
  for (auto* vec : {&in.k, &in.v, &in.q}) {
    for (float& x : *vec) x = u(rng);
  }
  in.table.resize(in.blocks);
  in.slots.resize(n);
  std::iota(in.table.begin(), in.table.end(), 0);
  std::shuffle(in.table.begin(), in.table.end(), rng);
  for (int64_t j = 0; j < n; ++j) in.slots[j] = in.table[j / in.bs] * in.bs + j % in.bs;
  in.p.n_heads = heads;
  in.p.n_kv_heads = kv_heads;
  in.p.head_dim = hd;
  in.p.q_stride = in.p.out_stride = in.qd;
  in.p.block_size = in.bs;
  in.p.scale = 1 / std::sqrt(static_cast<float>(hd));
  return in;
}

// A 16-bit cache holds K/V rounded to nearest even; attention widens them
// exactly, so it must give, bit for bit, what it gives over an f32 cache of
// the rounded values: on both paths, for a prefill tile and decodes, with
// more keys than one 64-key K batch and one 128-key V chunk. StoreKv's
// rounding is checked against the scalar conversions.
TEST(OpsAttentionTest, SixteenBitCachesEqualTheirRoundedF32Cache) {
  PagedInputs in = MakePagedInputs(8, 2, 72, 150, 21);
  const int64_t n = in.n, kvd = in.kvd, qd = in.qd, bs = in.bs, blocks = in.blocks;
  std::vector<float>&k = in.k, &v = in.v, &q = in.q;
  const std::vector<int32_t>&table = in.table, &slots = in.slots;
  const AttentionParams& p = in.p;
  k[5] = 70000.0f;  // beyond f16's range: rounds to inf in f16, as the scalar conversion does
  for (DType t : {DType::kBF16, DType::kF16}) {
    std::vector<uint16_t> k16(blocks * bs * kvd), v16(blocks * bs * kvd);
    cpu::StoreKv(k.data(), kvd, v.data(), kvd, n, kvd, slots.data(), k16.data(), v16.data(), t, nullptr);
    std::vector<float> kr(blocks * bs * kvd), vr(blocks * bs * kvd);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t c = 0; c < kvd; ++c) {
        const int64_t at = slots[j] * kvd + c;
        const uint16_t want_k = t == DType::kBF16 ? F32ToBf16(k[j * kvd + c]) : F32ToF16(k[j * kvd + c]);
        const uint16_t want_v = t == DType::kBF16 ? F32ToBf16(v[j * kvd + c]) : F32ToF16(v[j * kvd + c]);
        ASSERT_EQ(k16[at], want_k) << DTypeName(t) << " K " << j << "," << c;
        ASSERT_EQ(v16[at], want_v) << DTypeName(t) << " V " << j << "," << c;
        kr[at] = t == DType::kBF16 ? Bf16ToF32(k16[at]) : F16ToF32(k16[at]);
        vr[at] = t == DType::kBF16 ? Bf16ToF32(v16[at]) : F16ToF32(v16[at]);
      }
    }
    if (t == DType::kF16) k[5] = 1.0f, kr[slots[0] * kvd + 5] = 1.0f, k16[slots[0] * kvd + 5] = F32ToF16(1.0f);
    for (bool fast : {false, true}) {
      ThreadPool pool(3);
      std::vector<float> out16(n * qd, -1), out32(n * qd, -2);
      AttentionParams p16 = p;
      p16.kv_dtype = t;
      AttentionSeq all{0, n, n, table.data()};
      cpu::Attention(q.data(), k16.data(), v16.data(), &all, 1, p16, out16.data(), fast, &pool);
      cpu::Attention(q.data(), kr.data(), vr.data(), &all, 1, p, out32.data(), fast, &pool);
      for (int64_t i = 0; i < n * qd; ++i) {
        ASSERT_EQ(std::memcmp(&out16[i], &out32[i], 4), 0) << DTypeName(t) << " fast " << fast << " element " << i;
      }
      // A decode at the last position too.
      AttentionSeq last{n - 1, 1, n, table.data()};
      cpu::Attention(q.data(), k16.data(), v16.data(), &last, 1, p16, out16.data(), fast, nullptr);
      for (int64_t c = 0; c < qd; ++c) {
        ASSERT_EQ(std::memcmp(&out16[(n - 1) * qd + c], &out32[(n - 1) * qd + c], 4), 0);
      }
    }
    k[5] = 70000.0f;
  }
}

// An FP8 (e4m3) cache likewise: StoreKv's bytes are F32ToFp8E4M3's (saturated
// at +-448), and attention over them is, bit for bit, attention over an f32
// cache of the widened values.
TEST(OpsAttentionTest, Fp8CacheEqualsItsRoundedF32Cache) {
  PagedInputs in = MakePagedInputs(4, 2, 64, 140, 22);
  const int64_t n = in.n, kvd = in.kvd, qd = in.qd, bs = in.bs, blocks = in.blocks;
  std::vector<float>&k = in.k, &v = in.v, &q = in.q;
  const std::vector<int32_t>&table = in.table, &slots = in.slots;
  const AttentionParams& p = in.p;
  k[3] = 1000.0f;  // saturates to 448
  std::vector<uint8_t> k8(blocks * bs * kvd), v8(blocks * bs * kvd);
  cpu::StoreKv(k.data(), kvd, v.data(), kvd, n, kvd, slots.data(), k8.data(), v8.data(), DType::kF8_E4M3, nullptr);
  std::vector<float> kr(blocks * bs * kvd), vr(blocks * bs * kvd);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t c = 0; c < kvd; ++c) {
      const int64_t at = slots[j] * kvd + c;
      ASSERT_EQ(k8[at], F32ToFp8E4M3(k[j * kvd + c])) << "K " << j << "," << c;
      ASSERT_EQ(v8[at], F32ToFp8E4M3(v[j * kvd + c])) << "V " << j << "," << c;
      kr[at] = Fp8E4M3ToF32(k8[at]);
      vr[at] = Fp8E4M3ToF32(v8[at]);
    }
  }
  EXPECT_EQ(kr[slots[0] * kvd + 3], 448.0f);
  for (bool fast : {false, true}) {
    std::vector<float> out8(n * qd, -1), out32(n * qd, -2);
    AttentionParams p8 = p;
    p8.kv_dtype = DType::kF8_E4M3;
    AttentionSeq all{0, n, n, table.data()};
    cpu::Attention(q.data(), k8.data(), v8.data(), &all, 1, p8, out8.data(), fast, nullptr);
    cpu::Attention(q.data(), kr.data(), vr.data(), &all, 1, p, out32.data(), fast, nullptr);
    for (int64_t i = 0; i < n * qd; ++i) {
      ASSERT_EQ(std::memcmp(&out8[i], &out32[i], 4), 0) << "fast " << fast << " element " << i;
    }
  }
}

}  // namespace
}  // namespace llmhost::ops_attention_test
