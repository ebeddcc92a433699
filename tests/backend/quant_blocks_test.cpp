// Dequantization of hand-built blocks: each test packs chosen integer codes
// and scales into the stored layout with an encoder written here from the
// format description (independent of the decoder), then checks every value
// of DequantizeRows (and of the scalar reference decoder) against the
// format's formula. The SIMD decoders must give the scalar values bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/quant_formats.h"
#include "quant_test_util.h"

namespace llmhost::quant_blocks_test {
namespace {

using testing::OwnedWeight;

// Runs DequantizeRows on every kernel family this CPU has and the scalar
// reference; all must equal `expect` exactly.
void ExpectDequant(const WeightMatrix& w, const std::vector<float>& expect) {
  ASSERT_TRUE(CheckWeight(w).ok()) << CheckWeight(w).ToString();
  ASSERT_EQ(static_cast<int64_t>(expect.size()), w.rows * w.cols);
  std::vector<float> got(expect.size());
  for (int64_t r = 0; r < w.rows; ++r) {
    quant::DequantizeRangeScalar(w, r, 0, w.cols, got.data() + r * w.cols);
  }
  for (size_t i = 0; i < expect.size(); ++i) {
    ASSERT_EQ(got[i], expect[i]) << "scalar, element " << i;
  }
  for (CpuIsa isa : {CpuIsa::kScalar, BestCpuIsa()}) {
    SetActiveCpuIsaForTesting(isa);
    std::fill(got.begin(), got.end(), -12345.0f);
    DequantizeRows(w, 0, w.rows, got.data());
    for (size_t i = 0; i < expect.size(); ++i) {
      ASSERT_EQ(got[i], expect[i]) << CpuIsaName(isa) << ", element " << i;
    }
  }
  SetActiveCpuIsaForTesting(BestCpuIsa());
}

float HalfRound(float v) { return F16ToF32(F32ToF16(v)); }

class BlockBuilder {
 public:
  explicit BlockBuilder(GgmlType t) {
    w_.w.format = WeightFormat::kGgml;
    w_.w.ggml_type = t;
    w_.w.rows = 1;
  }
  // Appends one block of `bytes` holding `values`.
  void Add(const std::vector<uint8_t>& bytes, const std::vector<float>& values) {
    w_.data.insert(w_.data.end(), bytes.begin(), bytes.end());
    expect_.insert(expect_.end(), values.begin(), values.end());
  }
  void Check() {
    w_.w.cols = static_cast<int64_t>(expect_.size());
    w_.Bind();
    ExpectDequant(w_.w, expect_);
  }

 private:
  OwnedWeight w_;
  std::vector<float> expect_;
};

void PutHalf(std::vector<uint8_t>& b, size_t off, float v) {
  const uint16_t h = F32ToF16(v);
  std::memcpy(b.data() + off, &h, 2);
}

TEST(QuantBlocks, Q8_0) {
  std::mt19937 rng(1);
  BlockBuilder bb(GgmlType::kQ8_0);
  for (int blk = 0; blk < 3; ++blk) {
    std::vector<uint8_t> b(34);
    const float d = HalfRound(0.01f * (blk + 1));
    PutHalf(b, 0, d);
    std::vector<float> v(32);
    for (int j = 0; j < 32; ++j) {
      const int q = static_cast<int>(rng() % 256) - 128;
      b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
      v[j] = static_cast<float>(q) * d;
    }
    bb.Add(b, v);
  }
  bb.Check();
}

// Q4_0/Q4_1/Q5_0/Q5_1: codes q[32]; value j < 16 in the low nibble of byte j,
// value j + 16 in its high nibble; Q5 fifth bits in a 32-bit word, bit j.
std::vector<uint8_t> PackNibbles(const int* q) {
  std::vector<uint8_t> qs(16);
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
  return qs;
}
uint32_t PackFifthBits(const int* q) {
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  return qh;
}

TEST(QuantBlocks, Q4_0AndQ4_1) {
  std::mt19937 rng(2);
  BlockBuilder b0(GgmlType::kQ4_0), b1(GgmlType::kQ4_1);
  for (int blk = 0; blk < 3; ++blk) {
    int q[32];
    for (int& v : q) v = static_cast<int>(rng() % 16);
    const float d = HalfRound(0.037f * (blk + 1)), m = HalfRound(-0.25f * blk - 0.1f);
    const std::vector<uint8_t> qs = PackNibbles(q);
    std::vector<uint8_t> x0(18), x1(20);
    PutHalf(x0, 0, d);
    std::copy(qs.begin(), qs.end(), x0.begin() + 2);
    PutHalf(x1, 0, d);
    PutHalf(x1, 2, m);
    std::copy(qs.begin(), qs.end(), x1.begin() + 4);
    std::vector<float> v0(32), v1(32);
    for (int j = 0; j < 32; ++j) {
      v0[j] = static_cast<float>(q[j] - 8) * d;
      v1[j] = static_cast<float>(q[j]) * d + m;
    }
    b0.Add(x0, v0);
    b1.Add(x1, v1);
  }
  b0.Check();
  b1.Check();
}

TEST(QuantBlocks, Q5_0AndQ5_1) {
  std::mt19937 rng(3);
  BlockBuilder b0(GgmlType::kQ5_0), b1(GgmlType::kQ5_1);
  for (int blk = 0; blk < 3; ++blk) {
    int q[32];
    for (int& v : q) v = static_cast<int>(rng() % 32);
    q[0] = 31;  // the extremes
    q[31] = 0;
    q[16] = 16;
    const float d = HalfRound(0.021f * (blk + 1)), m = HalfRound(0.3f - 0.2f * blk);
    const std::vector<uint8_t> qs = PackNibbles(q);
    const uint32_t qh = PackFifthBits(q);
    std::vector<uint8_t> x0(22), x1(24);
    PutHalf(x0, 0, d);
    std::memcpy(x0.data() + 2, &qh, 4);
    std::copy(qs.begin(), qs.end(), x0.begin() + 6);
    PutHalf(x1, 0, d);
    PutHalf(x1, 2, m);
    std::memcpy(x1.data() + 4, &qh, 4);
    std::copy(qs.begin(), qs.end(), x1.begin() + 8);
    std::vector<float> v0(32), v1(32);
    for (int j = 0; j < 32; ++j) {
      v0[j] = static_cast<float>(q[j] - 16) * d;
      v1[j] = static_cast<float>(q[j]) * d + m;
    }
    b0.Add(x0, v0);
    b1.Add(x1, v1);
  }
  b0.Check();
  b1.Check();
}

// K-quant 6-bit scales/mins, packed as ggml's make_qkx* quantizers store them:
// j < 4: low 6 bits of bytes j (scale) and j+4 (min); j >= 4: low nibbles
// in byte j+4 (scale low, min high), top 2 bits in the top of bytes j-4/j.
std::vector<uint8_t> PackScalesK(const int* sc, const int* mn) {
  std::vector<uint8_t> s(12, 0);
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
  return s;
}

void KQuantCase(bool five_bits, uint32_t seed) {
  std::mt19937 rng(seed);
  BlockBuilder bb(five_bits ? GgmlType::kQ5_K : GgmlType::kQ4_K);
  for (int blk = 0; blk < 2; ++blk) {
    int sc[8], mn[8], q[256];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<int>(rng() % 64);
      mn[j] = static_cast<int>(rng() % 64);
    }
    sc[7] = 63;  // every bit of the packing
    mn[6] = 63;
    for (int& v : q) v = static_cast<int>(rng() % (five_bits ? 32 : 16));
    const float d = HalfRound(0.0013f * (blk + 1)), dmin = HalfRound(0.0021f);
    std::vector<uint8_t> b(five_bits ? 176 : 144, 0);
    PutHalf(b, 0, d);
    PutHalf(b, 2, dmin);
    const std::vector<uint8_t> s = PackScalesK(sc, mn);
    std::copy(s.begin(), s.end(), b.begin() + 4);
    uint8_t* qh = five_bits ? b.data() + 16 : nullptr;
    uint8_t* qs = b.data() + (five_bits ? 48 : 16);
    std::vector<float> v(256);
    for (int j = 0; j < 8; ++j) {  // sub-block j: nibble (j % 2) of bytes 32*(j/2) + l
      for (int l = 0; l < 32; ++l) {
        const int code = q[32 * j + l];
        qs[32 * (j / 2) + l] |= static_cast<uint8_t>((code & 15) << (4 * (j % 2)));
        if (qh) qh[l] |= static_cast<uint8_t>(((code >> 4) & 1) << j);
        const float scale = d * static_cast<float>(sc[j]);
        const float minv = dmin * static_cast<float>(mn[j]);
        v[32 * j + l] = scale * static_cast<float>(code) - minv;
      }
    }
    bb.Add(b, v);
  }
  bb.Check();
}

TEST(QuantBlocks, Q4_K) { KQuantCase(false, 4); }
TEST(QuantBlocks, Q5_K) { KQuantCase(true, 5); }

TEST(QuantBlocks, Q6_K) {
  std::mt19937 rng(6);
  BlockBuilder bb(GgmlType::kQ6_K);
  for (int blk = 0; blk < 2; ++blk) {
    int q[256], sc[16];
    for (int& v : q) v = static_cast<int>(rng() % 64);
    for (int& v : sc) v = static_cast<int>(rng() % 256) - 128;
    const float d = HalfRound(0.00071f * (blk + 1));
    std::vector<uint8_t> b(210, 0);
    // Value i: half h = i / 128, r = i % 128, quarter k = r / 32, l = r % 32.
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, k = (i % 128) / 32, l = i % 32;
      uint8_t& low = b[64 * h + l + 32 * (k % 2)];
      low |= static_cast<uint8_t>((q[i] & 15) << (k >= 2 ? 4 : 0));
      b[128 + 32 * h + l] |= static_cast<uint8_t>((q[i] >> 4) << (2 * k));
    }
    for (int s = 0; s < 16; ++s) b[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(sc[s]));
    PutHalf(b, 208, d);
    std::vector<float> v(256);
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, k = (i % 128) / 32, l = i % 32;
      const float scale = d * static_cast<float>(sc[8 * h + l / 16 + 2 * k]);
      v[i] = scale * static_cast<float>(q[i] - 32);
    }
    bb.Add(b, v);
  }
  bb.Check();
}

TEST(QuantBlocks, Q8_K) {
  std::mt19937 rng(7);
  BlockBuilder bb(GgmlType::kQ8_K);
  std::vector<uint8_t> b(292, 0);
  const float d = 0.0123f;
  std::memcpy(b.data(), &d, 4);
  std::vector<float> v(256);
  for (int i = 0; i < 256; ++i) {
    const int q = static_cast<int>(rng() % 256) - 128;
    b[4 + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
    v[i] = d * static_cast<float>(q);
  }
  bb.Add(b, v);
  bb.Check();
}

// MLX: codes packed as one little-endian bit stream per row, written here bit
// by bit; w = fl(fl(scale * q) + bias).
void MlxCase(int bits, int group, DType sd, uint32_t seed) {
  SCOPED_TRACE("bits " + std::to_string(bits) + " group " + std::to_string(group) + " " +
               DTypeName(sd));
  std::mt19937 rng(seed);
  const int64_t rows = 3, cols = 2 * group;
  OwnedWeight ow;
  ow.w.format = WeightFormat::kMlxAffine;
  ow.w.rows = rows;
  ow.w.cols = cols;
  ow.w.bits = bits;
  ow.w.group_size = group;
  ow.w.scale_dtype = sd;
  ow.data.assign(rows * cols * bits / 8, 0);
  const int64_t groups = rows * cols / group;
  ow.scales.assign(groups * DTypeSize(sd), 0);
  ow.biases.assign(groups * DTypeSize(sd), 0);
  std::vector<float> scale(groups), bias(groups);
  for (int64_t g = 0; g < groups; ++g) {
    scale[g] = testing::PutParam(ow.scales, g, sd, 0.013f * static_cast<float>(g + 1));
    bias[g] = testing::PutParam(ow.biases, g, sd, -0.37f + 0.05f * static_cast<float>(g));
  }
  std::vector<float> expect(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const uint32_t q = rng() % (1u << bits);
      const int64_t start = (r * cols + c) * bits;  // rows are contiguous bit streams
      for (int b = 0; b < bits; ++b) {
        if (q >> b & 1) ow.data[(start + b) / 8] |= static_cast<uint8_t>(1u << ((start + b) % 8));
      }
      const int64_t g = (r * cols + c) / group;
      const float prod = scale[g] * static_cast<float>(q);
      expect[r * cols + c] = prod + bias[g];
    }
  }
  ow.Bind();
  ExpectDequant(ow.w, expect);
}

TEST(QuantBlocks, MlxEveryWidthGroupAndScaleType) {
  uint32_t seed = 10;
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (int group : {32, 64, 128}) {
      for (DType sd : {DType::kBF16, DType::kF16, DType::kF32}) MlxCase(bits, group, sd, seed++);
    }
  }
}

// MLX 4-bit in words: "value j of a uint32 word in its j-th lowest 4 bits".
TEST(QuantBlocks, Mlx4BitWordLayout) {
  OwnedWeight ow;
  ow.w.format = WeightFormat::kMlxAffine;
  ow.w.rows = 1;
  ow.w.cols = 32;
  ow.w.bits = 4;
  ow.w.group_size = 32;
  std::vector<uint32_t> words = {0x76543210u, 0xFEDCBA98u, 0x0000000Fu, 0xF0000000u};
  ow.data.resize(16);
  std::memcpy(ow.data.data(), words.data(), 16);
  ow.scales.resize(2);
  ow.biases.resize(2);
  testing::PutParam(ow.scales, 0, DType::kBF16, 1.0f);
  testing::PutParam(ow.biases, 0, DType::kBF16, 0.0f);
  ow.Bind();
  std::vector<float> expect(32, 0.0f);
  for (int j = 0; j < 16; ++j) expect[j] = static_cast<float>(j);
  expect[16] = 15;
  expect[31] = 15;
  ExpectDequant(ow.w, expect);
}

// SIMD decoders against the scalar decoder on random bytes, every format, and
// on ranges that start and end inside rows (as the matmul's column chunks do).
TEST(QuantBlocks, SimdDecodersMatchScalarOnRandomData) {
  if (BestCpuIsa() == CpuIsa::kScalar) GTEST_SKIP() << "no AVX2 on this CPU";
  for (const testing::FormatSpec& spec : testing::AllFormats()) {
    SCOPED_TRACE(spec.Name());
    const int64_t mult = spec.ColMultiple();
    const int64_t cols = mult == 1 ? 301 : mult * (mult >= 256 ? 3 : 9);
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, 5, cols, 99, &ow);
    const cpu::DequantRangeFn fn = cpu::SelectDequantAvx2(ow.w);
    ASSERT_NE(fn, nullptr);
    const int64_t align = quant::DequantAlignment(ow.w);
    std::vector<float> a(cols), b(cols);
    for (int64_t r = 0; r < 5; ++r) {
      for (int64_t c0 : {int64_t{0}, align, 2 * align}) {
        for (int64_t c1 : {cols, cols - align}) {
          if (c1 <= c0) continue;
          quant::DequantizeRangeScalar(ow.w, r, c0, c1, a.data());
          fn(ow.w, r, c0, c1, b.data());
          for (int64_t i = 0; i < c1 - c0; ++i) {
            ASSERT_EQ(std::memcmp(&a[i], &b[i], 4), 0)
                << "row " << r << " col " << c0 + i << ": " << a[i] << " vs " << b[i];
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace llmhost::quant_blocks_test
