// CudaBackend: the Backend on one NVIDIA GPU (CUDA 13 runtime, linked
// statically; the driver's virtual memory API for KV reservations).
//
// Memory: every byte it holds is counted (buffers, uploaded weights,
// committed KV granules, page-locked staging apart); a failed allocation is
// ResourceExhausted, never an abort. cudaMemGetInfo is the cross-check
// (device_free_bytes).
// Ops are enqueued on one non-blocking stream; launch errors are sticky and
// reported by Synchronize. CopyToHost returns when the data is on the host.
// Numerics: f32 activations and f32 accumulation (no TF32), each op as the
// CPU reference computes it, so that `--precision f32` holds the goldens.
// At kAuto (`serve`'s default) and kFastBf16, prompt rows' MatMuls run on
// the tensor cores with f32 sums: cuBLASLt with x rounded to bf16 for bf16
// weights and quantized ones widened to bf16, else x scaled per row by a
// power of two and weights rounded to f16 (cuda/matmul_tc.cuh); generated rows
// of bf16 and MLX 4/8-bit weights go to the batch-invariant MMA kernels
// (cuda/matmul_mma.cuh); other generated rows, MoE experts and router logits
// stay f32. Every op's reduction order is fixed per row, so a token's result
// never depends on its batch. Weights are uploaded as stored and read in
// place (f32 / f16 / bf16, MLX affine at every bit width, GGUF Q8_0, Q4_0,
// Q4_K, Q6_K), dequantized in the kernels with the reference's exact f32
// arithmetic (cuda/weight_load.cuh); the other GGUF types are expanded to
// exact f32 rows at upload.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <atomic>
#include <mutex>
#include <thread>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"

namespace llmhost {

namespace cuda {
struct DevWeight;
class GraphCache;
class LtGemm;
}  // namespace cuda

class CudaBackend : public Backend {
 public:
  // The GPU `device` (0-based); NotSupported when there is none or the driver
  // cannot start.
  static Result<std::unique_ptr<CudaBackend>> Create(int device, Precision precision);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda:" + std::to_string(device_); }
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  Status CheckWeight(const WeightMatrix& w) const override;

  Result<DeviceBuffer> Allocate(size_t bytes, const std::string& tag) override;
  Result<DeviceBuffer> AllocateStaging(size_t bytes, const std::string& tag) override;
  // Page-locked and portable (any GPU's copies write it directly) unless
  // LLMHOST_CUDA_PINNED_RESULTS=off (the heap).
  HostAllocator ResultAllocator() const override;
  void Free(DeviceBuffer& buf) override;
  Result<DeviceBuffer> Reserve(size_t max_bytes, const std::string& tag) override;
  Status Commit(const DeviceBuffer& buf, size_t offset, size_t bytes) override;
  void Decommit(const DeviceBuffer& buf, size_t offset, size_t bytes) override;
  size_t commit_granularity() const override { return granularity_; }
  MemoryStats memory_stats() const override;
  // cudaMemGetInfo's figures for this device (free, total).
  std::pair<uint64_t, uint64_t> device_memory_info() const;

  void CopyToDevice(const DeviceBuffer& dst, size_t dst_offset, const void* src, size_t bytes) override;
  void CopyToHost(void* dst, const DeviceBuffer& src, size_t src_offset, size_t bytes) override;
  void CopyDeviceToDevice(const DeviceBuffer& dst, size_t dst_offset, const DeviceBuffer& src,
                          size_t src_offset, size_t bytes) override;
  Status Synchronize() override;
  void Enqueue(uint64_t key, const std::function<void()>& ops) override;
  uint64_t graph_replays() const override;

  Result<WeightMatrix> PrepareWeight(const WeightMatrix& host) override;
  void ReleaseWeight(const WeightMatrix& w) override;

  Precision precision() const override { return precision_; }
  void set_precision(Precision p) override { precision_ = p; }
  bool RowKindMatters() const override { return PromptRowsOnTensorCores(); }  // kFastInt8: the same for both

  void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, RowKind rows) override;
  void MatMuls(std::span<const MatMulJob> jobs, const float* x, int64_t n, RowKind rows) override;
  void RouterMatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) override;
  void Embedding(const WeightMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
                 int64_t first_id = 0) override;
  void RmsNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight, float eps,
               bool add_one, float* out) override;
  void RmsNormHeads(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t token_stride,
                    const float* weight, float eps, bool add_one) override;
  void Rope(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
            const RopeParams& p) override;
  void RopeTables(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                  int64_t table_stride, const int32_t* table_of, const RopeParams& p) override;
  void StoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n, int64_t kv_dim,
               const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype) override;
  void Attention(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                 int64_t n_seqs, const AttentionParams& p, float* out) override;
  void GatedActivation(Activation act, const float* gate, int64_t gate_stride, const float* up,
                       int64_t up_stride, int64_t rows, int64_t cols, float* out, int64_t out_stride) override;
  void AddRmsNorm(float* x, const float* t, int64_t rows, int64_t dim, const float* weight, float eps, bool add_one,
                  float* out) override;
  void RopeStoreKv(float* q, const RopeParams& rq, float* k, const RopeParams& rk, const float* v, int64_t v_stride,
                   int64_t n, const int32_t* positions, const float* inv_freq, int64_t kv_dim, const int32_t* slots,
                   void* k_cache, void* v_cache, DType kv_dtype) override;
  void Add(const float* a, const float* b, int64_t n, float* out) override;
  void AddBias(float* x, int64_t rows, int64_t cols, int64_t stride, const float* bias) override;
  void Scale(float* x, int64_t n, float s) override;
  void Fill(float* x, int64_t n, float value) override;
  void Softcap(float* x, int64_t n, float cap) override;
  void EncoderAttention(const float* q, const float* k, const float* v, const EncoderSeq* seqs, int64_t n_seqs,
                        const EncoderAttentionParams& p, float* out) override;
  void LayerNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight, const float* bias,
                 float eps, float* out) override;
  void Gelu(float* x, int64_t n) override;
  void Tanh(float* x, int64_t n) override;
  void TopKRouting(const float* logits, int64_t rows, int64_t n_experts, int64_t k, bool renormalize,
                   int32_t* ids, float* weights) override;
  void MoeFfn(const MoeExperts& experts, const float* x, int64_t n, const int32_t* ids, const float* weights,
              int64_t k, std::span<const RowKind> rows, const MoeScratch& scratch, float* out) override;
  void GatherRows(const float* src, int64_t cols, const int32_t* rows, int64_t n, float* dst) override;
  void PickRows(const float* x, int64_t rows, int64_t cols, const RowPick* picks, int32_t* out) override;
  // LLMHOST_CUDA_PICK_ROWS=off (read at each step): logits instead.
  bool PicksRows() const override;

  // For code outside the backend that enqueues work of its own on this GPU
  // (cuda/nccl_collective.cpp); each of its calls starts with Use().
  int device() const { return device_; }
  void* stream() const { return stream_; }  // cudaStream_t
  void Use() const;  // makes device_ current on the calling thread
  // Grows `*buf` (the caller's, freed with Free) to `need` bytes: false, and
  // a sticky error unless !required (the caller has a way without it), when
  // it cannot; while a graph records it does not grow, and the recording is
  // dropped so that the step runs as plain launches.
  bool Scratch(DeviceBuffer* buf, size_t need, const char* tag, bool required = true);
  // An enqueued operation failed: the sticky error, or while a graph records,
  // why the recording is dropped (the plain run that follows reports it).
  void OpFailed(Status s);
  // Drops every recorded graph, before something they hold goes away (an
  // NCCL communicator waits in its destroy for the graphs that use it).
  void DropGraphs();

 private:
  CudaBackend(int device, Precision precision);
  void Fail(Status s);            // records the first error (sticky)
  bool KvTypeStorable(DType kv_dtype, const char* op);
  void CheckLaunch(const char* op);  // a launch's error, if any, becomes sticky
  bool InBounds(const DeviceBuffer& buf, size_t offset, size_t bytes, const char* what);
  bool PromptRowsOnTensorCores() const;  // by precision_
  bool PromptRowsSplit() const;          // prompt rows' x as two bf16 terms
  bool GeneratedRowsOnTensorCores(const cuda::DevWeight& d) const;
  // Rows of `kind` that multiply int8 activations with `d`'s codes
  // (cuda/matmul_int8.cuh): MLX 4-bit generated rows at kAuto, every MLX
  // 4-bit row at kFastInt8 (LLMHOST_CUDA_MLX_INT8=off: neither).
  bool Int8Rows(const cuda::DevWeight& d, RowKind kind) const;
  // y[i] = x · w[i]ᵀ through the int8 kernel (x quantized once for all).
  void Int8MatMuls(const cuda::DevWeight* d, float* const* y, int count, const float* x, int64_t n);
  // Generated rows on the batch-invariant MMA kernels (cuda/matmul_mma.cuh),
  // with the scratch a large batch's GEMM-shaped kernel needs where it grows.
  void MmaMatMuls(const cuda::DevWeight* d, float* const* y, int count, const float* x, int64_t n);
  // The kernels' view of `w`; false (and a sticky error naming `op`) for a
  // weight another backend prepared.
  bool Prepared(const WeightMatrix& w, const char* op, cuda::DevWeight* d);
  // Prompt rows of a 16-bit weight on cuBLASLt; false where it does not apply.
  bool LtMatMul(const cuda::DevWeight& d, const float* x, int64_t n, float* y);
  bool LtTakes(const cuda::DevWeight& d, const float* y) const;  // LtMatMul applies
  // y = hi·Wᵀ for n prompt rows of x rounded to bf16, on `stream` with
  // `workspace`: the shape's one cuBLASLt plan, or the plan of n's bucket
  // where it gives the same bits (LtGemm::BucketFor; checked on the first
  // chunk of each bucket, up to kMaxBucketCheckBytes of products).
  static constexpr size_t kMaxBucketCheckBytes = size_t{64} << 20;
  bool PromptGemm(const cuda::DevWeight& d, const uint16_t* hi, int64_t n, float* y, void* workspace, void* stream);
  // Prompt rows of bf16 weights that share x (q/k/v, gate/up) on cuBLASLt,
  // x rounded to bf16 once for all of them: the bits of a LtMatMul each.
  // false (nothing done) where one of them would take another path.
  bool SharedXLtMatMuls(std::span<const MatMulJob> jobs, const float* x, int64_t n);
  bool SideStream();  // makes side_stream_ and its events on first use; false where it cannot
  // Prompt rows of a quantized weight: widened to bf16 into a scratch buffer
  // (up to kMaxWidenedBytes; LLMHOST_CUDA_WIDEN_PROMPT=off: never), then
  // LtMatMul; false where it does not apply (a property of the weight).
  bool WidenedLtMatMul(const cuda::DevWeight& d, const float* x, int64_t n, float* y);
  // Generated rows of a bf16 weight on cuBLASLt with an algorithm chosen for
  // their count, where batch invariance is given up
  // (LLMHOST_CUDA_BATCH_INVARIANT=off) and there are more than
  // kAnyOrderAbove of them; false where it does not apply.
  static constexpr int64_t kAnyOrderAbove = 8;
  bool AnyOrderLtMatMul(const cuda::DevWeight& d, const float* x, int64_t n, float* y);
  // y = x·Wᵀ with x's two bf16 terms (hi, lo) as the 2n rows of one cuBLASLt
  // GEMM into stacked_y_ (the weight read once, twice the tiles), then the
  // halves added; `plan_rows` as LtGemm::MatMul's. Prompt rows take it (unless
  // LLMHOST_CUDA_STACK_TERMS=off) where the products fit kMaxStackedBytes: the
  // same bits as two GEMMs, the second onto the first (beta 1), if cuBLASLt's
  // epilogue adds C as a plain f32 sum (a GPU test checks it).
  static constexpr size_t kMaxStackedBytes = size_t{128} << 20;
  static constexpr int64_t kMaxStackedRows = 8192;  // the most LtGemm checks its prompt plan at
  bool StackedTermsMatMul(const cuda::DevWeight& d, const float* x, int64_t n, float* y, int64_t plan_rows);

  int device_;
  Precision precision_;
  void* stream_ = nullptr;  // cudaStream_t
  // A second stream for prompt GEMMs beside the first (SharedXLtMatMuls),
  // forked from and joined to stream_ by the two events; its own cuBLASLt
  // workspace (a tile scheduler's counter cannot be shared by two GEMMs).
  void* side_stream_ = nullptr;
  void* fork_event_ = nullptr;
  void* join_event_ = nullptr;
  DeviceBuffer side_workspace_;
  bool side_refused_ = false;
  size_t granularity_ = 2 << 20;

  mutable std::mutex mu_;
  Status sticky_;
  uint64_t next_id_ = 1;
  enum class Kind { kDevice, kStaging, kReserved };
  struct Live {
    Kind kind = Kind::kDevice;
    size_t bytes = 0;                              // counted in stats_
    size_t reserved = 0;                           // kReserved: address range size
    std::map<size_t, unsigned long long> granules;  // kReserved: offset -> physical handle
  };
  std::unordered_map<uint64_t, Live> live_;  // by buffer id
  std::unordered_map<const void*, uint64_t> weights_;  // device data of a prepared weight -> bytes
  MemoryStats stats_;
  DeviceBuffer moe_table_;  // device pointers of an MoE layer's experts (gate, up, down)
  size_t terms_refused_from_ = SIZE_MAX;  // MmaMatMuls: the smallest terms scratch the allocator refused
  DeviceBuffer tc_scratch_;  // f16 activations of a tensor-core MatMul (cuda/matmul_tc.cuh)
  std::unique_ptr<cuda::LtGemm> lt_;
  DeviceBuffer lt_workspace_;  // cuda::LtGemm::kWorkspaceBytes for its tile scheduler
  std::unique_ptr<cuda::GraphCache> graphs_;
  // Moves whenever an address a recorded graph may hold changes (a scratch
  // buffer regrown, a weight released): older graphs are dropped.
  uint64_t generation_ = 0;
  bool capturing_ = false;
  Status capture_error_;  // while capturing: why the recording cannot be used
  // Held while a graph records: another thread's copy or wait on the stream
  // (the KV block saver's) would break the recording, so it waits for it.
  std::mutex capture_mu_;
  std::atomic<std::thread::id> capture_thread_{};
  std::unique_lock<std::mutex> WaitForRecording();
  DeviceBuffer attn_scratch_;  // Attention's chunk partials (cuda/attention.cuh)
  DeviceBuffer int8_scratch_;  // x quantized to int8 (cuda/matmul_int8.cuh)
  DeviceBuffer widened_;       // one quantized weight as bf16 (cuda/dequantize.cuh)
  DeviceBuffer stacked_y_;     // StackedTermsMatMul's products of x's two bf16 terms
  DeviceBuffer order_scratch_;  // x in a weight's stored column order (WeightMatrix::col_order)
};

}  // namespace llmhost
