// Model: a decoder-only language model bound to a Backend, and its batched
// forward step.
//
//   auto model = Model::Load("models/qwen3", &backend);
//   auto cache = model->CreateKvCache(n_blocks);
//   KvSequence a, b;
//   ForwardItem items[] = {{&a, prompt_a, LogitsRows::kLast},   // prefill
//                          {&b, {next_b}, LogitsRows::kLast}};  // decode
//   ForwardOutput out;
//   model->Forward(items, *cache, &out);   // out.Row(0, 0): a's next-token logits
//
// One Forward call runs any mix of prefills (many new tokens) and decodes
// (one new token) of distinct sequences. Each sequence's results depend only
// on its own tokens and cache: rows are computed independently of what else
// is in the batch (continuous batching relies on it).
//
// Thread safety: Forward calls on one Model are serialised by the caller
// (the engine's executor thread); the weights are immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "formats/hf_config.h"
#include "model/arch.h"
#include "model/kv_cache.h"
#include "model/tensor_parallel.h"
#include "model/weight_source.h"
#include "util/status.h"

namespace llmhost {

class ScriptedOutput;
class ThreadTeam;

enum class LogitsRows { kNone, kLast, kAll };

struct ForwardItem {
  KvSequence* seq = nullptr;           // appended to: positions seq->length ...
  std::span<const int32_t> tokens;     // the new tokens (at least one)
  LogitsRows logits = LogitsRows::kLast;
  // Positions from here on hold generated tokens, those before it the prompt
  // (RowKind; the backend may compute the two kinds differently). The
  // default: every token is a prompt token.
  int64_t generated_from = INT64_MAX;
};

// The size a forward pass lays its workspace out for, given a count of
// tokens, sequences, logits rows or block-table entries: powers of two up to
// 64, then multiples of 64. Batches in one bucket share the workspace's
// addresses; the rounding costs at most 2x for small batches, <= 1/16 beyond.
int64_t BatchBucket(int64_t n);

struct ForwardOutput {
  // Asked for by the caller before Forward (kept by it). The rows are the
  // items' LogitsRows either way.
  bool want_logits = true;   // false: the output head is skipped, `logits` stays empty
  bool want_hidden = false;  // also return the rows' final normed hidden states (the head's input)
  // This output is kept for step after step (an engine's): its logits may
  // live in the backend's ResultAllocator memory (page-locked on a GPU, slow
  // to allocate and free, so not for an output made per call).
  bool reused = false;
  // With want_logits: picks[r] (one per logits row, in row order, or none)
  // asks for row r's token to be chosen where the logits are
  // (Backend::PickRows) and sent back in `picked` instead of the row. The
  // logits come back too only where some row has no pick (`picked` -1). A
  // model that cannot (a scripted one, a tensor-parallel group) or a backend
  // that does not (Backend::PicksRows) leaves `picked` empty and returns the
  // logits.
  std::vector<std::optional<RowPick>> picks;

  int64_t vocab = 0;
  std::vector<int32_t> picked;     // per row where `picks` was honoured: its token, or -1
  HostFloats logits;               // [rows, vocab], host memory (page-locked on a GPU)
  std::vector<int64_t> first_row;  // per item: its first row in `logits` / `hidden` (-1: none)
  std::vector<int64_t> n_rows;     // per item: 0, 1 (kLast) or its token count (kAll)
  int64_t hidden_size = 0;
  std::vector<float> hidden;  // [rows, hidden_size] when want_hidden, host memory
  const float* Row(size_t item, int64_t j) const {
    return logits.data() + (first_row[item] + j) * vocab;
  }
  const float* HiddenRow(size_t item, int64_t j) const {
    return hidden.data() + (first_row[item] + j) * hidden_size;
  }
};

// Per-layer weights: matrices are prepared views (zero-copy on the CPU),
// norms and biases f32 device buffers (invalid when the model has none).
struct LayerWeights {
  DeviceBuffer attn_norm, post_attn_norm, pre_ffn_norm, post_ffn_norm, q_norm, k_norm;
  WeightMatrix q, k, v, qkv, o;  // qkv when fused (q, k, v unused)
  DeviceBuffer q_bias, k_bias, v_bias, o_bias;
  WeightMatrix gate, up, gate_up, down;  // gate_up when fused
  DeviceBuffer gate_bias, up_bias, down_bias;
  WeightMatrix router;                   // MoE: [n_experts, hidden]
  struct Expert {
    WeightMatrix gate, up, down;
  };
  std::vector<Expert> experts;
  MoeExperts moe;  // the backend's view of `experts` (MoeFfn), built once at load
};

class Model {
 public:
  // PATH: a model directory (config.json + safetensors, MLX-quantized or
  // not), a .gguf file or a random-weights spec ("random:...",
  // model/random_model.h). `backend` must outlive the model.
  static Result<std::unique_ptr<Model>> Load(const std::string& path, Backend* backend);
  // The model split over several backends (tensor parallelism,
  // model/tensor_parallel.h): one rank each, in order; one backend is Load.
  // The backends must outlive the model.
  static Result<std::unique_ptr<Model>> Load(const std::string& path, std::span<Backend* const> backends);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelSpec& spec() const { return spec_; }
  const ModelConfig& config() const { return config_; }
  Backend* backend() const { return backend_; }  // rank 0's when split
  // Ranks of its tensor-parallel group (1: one backend) and their backends.
  int tensor_parallel() const { return shards_.empty() ? 1 : static_cast<int>(shards_.size()); }
  std::vector<Backend*> backends() const;
  const std::string& path() const { return path_; }
  bool is_gguf() const { return gguf_; }
  int64_t vocab_size() const { return spec_.vocab; }
  // Bytes of the weight tensors in the files (what the forward pass reads).
  uint64_t weight_bytes() const { return weight_bytes_; }
  // Embedding scale actually applied (Gemma: sqrt(hidden) in the table's dtype).
  float embedding_scale() const { return embed_scale_; }

  // A cache sized for this model: n_blocks blocks of block_size positions,
  // K and V in `dtype` (F32: the reference path's; BF16 / F16 halve it).
  // max_blocks > n_blocks: a cache that can grow to that many (KvCache::Grow).
  Result<std::unique_ptr<KvCache>> CreateKvCache(int64_t n_blocks, int64_t block_size = kDefaultKvBlockSize,
                                                 DType dtype = DType::kF32, int64_t max_blocks = 0) const;
  // The model's own 16-bit type for a KV cache: BF16 when its embedding table
  // (or an MLX table's scales) is bf16, F16 otherwise (f16 and f32 tables,
  // GGUF files), as llama.cpp keeps K/V.
  DType Native16BitType() const;

  // Runs the new tokens of every item through the model, storing their K/V
  // in `cache` (blocks are reserved as needed; ResourceExhausted leaves every
  // sequence unchanged), and returns the requested logits rows. Items must
  // name distinct sequences. InvalidArgument for an empty item, a token id
  // outside [0, vocab) or a sequence past the cache's reach.
  Status Forward(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out);
  // Frees the activation workspace (it is re-allocated by the next Forward).
  void ReleaseWorkspace();

 private:
  Model() = default;
  static Result<std::unique_ptr<Model>> LoadScripted(std::unique_ptr<Model> m, const std::string& path);
  // Opens path's weights, filling config_ (and gguf_); the spec's GGUF
  // RoPE details come back through the pointers.
  Result<std::unique_ptr<WeightSource>> OpenSource(const std::string& path, bool* interleaved,
                                                   std::vector<float>* freq_factors);
  // spec_ from config_ and the GGUF RoPE details; weight_bytes_ from the source.
  Status BuildSpec(bool interleaved, std::vector<float> freq_factors, const WeightSource& src);
  Status Bind(WeightSource& src);
  // Embedding, head and final norm; then each layer (a split model binds
  // layer by layer over its ranks, so a generated tensor is made once).
  Status BindTop(WeightSource& src);
  Status BindLayer(WeightSource& src, int64_t i, LayerWeights* w);
  // How a rank of a split model keeps a matrix (model/tensor_parallel.h).
  enum class Split {
    kWhole,   // every rank all of it
    kOut,     // column-parallel: its share of the rows
    kKv,      // k or v: the rows of its KV heads (KvRows)
    kIn,      // row-parallel: its share of the columns
    kQkv,     // fused q | k | v rows: its share of each
    kGateUp,  // fused gate | up rows: its share of each
    kVocab,   // its vocabulary rows (shard_.vocab)
  };
  Result<WeightMatrix> Prepare(WeightSource& src, const std::string& module, int64_t rows, int64_t cols,
                               Split split = Split::kWhole);
  // The rank's part of `host` as this backend's weight.
  Result<WeightMatrix> PrepareSplit(const WeightMatrix& host, Split split);
  Result<DeviceBuffer> Upload(const std::vector<float>& host, const std::string& tag);
  // A vector whole, or (kOut) this rank's share of it.
  Result<DeviceBuffer> LoadVector(WeightSource& src, const std::string& name, int64_t n,
                                  Split split = Split::kWhole);
  Result<DeviceBuffer> OptionalVector(WeightSource& src, const std::string& name, int64_t n);
  // The spec the stored tensors have (the unsplit model's).
  const ModelSpec& stored_spec() const { return shard_.full ? *shard_.full : spec_; }
  Status ForwardSplit(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out);
  Status UploadRopeTables();
  // inv_freq of ropes[rope_index] for a sequence of seq_len positions, with
  // the GGUF frequency factors applied.
  Result<std::vector<float>> RopeTable(int rope_index, int64_t seq_len) const;

  Backend* backend_ = nullptr;
  std::string path_;
  bool gguf_ = false;
  ModelConfig config_;
  ModelSpec spec_;
  std::unique_ptr<WeightSource> source_;  // keeps the mapped files alive
  uint64_t weight_bytes_ = 0;
  float embed_scale_ = 1;

  std::unique_ptr<ScriptedOutput> script_;  // model_type llmhost_scripted: chosen output (model/scripted_model.h)

  WeightMatrix embed_, lm_head_;
  DeviceBuffer final_norm_;
  std::vector<LayerWeights> layers_;
  std::vector<WeightMatrix> prepared_;         // every PrepareWeight result, for release
  std::vector<DeviceBuffer> owned_;            // every device buffer of the weights
  // Per distinct RoPE setting: inv_freq [rot_dim / 2] on the device (static
  // types), and its host computation inputs.
  std::vector<DeviceBuffer> rope_tables_;
  std::vector<int64_t> rope_rot_dim_;
  std::vector<float> rope_scaling_;
  DeviceBuffer workspace_;  // activations and batch metadata, grown on demand
  DeviceBuffer staging_;    // the backend's host memory the batch metadata is uploaded from, grown on demand

  // Tensor parallelism. A rank's model: shard_ says which; host_slices_ keep
  // the column slices its CPU backend reads in place. The group's model
  // (the one callers see) holds the ranks, their collectives and threads;
  // declared last, so that the ranks go before the source they may view.
  ShardInfo shard_;
  std::vector<std::vector<uint8_t>> host_slices_;
  std::vector<std::unique_ptr<Collective>> collectives_;
  std::vector<std::unique_ptr<Model>> shards_;
  std::unique_ptr<ThreadTeam> team_;

  friend class ForwardPass;
};

// Resident set size of this process (VmRSS from /proc/self/status), bytes;
// 0 when unavailable.
uint64_t ResidentBytes();

}  // namespace llmhost
