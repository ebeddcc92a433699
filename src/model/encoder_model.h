// EncoderModel: BERT and XLM-RoBERTa encoders as EmbeddingModels, computed
// through the Backend ops (so on the CPU and CUDA backends alike).
//
// Loads a model directory: config.json (model_type bert / xlm-roberta,
// model/encoder_config.h), model.safetensors (names with or without the
// `bert.` / `roberta.` prefix), tokenizer.json, and the pooling files
// (model/encoder_pooling.h). A *ForSequenceClassification config with one
// label is a reranker: Score runs the classification head (dense, tanh,
// out_proj) on each input's first token.
//
// Forward pass of a batch: the inputs' tokens are packed into one set of
// rows (no padding); word + position (+ token type) embeddings and their
// LayerNorm; per layer, q/k/v with biases, bidirectional attention within
// each input, output dense + residual + LayerNorm, intermediate dense +
// GELU, output dense + residual + LayerNorm (post-norm). Every op is per
// row or per input, so an input's result does not depend on its batch.
//
// Thread safety: Tokenize* from any thread; Embed / Score / HiddenStates
// serialized by the caller.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/embedding_model.h"
#include "util/status.h"

namespace llmhost {

class EncoderModel : public EmbeddingModel {
 public:
  // The last hidden state of every input: [Σ len, hidden] row-major, the
  // inputs' rows one after another (what transformers' last_hidden_state
  // holds per input). InvalidArgument as Embed.
  virtual Result<std::vector<float>> HiddenStates(std::span<const EmbeddingInput> inputs) = 0;
};

// NotFound / InvalidArgument / NotSupported naming the file and field at
// fault. `backend` must outlive the model (and, on the CPU, the directory's
// mapped weights are used in place).
Result<std::unique_ptr<EncoderModel>> LoadEncoder(const std::string& dir, Backend* backend);

// LoadEncoder as the pool takes it.
Result<std::unique_ptr<EmbeddingModel>> LoadEncoderModel(const std::string& dir, Backend* backend);

// True when `dir` has a config.json whose model_type or architectures name
// an encoder (bert, xlm-roberta); false for anything else or unreadable.
bool IsEncoderModelDir(const std::string& dir);

}  // namespace llmhost
