// The bodies of the embedding and rerank routes, parsed and checked:
//
//   POST /v1/embeddings (OpenAI): model, input (a string, a list of strings,
//     a list of token ids, or a list of lists of token ids), encoding_format
//     ("float" | "base64"), dimensions, user (ignored), and llmhost's
//     input_type ("query" | "document", default "document": a query gets the
//     model's instruction prefix).
//   POST /api/embed (Ollama): model, input (a string or a list of strings),
//     truncate (default true: an input over the model's context loses tokens
//     at its end), dimensions, keep_alive, options (Ollama's known options
//     are accepted, as Ollama does, and logged as unused; others: 400).
//   POST /api/embeddings (Ollama's older route): model, prompt (one string;
//     empty or absent: the model is only loaded), keep_alive, options as above;
//     answered {"embedding": [...]}.
//   POST /v1/rerank, /rerank, /v2/rerank (Cohere / Jina): model, query,
//     documents (strings or {"text": ...}), top_n, return_documents.
//
// Every bad field is a 400 that names it ("input[2]: ...").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/json_fields.h"

namespace llmhost::server {

struct EmbeddingsRequest {
  std::string model;
  // One of the two: the texts, or the token lists (embedded as given).
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> token_lists;
  bool base64 = false;
  std::optional<int64_t> dimensions;
  bool query = false;
  bool truncate = false;                 // Ollama's default is true
  std::optional<double> keep_alive_s;    // Ollama
  std::vector<std::string> unused_options;  // Ollama's options, none of which applies to embeddings
  size_t size() const { return texts.empty() ? token_lists.size() : texts.size(); }
};

struct RerankRequest {
  std::string model;
  std::string query;
  std::vector<std::string> documents;
  std::optional<int64_t> top_n;
  bool return_documents = false;
};

// The most inputs (or documents) one request may carry.
inline constexpr size_t kMaxEmbeddingInputs = 2048;

MaybeError ParseEmbeddingsRequest(const OJson& body, EmbeddingsRequest* out);
MaybeError ParseOllamaEmbedRequest(const OJson& body, EmbeddingsRequest* out);
MaybeError ParseOllamaEmbeddingsRequest(const OJson& body, EmbeddingsRequest* out);
MaybeError ParseRerankRequest(const OJson& body, RerankRequest* out);

}  // namespace llmhost::server
