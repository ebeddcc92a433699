// BF16 dot-product matmul kernels (MatMulPrecision::kFastBf16 / kBf16Tiles):
// AMX-BF16 tiles for CPUs with Intel AMX (Sapphire Rapids and later) once the
// OS has granted tile state, and VDPBF16PS (AVX512_BF16: Zen 4, Cooper Lake)
// elsewhere. Both take the same packed x and the same bf16 weight panels.
//
// Roles: the weights are the A operand and x the B operand, so that bf16
// weight rows load into tiles straight from the (mapped) matrix, 16 rows by
// 32 columns per tile, with no repacking; x is packed once per call into the
// pair-interleaved ("VNNI") layout B tiles need: for a block of 16 tokens and
// 32 columns, tile row r holds, for each token j, the bf16 pair of columns
// (2r, 2r+1) as one 32-bit word (even column in the low half).
//
// C tile (16 weight rows x 16 tokens, f32) = sum over column tiles of
// TDPBF16PS, always in column order from 0: an output is computed by the same
// instruction sequence whatever the batch size, the token's position in its
// block or the thread that runs it, so among the batches this path serves
// (>= kAmxMinRows rows) it is batch invariant (tested bit for bit on an AMX
// machine). Non-bf16 weights are first
// dequantized exactly (the AVX2 decoders) and rounded to bf16 into a
// per-thread panel; bf16 weights with cols % 32 == 0 are read in place.
//
// The AVX-512 kernel: one zmm holds 16 tokens' pair words of one column pair
// (a packed tile row, as AMX loads it), the weight row's pair is broadcast,
// and VDPBF16PS adds both products to each token's f32 sum, pair after pair
// from column 0: the same per-output sequence whatever the batch, the
// token's lane or the thread, so it is batch invariant as the AMX kernel is
// (the two kernels round differently inside a pair: they agree to the
// tolerances, not bit for bit).
//
// Error: x is rounded to bf16 (relative 2^-9 per element), weights of other
// formats too; products are exact in f32 and summed in f32. Figures in
// docs/benchmarks.md and tests/backend/matmul_amx_test.cpp.
#include "backend/cpu/aligned_scratch.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/quant_avx2_decode.h"

#if defined(__x86_64__)

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_features.h"

#define AMX_FN __attribute__((target("avx2,fma,f16c,amx-tile,amx-bf16")))
#define AVX512BF16_FN __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16")))

namespace llmhost::cpu {
namespace {

constexpr int64_t kBlock = 16;   // tokens per B tile, weight rows per A tile
constexpr int64_t kKTile = 32;   // columns per tile
constexpr int64_t kPanel = 32;   // weight rows per task: two A tiles
constexpr int64_t kTileWords = kBlock * kKTile / 2;  // 32-bit words per B tile (1 KiB)

int64_t Round32(int64_t v) { return (v + kKTile - 1) / kKTile * kKTile; }

// The 64-byte tile configuration (palette 1) of LDTILECFG.
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// f32 -> bf16, round to nearest even, NaN kept quiet: F32ToBf16 (matmul.h)
// eight at a time; the same bits.
AVX2_FN void ToBf16(const float* src, int64_t count, uint16_t* dst) {
  int64_t i = 0;
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7FFF);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
  const __m256i quiet = _mm256_set1_epi32(0x400000);
  for (; i + 8 <= count; i += 8) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), one);
    __m256i r = _mm256_add_epi32(b, _mm256_add_epi32(bias, lsb));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, abs_mask), inf);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(b, quiet), nan);
    r = _mm256_srli_epi32(r, 16);
    // Pack the low halves of eight 32-bit lanes into eight 16-bit values.
    const __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_packus_epi32(lo, hi));
  }
  for (; i < count; ++i) dst[i] = F32ToBf16(src[i]);
}

thread_local AlignedScratch<uint16_t> tls_panel;
thread_local AlignedScratch<float> tls_row;
thread_local AlignedScratch<uint16_t> tls_xrow;

int64_t PackedXBytes(int64_t n, int64_t cols) {
  return (n + kBlock - 1) / kBlock * kBlock * Round32(cols) * 2;
}

// Token blocks [b0, b1) of x into xp: block b, column tile kt, pair row r,
// token j at word ((b * kts + kt) * 16 + r) * 16 + j; zero past n and cols.
AVX2_FN void PackX(const float* x, int64_t n, int64_t cols, int64_t b0, int64_t b1, void* out) {
  const int64_t kp = Round32(cols), kts = kp / kKTile;
  uint32_t* xp = static_cast<uint32_t*>(out);
  uint16_t* row = tls_xrow.Get(kp);
  for (int64_t b = b0; b < b1; ++b) {
    uint32_t* block = xp + b * kts * kTileWords;
    for (int64_t j = 0; j < kBlock; ++j) {
      const int64_t t = b * kBlock + j;
      if (t < n) {
        ToBf16(x + t * cols, cols, row);
        std::memset(row + cols, 0, static_cast<size_t>(kp - cols) * 2);
      } else {
        std::memset(row, 0, static_cast<size_t>(kp) * 2);
      }
      const uint32_t* pairs = reinterpret_cast<const uint32_t*>(row);
      for (int64_t p = 0; p < kp / 2; ++p) block[(p / 16) * kTileWords + (p % 16) * kBlock + j] = pairs[p];
    }
  }
}


bool Bf16InPlace(const WeightMatrix& w) {
  const bool bf16 = w.format == WeightFormat::kBF16 ||
                    (w.format == WeightFormat::kGgml && w.ggml_type == GgmlType::kBF16);
  return bf16 && w.cols % kKTile == 0;
}

// Writes C tiles (weight rows x tokens) into y, skipping padding.
inline void Scatter(const float* c, int64_t row0, int64_t nrows, int64_t tok0, int64_t n, float* y,
                    int64_t ldy) {
  const int64_t rows = std::min<int64_t>(kBlock, nrows), toks = std::min<int64_t>(kBlock, n - tok0);
  for (int64_t j = 0; j < toks; ++j) {
    float* dst = y + (tok0 + j) * ldy + row0;
    for (int64_t i = 0; i < rows; ++i) dst[i] = c[i * kBlock + j];
  }
}

// The bf16 rows [r0, r1) (at most kPanel) of w: in place for bf16 weights
// whose columns fill whole tiles (a full panel), else dequantized, rounded
// and zero-padded to kPanel rows of Round32(cols) into this thread's panel.
// Returns the rows and sets *lda to the bytes between them.
AVX2_FN const uint16_t* WeightPanel(const WeightMatrix& w, DequantRangeFn dequant, int64_t r0, int64_t r1,
                                    int64_t* lda) {
  const int64_t cols = w.cols, kp = Round32(cols), nr = r1 - r0;
  if (Bf16InPlace(w) && nr == kPanel) {
    *lda = cols * 2;
    return static_cast<const uint16_t*>(w.data) + r0 * cols;
  }
  uint16_t* panel = tls_panel.Get(kPanel * kp);
  float* row = tls_row.Get(cols);
  for (int64_t rr = 0; rr < kPanel; ++rr) {
    uint16_t* dst = panel + rr * kp;
    if (rr < nr) {
      dequant(w, r0 + rr, 0, cols, row);
      ToBf16(row, cols, dst);
      std::memset(dst + cols, 0, static_cast<size_t>(kp - cols) * 2);
    } else {
      std::memset(dst, 0, static_cast<size_t>(kp) * 2);
    }
  }
  *lda = kp * 2;
  return panel;
}

// Rows [r0, r1) (at most 32) against every token of the packed x.
AMX_FN void Panel(const WeightMatrix& w, DequantRangeFn dequant, const void* packed, int64_t n,
                  int64_t r0, int64_t r1, float* y, int64_t ldy) {
  const int64_t kts = Round32(w.cols) / kKTile, nr = r1 - r0;
  int64_t lda;  // bytes between weight rows
  const uint16_t* a = WeightPanel(w, dequant, r0, r1, &lda);
  const uint16_t* a1 = a + kBlock * (lda / 2);
  const uint32_t* xp = static_cast<const uint32_t*>(packed);

  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  alignas(64) float c[4][kBlock * kBlock];
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    const uint32_t* x0 = xp + b * kts * kTileWords;
    const uint32_t* x1 = x0 + kts * kTileWords;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t k = 0; k < kts; ++k) {
      _tile_loadd(4, a + k * kKTile, lda);
      _tile_loadd(5, a1 + k * kKTile, lda);
      _tile_loadd(6, x0 + k * kTileWords, 64);
      _tile_loadd(7, x1 + k * kTileWords, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 5, 6);
      _tile_dpbf16ps(2, 4, 7);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    _tile_stored(2, c[2], 64);
    _tile_stored(3, c[3], 64);
    Scatter(c[0], r0, nr, b * kBlock, n, y, ldy);
    Scatter(c[1], r0 + kBlock, nr - kBlock, b * kBlock, n, y, ldy);
    Scatter(c[2], r0, nr, (b + 1) * kBlock, n, y, ldy);
    Scatter(c[3], r0 + kBlock, nr - kBlock, (b + 1) * kBlock, n, y, ldy);
  }
  if (b < blocks) {  // one block of tokens left: the same sequence on two C tiles
    const uint32_t* x0 = xp + b * kts * kTileWords;
    _tile_zero(0);
    _tile_zero(1);
    for (int64_t k = 0; k < kts; ++k) {
      _tile_loadd(4, a + k * kKTile, lda);
      _tile_loadd(5, a1 + k * kKTile, lda);
      _tile_loadd(6, x0 + k * kTileWords, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 5, 6);
    }
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    Scatter(c[0], r0, nr, b * kBlock, n, y, ldy);
    Scatter(c[1], r0 + kBlock, nr - kBlock, b * kBlock, n, y, ldy);
  }
  _tile_release();
}

void PanelAny(const WeightMatrix& w, const void* packed, int64_t n, int64_t r0, int64_t r1, float* y,
              int64_t ldy) {
  Panel(w, SelectDequantAvx2(w), packed, n, r0, r1, y, ldy);
}

// The same rows and tokens by VDPBF16PS: groups of 8 weight rows against
// two 16-token blocks at a time (16 accumulators).
AVX512BF16_FN void PanelDp(const WeightMatrix& w, DequantRangeFn dequant, const void* packed, int64_t n,
                           int64_t r0, int64_t r1, float* y, int64_t ldy) {
  constexpr int64_t kRows = 8;
  const int64_t pairs = Round32(w.cols) / 2, nr = r1 - r0;
  const int64_t block_words = pairs * kBlock;  // one token block of the packed x
  int64_t lda;
  const uint16_t* a = WeightPanel(w, dequant, r0, r1, &lda);
  const int64_t lda_words = lda / 4;
  const uint32_t* xp = static_cast<const uint32_t*>(packed);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  alignas(64) float c[kRows][2 * kBlock];
  for (int64_t g = 0; g < nr; g += kRows) {
    const uint32_t* ag = reinterpret_cast<const uint32_t*>(a) + g * lda_words;
    const int64_t gr = std::min<int64_t>(kRows, nr - g);
    for (int64_t b = 0; b < blocks; b += 2) {
      const bool two = b + 1 < blocks;
      const uint32_t* x0 = xp + b * block_words;
      const uint32_t* x1 = two ? x0 + block_words : x0;  // one block left: computed twice, stored once
      __m512 acc0[kRows], acc1[kRows];
      for (int i = 0; i < kRows; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
      for (int64_t p = 0; p < pairs; ++p) {
        const __m512bh xv0 = (__m512bh)_mm512_loadu_si512(x0 + p * kBlock);
        const __m512bh xv1 = (__m512bh)_mm512_loadu_si512(x1 + p * kBlock);
        for (int i = 0; i < kRows; ++i) {
          // Rows past nr exist in the padded panel (zeros); in place only full panels are read.
          const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(ag[i * lda_words + p]));
          acc0[i] = _mm512_dpbf16_ps(acc0[i], av, xv0);
          acc1[i] = _mm512_dpbf16_ps(acc1[i], av, xv1);
        }
      }
      for (int i = 0; i < kRows; ++i) {
        _mm512_store_ps(c[i], acc0[i]);
        _mm512_store_ps(c[i] + kBlock, acc1[i]);
      }
      const int64_t toks = std::min<int64_t>(two ? 2 * kBlock : kBlock, n - b * kBlock);
      for (int64_t j = 0; j < toks; ++j) {
        float* dst = y + (b * kBlock + j) * ldy + r0 + g;
        for (int64_t i = 0; i < gr; ++i) dst[i] = c[i][j];
      }
    }
  }
}

void PanelDpAny(const WeightMatrix& w, const void* packed, int64_t n, int64_t r0, int64_t r1, float* y,
                int64_t ldy) {
  PanelDp(w, SelectDequantAvx2(w), packed, n, r0, r1, y, ldy);
}

const Bf16Kernels kAmx = {"amx-bf16", kBlock, PackedXBytes, PackX, kPanel, PanelAny};
const Bf16Kernels kAvx512Dp = {"avx512-bf16", kBlock, PackedXBytes, PackX, kPanel, PanelDpAny};

}  // namespace

const Bf16Kernels* ActiveBf16Kernels() {
  switch (ActiveCpuIsa()) {
    case CpuIsa::kAmx: return &kAmx;
    case CpuIsa::kAvx512Bf16: return &kAvx512Dp;
    default: return nullptr;
  }
}

}  // namespace llmhost::cpu

#else  // not x86-64

namespace llmhost::cpu {
const Bf16Kernels* ActiveBf16Kernels() { return nullptr; }
}  // namespace llmhost::cpu

#endif
