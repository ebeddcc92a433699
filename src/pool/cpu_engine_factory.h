// The engine factory of `llmhost serve`: loads a model onto its device's
// backend, the CPU or a GPU (Model, Tokenizer, chat template and bos/eos from
// the directory or the GGUF metadata, generation_config.json) and starts its
// Engine.
//
// Resident estimate (the admission size), in the budget of the device the
// model computes on (host memory for the CPU, the GPU's memory for a GPU):
//   weights × 1.05 (on a GPU: as it stores them, GpuWeightBytes)
//   + the KV cache's floor (engine.h: kv_floor_tokens, ~1K tokens; the cache
//     grows beyond it on demand, each growth claimed from the pool)
//   + one step's activation workspace (a prefill chunk beside the decodes).
// A model whose settings make it an embedder or a reranker loads without a
// chat Engine instead (pool/embedding_loader.h, with its own estimate).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "backend/device.h"
#include "engine/engine.h"
#include "pool/loaded_engine.h"
#include "util/thread_pool.h"

namespace llmhost {

// The dimensions an estimate needs, from config.json or GGUF metadata.
struct ModelShape {
  int64_t n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int64_t hidden = 0, intermediate = 0, vocab = 0, context = 0;
};
Result<ModelShape> ReadModelShape(const DiscoveredModel& model);

// The KV memory Engine::Create commits for this shape at start (K and V of
// options.kv_dtype): kv_blocks when fixed, else the floor.
uint64_t KvPoolBytes(const ModelShape& shape, const EngineOptions& options);
// One step's activations: a prefill chunk plus one row per running request.
uint64_t WorkspaceBytes(const ModelShape& shape, const EngineOptions& options);

// The bytes of a model's weights once a GPU holds them: as stored, but GGUF
// tensors of types the GPU's kernels do not read in place at 4 bytes a
// weight (backend/device.h: CudaReadsGgmlInPlace).
Result<uint64_t> GpuWeightBytes(const DiscoveredModel& model);

// A GPU model's prompt tokens a step (serve's --prefill-chunk-tokens sets
// both): at 128 streams of 512-token prompts on an H100, 512 a step put a
// decode of every running stream beside each prompt (docs/benchmarks.md).
constexpr int64_t kGpuPrefillChunkTokens = 2048;

struct CpuEngineFactoryOptions {
  EngineOptions engine;  // engine.kv_dtype is set per model from kv_dtype below
  // Prompt tokens a step for a model on a GPU (engine.prefill_chunk_tokens is
  // the CPU's): a step's generated rows read every weight once whatever the
  // chunk, so a GPU takes bigger chunks and fewer such steps.
  int64_t gpu_prefill_chunk_tokens = kGpuPrefillChunkTokens;
  DeviceSpec device;     // where models compute unless their settings say otherwise
  int tensor_parallel = 1;  // GPUs a model is split over unless its settings say otherwise
  Precision precision = Precision::kFast;
  // The KV cache's element type; nullopt ("auto"): each model's own 16-bit
  // type (Model::Native16BitType). F32 by default: the reference path.
  std::optional<DType> kv_dtype = DType::kF32;
  ThreadPool* threads = nullptr;  // null: ThreadPool::Default()
  // Hashes each loaded model's weights in the background for the block
  // store's keys (kv/weights_hasher.h); null with a block store: each engine
  // hashes its weights while it starts.
  std::shared_ptr<WeightsHasher> hasher;
};

class CpuEngineFactory final : public EngineFactory {
 public:
  explicit CpuEngineFactory(CpuEngineFactoryOptions options);
  BudgetBytes ResidentEstimate(const DiscoveredModel& model, const ModelSettings& settings) override;
  Result<std::unique_ptr<LoadedEngine>> Load(const DiscoveredModel& model, const ModelSettings& settings,
                                             const std::atomic<bool>& abort,
                                             std::shared_ptr<KvBudget> kv_budget, int cuda_device) override;

 private:
  // The model's `device` setting, else the server's.
  DeviceSpec DeviceFor(const ModelSettings& settings) const;
  int TensorParallelFor(const ModelSettings& settings) const;
  EngineOptions EngineOptionsFor(const ModelSettings& settings) const;
  CpuEngineFactoryOptions options_;
};

}  // namespace llmhost
