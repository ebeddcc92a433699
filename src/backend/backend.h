// Backend: the device interface the model layer computes through.
//
// Written for a CUDA backend to follow the CPU one:
//   - Device memory is owned by the backend: Allocate/Free return and take
//     DeviceBuffers, and the backend accounts for what it holds (bytes now,
//     peak). The memory pool (issue 5) reads "device-active bytes" from
//     memory_stats().
//   - Weights reach a kernel only through PrepareWeight: CPU returns a
//     zero-copy view of the mapped file; CUDA will upload and return a view
//     of device memory (counted in memory_stats().weight_bytes).
//   - Ops are enqueued on the backend's stream and may run asynchronously;
//     host reads of device data (CopyToHost) happen after Synchronize(),
//     which reports the first error any of them met (sticky).
//     The CPU backend executes each op before returning.
//   - Every pointer an op takes is a device address inside a buffer of this
//     backend (or a prepared weight), never host memory such as a
//     std::vector. Small POD parameters travel by value (as kernel launch
//     arguments do); per-token or per-sequence arrays live in device buffers.
//   - Backends are asked, never assumed: CheckWeight says whether a weight
//     can be used; every op of this interface is required of a backend.
//
// Layouts: activations are row-major f32 [rows, cols] with an explicit row
// stride (in elements) where an op can read a slice of a wider row (fused
// qkv, fused gate_up).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backend/host_floats.h"
#include "backend/row_pick.h"
#include "backend/weight_matrix.h"
#include "formats/dtype.h"
#include "util/status.h"

namespace llmhost {

enum class DeviceKind { kCpu, kCuda };

// Compute precision of the weight ops (MatMul). kReference: every weight
// dequantized exactly to f32, f32 accumulation; the path the golden tests
// hold to 1e-4. kFast: the fastest kernels this device has with f32
// activations (SIMD). kFastInt8: as kFast, but quantized weights (MLX, GGUF
// blocks) multiply int8-quantized activations (as ggml does). kFastBf16:
// where the CPU has AMX-BF16, activations and weights rounded to bf16 and
// multiplied in AMX tiles for prefill-sized batches (elsewhere, and for
// decode, as kFast). kAuto (`serve`'s default): per weight and per kind of
// row, the fastest of these that keeps batch invariance: generated tokens'
// rows as kFastInt8; prompt tokens' rows in AMX-BF16 tiles at every batch
// size where the CPU has AMX, else as kFast for 8-bit MLX weights (int8
// activations prefill them slower) and as kFastInt8 for the rest. A row's
// precision depends on its own token and the weight, never on the batch.
// Cheap ops have one f32 path; attention and activations share the fast
// loops.
enum class Precision { kReference, kFast, kFastInt8, kFastBf16, kAuto };
// As the command line spells it: "f32", "fast", "fast-int8", "fast-bf16", "auto".
inline const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kReference: return "f32";
    case Precision::kFast: return "fast";
    case Precision::kFastInt8: return "fast-int8";
    case Precision::kFastBf16: return "fast-bf16";
    case Precision::kAuto: return "auto";
  }
  return "?";
}

// Which tokens a MatMul's rows are: a prompt's (prefill) or generated ones
// (decode). A backend may compute the two differently (kAuto); each row's
// kind comes from its position in its sequence, so a token's kind is the
// same whether its request runs alone or in any batch.
enum class RowKind { kGenerated, kPrompt };

// A region of device memory owned by a Backend. Plain value; the backend
// keeps the bookkeeping. `data` is a device address (CPU: host memory).
struct DeviceBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  uint64_t id = 0;  // 0: no buffer
  bool valid() const { return id != 0; }
  template <typename T>
  T* as(size_t element_offset = 0) const {
    return static_cast<T*>(data) + element_offset;
  }
};

struct MemoryStats {
  uint64_t bytes_in_use = 0;   // device bytes held now (buffers + uploaded weights)
  uint64_t peak_bytes = 0;     // high-water mark of bytes_in_use
  uint64_t buffer_count = 0;   // live buffers
  uint64_t weight_bytes = 0;   // of bytes_in_use: weights copied into device memory
  uint64_t mapped_weight_bytes = 0;  // weights used in place (CPU zero-copy views)
};

enum class Activation { kSilu, kGeluTanh };

// One layer's experts of a mixture-of-experts FFN (prepared weights).
struct MoeExperts {
  // Per expert: gate and up [inter, hidden], down [hidden, inter].
  std::vector<const WeightMatrix*> gate, up, down;
  int64_t hidden = 0, inter = 0;
  Activation activation = Activation::kSilu;
};

// Device scratch of a MoeFfn over n tokens routed to k experts each: x and y
// hold n rows of hidden, gate and up n rows of inter, rows and scales n * k
// entries (a dispatch table the backend builds where the routing is).
struct MoeScratch {
  float *x = nullptr, *gate = nullptr, *up = nullptr, *y = nullptr, *scales = nullptr;
  int32_t* rows = nullptr;
};

// How RoPE pairs the dimensions of a head it rotates (the first rot_dim).
enum class RopePairing {
  kHalfSplit,    // (i, i + rot_dim/2): Hugging Face's rotate_half
  kInterleaved,  // (2i, 2i+1): GGUF / llama.cpp "normal" mode, llama2.c
};

struct RopeParams {
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  int64_t rot_dim = 0;          // even, <= head_dim; the rest passes through
  int64_t row_stride = 0;       // elements between tokens (>= n_heads * head_dim)
  float attention_scaling = 1;  // multiplies cos and sin (YaRN, LongRoPE)
  RopePairing pairing = RopePairing::kHalfSplit;
};

struct AttentionParams {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;   // n_heads % n_kv_heads == 0 (GQA)
  int64_t head_dim = 0;
  int64_t q_stride = 0;     // elements between tokens in q
  int64_t out_stride = 0;   // elements between tokens in out
  int64_t block_size = 0;   // tokens per KV block
  float scale = 1;          // multiplies q·k (1/sqrt(head_dim) or an override)
  float softcap = 0;        // > 0: scores become softcap * tanh(scores / softcap)
  int64_t window = 0;       // > 0: a query at position p sees keys at positions > p - window
  DType kv_dtype = DType::kF32;  // of the cache's K and V rows: F32, BF16, F16 or F8_E4M3
  int64_t n_rows = 0;       // q rows of the batch (Σ n_new): a GPU sizes its launch by it
  int64_t max_kv_len = 0;   // the largest kv_len of the batch: a GPU sizes its launch by it
  int64_t n_generated_rows = 0;  // rows at or past their sequence's generated_from (RowKind::kGenerated)
};

// One sequence of an attention batch. Its new tokens are q rows
// [q_row, q_row + n_new) at positions [kv_len - n_new, kv_len); the cache
// already holds the K/V of positions [0, kv_len) (the new ones included).
// block_table: device int32[ceil(kv_len / block_size)], physical block ids.
// Rows at positions >= generated_from are generated tokens, the others the
// prompt's (RowKind: a backend may compute the two kinds differently).
struct AttentionSeq {
  int64_t q_row = 0;
  int64_t n_new = 0;
  int64_t kv_len = 0;
  const int32_t* block_table = nullptr;
  int64_t generated_from = INT64_MAX;
};

// One sequence of an EncoderAttention batch: its tokens are rows
// [row, row + len) of q, k, v and out.
struct EncoderSeq {
  int64_t row = 0;
  int64_t len = 0;
};

struct EncoderAttentionParams {
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  int64_t qkv_stride = 0;  // elements between tokens in q, k and v (fused rows: 3 * hidden)
  int64_t out_stride = 0;  // elements between tokens in out
  float scale = 1;         // multiplies q·k (1/sqrt(head_dim))
  int64_t n_rows = 0;      // Σ len: a GPU sizes its launch by it
  int64_t max_len = 0;     // the longest len: a GPU sizes its launch by it
  // Relative positions (BERT's relative_key / relative_key_query): a device
  // table [2 · max_distance - 1, head_dim] shared by the heads; row i, key j
  // of a sequence read R = relative[i - j + max_distance - 1] and add q_i·R
  // (and k_j·R when relative_keys) to q_i·k_j before the scale. Needs
  // len <= max_distance. nullptr: no relative term.
  const float* relative = nullptr;
  int64_t max_distance = 0;
  bool relative_keys = false;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual DeviceKind kind() const = 0;
  // OK when MatMul/Embedding can use this weight (format, type, shape).
  virtual Status CheckWeight(const WeightMatrix& w) const = 0;

  // ---- memory -------------------------------------------------------------
  // ResourceExhausted when the device cannot hold `bytes` more. Contents are
  // undefined. `tag` names the use in error messages ("kv cache layer 3").
  virtual Result<DeviceBuffer> Allocate(size_t bytes, const std::string& tag) = 0;
  // Frees a buffer of this backend (no-op for an invalid one); resets `buf`.
  virtual void Free(DeviceBuffer& buf) = 0;
  // Address space for up to `max_bytes` that holds memory only where it is
  // committed (what the KV cache grows into without moving: its addresses
  // stay valid for kernels and graphs). Nothing is committed at first.
  virtual Result<DeviceBuffer> Reserve(size_t max_bytes, const std::string& tag) = 0;
  // Commits [offset, offset + bytes) of a reserved buffer (counted in
  // memory_stats from now on; contents undefined); ResourceExhausted when the
  // device cannot hold it. Decommit gives a committed range back (contents
  // lost). Offsets and sizes are multiples of commit_granularity().
  virtual Status Commit(const DeviceBuffer& buf, size_t offset, size_t bytes) = 0;
  virtual void Decommit(const DeviceBuffer& buf, size_t offset, size_t bytes) = 0;
  virtual size_t commit_granularity() const = 0;
  virtual MemoryStats memory_stats() const = 0;
  // Host memory the backend owns for uploads (`data` is a host address; CUDA:
  // page-locked, so that CopyToDevice from it runs asynchronously), freed
  // with Free. What is copied from it must not be rewritten before the next
  // Synchronize.
  virtual Result<DeviceBuffer> AllocateStaging(size_t bytes, const std::string& tag) = 0;
  // Where results copied back every step (logits) are best kept on the host
  // (HostFloats): CUDA, page-locked memory (opt-in); default, the heap.
  virtual HostAllocator ResultAllocator() const { return {}; }

  // Host <-> device copies (CPU: memcpy). CopyToDevice may return before the
  // copy is done only if the host data is not touched until Synchronize().
  virtual void CopyToDevice(const DeviceBuffer& dst, size_t dst_offset, const void* src,
                            size_t bytes) = 0;
  virtual void CopyToHost(void* dst, const DeviceBuffer& src, size_t src_offset, size_t bytes) = 0;
  virtual void CopyDeviceToDevice(const DeviceBuffer& dst, size_t dst_offset,
                                  const DeviceBuffer& src, size_t src_offset, size_t bytes) = 0;
  // Waits until every enqueued op and copy has finished. Ops and copies
  // return nothing; an error one meets (a device fault, a copy outside its
  // buffer, a weight the kernels cannot use) is sticky: the first one is
  // returned here from then on, and the backend's results are not to be
  // trusted (a device that faulted stays faulted).
  virtual Status Synchronize() = 0;
  // Runs `ops`, the launches of one forward step. A GPU backend may record
  // them as a device graph under `key` and replay that for a later step of
  // the same key: the caller's promise that the ops, their shapes and every
  // address they use are the same (data uploaded beforehand may differ).
  // key 0: never recorded.
  virtual void Enqueue(uint64_t key, const std::function<void()>& ops) {
    (void)key;
    ops();
  }
  // Steps Enqueue replayed from a recorded device graph so far.
  virtual uint64_t graph_replays() const { return 0; }

  // ---- weights -------------------------------------------------------------
  // A view of `host` usable by this backend's kernels: CPU returns `host`
  // itself (zero-copy; it must outlive the model), CUDA copies it to device.
  virtual Result<WeightMatrix> PrepareWeight(const WeightMatrix& host) = 0;
  // Releases what PrepareWeight allocated for `w` (CPU: nothing).
  virtual void ReleaseWeight(const WeightMatrix& w) = 0;

  virtual Precision precision() const = 0;
  virtual void set_precision(Precision p) = 0;

  // True when MatMul computes prompt and generated rows differently: callers
  // then split a batch that mixes them into runs of one kind.
  virtual bool RowKindMatters() const = 0;

  // ---- ops (all pointers are device addresses) ------------------------------
  // y[n, w.rows] = x[n, w.cols] · Wᵀ, at precision(); every row is of `rows`.
  virtual void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, RowKind rows) = 0;
  // MatMul of several weights of the same cols over the same x (a layer's
  // q/k/v, or gate/up): a GPU may run them as one launch. Each y is what
  // MatMul gives, bit for bit.
  struct MatMulJob {
    const WeightMatrix* w;
    float* y;
  };
  virtual void MatMuls(std::span<const MatMulJob> jobs, const float* x, int64_t n, RowKind rows) {
    for (const MatMulJob& j : jobs) MatMul(*j.w, x, n, j.y, rows);
  }
  // As MatMul, for MoE router logits: activations are never rounded (kFast
  // for kFastInt8 / kFastBf16), so that which experts a token goes to does
  // not hinge on activation rounding.
  virtual void RouterMatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) = 0;
  // out[i, :] = row ids[i] - first_id of w (dequantized) * scale. An id
  // outside [first_id, first_id + w.rows) gives a row of zeros: w is then one
  // rank's slice of a vocabulary-parallel table (model/tensor_parallel.h).
  virtual void Embedding(const WeightMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
                         int64_t first_id = 0) = 0;
  // out[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * (add_one ? 1 + w : w)
  // over `rows` rows of `dim` values at `stride` (in and out alike); in place allowed.
  virtual void RmsNorm(const float* x, int64_t rows, int64_t dim, int64_t stride,
                       const float* weight, float eps, bool add_one, float* out) = 0;
  // RmsNorm of every head of every token, in place: n_tokens rows at
  // token_stride, each n_heads rows of head_dim values one after another
  // (q or k inside fused qkv rows); one op whatever the number of tokens.
  virtual void RmsNormHeads(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                            int64_t token_stride, const float* weight, float eps, bool add_one) = 0;
  // Rotates x[n_tokens, row_stride] in place: head h of token t at position
  // positions[t] by angles positions[t] * inv_freq[i] (inv_freq: rot_dim/2).
  virtual void Rope(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                    const RopeParams& p) = 0;
  // As Rope, with a table per token: token t uses inv_freq + table_of[t] *
  // table_stride (length-dependent RoPE: a table per sequence); one op
  // whatever the number of sequences.
  virtual void RopeTables(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                          int64_t table_stride, const int32_t* table_of, const RopeParams& p) = 0;
  // Writes k/v[n, kv_dim] (row strides k_stride/v_stride) into cache rows
  // slots[i] of k_cache/v_cache ([n_slots, kv_dim] of kv_dtype: F32, BF16,
  // F16 or F8_E4M3, rounded to nearest even, FP8 saturated at +-448; slot =
  // block * block_size + offset).
  virtual void StoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride,
                       int64_t n, int64_t kv_dim, const int32_t* slots, void* k_cache,
                       void* v_cache, DType kv_dtype) = 0;
  // Two steps of a decoder layer in one op where a backend fuses them (a
  // GPU: one launch instead of two or three); each gives what the steps
  // it stands for give, bit for bit on the same backend.
  // x[r, :] += t[r, :], then out = RmsNorm(x) over rows of dim contiguous values.
  virtual void AddRmsNorm(float* x, const float* t, int64_t rows, int64_t dim, const float* weight, float eps,
                          bool add_one, float* out) {
    Add(x, t, rows * dim, x);
    RmsNorm(x, rows, dim, dim, weight, eps, add_one, out);
  }
  // Rope of q (rq) and k (rk) of n tokens, then StoreKv of k and v.
  virtual void RopeStoreKv(float* q, const RopeParams& rq, float* k, const RopeParams& rk, const float* v,
                           int64_t v_stride, int64_t n, const int32_t* positions, const float* inv_freq,
                           int64_t kv_dim, const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype) {
    Rope(q, n, positions, inv_freq, rq);
    Rope(k, n, positions, inv_freq, rk);
    StoreKv(k, rk.row_stride, v, v_stride, n, kv_dim, slots, k_cache, v_cache, kv_dtype);
  }
  // Causal attention for a batch of sequences reading K/V (of p.kv_dtype)
  // through block tables. out[q_row + i, h * head_dim ...] for every head h.
  virtual void Attention(const float* q, const void* k_cache, const void* v_cache,
                         const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p,
                         float* out) = 0;
  // out[r, c] = act(gate[r, c]) * up[r, c], r < rows, c < cols; row strides given.
  virtual void GatedActivation(Activation act, const float* gate, int64_t gate_stride,
                               const float* up, int64_t up_stride, int64_t rows, int64_t cols,
                               float* out, int64_t out_stride) = 0;
  // Bidirectional attention of encoders over dense q/k/v rows (no cache, no
  // mask): row i of a sequence, head h, attends to every key of its own
  // sequence: out = Σ_j softmax_j(scale · (q_i·k_j + relative terms)) v_j
  // (EncoderAttentionParams::relative). seqs: device
  // EncoderSeq[n_seqs]. A row's result does not depend on the other sequences.
  virtual void EncoderAttention(const float* q, const float* k, const float* v, const EncoderSeq* seqs,
                                int64_t n_seqs, const EncoderAttentionParams& p, float* out) = 0;
  // out[r, :] = (x[r, :] - mean) / sqrt(var + eps) * weight + bias over
  // `rows` rows of `dim` values at `stride` (in and out alike); in place allowed.
  virtual void LayerNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
                         const float* bias, float eps, float* out) = 0;
  // x[i] = 0.5 · x[i] · (1 + erf(x[i] / √2)), i < n (BERT's exact "gelu").
  virtual void Gelu(float* x, int64_t n) = 0;
  // x[i] = tanh(x[i]), i < n.
  virtual void Tanh(float* x, int64_t n) = 0;
  // out[i] = a[i] + b[i], i < n (out may alias a or b).
  virtual void Add(const float* a, const float* b, int64_t n, float* out) = 0;
  // x[r, c] += bias[c] for rows of `cols` values at `stride`.
  virtual void AddBias(float* x, int64_t rows, int64_t cols, int64_t stride,
                       const float* bias) = 0;
  // x[i] *= s.
  virtual void Scale(float* x, int64_t n, float s) = 0;
  // x[i] = value.
  virtual void Fill(float* x, int64_t n, float value) = 0;
  // x[i] = cap * tanh(x[i] / cap).
  virtual void Softcap(float* x, int64_t n, float cap) = 0;
  // MoE routing over logits[rows, n_experts]: probabilities by softmax over
  // all experts, the k largest (ties: lower id first) into ids/weights
  // [rows, k] in descending order, renormalized to sum 1 when `renormalize`.
  virtual void TopKRouting(const float* logits, int64_t rows, int64_t n_experts, int64_t k,
                           bool renormalize, int32_t* ids, float* weights) = 0;
  // The experts' FFN over routed tokens, read from the routing where
  // TopKRouting left it (no host round trip): out[t, :] = Σ_j w[t, j] ·
  // down_e(act(gate_e(x_t)) ⊙ up_e(x_t)), e = ids[t, j], for t < n, j < k;
  // ids outside [0, experts) are skipped. Experts in id order, each over its
  // tokens in token order (a deterministic sum). `rows` (host memory, n
  // entries): each token's RowKind, as MatMul takes it.
  virtual void MoeFfn(const MoeExperts& experts, const float* x, int64_t n, const int32_t* ids,
                      const float* weights, int64_t k, std::span<const RowKind> rows,
                      const MoeScratch& scratch, float* out) = 0;
  // dst[i, :] = src[rows[i], :], i < n; `cols` values per row, rows dense.
  virtual void GatherRows(const float* src, int64_t cols, const int32_t* rows, int64_t n,
                          float* dst) = 0;
  // out[r] = the token that row r of x[rows, cols] gives under picks[r]
  // (RowPick; cpu::RowDraw on the row cleaned as cpu::SanitizeLogits does:
  // a greedy row's lowest index of its largest value, a sampled row's draw
  // at its u). A step's tokens leave the device instead of its logits. The
  // same row and pick give the same token whatever the other rows; backends
  // may differ from the CPU in the rounding of the weights' exponentials and
  // sums (a draw within ~1e-6 of a boundary between two tokens).
  virtual void PickRows(const float* x, int64_t rows, int64_t cols, const RowPick* picks, int32_t* out) = 0;
  // Whether steps should bring back PickRows' tokens (false: their logits,
  // for the host to sample).
  virtual bool PicksRows() const { return true; }
};

}  // namespace llmhost
