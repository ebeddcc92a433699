// CpuBackend: the Backend on the host, computing with a ThreadPool.
//
// Device memory is host memory (64-byte aligned), accounted like a GPU's:
// bytes held now and the peak. Weights are used in place (PrepareWeight
// returns the mapped view). Ops run synchronously; Synchronize() only reports the
// sticky error (a copy outside its buffer, a weight the kernels cannot use).
// Every op has an f32 reference implementation; MatMul has the reference and
// the fast (SIMD) kernels of backend/cpu/matmul.h, selected by precision().
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backend/backend.h"
#include "util/thread_pool.h"

namespace llmhost {

class CpuBackend : public Backend {
 public:
  // `pool` may be null (single-threaded); it must outlive the backend.
  // `memory_limit_bytes` 0 = no limit; otherwise Allocate fails beyond it.
  explicit CpuBackend(ThreadPool* pool = &ThreadPool::Default(),
                      Precision precision = Precision::kReference,
                      uint64_t memory_limit_bytes = 0);
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  std::string name() const override { return "cpu"; }
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  Status CheckWeight(const WeightMatrix& w) const override;

  Result<DeviceBuffer> Allocate(size_t bytes, const std::string& tag) override;
  // Host memory is device memory here: an ordinary (counted) allocation.
  Result<DeviceBuffer> AllocateStaging(size_t bytes, const std::string& tag) override {
    return Allocate(bytes, tag);
  }
  void Free(DeviceBuffer& buf) override;
  // Reserve: an anonymous mapping with MAP_NORESERVE (pages materialise when
  // first written); Decommit: madvise(MADV_DONTNEED) returns the pages.
  Result<DeviceBuffer> Reserve(size_t max_bytes, const std::string& tag) override;
  Status Commit(const DeviceBuffer& buf, size_t offset, size_t bytes) override;
  void Decommit(const DeviceBuffer& buf, size_t offset, size_t bytes) override;
  size_t commit_granularity() const override;
  MemoryStats memory_stats() const override;
  void CopyToDevice(const DeviceBuffer& dst, size_t dst_offset, const void* src,
                    size_t bytes) override;
  void CopyToHost(void* dst, const DeviceBuffer& src, size_t src_offset, size_t bytes) override;
  void CopyDeviceToDevice(const DeviceBuffer& dst, size_t dst_offset, const DeviceBuffer& src,
                          size_t src_offset, size_t bytes) override;
  Status Synchronize() override;

  Result<WeightMatrix> PrepareWeight(const WeightMatrix& host) override;
  void ReleaseWeight(const WeightMatrix& w) override;

  Precision precision() const override { return precision_; }
  void set_precision(Precision p) override { precision_ = p; }
  bool RowKindMatters() const override { return precision_ == Precision::kAuto; }

  void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, RowKind rows) override;
  void RouterMatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) override;
  void Embedding(const WeightMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
                 int64_t first_id = 0) override;
  void RmsNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
               float eps, bool add_one, float* out) override;
  void RmsNormHeads(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t token_stride,
                    const float* weight, float eps, bool add_one) override;
  void RopeTables(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                  int64_t table_stride, const int32_t* table_of, const RopeParams& p) override;
  void Rope(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
            const RopeParams& p) override;
  void StoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n,
               int64_t kv_dim, const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype) override;
  void Attention(const float* q, const void* k_cache, const void* v_cache,
                 const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p,
                 float* out) override;
  void GatedActivation(Activation act, const float* gate, int64_t gate_stride, const float* up,
                       int64_t up_stride, int64_t rows, int64_t cols, float* out,
                       int64_t out_stride) override;
  void Add(const float* a, const float* b, int64_t n, float* out) override;
  void AddBias(float* x, int64_t rows, int64_t cols, int64_t stride, const float* bias) override;
  void Scale(float* x, int64_t n, float s) override;
  void Fill(float* x, int64_t n, float value) override;
  void Softcap(float* x, int64_t n, float cap) override;
  void EncoderAttention(const float* q, const float* k, const float* v, const EncoderSeq* seqs,
                        int64_t n_seqs, const EncoderAttentionParams& p, float* out) override;
  void LayerNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
                 const float* bias, float eps, float* out) override;
  void Gelu(float* x, int64_t n) override;
  void Tanh(float* x, int64_t n) override;
  void TopKRouting(const float* logits, int64_t rows, int64_t n_experts, int64_t k,
                   bool renormalize, int32_t* ids, float* weights) override;
  void MoeFfn(const MoeExperts& experts, const float* x, int64_t n, const int32_t* ids, const float* weights,
              int64_t k, std::span<const RowKind> rows, const MoeScratch& scratch, float* out) override;
  void PickRows(const float* x, int64_t rows, int64_t cols, const RowPick* picks, int32_t* out) override;
  void GatherRows(const float* src, int64_t cols, const int32_t* rows, int64_t n,
                  float* dst) override;

 private:
  ThreadPool* pool_;
  Precision precision_;
  uint64_t limit_;
  mutable std::mutex mu_;
  Status sticky_;  // the first op or copy error (guarded by mu_)
  void Fail(Status s);
  bool CopyInBounds(const DeviceBuffer& buf, size_t offset, size_t bytes, const char* what);
  uint64_t next_id_ = 1;
  struct Live {
    size_t bytes = 0;      // counted in stats_ (committed bytes for a reservation)
    size_t reserved = 0;   // > 0: a Reserve mapping of this size (munmap on Free)
  };
  std::unordered_map<uint64_t, Live> live_;  // by buffer id
  MemoryStats stats_;
};

// Bytes of a stored weight matrix (data + MLX scales/biases), 0 if the
// format's size cannot be computed.
uint64_t WeightMatrixBytes(const WeightMatrix& w);

}  // namespace llmhost
