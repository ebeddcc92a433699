// DecoderEmbedder: a decoder-only language model used as an embedder or a
// reranker, the way Qwen3-Embedding and Qwen3-Reranker are.
//
//   Embedder: the final normed hidden state of the input's last token
//   (last-token pooling; the tokenizer's post-processor appends the EOS that
//   Qwen3-Embedding pools), L2-normalized. A query is embedded as
//   "Instruct: {instruction}\nQuery:{text}" when an instruction is set.
//
//   Reranker: the pair is laid out in Qwen3-Reranker's chat prompt (a system
//   line asking for "yes" or "no", then "<Instruct>: ...\n<Query>: ...\n
//   <Document>: ...", the assistant turn opened with an empty think block);
//   the score is P(yes) = softmax over the next-token logits of "yes" and
//   "no".
//
// Inputs are run in steps of at most step_tokens new tokens (a long input
// continues across steps through its KV sequence), so one call's workspace
// stays bounded; the KV cache holds every input of a call at once.
//
// Thread safety: as EmbeddingModel (Embed / Score serialized by the caller).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "model/embedding_model.h"
#include "model/l2_normalize.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llmhost {

// Qwen3-Reranker's default task.
inline constexpr const char* kDefaultRerankInstruction =
    "Given a web search query, retrieve relevant passages that answer the query";

// Positions a KV block of its cache holds: each input takes whole blocks.
inline constexpr int64_t kDecoderEmbedderKvBlock = 64;

struct DecoderEmbedderOptions {
  EmbeddingKind kind = EmbeddingKind::kEmbedder;
  // Embedders: prefixed to queries ("" : none). Rerankers: the <Instruct>
  // line ("": kDefaultRerankInstruction).
  std::string instruction;
  int64_t max_tokens = 0;          // 0: the model's context (max_position_embeddings)
  int64_t step_tokens = 2048;      // new tokens per forward step
  // The KV cache's element type; nullopt: the model's own 16-bit type.
  std::optional<DType> kv_dtype;
};

class DecoderEmbedder final : public EmbeddingModel {
 public:
  // `model` and `tokenizer` must outlive the embedder. A reranker needs the
  // words "yes" and "no": each a token of the vocabulary, else the first
  // token of its encoding (distinct); InvalidArgument otherwise.
  static Result<std::unique_ptr<DecoderEmbedder>> Create(Model* model, const Tokenizer* tokenizer,
                                                         DecoderEmbedderOptions options);

  EmbeddingKind kind() const override { return options_.kind; }
  int64_t dim() const override;
  int64_t max_tokens() const override { return options_.max_tokens; }
  int64_t vocab() const override { return model_->vocab_size(); }
  bool normalized() const override { return true; }
  EmbeddingInput Tokenize(std::string_view text, bool query) const override;
  EmbeddingInput TokenizePair(std::string_view query, std::string_view document) const override;
  Result<std::vector<std::vector<float>>> Embed(std::span<const EmbeddingInput> inputs) override;
  Result<std::vector<float>> Score(std::span<const EmbeddingInput> inputs) override;

  int32_t yes_token() const { return yes_; }
  int32_t no_token() const { return no_; }

 private:
  DecoderEmbedder(Model* model, const Tokenizer* tokenizer, DecoderEmbedderOptions options)
      : model_(model), tokenizer_(tokenizer), options_(std::move(options)) {}
  // Runs every input through the model; per input, its last token's row:
  // the hidden state (`hidden`) or the logits (otherwise).
  Result<std::vector<std::vector<float>>> LastRows(std::span<const EmbeddingInput> inputs, bool hidden);
  Status CheckInputs(std::span<const EmbeddingInput> inputs) const;
  Status EnsureCache(int64_t blocks);

  Model* model_;
  const Tokenizer* tokenizer_;
  DecoderEmbedderOptions options_;
  int32_t yes_ = -1, no_ = -1;
  std::unique_ptr<KvCache> cache_;  // grown to the largest call's needs
};

}  // namespace llmhost
