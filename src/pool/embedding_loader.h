// The embedding side of `llmhost serve`'s factory: a model whose settings
// make it an embedder or a reranker (kind "embedding" / "rerank": a decoder
// model used as Qwen3-Embedding / Qwen3-Reranker are, model/decoder_embedder.h)
// gets an EmbeddingModel and its EmbedExecutor instead of a chat Engine.
//
// Resident estimate: weights × 1.05 (as discovered) + one batch's KV cache
// (max_batch_tokens positions, 16-bit) + the workspace of one forward step.
#pragma once

#include <memory>

#include "pool/cpu_engine_factory.h"
#include "pool/loaded_engine.h"

namespace llmhost {

// Tokens one EmbeddingModel call takes (the executor's budget) and one
// forward step runs.
inline constexpr int64_t kEmbedBatchTokens = 8192;
inline constexpr int64_t kEmbedStepTokens = 2048;

// Whether the model is loaded as an embedder or a reranker.
bool IsEmbeddingModel(const DiscoveredModel& model, const ModelSettings& settings);
// The kind a model serves: an encoder's by its files (found at discovery: a
// sequence classifier reranks, another encoder embeds), any other model's by
// its settings.
ModelKind ServesKind(const DiscoveredModel& model, const ModelSettings& settings);

// The bytes beyond the weights an embedding model holds (KV for one batch,
// one step's workspace).
uint64_t EmbeddingRuntimeBytes(const ModelShape& shape);

// Finishes loading `m` (its backend set) as an embedding model: weights,
// tokenizer, the EmbeddingModel and its executor.
Result<std::unique_ptr<LoadedEngine>> LoadEmbeddingEngine(std::shared_ptr<ServedModel> m,
                                                          const ModelSettings& settings,
                                                          const std::atomic<bool>& abort);

}  // namespace llmhost
