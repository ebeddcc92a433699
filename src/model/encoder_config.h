// EncoderConfig: what an encoder model directory's config.json says, checked
// for the BERT / XLM-RoBERTa forward pass model/encoder_model.h runs.
#pragma once

#include <cstdint>
#include <string>

#include "formats/hf_config.h"
#include "model/embedding_model.h"
#include "util/status.h"

namespace llmhost {

// How an encoder encodes positions (config.json's position_embedding_type):
// learned absolute embeddings added to the input, or BERT's relative
// distance embeddings inside attention (relative_key: q·R; relative_key_query:
// q·R + k·R).
enum class EncoderPositions { kAbsolute, kRelativeKey, kRelativeKeyQuery };

struct EncoderConfig {
  std::string model_type;  // "bert" or "xlm-roberta"
  EmbeddingKind kind = EmbeddingKind::kEmbedder;
  int64_t hidden = 0, layers = 0, heads = 0, head_dim = 0, inter = 0;
  int64_t vocab = 0, max_positions = 0, type_vocab = 0;
  float eps = 1e-12f;
  EncoderPositions positions = EncoderPositions::kAbsolute;
  // XLM-R numbers positions from pad_token_id + 1 (and gives padding tokens
  // position pad_token_id); BERT from 0. -1: BERT's numbering.
  int64_t padding_idx = -1;
  // The most tokens one input may have (positions left after the offset).
  int64_t max_tokens = 0;
};

// True when config.json's model_type or architectures name an encoder this
// layer runs (bert, xlm-roberta).
bool IsEncoderConfig(const ModelConfig& c);

// InvalidArgument for missing or inconsistent sizes; NotSupported naming
// what is not run here (another model_type, a position_embedding_type
// other than absolute / relative_key / relative_key_query, an activation
// other than gelu, a classifier with more than one label).
Result<EncoderConfig> ParseEncoderConfig(const ModelConfig& c, const std::string& dir);

}  // namespace llmhost
