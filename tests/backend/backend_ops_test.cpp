// Every op of the Backend interface, run through Backend* on every backend
// this build has, against the CPU reference path (CpuBackend at
// Precision::kReference), over fuzzed shapes: batch sizes, GQA groups,
// scrambled block tables, sliding windows, soft-capping, KV dtypes, weight
// formats, strides. Inputs travel as a model's do: Allocate, CopyToDevice,
// the op, Synchronize, CopyToHost. A new backend (CUDA) joins by adding
// itself to Candidates(); the tolerances are per op and per precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/quant_formats.h"
#include "backend/cpu/vec_math.h"
#include "backend/device.h"
#include "formats/dtype.h"
#include "device_buffers.h"
#include "quant_test_util.h"
#include "util/thread_pool.h"

namespace llmhost::backend_ops_test {
namespace {

using testing::Device;
using testing::FormatSpec;

struct Candidate {
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
};

ThreadPool& Pool() {
  static ThreadPool pool(3);
  return pool;
}

std::vector<Candidate> Candidates() {
  std::vector<Candidate> c;
  for (Precision p : {Precision::kFast, Precision::kFastInt8, Precision::kFastBf16, Precision::kAuto}) {
    const char* n = p == Precision::kFast       ? "cpu_fast"
                    : p == Precision::kFastInt8 ? "cpu_fast_int8"
                    : p == Precision::kFastBf16 ? "cpu_fast_bf16"
                                                : "cpu_auto";
    c.push_back({n, [p] { return std::make_unique<CpuBackend>(&Pool(), p); }});
  }
  // The reference path with threads: the pool's split must not change it.
  c.push_back({"cpu_reference_threads", [] { return std::make_unique<CpuBackend>(&Pool(), Precision::kReference); }});
  // The GPU at `serve`'s precision (prompt rows' MatMuls on the tensor cores
  // with x rounded to bf16, the rest f32) and at f32 (every op as the reference computes
  // it). Skipped where there is no GPU.
  if (CudaBuilt()) {
    for (Precision p : {Precision::kAuto, Precision::kReference}) {
      c.push_back({p == Precision::kAuto ? "cuda" : "cuda_f32", [p]() -> std::unique_ptr<Backend> {
                     if (CudaDeviceCount() == 0) return nullptr;
                     DeviceSpec d;
                     d.kind = DeviceKind::kCuda;
                     auto b = MakeBackend(d, p, nullptr);
                     return b.ok() ? std::move(*b) : nullptr;
                   }});
    }
  }
  return c;
}


std::vector<float> Random(int64_t n, std::mt19937& rng, float scale = 1) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

int64_t Uniform(std::mt19937& rng, int64_t lo, int64_t hi) {  // [lo, hi]
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Worst ‖a - b‖ / ‖b‖ over rows of `cols` values.
double WorstRowError(const std::vector<float>& got, const std::vector<float>& ref, int64_t cols) {
  double worst = 0;
  for (size_t r = 0; r * cols < ref.size(); ++r) {
    worst = std::max(worst, testing::RelErr(&got[r * cols], &ref[r * cols], cols));
  }
  return worst;
}

bool Quantized(const FormatSpec& s) {
  return s.format == WeightFormat::kMlxAffine ||
         (s.format == WeightFormat::kGgml && s.ggml_type != GgmlType::kF32 && s.ggml_type != GgmlType::kF16 &&
          s.ggml_type != GgmlType::kBF16);
}

constexpr int kCases = 12;  // fuzzed shapes per op
constexpr double kF32Tol = 1e-4;       // f32 paths: summation order, polynomial exp
constexpr double kInt8Tol = 1.5e-2;    // int8 activations (matmul_int8_test.cpp)
constexpr double kBf16Tol = 3e-2;      // bf16 tiles (matmul_amx_test.cpp)
// GPU prompt rows at kAuto: x rounded to bf16 once (weights too where they
// are widened), f32 sums: ~1.1e-3 a row for each rounding on random data.
constexpr double kCudaBf16Tol = 1e-2;
constexpr double kCudaPromptAttentionTol = 1.5e-2;  // measured <= 3.6e-3 on an H200

class BackendOpsTest : public ::testing::TestWithParam<Candidate> {
 protected:
  void SetUp() override {
    ref_ = std::make_unique<CpuBackend>(nullptr, Precision::kReference);
    got_ = GetParam().make();
    if (!got_) GTEST_SKIP() << GetParam().name << ": no such device here";
  }
  // The tolerance of a MatMul of `spec` rows of `kind` on the candidate.
  double MatMulTol(const FormatSpec& spec, RowKind kind) const {
    const Precision p = got_->precision();
    if (got_->kind() == DeviceKind::kCuda) {
      // MLX 4-bit generated rows at kAuto: int8 activations (cuda/matmul_int8.cuh).
      const bool int8 = spec.format == WeightFormat::kMlxAffine && spec.bits == 4 &&
                        (p == Precision::kFastInt8 || (p == Precision::kAuto && kind == RowKind::kGenerated));
      if (int8) return kInt8Tol;
      return got_->RowKindMatters() && kind == RowKind::kPrompt ? kCudaBf16Tol : kF32Tol;
    }
    const bool amx = HasBf16Matmul(ActiveCpuIsa());
    if (p == Precision::kFastBf16 && amx) return kBf16Tol;
    if (p == Precision::kAuto && kind == RowKind::kPrompt && amx) return kBf16Tol;
    if ((p == Precision::kFastInt8 || p == Precision::kAuto) && Quantized(spec)) return kInt8Tol;
    return kF32Tol;
  }
  std::unique_ptr<Backend> ref_, got_;
};

TEST_P(BackendOpsTest, MatMul) {
  const FormatSpec specs[] = {testing::Plain(WeightFormat::kF32),  testing::Plain(WeightFormat::kF16),
                              testing::Plain(WeightFormat::kBF16), testing::Mlx(4, 64),
                              testing::Mlx(8, 64),                 testing::Mlx(3, 128, DType::kF16),
                              testing::Ggml(GgmlType::kQ8_0),      testing::Ggml(GgmlType::kQ4_0),
                              testing::Ggml(GgmlType::kQ4_K),      testing::Ggml(GgmlType::kQ6_K),
                              testing::Fp8(32),                    testing::Fp8(128)};
  std::mt19937 rng(1);
  for (const FormatSpec& spec : specs) {
    for (int c = 0; c < kCases / 2; ++c) {
      // Case 1 spans several of a GPU kernel's tiles (64 tokens x 128 rows).
      const int64_t rows = c == 1 ? Uniform(rng, 129, 300) : Uniform(rng, 16, 80);
      const int64_t cols = spec.ColMultiple() * Uniform(rng, 1, 512 / spec.ColMultiple() + 1);
      const int64_t n = c == 0 ? 1 : c == 1 ? Uniform(rng, 65, 150) : Uniform(rng, 1, 40);
      const RowKind kind = Uniform(rng, 0, 1) ? RowKind::kPrompt : RowKind::kGenerated;
      SCOPED_TRACE(spec.Name() + " " + std::to_string(rows) + "x" + std::to_string(cols) + " n " + std::to_string(n));
      testing::OwnedWeight ow;
      testing::MakeRandomWeight(spec, rows, cols, static_cast<uint32_t>(rng()), &ow);
      // Case 2: the columns in an order of their own (act-order GPTQ).
      std::vector<int32_t> order(static_cast<size_t>(cols));
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      if (c == 2) ow.w.col_order = order.data();
      const std::vector<float> x = Random(n * cols, rng);
      std::vector<float> outs[2];
      Backend* bs[2] = {ref_.get(), got_.get()};
      for (int i = 0; i < 2; ++i) {
        auto w = bs[i]->PrepareWeight(ow.w);
        ASSERT_TRUE(w.ok()) << w.status().ToString();
        Device d(*bs[i]);
        const float* dx = d.Put(x);
        float* dy = d.Alloc<float>(n * rows);
        bs[i]->MatMul(*w, dx, n, dy, kind);
        outs[i] = d.Get(dy, n * rows);
        bs[i]->ReleaseWeight(*w);
      }
      EXPECT_LE(WorstRowError(outs[1], outs[0], rows), MatMulTol(spec, kind));
    }
  }
}

TEST_P(BackendOpsTest, RouterMatMulAndEmbedding) {
  std::mt19937 rng(2);
  for (const FormatSpec& spec : {testing::Plain(WeightFormat::kF32), testing::Plain(WeightFormat::kBF16),
                                 testing::Mlx(4, 64), testing::Ggml(GgmlType::kQ8_0), testing::Fp8(32)}) {
    for (int c = 0; c < kCases / 2; ++c) {
      const int64_t rows = Uniform(rng, 8, 64), cols = spec.ColMultiple() * Uniform(rng, 1, 256 / spec.ColMultiple() + 1);
      const int64_t n = Uniform(rng, 1, 24);
      SCOPED_TRACE(spec.Name() + " " + std::to_string(rows) + "x" + std::to_string(cols) + " n " + std::to_string(n));
      testing::OwnedWeight ow;
      testing::MakeRandomWeight(spec, rows, cols, static_cast<uint32_t>(rng()), &ow);
      const std::vector<float> x = Random(n * cols, rng);
      std::vector<int32_t> ids(static_cast<size_t>(n));
      for (int32_t& id : ids) id = static_cast<int32_t>(Uniform(rng, 0, rows - 1));
      // A vocabulary-parallel slice: ids below first_id or past its rows give zeros.
      const int64_t first_id = Uniform(rng, 0, rows / 2);
      std::vector<int32_t> wide(ids);
      for (int32_t& id : wide) id = static_cast<int32_t>(id + Uniform(rng, 0, 1) * rows);
      std::vector<float> router[2], embed[2], sliced[2];
      Backend* bs[2] = {ref_.get(), got_.get()};
      for (int i = 0; i < 2; ++i) {
        auto w = bs[i]->PrepareWeight(ow.w);
        ASSERT_TRUE(w.ok());
        Device d(*bs[i]);
        float* dy = d.Alloc<float>(n * rows);
        bs[i]->RouterMatMul(*w, d.Put(x), n, dy);
        router[i] = d.Get(dy, n * rows);
        float* de = d.Alloc<float>(n * cols);
        bs[i]->Embedding(*w, d.Put(ids), n, 0.5f, de);
        embed[i] = d.Get(de, n * cols);
        float* ds = d.Alloc<float>(n * cols);
        bs[i]->Embedding(*w, d.Put(wide), n, 0.5f, ds, first_id);
        sliced[i] = d.Get(ds, n * cols);
        bs[i]->ReleaseWeight(*w);
      }
      // Router logits never use rounded activations, whatever the precision.
      EXPECT_LE(WorstRowError(router[1], router[0], rows), kF32Tol);
      EXPECT_LE(WorstRowError(embed[1], embed[0], cols), 1e-6);
      EXPECT_LE(WorstRowError(sliced[1], sliced[0], cols), 1e-6);
      // The reference itself: a kept id gives its row of the slice, any other id zeros.
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = wide[static_cast<size_t>(i)] - first_id;
        const bool kept = r >= 0 && r < rows;
        std::vector<float> want(static_cast<size_t>(cols), 0.0f);
        if (kept) quant::DequantizeRangeScalar(ow.w, r, 0, cols, want.data());
        for (int64_t c2 = 0; c2 < cols; ++c2) {
          ASSERT_EQ(sliced[0][static_cast<size_t>(i * cols + c2)], kept ? want[static_cast<size_t>(c2)] * 0.5f : 0.0f)
              << "token " << i << " col " << c2;
        }
      }
    }
  }
}

TEST_P(BackendOpsTest, RmsNormRopeAndElementwise) {
  std::mt19937 rng(3);
  for (int c = 0; c < kCases; ++c) {
    const int64_t rows = Uniform(rng, 1, 40), heads = Uniform(rng, 1, 6), head_dim = 2 * Uniform(rng, 4, 64);
    const int64_t dim = heads * head_dim, stride = dim + Uniform(rng, 0, 3) * 8;
    const bool add_one = c % 2;
    const float eps = 1e-6f;
    RopeParams rp;
    rp.n_heads = heads;
    rp.head_dim = head_dim;
    rp.rot_dim = 2 * Uniform(rng, 1, head_dim / 2);
    rp.row_stride = stride;
    rp.attention_scaling = c % 3 == 0 ? 1.0f : 0.9f;
    rp.pairing = c % 2 ? RopePairing::kInterleaved : RopePairing::kHalfSplit;
    std::vector<int32_t> pos(static_cast<size_t>(rows));
    for (int32_t& p : pos) p = static_cast<int32_t>(Uniform(rng, 0, 40000));
    std::vector<float> inv_freq(static_cast<size_t>(rp.rot_dim / 2));
    for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / rp.rot_dim);
    const std::vector<float> x = Random(rows * stride, rng, 3), w = Random(dim, rng), bias = Random(dim, rng);
    const std::vector<float> a = Random(rows * dim, rng, 4), b = Random(rows * dim, rng, 4);
    SCOPED_TRACE("rows " + std::to_string(rows) + " dim " + std::to_string(dim) + " stride " + std::to_string(stride));
    std::vector<float> norm[2], rope[2], sum[2], biased[2], scaled[2], capped[2], filled[2], silu[2], gelu[2];
    std::vector<float> heads_norm[2], per_token_norm[2], tables_rope[2], per_run_rope[2];
    // Two tables; tokens in runs of one table (as sequences are), ordered so
    // that runs alternate.
    const std::vector<float> two_tables = [&] {
      std::vector<float> t = inv_freq;
      for (float f : inv_freq) t.push_back(f * 0.5f);
      return t;
    }();
    std::vector<int32_t> table_of(static_cast<size_t>(rows));
    for (int64_t t = 0; t < rows; ++t) table_of[t] = static_cast<int32_t>((t / 3) % 2);
    Backend* bs[2] = {ref_.get(), got_.get()};
    for (int i = 0; i < 2; ++i) {
      Device d(*bs[i]);
      float* dn = d.Alloc<float>(rows * stride);
      bs[i]->RmsNorm(d.Put(x), rows, dim, stride, d.Put(w), eps, add_one, dn);
      norm[i] = d.Get(dn, rows * stride);
      float* dr = d.Put(x);
      const int32_t* dpos = d.Put(pos);
      bs[i]->Rope(dr, rows, dpos, d.Put(inv_freq), rp);
      rope[i] = d.Get(dr, rows * stride);
      // RmsNormHeads = RmsNorm of each token's heads; RopeTables = Rope per run.
      const float* dhw = d.Put(std::vector<float>(w.begin(), w.begin() + head_dim));
      float* dh = d.Put(x);
      bs[i]->RmsNormHeads(dh, rows, heads, head_dim, stride, dhw, eps, add_one);
      heads_norm[i] = d.Get(dh, rows * stride);
      float* dt = d.Put(x);
      for (int64_t t = 0; t < rows; ++t) {
        bs[i]->RmsNorm(dt + t * stride, heads, head_dim, head_dim, dhw, eps, add_one, dt + t * stride);
      }
      per_token_norm[i] = d.Get(dt, rows * stride);
      const float* dtables = d.Put(two_tables);
      float* dq = d.Put(x);
      bs[i]->RopeTables(dq, rows, dpos, dtables, rp.rot_dim / 2, d.Put(table_of), rp);
      tables_rope[i] = d.Get(dq, rows * stride);
      float* dp = d.Put(x);
      for (int64_t t = 0; t < rows; ++t) {
        bs[i]->Rope(dp + t * stride, 1, dpos + t, dtables + table_of[t] * (rp.rot_dim / 2), rp);
      }
      per_run_rope[i] = d.Get(dp, rows * stride);
      float* da = d.Put(a);
      const float* db = d.Put(b);
      float* ds = d.Alloc<float>(rows * dim);
      bs[i]->Add(da, db, rows * dim, ds);
      sum[i] = d.Get(ds, rows * dim);
      bs[i]->AddBias(da, rows, dim, dim, d.Put(bias));
      biased[i] = d.Get(da, rows * dim);
      bs[i]->Scale(da, rows * dim, 0.37f);
      scaled[i] = d.Get(da, rows * dim);
      bs[i]->Softcap(da, rows * dim, 2.5f);
      capped[i] = d.Get(da, rows * dim);
      bs[i]->Fill(ds, rows * dim, 1.25f);
      filled[i] = d.Get(ds, rows * dim);
      // Gate and up as the two halves of fused rows; out with its own stride.
      const int64_t half = std::max<int64_t>(dim / 2, 1);
      float* dg = d.Alloc<float>(rows * (half + 1));
      bs[i]->GatedActivation(Activation::kSilu, db, dim, db + half, dim, rows, half, dg, half + 1);
      silu[i] = d.Get(dg, rows * (half + 1));
      bs[i]->GatedActivation(Activation::kGeluTanh, db, dim, db + half, dim, rows, half, dg, half + 1);
      gelu[i] = d.Get(dg, rows * (half + 1));
    }
    // The written columns only (padding between rows is not written).
    auto rows_of = [&](const std::vector<float>& v, int64_t row_stride = 0, int64_t cols = 0) {
      if (row_stride == 0) row_stride = stride, cols = dim;
      std::vector<float> out;
      for (int64_t r = 0; r < rows; ++r) {
        out.insert(out.end(), v.begin() + r * row_stride, v.begin() + r * row_stride + cols);
      }
      return out;
    };
    const int64_t half = std::max<int64_t>(dim / 2, 1);
    EXPECT_LE(WorstRowError(rows_of(norm[1]), rows_of(norm[0]), dim), 1e-5) << "RmsNorm";
    EXPECT_LE(WorstRowError(rope[1], rope[0], stride), 1e-5) << "Rope";
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(rows_of(heads_norm[i]), rows_of(per_token_norm[i])) << "RmsNormHeads, backend " << i;
      EXPECT_EQ(tables_rope[i], per_run_rope[i]) << "RopeTables, backend " << i;
    }
    EXPECT_LE(WorstRowError(rows_of(heads_norm[1]), rows_of(heads_norm[0]), dim), 1e-5) << "RmsNormHeads";
    EXPECT_LE(WorstRowError(tables_rope[1], tables_rope[0], stride), 1e-5) << "RopeTables";
    EXPECT_LE(WorstRowError(sum[1], sum[0], dim), 1e-7) << "Add";
    EXPECT_LE(WorstRowError(biased[1], biased[0], dim), 1e-7) << "AddBias";
    EXPECT_LE(WorstRowError(scaled[1], scaled[0], dim), 1e-7) << "Scale";
    EXPECT_LE(WorstRowError(capped[1], capped[0], dim), 1e-5) << "Softcap";
    EXPECT_EQ(filled[1], filled[0]) << "Fill";
    EXPECT_LE(WorstRowError(rows_of(silu[1], half + 1, half), rows_of(silu[0], half + 1, half), half), kF32Tol)
        << "silu";
    EXPECT_LE(WorstRowError(rows_of(gelu[1], half + 1, half), rows_of(gelu[0], half + 1, half), half), kF32Tol)
        << "gelu";
    // Gate and up in their own buffers, every stride a multiple of 4 (a GPU's
    // 16-byte path), in place as MoE runs it.
    const int64_t cols4 = 4 * Uniform(rng, 1, 40);
    const std::vector<float> g4 = Random(rows * cols4, rng, 4), u4 = Random(rows * cols4, rng, 4);
    std::vector<float> packed[2];
    for (int i = 0; i < 2; ++i) {
      Device d(*bs[i]);
      float* dg4 = d.Put(g4);
      bs[i]->GatedActivation(c % 2 ? Activation::kSilu : Activation::kGeluTanh, dg4, cols4, d.Put(u4), cols4, rows,
                             cols4, dg4, cols4);
      packed[i] = d.Get(dg4, rows * cols4);
    }
    EXPECT_LE(WorstRowError(packed[1], packed[0], cols4), kF32Tol) << "gated, 16-byte rows, in place";
  }
}

TEST_P(BackendOpsTest, MoeRoutingAndGatherRows) {
  std::mt19937 rng(4);
  for (int c = 0; c < kCases; ++c) {
    const int64_t rows = Uniform(rng, 1, 30), experts = Uniform(rng, 4, 64), k = Uniform(rng, 1, std::min<int64_t>(8, experts));
    const int64_t cols = Uniform(rng, 1, 200);
    const bool renorm = c % 2;
    const std::vector<float> logits = Random(rows * experts, rng, 4), src = Random(rows * cols, rng);
    std::vector<int32_t> perm(static_cast<size_t>(rows));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int32_t> ids[2];
    std::vector<float> wts[2], gathered[2];
    Backend* bs[2] = {ref_.get(), got_.get()};
    for (int i = 0; i < 2; ++i) {
      Device d(*bs[i]);
      int32_t* di = d.Alloc<int32_t>(rows * k);
      float* dw = d.Alloc<float>(rows * k);
      bs[i]->TopKRouting(d.Put(logits), rows, experts, k, renorm, di, dw);
      ids[i] = d.Get(di, rows * k);
      wts[i] = d.Get(dw, rows * k);
      const int32_t* dp = d.Put(perm);
      float* dg = d.Alloc<float>(rows * cols);
      bs[i]->GatherRows(d.Put(src), cols, dp, rows, dg);
      gathered[i] = d.Get(dg, rows * cols);
    }
    EXPECT_EQ(ids[1], ids[0]) << "TopKRouting ids";
    EXPECT_LE(WorstRowError(wts[1], wts[0], k), 1e-5) << "TopKRouting weights";
    EXPECT_EQ(gathered[1], gathered[0]) << "GatherRows";
  }
}

// What a sampled RowPick gives by its definition, in double precision: the
// weights exp((z - max) / T) of the cleaned row, the top_k largest (ties:
// lower id first), the shortest most likely prefix reaching top_p of their
// mass, min_p against the top weight, then the kept tokens walked (in id
// order; in likelihood order after top_k) to the one at u.
struct PickDefinition {
  std::vector<int32_t> better;  // the candidates, most likely first (top_k applied)
  std::vector<double> w;        // weight per id
  std::vector<int32_t> walk;    // the kept tokens in the draw's order
  double kept_mass = 0;

  PickDefinition(const std::vector<float>& z, const RowPick& p) {
    const int64_t n = static_cast<int64_t>(z.size());
    const float m = *std::max_element(z.begin(), z.end());
    w.resize(z.size());
    for (int64_t i = 0; i < n; ++i) {
      w[i] = z[i] == m ? 1.0 : std::exp((static_cast<double>(z[i]) - m) / p.temperature);
    }
    better.resize(z.size());
    std::iota(better.begin(), better.end(), 0);
    std::stable_sort(better.begin(), better.end(), [&](int32_t a, int32_t b) { return z[a] > z[b]; });
    if (p.top_k > 0 && p.top_k < n) better.resize(static_cast<size_t>(p.top_k));
  }
  // The candidates' mass from the most likely through better[j], as a
  // fraction of all of theirs.
  std::vector<double> Cumulative() const {
    std::vector<double> c;
    double sum = 0, total = 0;
    for (int32_t id : better) total += w[id];
    for (int32_t id : better) c.push_back((sum += w[id]) / total);
    return c;
  }
  void Keep(const RowPick& p, bool top_k) {
    std::vector<int32_t> kept;
    const std::vector<double> c = Cumulative();
    for (size_t j = 0; j < better.size(); ++j) {
      if (w[better[j]] >= p.min_p && w[better[j]] > 0) kept.push_back(better[j]);
      if (c[j] >= p.top_p) break;
    }
    if (!top_k) std::sort(kept.begin(), kept.end());
    walk = kept;
    kept_mass = 0;
    for (int32_t id : walk) kept_mass += w[id];
  }
};

// Every backend picks a row's token as cpu::RowDraw defines it. Greedy rows:
// the lowest index of the largest value, NaN as -inf and +inf as the largest
// float (ties, -0 and +0, nothing finite). Sampled rows (temperatures 0.3 to
// 2, top_k, top_p, min_p, ties, -inf and NaN entries, long rows and short):
// the definition's token, with u at the middle of that token's share and
// top_p / min_p midway between two of the candidates' values, so that the
// rounding of exponentials and sums cannot move the answer.
TEST_P(BackendOpsTest, PickRowsIsTheSamplersDraw) {
  std::mt19937 rng(6);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int c = 0; c < kCases; ++c) {
    const int64_t rows = Uniform(rng, 1, 40), cols = c % 3 == 0 ? Uniform(rng, 30000, 130000) : Uniform(rng, 1, 1500);
    std::vector<float> x = Random(rows * cols, rng, 4);
    std::vector<RowPick> picks(static_cast<size_t>(rows));
    std::vector<int32_t> expect(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      float* row = x.data() + r * cols;
      const int64_t a = Uniform(rng, 0, cols - 1), b = Uniform(rng, 0, cols - 1);
      switch (r % 9) {
        case 1: row[a] = row[b] = 9.0f; break;                            // a tie at the top
        case 2: row[a] = nan, row[b] = 9.0f; break;                       // NaN beside the largest
        case 3: row[a] = inf; break;                                      // +inf: the largest float
        case 4: std::fill(row, row + cols, -inf); row[a] = nan; break;    // nothing finite: id 0
        case 5: std::fill(row, row + cols, 0.0f); row[a] = -0.0f; break;  // zeros of both signs tie
        case 6: for (int64_t i = 0; i < cols; i += 3) row[i] = -inf; break;  // banned ids
        case 7: for (int64_t i = 0; i < cols; ++i) row[i] = std::round(row[i] * 2) / 2; break;  // many ties
        default: break;
      }
      std::vector<float> z(static_cast<size_t>(cols));
      cpu::SanitizeLogits(row, z.data(), cols);
      RowPick& p = picks[static_cast<size_t>(r)];
      const int kind = static_cast<int>((r + c) % 5);
      if (kind == 0 || r % 9 == 4) {  // greedy (and every row with nothing finite)
        p.temperature = r % 9 == 4 && kind != 0 ? 1.0 : 0.0;
        expect[static_cast<size_t>(r)] = static_cast<int32_t>(cpu::ArgMax(z.data(), cols));
        if (r % 9 == 4) expect[static_cast<size_t>(r)] = 0;
        continue;
      }
      p.temperature = 0.3 + 1.7 * unit(rng);
      if (kind == 2) p.top_k = static_cast<int32_t>(Uniform(rng, 1, r % 2 ? 40 : kMaxPickTopK));
      PickDefinition def(z, p);
      if (kind == 3 || kind == 2) {  // top_p midway between two candidates' cumulative masses
        const std::vector<double> cum = def.Cumulative();
        std::vector<size_t> cuts;
        for (size_t j = 0; j + 1 < cum.size(); ++j) {
          if (cum[j] - (j ? cum[j - 1] : 0.0) > 2e-5) cuts.push_back(j);  // rounding: ~3e-7 of the mass
        }
        if (!cuts.empty()) {
          const size_t j = cuts[static_cast<size_t>(Uniform(rng, 0, static_cast<int64_t>(cuts.size()) - 1))];
          p.top_p = ((j ? cum[j - 1] : 0.0) + cum[j]) / 2;
        }
      }
      if (kind == 4) {  // min_p midway between two distinct weights of the candidates
        std::vector<double> levels;
        for (int32_t id : def.better) levels.push_back(def.w[id]);
        std::sort(levels.rbegin(), levels.rend());
        levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
        std::vector<size_t> gaps;
        for (size_t j = 0; j + 1 < levels.size() && j < 64; ++j) {
          if (levels[j] - levels[j + 1] > 1e-3 * levels[j]) gaps.push_back(j);
        }
        if (!gaps.empty()) {
          const size_t j = gaps[static_cast<size_t>(Uniform(rng, 0, static_cast<int64_t>(gaps.size()) - 1))];
          p.min_p = (levels[j] + levels[j + 1]) / 2;
        }
      }
      def.Keep(p, p.top_k > 0 && p.top_k < cols);
      // u at the middle of a kept token's share: one above 2e-5, or the
      // largest (at least 1 / cols).
      std::vector<size_t> targets;
      size_t largest = 0;
      for (size_t j = 0; j < def.walk.size(); ++j) {
        if (def.w[def.walk[j]] > 2e-5 * def.kept_mass) targets.push_back(j);
        if (def.w[def.walk[j]] > def.w[def.walk[largest]]) largest = j;
      }
      ASSERT_FALSE(def.walk.empty());
      if (targets.empty()) targets.push_back(largest);
      const size_t t = targets[static_cast<size_t>(Uniform(rng, 0, static_cast<int64_t>(targets.size()) - 1))];
      double before = 0;
      for (size_t j = 0; j < t; ++j) before += def.w[def.walk[j]];
      p.u = (before + def.w[def.walk[t]] / 2) / def.kept_mass;
      expect[static_cast<size_t>(r)] = def.walk[t];
    }
    Backend* bs[2] = {ref_.get(), got_.get()};
    for (int i = 0; i < 2; ++i) {
      Device d(*bs[i]);
      int32_t* out = d.Alloc<int32_t>(rows);
      bs[i]->PickRows(d.Put(x), rows, cols, d.Put(picks), out);
      const std::vector<int32_t> got = d.Get(out, rows);
      for (int64_t r = 0; r < rows; ++r) {
        const RowPick& p = picks[static_cast<size_t>(r)];
        EXPECT_EQ(got[r], expect[r]) << "backend " << i << " case " << c << " row " << r << " of " << rows
                                     << ", cols " << cols << ": T " << p.temperature << " top_k " << p.top_k
                                     << " top_p " << p.top_p << " min_p " << p.min_p << " u " << p.u;
      }
    }
  }
}

// MoeFfn (dispatch where the routing lies) against the FFN of each token's
// experts composed from reference ops, token by token: mixed row kinds,
// skipped (out-of-range) ids, experts that get no token.
TEST_P(BackendOpsTest, MoeFfnMatchesEachTokensExpertsComposed) {
  std::mt19937 rng(5);
  for (const FormatSpec& spec : {testing::Plain(WeightFormat::kF32), testing::Plain(WeightFormat::kBF16),
                                 testing::Mlx(4, 64), testing::Ggml(GgmlType::kQ8_0)}) {
    for (int c = 0; c < kCases / 2; ++c) {
      const int64_t E = Uniform(rng, 2, 8), k = Uniform(rng, 1, std::min<int64_t>(4, E)), n = Uniform(rng, 1, 20);
      const int64_t H = spec.ColMultiple() * Uniform(rng, 1, 3), I = spec.ColMultiple() * Uniform(rng, 1, 3);
      SCOPED_TRACE(spec.Name() + " E " + std::to_string(E) + " k " + std::to_string(k) + " n " + std::to_string(n));
      std::vector<testing::OwnedWeight> owned(static_cast<size_t>(3 * E));
      for (int64_t e = 0; e < E; ++e) {
        testing::MakeRandomWeight(spec, I, H, static_cast<uint32_t>(rng()), &owned[3 * e]);
        testing::MakeRandomWeight(spec, I, H, static_cast<uint32_t>(rng()), &owned[3 * e + 1]);
        testing::MakeRandomWeight(spec, H, I, static_cast<uint32_t>(rng()), &owned[3 * e + 2]);
      }
      const std::vector<float> x = Random(n * H, rng);
      std::vector<int32_t> ids(static_cast<size_t>(n * k));
      std::vector<float> wts = Random(n * k, rng);
      std::vector<RowKind> kinds(static_cast<size_t>(n));
      for (int64_t t = 0; t < n; ++t) {
        std::vector<int32_t> perm(static_cast<size_t>(E));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int64_t j = 0; j < k; ++j) ids[t * k + j] = perm[j];
        if (Uniform(rng, 0, 9) == 0) ids[t * k] = static_cast<int32_t>(E);  // out of range: skipped
        kinds[t] = Uniform(rng, 0, 1) ? RowKind::kPrompt : RowKind::kGenerated;
      }
      // The reference: each token alone through its experts' reference ops.
      std::vector<float> want(static_cast<size_t>(n * H), 0.0f);
      {
        std::vector<WeightMatrix> w;
        for (auto& o : owned) w.push_back(*ref_->PrepareWeight(o.w));
        Device d(*ref_);
        float* g = d.Alloc<float>(I);
        float* u = d.Alloc<float>(I);
        float* y = d.Alloc<float>(H);
        float* xt = d.Alloc<float>(H);
        for (int64_t t = 0; t < n; ++t) {
          std::copy(x.begin() + t * H, x.begin() + (t + 1) * H, xt);
          for (int64_t j = 0; j < k; ++j) {
            const int32_t e = ids[t * k + j];
            if (e >= E) continue;
            ref_->MatMul(w[3 * e], xt, 1, g, RowKind::kPrompt);
            ref_->MatMul(w[3 * e + 1], xt, 1, u, RowKind::kPrompt);
            ref_->GatedActivation(Activation::kSilu, g, I, u, I, 1, I, g, I);
            ref_->MatMul(w[3 * e + 2], g, 1, y, RowKind::kPrompt);
            for (int64_t h = 0; h < H; ++h) want[t * H + h] += wts[t * k + j] * y[h];
          }
        }
        for (auto& m : w) ref_->ReleaseWeight(m);
      }
      std::vector<WeightMatrix> w;
      for (auto& o : owned) w.push_back(*got_->PrepareWeight(o.w));
      MoeExperts ex;
      ex.hidden = H;
      ex.inter = I;
      ex.activation = Activation::kSilu;
      for (int64_t e = 0; e < E; ++e) {
        ex.gate.push_back(&w[3 * e]);
        ex.up.push_back(&w[3 * e + 1]);
        ex.down.push_back(&w[3 * e + 2]);
      }
      Device d(*got_);
      MoeScratch sc;
      sc.x = d.Alloc<float>(n * H);
      sc.y = d.Alloc<float>(n * H);
      sc.gate = d.Alloc<float>(n * I);
      sc.up = d.Alloc<float>(n * I);
      sc.rows = d.Alloc<int32_t>(n * k);
      sc.scales = d.Alloc<float>(n * k);
      float* out = d.Put(std::vector<float>(static_cast<size_t>(n * H), 123.0f));  // overwritten, not added to
      got_->MoeFfn(ex, d.Put(x), n, d.Put(ids), d.Put(wts), k, kinds, sc, out);
      const std::vector<float> got = d.Get(out, n * H);
      for (auto& m : w) got_->ReleaseWeight(m);
      // Two MatMuls in series (gate/up, then down): a rounded-activation
      // path rounds twice, so its error may reach twice one MatMul's.
      const double one = std::max(MatMulTol(spec, RowKind::kPrompt), MatMulTol(spec, RowKind::kGenerated));
      const double tol = one > kF32Tol ? 2 * one : one;
      EXPECT_LE(WorstRowError(got, want, H), tol);
    }
  }
}

// The fused steps of a decoder layer: AddRmsNorm and RopeStoreKv give, on
// each backend, the bits of the ops they stand for run one after another
// (q and k of a fused qkv row, partial rotation, every K/V type), and
// match the reference as those ops do.
TEST_P(BackendOpsTest, FusedLayerSteps) {
  std::mt19937 rng(8);
  for (int c = 0; c < kCases; ++c) {
    const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kF8_E4M3};
    const DType kv_dtype = dtypes[c % 4];
    const int64_t rows = Uniform(rng, 1, 40), dim = c % 3 == 0 ? 4096 : 8 * Uniform(rng, 1, 200);
    const bool add_one = c % 2;
    const int64_t kv_heads = Uniform(rng, 1, 4), q_heads = kv_heads * Uniform(rng, 1, 4);
    const int64_t head_dim = 2 * Uniform(rng, 2, 64), kv_dim = kv_heads * head_dim;
    const int64_t qkv_stride = (q_heads + 2 * kv_heads) * head_dim;  // q | k | v in one row
    RopeParams rq;
    rq.n_heads = q_heads;
    rq.head_dim = head_dim;
    rq.rot_dim = c % 5 == 1 ? 2 * Uniform(rng, 1, head_dim / 2) : head_dim;
    rq.row_stride = qkv_stride;
    rq.attention_scaling = c % 3 == 0 ? 1.0f : 0.9f;
    rq.pairing = c % 2 ? RopePairing::kInterleaved : RopePairing::kHalfSplit;
    RopeParams rk = rq;
    rk.n_heads = kv_heads;
    std::vector<int32_t> pos(static_cast<size_t>(rows)), slots(static_cast<size_t>(rows));
    for (int32_t& p : pos) p = static_cast<int32_t>(Uniform(rng, 0, 40000));
    const int64_t n_slots = rows + 16;  // each token its own slot, scattered
    std::vector<int32_t> perm(static_cast<size_t>(n_slots));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::copy(perm.begin(), perm.begin() + rows, slots.begin());
    std::vector<float> inv_freq(static_cast<size_t>(rq.rot_dim / 2));
    for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / rq.rot_dim);
    const std::vector<float> x = Random(rows * dim, rng, 3), t = Random(rows * dim, rng, 3), w = Random(dim, rng);
    const std::vector<float> qkv = Random(rows * qkv_stride, rng, 2);
    const size_t cache_bytes = static_cast<size_t>(n_slots * kv_dim) * DTypeSize(kv_dtype);
    SCOPED_TRACE("rows " + std::to_string(rows) + " dim " + std::to_string(dim) + " heads " + std::to_string(q_heads) +
                 "/" + std::to_string(kv_heads) + " d " + std::to_string(head_dim) + " rot " +
                 std::to_string(rq.rot_dim) + " kv " + DTypeName(kv_dtype));
    std::vector<float> fused_x[2], fused_h[2], plain_x[2], plain_h[2], fused_qkv[2], plain_qkv[2];
    std::vector<uint8_t> fused_kc[2], fused_vc[2], plain_kc[2], plain_vc[2];
    Backend* bs[2] = {ref_.get(), got_.get()};
    for (int i = 0; i < 2; ++i) {
      Device d(*bs[i]);
      float* dx = d.Put(x);
      float* dh = d.Alloc<float>(rows * dim);
      bs[i]->AddRmsNorm(dx, d.Put(t), rows, dim, d.Put(w), 1e-6f, add_one, dh);
      fused_x[i] = d.Get(dx, rows * dim);
      fused_h[i] = d.Get(dh, rows * dim);
      float* px = d.Put(x);
      float* ph = d.Alloc<float>(rows * dim);
      bs[i]->Add(px, d.Put(t), rows * dim, px);
      bs[i]->RmsNorm(px, rows, dim, dim, d.Put(w), 1e-6f, add_one, ph);
      plain_x[i] = d.Get(px, rows * dim);
      plain_h[i] = d.Get(ph, rows * dim);

      const std::vector<uint8_t> poison(cache_bytes, 0x5A);
      for (bool fused : {true, false}) {
        float* q = d.Put(qkv);
        float* k = q + q_heads * head_dim;
        const float* v = k + kv_dim;
        void* kc = d.Put(poison);
        void* vc = d.Put(poison);
        const int32_t* dpos = d.Put(pos);
        const float* dfreq = d.Put(inv_freq);
        const int32_t* dslots = d.Put(slots);
        if (fused) {
          bs[i]->RopeStoreKv(q, rq, k, rk, v, qkv_stride, rows, dpos, dfreq, kv_dim, dslots, kc, vc, kv_dtype);
        } else {
          bs[i]->Rope(q, rows, dpos, dfreq, rq);
          bs[i]->Rope(k, rows, dpos, dfreq, rk);
          bs[i]->StoreKv(k, qkv_stride, v, qkv_stride, rows, kv_dim, dslots, kc, vc, kv_dtype);
        }
        (fused ? fused_qkv : plain_qkv)[i] = d.Get(q, rows * qkv_stride);
        (fused ? fused_kc : plain_kc)[i] = d.GetBytes(kc, cache_bytes);
        (fused ? fused_vc : plain_vc)[i] = d.GetBytes(vc, cache_bytes);
      }
    }
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(fused_x[i], plain_x[i]) << "AddRmsNorm's sum, backend " << i;
      EXPECT_EQ(fused_h[i], plain_h[i]) << "AddRmsNorm's norm, backend " << i;
      EXPECT_EQ(fused_qkv[i], plain_qkv[i]) << "RopeStoreKv's q and k, backend " << i;
      EXPECT_EQ(fused_kc[i], plain_kc[i]) << "RopeStoreKv's K cache, backend " << i;
      EXPECT_EQ(fused_vc[i], plain_vc[i]) << "RopeStoreKv's V cache, backend " << i;
    }
    EXPECT_LE(WorstRowError(fused_x[1], fused_x[0], dim), 1e-7) << "AddRmsNorm's sum";
    EXPECT_LE(WorstRowError(fused_h[1], fused_h[0], dim), 1e-5) << "AddRmsNorm";
    EXPECT_LE(WorstRowError(fused_qkv[1], fused_qkv[0], qkv_stride), 1e-5) << "RopeStoreKv's q and k";
  }
}

// StoreKv and Attention over one paged cache: sequences at once (prefill
// chunks and one-token decodes), scrambled block tables, GQA, windows,
// soft-capping, 16-bit and FP8 K/V, q rows inside wider (fused) rows; now and then a
// context past the CPU's 1,024-key attention segments.
TEST_P(BackendOpsTest, StoreKvAndAttention) {
  setenv("LLMHOST_CUDA_PROMPT_ATTENTION", "on", 1);  // the default, whatever the environment says
  std::mt19937 rng(5);
  for (int c = 0; c < kCases; ++c) {
    const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kF8_E4M3};
    AttentionParams ap;
    ap.n_kv_heads = Uniform(rng, 1, 4);
    ap.n_heads = ap.n_kv_heads * Uniform(rng, 1, 4);
    ap.head_dim = c % 3 == 0 ? 128 : 16 * Uniform(rng, 1, 4);
    ap.block_size = 16;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(ap.head_dim));
    ap.softcap = c % 4 == 1 ? 30.0f : 0.0f;
    ap.window = c % 4 == 2 ? Uniform(rng, 1, 100) : 0;
    ap.kv_dtype = dtypes[c % 4];
    const int64_t kv_dim = ap.n_kv_heads * ap.head_dim, qd = ap.n_heads * ap.head_dim;
    ap.q_stride = qd + (c % 2 ? 2 * kv_dim : 0);  // fused qkv rows now and then
    ap.out_stride = qd;
    const int64_t n_seqs = Uniform(rng, 1, 4);
    std::vector<AttentionSeq> seqs;
    std::vector<std::vector<int32_t>> tables;
    int64_t rows = 0, blocks = 0;
    for (int64_t s = 0; s < n_seqs; ++s) {
      AttentionSeq as;
      as.kv_len = c == kCases - 1 && s == 0 ? 2200 : Uniform(rng, 1, 300);
      as.n_new = Uniform(rng, 0, 1) ? 1 : Uniform(rng, 1, std::min<int64_t>(as.kv_len, 40));
      as.q_row = rows;
      rows += as.n_new;
      // Now and then the last rows are generated tokens (RowKind::kGenerated).
      if (Uniform(rng, 0, 2) == 0) {
        as.generated_from = as.kv_len - Uniform(rng, 1, as.n_new);
        ap.n_generated_rows += as.kv_len - as.generated_from;
      }
      const int64_t nb = (as.kv_len + ap.block_size - 1) / ap.block_size;
      tables.emplace_back(static_cast<size_t>(nb));
      blocks += nb;
      seqs.push_back(as);
    }
    // Physical blocks: a scrambled assignment across sequences.
    std::vector<int32_t> phys(static_cast<size_t>(blocks));
    std::iota(phys.begin(), phys.end(), 0);
    std::shuffle(phys.begin(), phys.end(), rng);
    size_t next = 0;
    for (auto& t : tables) {
      for (int32_t& b : t) b = phys[next++];
    }
    // Every position's K/V, written through the slots of its block table.
    std::vector<int32_t> slots;
    int64_t n_kv = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
      for (int64_t p = 0; p < seqs[s].kv_len; ++p) {
        slots.push_back(static_cast<int32_t>(tables[s][p / ap.block_size] * ap.block_size + p % ap.block_size));
        ++n_kv;
      }
    }
    ap.n_rows = rows;
    for (const AttentionSeq& as : seqs) ap.max_kv_len = std::max(ap.max_kv_len, as.kv_len);
    const int64_t kv_stride = kv_dim + (c % 2 ? 8 : 0);
    const std::vector<float> k = Random(n_kv * kv_stride, rng), v = Random(n_kv * kv_stride, rng);
    const std::vector<float> q = Random(rows * ap.q_stride, rng, 2);
    const size_t cache_bytes = static_cast<size_t>(blocks * ap.block_size * kv_dim) * DTypeSize(ap.kv_dtype);
    SCOPED_TRACE("seqs " + std::to_string(n_seqs) + " heads " + std::to_string(ap.n_heads) + "/" +
                 std::to_string(ap.n_kv_heads) + " d " + std::to_string(ap.head_dim) + " window " +
                 std::to_string(ap.window) + " softcap " + std::to_string(ap.softcap) + " kv " +
                 DTypeName(ap.kv_dtype));
    std::vector<uint8_t> kc[2], vc[2];
    std::vector<float> out[2];
    Backend* bs[2] = {ref_.get(), got_.get()};
    for (int i = 0; i < 2; ++i) {
      Device d(*bs[i]);
      void* dk = d.AllocBytes(cache_bytes);
      void* dv = d.AllocBytes(cache_bytes);
      bs[i]->StoreKv(d.Put(k), kv_stride, d.Put(v), kv_stride, n_kv, kv_dim, d.Put(slots), dk, dv, ap.kv_dtype);
      kc[i] = d.GetBytes(dk, cache_bytes);
      vc[i] = d.GetBytes(dv, cache_bytes);
      std::vector<AttentionSeq> dev_seqs = seqs;
      for (size_t s = 0; s < seqs.size(); ++s) dev_seqs[s].block_table = d.Put(tables[s]);
      float* dout = d.Alloc<float>(rows * ap.out_stride);
      bs[i]->Attention(d.Put(q), dk, dv, d.Put(dev_seqs), n_seqs, ap, dout);
      out[i] = d.Get(dout, rows * ap.out_stride);
    }
    // Rounding to 16 bits or FP8 is to nearest even on every backend: the same bytes
    // in every written slot (the rest of a sequence's last block is not).
    const size_t row_bytes = static_cast<size_t>(kv_dim) * DTypeSize(ap.kv_dtype);
    int64_t differing = 0;
    for (int32_t slot : slots) {
      const size_t at = static_cast<size_t>(slot) * row_bytes;
      differing += std::memcmp(&kc[1][at], &kc[0][at], row_bytes) != 0;
      differing += std::memcmp(&vc[1][at], &vc[0][at], row_bytes) != 0;
    }
    EXPECT_EQ(differing, 0) << "StoreKv: K/V rows that differ";
    // A GPU's prompt rows over 16-bit K/V at kAuto: q and the probabilities
    // rounded to one 16-bit term on the tensor cores (prompt_attention_test.cpp,
    // which also holds them to the f32 path's rows where their shape does not
    // fit); generated rows stay f32.
    const bool rounded = got_->kind() == DeviceKind::kCuda && got_->RowKindMatters() &&
                         (ap.kv_dtype == DType::kBF16 || ap.kv_dtype == DType::kF16);
    std::vector<float> kinds[2][2];  // [generated][backend]: whole rows of out_stride
    for (const AttentionSeq& as : seqs) {
      for (int64_t j = 0; j < as.n_new; ++j) {
        const bool generated = as.kv_len - as.n_new + j >= as.generated_from;
        for (int i = 0; i < 2; ++i) {
          const float* row = out[i].data() + (as.q_row + j) * ap.out_stride;
          kinds[generated][i].insert(kinds[generated][i].end(), row, row + ap.out_stride);
        }
      }
    }
    EXPECT_LE(WorstRowError(kinds[0][1], kinds[0][0], ap.head_dim), rounded ? kCudaPromptAttentionTol : kF32Tol)
        << "Attention: prompt rows";
    EXPECT_LE(WorstRowError(kinds[1][1], kinds[1][0], ap.head_dim), kF32Tol) << "Attention: generated rows";
  }
}

// The encoder ops: LayerNorm (rows at a stride), exact GELU, tanh, and
// bidirectional attention over a batch of sequences of their own lengths
// (q/k/v as slices of fused rows now and then). Each sequence's attention
// alone is bit for bit its rows in the batch.
TEST_P(BackendOpsTest, EncoderOps) {
  std::mt19937 rng(6);
  for (int c = 0; c < kCases; ++c) {
    const int64_t rows = Uniform(rng, 1, 40), dim = Uniform(rng, 1, 400), stride = dim + Uniform(rng, 0, 3) * 8;
    const std::vector<float> x = Random(rows * stride, rng, 3), w = Random(dim, rng), bias = Random(dim, rng);
    const std::vector<float> a = Random(rows * dim, rng, 6);
    EncoderAttentionParams ap;
    ap.n_heads = Uniform(rng, 1, 6);
    ap.head_dim = c % 3 == 0 ? 64 : c % 4 == 2 ? Uniform(rng, 1, 20) : 8 * Uniform(rng, 1, 8);
    ap.scale = 1.0f / std::sqrt(static_cast<float>(ap.head_dim));
    const int64_t qd = ap.n_heads * ap.head_dim;
    const bool fused = c % 2;
    ap.qkv_stride = fused ? 3 * qd : qd;
    ap.out_stride = qd + (c % 3) * 4;
    std::vector<EncoderSeq> seqs;
    for (int64_t s = 0, n = Uniform(rng, 1, 5); s < n; ++s) {
      const int64_t len = c == kCases - 1 && s == 0 ? 700 : Uniform(rng, 1, 60);
      seqs.push_back({ap.n_rows, len});
      ap.n_rows += len;
      ap.max_len = std::max(ap.max_len, len);
    }
    const std::vector<float> qkv = Random(ap.n_rows * ap.qkv_stride * (fused ? 1 : 3), rng, 2);
    // Every third case with relative positions (relative_key, or relative_key_query).
    std::vector<float> relative;
    if (c % 3 == 1) {
      ap.max_distance = ap.max_len + Uniform(rng, 0, 4);
      ap.relative_keys = c % 2 == 0;
      relative = Random((2 * ap.max_distance - 1) * ap.head_dim, rng, 2);
    }
    SCOPED_TRACE("rows " + std::to_string(rows) + " dim " + std::to_string(dim) + " seqs " +
                 std::to_string(seqs.size()) + " heads " + std::to_string(ap.n_heads) + " d " +
                 std::to_string(ap.head_dim) + " relative " + std::to_string(ap.max_distance) +
                 (ap.relative_keys ? " +keys" : ""));
    std::vector<float> norm[2], gelu[2], tanh_out[2], attn[2], alone[2];
    Backend* bs[2] = {ref_.get(), got_.get()};
    for (int i = 0; i < 2; ++i) {
      Device d(*bs[i]);
      float* dn = d.Put(x);
      bs[i]->LayerNorm(dn, rows, dim, stride, d.Put(w), d.Put(bias), 1e-12f, dn);
      norm[i] = d.Get(dn, rows * stride);
      float* da = d.Put(a);
      bs[i]->Gelu(da, rows * dim);
      gelu[i] = d.Get(da, rows * dim);
      float* dt = d.Put(a);
      bs[i]->Tanh(dt, rows * dim);
      tanh_out[i] = d.Get(dt, rows * dim);
      const float* dqkv = d.Put(qkv);
      // Fused: [q | k | v] in each row; else three dense blocks.
      const float* dq = dqkv;
      const float* dk = fused ? dqkv + qd : dqkv + ap.n_rows * qd;
      const float* dv = fused ? dqkv + 2 * qd : dqkv + 2 * ap.n_rows * qd;
      float* dout = d.Put(std::vector<float>(static_cast<size_t>(ap.n_rows * ap.out_stride), 0.0f));
      if (!relative.empty()) ap.relative = d.Put(relative);
      bs[i]->EncoderAttention(dq, dk, dv, d.Put(seqs), static_cast<int64_t>(seqs.size()), ap, dout);
      attn[i] = d.Get(dout, ap.n_rows * ap.out_stride);
      float* dalone = d.Put(std::vector<float>(static_cast<size_t>(ap.n_rows * ap.out_stride), 0.0f));
      for (const EncoderSeq& s : seqs) {
        EncoderAttentionParams one = ap;
        one.n_rows = s.len;
        one.max_len = s.len;
        bs[i]->EncoderAttention(dq, dk, dv, d.Put(std::vector<EncoderSeq>{s}), 1, one, dalone);
      }
      alone[i] = d.Get(dalone, ap.n_rows * ap.out_stride);
    }
    auto cols_of = [](const std::vector<float>& v, int64_t n_rows, int64_t row_stride, int64_t cols) {
      std::vector<float> out;
      for (int64_t r = 0; r < n_rows; ++r) out.insert(out.end(), v.begin() + r * row_stride, v.begin() + r * row_stride + cols);
      return out;
    };
    EXPECT_LE(WorstRowError(cols_of(norm[1], rows, stride, dim), cols_of(norm[0], rows, stride, dim), dim), 1e-5)
        << "LayerNorm";
    // The CPU's fast GELU evaluates erf by a polynomial (|error| <= 1.5e-7 in erf itself).
    const bool cpu_fast = GetParam().name.rfind("cpu_", 0) == 0 && GetParam().name != "cpu_reference_threads";
    EXPECT_LE(WorstRowError(gelu[1], gelu[0], dim), cpu_fast ? 5e-6 : 1e-6) << "Gelu";
    EXPECT_LE(WorstRowError(tanh_out[1], tanh_out[0], dim), 1e-6) << "Tanh";
    const int64_t qd_cols = ap.n_heads * ap.head_dim;
    EXPECT_LE(WorstRowError(cols_of(attn[1], ap.n_rows, ap.out_stride, qd_cols),
                            cols_of(attn[0], ap.n_rows, ap.out_stride, qd_cols), ap.head_dim),
              kF32Tol)
        << "EncoderAttention";
    for (int i = 0; i < 2; ++i) EXPECT_EQ(alone[i], attn[i]) << "EncoderAttention alone vs batched, backend " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendOpsTest, ::testing::ValuesIn(Candidates()),
                         [](const ::testing::TestParamInfo<Candidate>& i) { return i.param.name; });

}  // namespace
}  // namespace llmhost::backend_ops_test
