// EmbeddingModel: a model that turns texts into vectors (an embedder) or
// scores (query, document) pairs (a reranker). Two kinds implement it:
// encoders (BERT, XLM-RoBERTa: model/encoder_model.h) and decoder models
// used that way (Qwen3-Embedding / Qwen3-Reranker style: last-token pooling
// of the final normed hidden state, or the "yes"/"no" next-token logits;
// model/decoder_embedder.h).
//
// Inputs are tokenized by the model itself (Tokenize, TokenizePair: special
// tokens, instruction prefixes and pair formats are the model's business),
// so that the engine's executor can batch the token lists of many requests
// into one Embed / Score call.
//
// Thread safety: Tokenize* may be called from any thread; Embed and Score
// are serialized by the caller (engine/embed_executor.h's thread).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace llmhost {

enum class EmbeddingKind { kEmbedder, kReranker };

struct EmbeddingInput {
  std::vector<int32_t> ids;       // with the model's special tokens
  std::vector<int32_t> type_ids;  // token_type_ids; empty: all 0
  // Mean pooling starts at this row: an encoder whose Pooling module says
  // include_prompt false leaves [CLS] and its prompt out (sentence-transformers'
  // prompt_length).
  int64_t pool_from = 0;
};

class EmbeddingModel {
 public:
  virtual ~EmbeddingModel() = default;
  virtual EmbeddingKind kind() const = 0;
  // The length of Embed's vectors (embedders; 0 for rerankers).
  virtual int64_t dim() const = 0;
  // The most tokens one input may have (the model's context).
  virtual int64_t max_tokens() const = 0;
  // Token ids an input may hold: [0, vocab()).
  virtual int64_t vocab() const = 0;
  // Whether Embed's vectors are L2-normalized (a Normalize module, or the
  // decoder embedders' convention).
  virtual bool normalized() const = 0;

  // A text as the model embeds it (with its special tokens and, for a
  // decoder embedder, its instruction prefix when `query` is set; an
  // encoder's sentence-transformers prompt for a query or a document).
  virtual EmbeddingInput Tokenize(std::string_view text, bool query) const = 0;
  // A (query, document) pair as the reranker scores it.
  virtual EmbeddingInput TokenizePair(std::string_view query, std::string_view document) const = 0;

  // Embedders: one pooled vector per input, all inputs in one batched pass;
  // an input's vector does not depend on the others in the batch.
  // InvalidArgument for an empty input or one over max_tokens().
  virtual Result<std::vector<std::vector<float>>> Embed(std::span<const EmbeddingInput> inputs) = 0;
  // Rerankers: one relevance score per input (a TokenizePair result), in one
  // batched pass; higher is more relevant.
  virtual Result<std::vector<float>> Score(std::span<const EmbeddingInput> inputs) = 0;
};

}  // namespace llmhost
