// A fixture for tests of the GPU's attention kernels against the CPU
// reference: paged K/V caches of several sequences (scrambled block tables)
// built on both backends, q rows drawn per position, and batches of
// sequences' rows run through Backend::Attention on either. Skipped where
// there is no GPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/device.h"
#include "device_buffers.h"
#include "quant_test_util.h"

namespace llmhost::testing {


struct Shape {
  int64_t heads, kv_heads, head_dim, window;
  float softcap;
  DType kv;
};

// One sequence of a batch: its rows are positions [kv_len - n_new, kv_len).
struct Part {
  int seq;  // which sequence's cache and q
  int64_t n_new, kv_len;
  int64_t generated_from = INT64_MAX;
};

class GpuAttentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
    DeviceSpec d;
    d.kind = DeviceKind::kCuda;
    auto b = MakeBackend(d, Precision::kAuto, nullptr);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    gpu_ = std::move(*b);
  }

  // Fills both caches (the GPU's and the reference's) with every sequence's
  // K/V through scrambled block tables, and draws each (sequence, position)'s q.
  void Build(const Shape& s, const std::vector<int64_t>& lengths, std::mt19937& rng) {
    s_ = s;
    const int64_t kv_dim = s.kv_heads * s.head_dim;
    q_width_ = s.heads * s.head_dim + 2 * kv_dim;  // q inside fused q/k/v rows
    std::vector<int32_t> phys;
    for (int64_t len : lengths) {
      tables_.emplace_back(static_cast<size_t>((len + kBlock - 1) / kBlock));
      for (int32_t& b : tables_.back()) {
        b = static_cast<int32_t>(phys.size());
        phys.push_back(b);
      }
    }
    std::shuffle(phys.begin(), phys.end(), rng);
    for (auto& t : tables_) {
      for (int32_t& b : t) b = phys[static_cast<size_t>(b)];
    }
    std::vector<int32_t> slots;
    for (size_t i = 0; i < lengths.size(); ++i) {
      for (int64_t p = 0; p < lengths[i]; ++p) slots.push_back(tables_[i][p / kBlock] * kBlock + p % kBlock);
      q_.push_back(testing::RandomVector(lengths[i] * q_width_, static_cast<uint32_t>(rng())));
      for (float& v : q_.back()) v *= 2;
    }
    const auto n = static_cast<int64_t>(slots.size());
    const std::vector<float> k = testing::RandomVector(n * kv_dim, static_cast<uint32_t>(rng()));
    const std::vector<float> v = testing::RandomVector(n * kv_dim, static_cast<uint32_t>(rng()));
    const size_t cache_bytes = phys.size() * kBlock * kv_dim * DTypeSize(s.kv);
    for (Backend* b : {gpu_.get(), static_cast<Backend*>(&ref_)}) {
      auto& dev = devs_.emplace_back(std::make_unique<Device>(*b));
      void* kc = dev->AllocBytes(cache_bytes);
      void* vc = dev->AllocBytes(cache_bytes);
      b->StoreKv(dev->Put(k), kv_dim, dev->Put(v), kv_dim, n, kv_dim, dev->Put(slots), kc, vc, s.kv);
      std::vector<const int32_t*> tables;
      for (const auto& t : tables_) tables.push_back(dev->Put(t));
      caches_.push_back({kc, vc, tables});
    }
  }

  // The batch's output rows on the GPU (which = 0) or the reference (1).
  std::vector<float> Run(const std::vector<Part>& parts, int which) {
    Backend* b = which == 0 ? gpu_.get() : &ref_;
    Device& dev = *devs_[static_cast<size_t>(which)];
    const Cache& c = caches_[static_cast<size_t>(which)];
    AttentionParams ap;
    ap.n_heads = s_.heads;
    ap.n_kv_heads = s_.kv_heads;
    ap.head_dim = s_.head_dim;
    ap.q_stride = q_width_;
    ap.out_stride = s_.heads * s_.head_dim;
    ap.block_size = kBlock;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(s_.head_dim));
    ap.softcap = s_.softcap;
    ap.window = s_.window;
    ap.kv_dtype = s_.kv;
    std::vector<AttentionSeq> seqs;
    std::vector<float> q;
    for (const Part& p : parts) {
      AttentionSeq as;
      as.q_row = ap.n_rows;
      as.n_new = p.n_new;
      as.kv_len = p.kv_len;
      as.generated_from = p.generated_from;
      as.block_table = c.tables[static_cast<size_t>(p.seq)];
      const auto& qs = q_[static_cast<size_t>(p.seq)];
      q.insert(q.end(), qs.begin() + (p.kv_len - p.n_new) * q_width_, qs.begin() + p.kv_len * q_width_);
      ap.n_rows += p.n_new;
      ap.max_kv_len = std::max(ap.max_kv_len, p.kv_len);
      ap.n_generated_rows += std::max<int64_t>(0, p.kv_len - std::max(p.generated_from, p.kv_len - p.n_new));
      seqs.push_back(as);
    }
    float* out = dev.Alloc<float>(ap.n_rows * ap.out_stride);
    b->Attention(dev.Put(q), c.k, c.v, dev.Put(seqs), static_cast<int64_t>(seqs.size()), ap, out);
    return dev.Get(out, ap.n_rows * ap.out_stride);
  }

  // Rows [first, first + n) of a batch's output.
  std::vector<float> Rows(const std::vector<float>& out, int64_t first, int64_t n) const {
    const int64_t w = s_.heads * s_.head_dim;
    return {out.begin() + first * w, out.begin() + (first + n) * w};
  }

  static constexpr int64_t kBlock = 16;
  struct Cache {
    void* k;
    void* v;
    std::vector<const int32_t*> tables;
  };
  std::unique_ptr<Backend> gpu_;
  CpuBackend ref_{nullptr, Precision::kReference};
  Shape s_{};
  int64_t q_width_ = 0;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<std::vector<float>> q_;
  std::vector<std::unique_ptr<Device>> devs_;
  std::vector<Cache> caches_;
};

inline double WorstRowError(const std::vector<float>& got, const std::vector<float>& ref, int64_t cols) {
  double worst = 0;
  for (size_t r = 0; r * cols < ref.size(); ++r) {
    worst = std::max(worst, testing::RelErr(&got[r * cols], &ref[r * cols], cols));
  }
  return worst;
}

}  // namespace llmhost::testing
