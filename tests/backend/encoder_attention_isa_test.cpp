// The CPU encoder attention's vector bodies (AVX2 tiles, AVX-512 tiles) each
// against the plain loops, on every instruction set this CPU runs: head
// sizes that are and are not multiples of the tiles' widths, lengths around
// the 64-row work items, relative positions; and each sequence alone is
// bit for bit its rows in a batch.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/ops_encoder.h"

namespace llmhost::cpu::encoder_attention_isa_test {
namespace {

double RelError(const std::vector<float>& got, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (static_cast<double>(got[i]) - ref[i]) * (static_cast<double>(got[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

TEST(EncoderAttentionIsa, EveryVectorBodyMatchesThePlainLoops) {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512Bf16}) {
    if (static_cast<int>(BestCpuIsa()) >= static_cast<int>(isa)) isas.push_back(isa);
  }
  if (isas.empty()) GTEST_SKIP() << "no AVX2 here";
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  ThreadPool pool(2);
  int cases = 0;
  for (int64_t d : {8, 20, 32, 48, 64}) {
    for (bool relative : {false, true}) {
      EncoderAttentionParams p;
      p.n_heads = 3;
      p.head_dim = d;
      p.qkv_stride = 3 * p.n_heads * d;  // fused q | k | v rows
      p.out_stride = p.n_heads * d + 4;
      p.scale = 1.0f / std::sqrt(static_cast<float>(d));
      std::vector<EncoderSeq> seqs;
      for (int64_t len : {1, 13, 64, 65, 150}) {
        seqs.push_back({p.n_rows, len});
        p.n_rows += len;
        p.max_len = std::max(p.max_len, len);
      }
      std::vector<float> qkv(static_cast<size_t>(p.n_rows * p.qkv_stride)), table;
      for (float& x : qkv) x = u(rng);
      if (relative) {
        p.max_distance = p.max_len + 2;
        p.relative_keys = d % 16 == 0;
        table.resize(static_cast<size_t>((2 * p.max_distance - 1) * d));
        for (float& x : table) x = u(rng);
        p.relative = table.data();
      }
      const float *q = qkv.data(), *k = q + p.n_heads * d, *v = k + p.n_heads * d;
      const size_t out_n = static_cast<size_t>(p.n_rows * p.out_stride);
      std::vector<float> ref(out_n, 0.0f);
      EncoderAttention(q, k, v, seqs.data(), static_cast<int64_t>(seqs.size()), p, ref.data(), false, &pool);
      for (CpuIsa isa : isas) {
        SCOPED_TRACE(std::string(CpuIsaName(isa)) + " head_dim " + std::to_string(d) + (relative ? " relative" : ""));
        SetActiveCpuIsaForTesting(isa);
        std::vector<float> got(out_n, 0.0f), alone(out_n, 0.0f);
        EncoderAttention(q, k, v, seqs.data(), static_cast<int64_t>(seqs.size()), p, got.data(), true, &pool);
        for (const EncoderSeq& s : seqs) {
          EncoderAttentionParams one = p;
          one.n_rows = one.max_len = s.len;
          EncoderAttention(q, k, v, &s, 1, one, alone.data(), true, nullptr);
        }
        EXPECT_LE(RelError(got, ref), 1e-5);
        EXPECT_EQ(got, alone) << "a sequence alone and in the batch";
        ++cases;
      }
    }
  }
  SetActiveCpuIsaForTesting(BestCpuIsa());
  EXPECT_EQ(cases, 10 * static_cast<int>(isas.size()));
}

}  // namespace
}  // namespace llmhost::cpu::encoder_attention_isa_test
