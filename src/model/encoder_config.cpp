#include "model/encoder_config.h"

#include <algorithm>

namespace llmhost {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsXlmRoberta(const ModelConfig& c) {
  return c.model_type == "xlm-roberta" || c.model_type == "roberta";
}

}  // namespace

bool IsEncoderConfig(const ModelConfig& c) {
  if (c.model_type == "bert" || IsXlmRoberta(c)) return true;
  return std::any_of(c.architectures.begin(), c.architectures.end(), [](const std::string& a) {
    return a.rfind("Bert", 0) == 0 || a.rfind("XLMRoberta", 0) == 0;
  });
}

Result<EncoderConfig> ParseEncoderConfig(const ModelConfig& c, const std::string& dir) {
  const std::string where = dir + "/config.json: ";
  if (c.model_type != "bert" && !IsXlmRoberta(c)) {
    return Status::NotSupported(where + "model_type '" + c.model_type +
                                "' is not an encoder this server runs (bert, xlm-roberta)");
  }
  EncoderPositions positions = EncoderPositions::kAbsolute;
  if (c.position_embedding_type == "relative_key") {
    positions = EncoderPositions::kRelativeKey;
  } else if (c.position_embedding_type == "relative_key_query") {
    positions = EncoderPositions::kRelativeKeyQuery;
  } else if (!c.position_embedding_type.empty() && c.position_embedding_type != "absolute") {
    return Status::NotSupported(where + "position_embedding_type '" + c.position_embedding_type +
                                "' is not supported (absolute, relative_key, relative_key_query)");
  }
  if (c.hidden_act != "gelu") {
    return Status::NotSupported(where + "hidden_act '" + c.hidden_act + "' is not supported (only 'gelu')");
  }
  EncoderConfig e;
  e.model_type = c.model_type;
  e.hidden = c.hidden_size;
  e.layers = c.num_hidden_layers;
  e.heads = c.num_attention_heads;
  e.inter = c.intermediate_size;
  e.vocab = c.vocab_size;
  e.max_positions = c.max_position_embeddings;
  e.type_vocab = std::max<int64_t>(c.type_vocab_size, 1);
  e.eps = static_cast<float>(c.layer_norm_eps);
  e.positions = positions;
  if (e.heads <= 0 || e.hidden % e.heads != 0) {
    return Status::InvalidArgument(where + "hidden_size " + std::to_string(e.hidden) +
                                   " is not a multiple of num_attention_heads " + std::to_string(e.heads));
  }
  e.head_dim = e.hidden / e.heads;
  if (e.inter <= 0 || e.max_positions <= 0) {
    return Status::InvalidArgument(where + "intermediate_size and max_position_embeddings must be positive");
  }
  if (IsXlmRoberta(c)) {
    e.padding_idx = c.pad_token_id.value_or(1);
    if (e.padding_idx < 0 || e.padding_idx + 1 >= e.max_positions) {
      return Status::InvalidArgument(where + "pad_token_id " + std::to_string(e.padding_idx) +
                                     " leaves no positions of max_position_embeddings " +
                                     std::to_string(e.max_positions));
    }
  }
  e.max_tokens = e.max_positions - (e.padding_idx + 1);
  const bool classifier = std::any_of(c.architectures.begin(), c.architectures.end(), [](const std::string& a) {
    return EndsWith(a, "ForSequenceClassification");
  });
  if (classifier) {
    if (c.num_labels != 1) {
      return Status::NotSupported(where + "a sequence classifier with " + std::to_string(c.num_labels) +
                                  " labels is not a reranker (one label expected)");
    }
    e.kind = EmbeddingKind::kReranker;
  }
  return e;
}

}  // namespace llmhost
