// GGUF-embedded vocabularies (tokenizer.ggml.*). Tokenizer::FromPath calls
// TokenizerFromGguf for .gguf files and for model directories that hold a
// single .gguf and no tokenizer.json.
//
// The vocabulary is turned into the tokenizer.json document that Hugging Face
// would use for the same model, then loaded with Tokenizer::FromJson, so the
// encoding logic is shared with tokenizer.json files:
//   - "gpt2"  (byte-level BPE with merges): the pre-tokenizer regexes that
//     llama.cpp associates with tokenizer.ggml.pre, ByteLevel decoding;
//   - "llama" (SentencePiece BPE with scores): HF's Llama-2 layout, BPE with
//     byte fallback whose merges are derived from the scores as HF's
//     converter derives them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost {

class GgufFile;

// Token types of tokenizer.ggml.token_type (llama.cpp's numbering).
enum GgufTokenType : int32_t {
  kGgufTokenNormal = 1,
  kGgufTokenUnknown = 2,
  kGgufTokenControl = 3,
  kGgufTokenUserDefined = 4,
  kGgufTokenUnused = 5,
  kGgufTokenByte = 6,
};

// The tokenizer.ggml.* metadata of one GGUF file.
struct GgufVocab {
  std::string model;                 // tokenizer.ggml.model: "llama", "gpt2", ...
  std::string pre;                   // tokenizer.ggml.pre ("" when absent)
  std::vector<std::string> tokens;   // id -> token text
  std::vector<float> scores;         // empty, or one per token
  std::vector<int32_t> token_types;  // empty (all normal), or one per token
  std::vector<std::string> merges;   // "a b", gpt2 only
  // Special ids; absent or out of range means "use the model type's default".
  std::optional<int64_t> bos_id, eos_id, unk_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
};

// Reads the tokenizer.ggml.* keys of `file`; errors name the key.
Result<GgufVocab> ReadGgufVocab(const GgufFile& file);

// The Hugging Face tokenizer.json document equivalent to `vocab`.
Result<nlohmann::json> GgufVocabToTokenizerJson(const GgufVocab& vocab);

// Loads the tokenizer stored in the GGUF file at `path`.
Result<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const std::string& path);

}  // namespace llmhost
