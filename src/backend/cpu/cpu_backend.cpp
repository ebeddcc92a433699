#include "backend/cpu/cpu_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/ops_activation.h"
#include "backend/cpu/ops_attention.h"
#include "backend/cpu/ops_elementwise.h"
#include "backend/cpu/ops_embedding.h"
#include "backend/cpu/ops_encoder.h"
#include "backend/cpu/ops_moe.h"
#include "backend/cpu/ops_norm.h"
#include "backend/cpu/ops_rope.h"
#include "backend/cpu/row_draw.h"
#include "backend/cpu/vec_math.h"

namespace llmhost {

namespace {
constexpr size_t kAlignment = 64;
}  // namespace

uint64_t WeightMatrixBytes(const WeightMatrix& w) {
  const uint64_t n = static_cast<uint64_t>(w.rows) * static_cast<uint64_t>(w.cols);
  switch (w.format) {
    case WeightFormat::kF32: return n * 4;
    case WeightFormat::kF16:
    case WeightFormat::kBF16: return n * 2;
    case WeightFormat::kMlxAffine: {
      if (w.group_size <= 0) return 0;
      const uint64_t groups = n / static_cast<uint64_t>(w.group_size);
      return n * static_cast<uint64_t>(w.bits) / 8 + 2 * groups * DTypeSize(w.scale_dtype);
    }
    case WeightFormat::kFp8E4M3:
      return w.group_size <= 0 ? 0 : n + n / static_cast<uint64_t>(w.group_size) * 4;
    case WeightFormat::kGgml: {
      auto info = GgmlTypeInfo(static_cast<uint32_t>(w.ggml_type));
      if (!info || info->block_size == 0) return 0;
      return n / info->block_size * info->type_size;
    }
  }
  return 0;
}

CpuBackend::CpuBackend(ThreadPool* pool, Precision precision, uint64_t memory_limit_bytes)
    : pool_(pool), precision_(precision), limit_(memory_limit_bytes) {}

CpuBackend::~CpuBackend() = default;  // buffers not freed by their owners leak by design


Status CpuBackend::CheckWeight(const WeightMatrix& w) const { return llmhost::CheckWeight(w); }

Result<DeviceBuffer> CpuBackend::Allocate(size_t bytes, const std::string& tag) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (limit_ != 0 && stats_.bytes_in_use + rounded > limit_) {
      return Status::ResourceExhausted("cpu backend: allocating " + std::to_string(bytes) +
                                       " bytes for " + tag + " exceeds the limit of " +
                                       std::to_string(limit_) + " bytes (" +
                                       std::to_string(stats_.bytes_in_use) + " in use)");
    }
  }
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) {
    return Status::ResourceExhausted("cpu backend: out of memory allocating " +
                                     std::to_string(bytes) + " bytes for " + tag);
  }
  std::lock_guard<std::mutex> lock(mu_);
  DeviceBuffer b;
  b.data = p;
  b.bytes = bytes;
  b.id = next_id_++;
  live_[b.id] = Live{rounded, 0};
  stats_.bytes_in_use += rounded;
  stats_.buffer_count = live_.size();
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes_in_use);
  return b;
}

void CpuBackend::Free(DeviceBuffer& buf) {
  if (!buf.valid()) return;
  size_t reserved = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(buf.id);
    if (it == live_.end()) return;  // not ours, or freed twice: ignore
    stats_.bytes_in_use -= it->second.bytes;
    reserved = it->second.reserved;
    live_.erase(it);
    stats_.buffer_count = live_.size();
  }
  if (reserved > 0) {
    ::munmap(buf.data, reserved);
  } else {
    std::free(buf.data);
  }
  buf = DeviceBuffer{};
}

size_t CpuBackend::commit_granularity() const {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

Result<DeviceBuffer> CpuBackend::Reserve(size_t max_bytes, const std::string& tag) {
  const size_t g = commit_granularity();
  const size_t rounded = (std::max<size_t>(max_bytes, 1) + g - 1) / g * g;
  void* p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return Status::ResourceExhausted("cpu backend: cannot reserve " + std::to_string(max_bytes) +
                                     " bytes of address space for " + tag + ": " + std::strerror(errno));
  }
  std::lock_guard<std::mutex> lock(mu_);
  DeviceBuffer b;
  b.data = p;
  b.bytes = max_bytes;
  b.id = next_id_++;
  live_[b.id] = Live{0, rounded};
  stats_.buffer_count = live_.size();
  return b;
}

Status CpuBackend::Commit(const DeviceBuffer& buf, size_t offset, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(buf.id);
  if (it == live_.end() || it->second.reserved == 0 || offset + bytes > it->second.reserved) {
    return Status::InvalidArgument("cpu backend: Commit outside a reserved buffer");
  }
  if (limit_ != 0 && stats_.bytes_in_use + bytes > limit_) {
    return Status::ResourceExhausted("cpu backend: committing " + std::to_string(bytes) + " bytes exceeds the limit of " +
                                     std::to_string(limit_) + " bytes (" + std::to_string(stats_.bytes_in_use) +
                                     " in use)");
  }
  // The pages appear when first written; only the accounting changes here.
  it->second.bytes += bytes;
  stats_.bytes_in_use += bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes_in_use);
  return Status::OK();
}

void CpuBackend::Decommit(const DeviceBuffer& buf, size_t offset, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(buf.id);
    if (it == live_.end() || it->second.reserved == 0 || offset + bytes > it->second.reserved) return;
    const size_t n = std::min(bytes, it->second.bytes);
    it->second.bytes -= n;
    stats_.bytes_in_use -= n;
  }
  // Whole pages inside the range go back to the system (reads see zeros).
  const size_t g = commit_granularity();
  const size_t a = (offset + g - 1) / g * g, b = (offset + bytes) / g * g;
  if (b > a) ::madvise(static_cast<char*>(buf.data) + a, b - a, MADV_DONTNEED);
}

MemoryStats CpuBackend::memory_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CpuBackend::Fail(Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sticky_.ok()) sticky_ = std::move(s);
}

Status CpuBackend::Synchronize() {
  std::lock_guard<std::mutex> lock(mu_);
  return sticky_;
}

bool CpuBackend::CopyInBounds(const DeviceBuffer& buf, size_t offset, size_t bytes, const char* what) {
  if (buf.data != nullptr && offset <= buf.bytes && bytes <= buf.bytes - offset) return true;
  Fail(Status::Internal(std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                        std::to_string(offset) + " of a buffer of " + std::to_string(buf.bytes)));
  return false;
}

void CpuBackend::CopyToDevice(const DeviceBuffer& dst, size_t dst_offset, const void* src,
                              size_t bytes) {
  if (bytes && CopyInBounds(dst, dst_offset, bytes, "CopyToDevice")) {
    std::memcpy(static_cast<char*>(dst.data) + dst_offset, src, bytes);
  }
}

void CpuBackend::CopyToHost(void* dst, const DeviceBuffer& src, size_t src_offset, size_t bytes) {
  if (bytes && CopyInBounds(src, src_offset, bytes, "CopyToHost")) {
    std::memcpy(dst, static_cast<const char*>(src.data) + src_offset, bytes);
  }
}

void CpuBackend::CopyDeviceToDevice(const DeviceBuffer& dst, size_t dst_offset,
                                    const DeviceBuffer& src, size_t src_offset, size_t bytes) {
  if (bytes && CopyInBounds(dst, dst_offset, bytes, "CopyDeviceToDevice") &&
      CopyInBounds(src, src_offset, bytes, "CopyDeviceToDevice")) {
    std::memmove(static_cast<char*>(dst.data) + dst_offset,
                 static_cast<const char*>(src.data) + src_offset, bytes);
  }
}

Result<WeightMatrix> CpuBackend::PrepareWeight(const WeightMatrix& host) {
  RETURN_IF_ERROR(llmhost::CheckWeight(host));
  std::lock_guard<std::mutex> lock(mu_);
  stats_.mapped_weight_bytes += WeightMatrixBytes(host);
  return host;  // zero-copy: kernels read the mapped file
}

void CpuBackend::ReleaseWeight(const WeightMatrix& w) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t b = WeightMatrixBytes(w);
  stats_.mapped_weight_bytes -= std::min(stats_.mapped_weight_bytes, b);
}

namespace {

// kAuto's choice (backend.h): depends on the weight, the row kind and the
// CPU only, so that a row's bits never depend on its batch.
MatMulPrecision AutoPrecision(const WeightMatrix& w, RowKind rows) {
  if (rows == RowKind::kGenerated) return MatMulPrecision::kFastInt8;
  if (HasBf16Matmul(ActiveCpuIsa())) return MatMulPrecision::kBf16Tiles;
  if (w.format == WeightFormat::kMlxAffine && w.bits == 8) return MatMulPrecision::kFast;
  return MatMulPrecision::kFastInt8;
}

}  // namespace

void CpuBackend::MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, RowKind rows) {
  const MatMulPrecision mp = precision_ == Precision::kFast       ? MatMulPrecision::kFast
                            : precision_ == Precision::kFastInt8 ? MatMulPrecision::kFastInt8
                            : precision_ == Precision::kFastBf16 ? MatMulPrecision::kFastBf16
                            : precision_ == Precision::kAuto     ? AutoPrecision(w, rows)
                                                                 : MatMulPrecision::kReference;
  // A weight the kernels cannot use gets NaN; the caller learns why.
  if (Status s = llmhost::MatMul(w, x, n, y, mp, pool_); !s.ok()) Fail(s.WithContext("MatMul"));
}

void CpuBackend::RouterMatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) {
  const MatMulPrecision mp =
      precision_ == Precision::kReference ? MatMulPrecision::kReference : MatMulPrecision::kFast;
  if (Status s = llmhost::MatMul(w, x, n, y, mp, pool_); !s.ok()) Fail(s.WithContext("RouterMatMul"));
}

void CpuBackend::Embedding(const WeightMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
                           int64_t first_id) {
  if (w.col_order != nullptr) {  // its rows would come out permuted
    Fail(Status::InvalidArgument("Embedding: a table in a column order of its own"));
    return;
  }
  cpu::Embedding(w, ids, n, scale, out, pool_, first_id);
}

void CpuBackend::RmsNorm(const float* x, int64_t rows, int64_t dim, int64_t stride,
                         const float* weight, float eps, bool add_one, float* out) {
  cpu::RmsNorm(x, rows, dim, stride, weight, eps, add_one, out, pool_);
}

void CpuBackend::RmsNormHeads(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                              int64_t token_stride, const float* weight, float eps, bool add_one) {
  if (n_tokens <= 0) return;
  if (token_stride == n_heads * head_dim) {  // dense: one row per (token, head)
    cpu::RmsNorm(x, n_tokens * n_heads, head_dim, head_dim, weight, eps, add_one, x, pool_);
    return;
  }
  auto rows = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* row = x + t * token_stride;
      cpu::RmsNorm(row, n_heads, head_dim, head_dim, weight, eps, add_one, row, nullptr);
    }
  };
  if (pool_) {
    pool_->ParallelFor(n_tokens, 1, rows);
  } else {
    rows(0, n_tokens);
  }
}

void CpuBackend::Rope(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                      const RopeParams& p) {
  cpu::Rope(x, n_tokens, positions, inv_freq, p, pool_);
}

void CpuBackend::RopeTables(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                            int64_t table_stride, const int32_t* table_of, const RopeParams& p) {
  // Runs of tokens that share a table, each one Rope.
  for (int64_t t = 0; t < n_tokens;) {
    int64_t end = t + 1;
    while (end < n_tokens && table_of[end] == table_of[t]) ++end;
    cpu::Rope(x + t * p.row_stride, end - t, positions + t, inv_freq + table_of[t] * table_stride, p, pool_);
    t = end;
  }
}

void CpuBackend::StoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride,
                         int64_t n, int64_t kv_dim, const int32_t* slots, void* k_cache,
                         void* v_cache, DType kv_dtype) {
  cpu::StoreKv(k, k_stride, v, v_stride, n, kv_dim, slots, k_cache, v_cache, kv_dtype, pool_);
}

void CpuBackend::Attention(const float* q, const void* k_cache, const void* v_cache,
                           const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p,
                           float* out) {
  cpu::Attention(q, k_cache, v_cache, seqs, n_seqs, p, out, precision_ != Precision::kReference, pool_);
}

void CpuBackend::GatedActivation(Activation act, const float* gate, int64_t gate_stride,
                                 const float* up, int64_t up_stride, int64_t rows, int64_t cols,
                                 float* out, int64_t out_stride) {
  cpu::GatedActivation(act, gate, gate_stride, up, up_stride, rows, cols, out, out_stride,
                       precision_ != Precision::kReference, pool_);
}

void CpuBackend::Add(const float* a, const float* b, int64_t n, float* out) {
  cpu::Add(a, b, n, out);
}

void CpuBackend::AddBias(float* x, int64_t rows, int64_t cols, int64_t stride,
                         const float* bias) {
  cpu::AddBias(x, rows, cols, stride, bias);
}

void CpuBackend::Scale(float* x, int64_t n, float s) { cpu::Scale(x, n, s); }

void CpuBackend::Fill(float* x, int64_t n, float value) { std::fill(x, x + n, value); }

void CpuBackend::Softcap(float* x, int64_t n, float cap) { cpu::Softcap(x, n, cap); }

void CpuBackend::EncoderAttention(const float* q, const float* k, const float* v, const EncoderSeq* seqs,
                                  int64_t n_seqs, const EncoderAttentionParams& p, float* out) {
  for (int64_t s = 0; p.relative && s < n_seqs; ++s) {
    if (seqs[s].len > p.max_distance) {
      return Fail(Status::InvalidArgument("EncoderAttention: a sequence of " + std::to_string(seqs[s].len) +
                                          " tokens is longer than the relative position table's " +
                                          std::to_string(p.max_distance)));
    }
  }
  cpu::EncoderAttention(q, k, v, seqs, n_seqs, p, out, precision_ != Precision::kReference, pool_);
}

void CpuBackend::LayerNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
                           const float* bias, float eps, float* out) {
  cpu::LayerNorm(x, rows, dim, stride, weight, bias, eps, out, pool_);
}

void CpuBackend::Gelu(float* x, int64_t n) { cpu::Gelu(x, n, precision_ != Precision::kReference, pool_); }

void CpuBackend::Tanh(float* x, int64_t n) { cpu::Tanh(x, n); }

void CpuBackend::TopKRouting(const float* logits, int64_t rows, int64_t n_experts, int64_t k,
                             bool renormalize, int32_t* ids, float* weights) {
  cpu::TopKRouting(logits, rows, n_experts, k, renormalize, ids, weights);
}

void CpuBackend::MoeFfn(const MoeExperts& ex, const float* x, int64_t n, const int32_t* ids,
                        const float* weights, int64_t k, std::span<const RowKind> rows,
                        const MoeScratch& sc, float* out) {
  const int64_t E = static_cast<int64_t>(ex.gate.size()), H = ex.hidden, I = ex.inter;
  // Host memory: the dispatch table is built where the routing lies. Per
  // expert, its tokens in token order.
  std::vector<int64_t> count(static_cast<size_t>(E) + 1, 0);
  for (int64_t i = 0; i < n * k; ++i) {
    if (ids[i] >= 0 && ids[i] < E) ++count[static_cast<size_t>(ids[i]) + 1];
  }
  for (int64_t e = 0; e < E; ++e) count[static_cast<size_t>(e) + 1] += count[static_cast<size_t>(e)];
  std::vector<int64_t> at(count.begin(), count.end() - 1);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = ids[t * k + j];
      if (e < 0 || e >= E) continue;
      const int64_t slot = at[static_cast<size_t>(e)]++;
      sc.rows[slot] = static_cast<int32_t>(t);
      sc.scales[slot] = weights[t * k + j];
    }
  }
  std::fill(out, out + n * H, 0.0f);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t begin = count[static_cast<size_t>(e)], cnt = count[static_cast<size_t>(e) + 1] - begin;
    if (cnt == 0) continue;
    const int32_t* tok = sc.rows + begin;
    cpu::GatherRows(x, H, tok, cnt, sc.x);
    // The expert's rows in token order form runs of one kind, as a batch's do.
    auto each_run = [&](auto&& fn) {
      for (int64_t r0 = 0; r0 < cnt;) {
        const RowKind kind = RowKindMatters() ? rows[static_cast<size_t>(tok[r0])] : RowKind::kPrompt;
        int64_t r1 = r0 + 1;
        while (r1 < cnt && (!RowKindMatters() || rows[static_cast<size_t>(tok[r1])] == kind)) ++r1;
        fn(r0, r1 - r0, kind);
        r0 = r1;
      }
    };
    each_run([&](int64_t r, int64_t m, RowKind kind) {
      MatMul(*ex.gate[static_cast<size_t>(e)], sc.x + r * H, m, sc.gate + r * I, kind);
      MatMul(*ex.up[static_cast<size_t>(e)], sc.x + r * H, m, sc.up + r * I, kind);
    });
    GatedActivation(ex.activation, sc.gate, I, sc.up, I, cnt, I, sc.gate, I);
    each_run([&](int64_t r, int64_t m, RowKind kind) {
      MatMul(*ex.down[static_cast<size_t>(e)], sc.gate + r * I, m, sc.y + r * H, kind);
    });
    cpu::ScatterAddRows(sc.y, H, tok, sc.scales + begin, cnt, out);
  }
}

void CpuBackend::GatherRows(const float* src, int64_t cols, const int32_t* rows, int64_t n,
                            float* dst) {
  cpu::GatherRows(src, cols, rows, n, dst);
}

void CpuBackend::PickRows(const float* x, int64_t rows, int64_t cols, const RowPick* picks, int32_t* out) {
  auto each = [&](int64_t begin, int64_t end) {
    thread_local cpu::RowDraw draw;
    for (int64_t r = begin; r < end; ++r) out[r] = draw.Pick(x + r * cols, cols, picks[r]);
  };
  if (pool_) {
    pool_->ParallelFor(rows, 1, each);
  } else {
    each(0, rows);
  }
}

}  // namespace llmhost
