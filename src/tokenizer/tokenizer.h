// Tokenizer: the public face of src/tokenizer. Loads a Hugging Face
// `tokenizer.json` (BPE, WordPiece, Unigram with their normalizers,
// pre-tokenizers, post-processors and decoders) or the vocabulary embedded in
// a GGUF file, and encodes/decodes exactly as Hugging Face tokenizers does.
//
// Thread safety: a loaded Tokenizer is immutable; Encode/Decode may be called
// from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

using TokenId = int32_t;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // From a parsed tokenizer.json document.
  static Result<std::unique_ptr<Tokenizer>> FromJson(const nlohmann::json& doc);
  // From a tokenizer.json path, a GGUF file (its embedded vocabulary), or a
  // model directory (its tokenizer.json, else its single .gguf file).
  static Result<std::unique_ptr<Tokenizer>> FromPath(const std::string& path);

  // Encodes text. Special-token strings inside `text` are matched as tokens.
  // `add_special` applies the post-processor (BOS/EOS, [CLS]/[SEP], ...).
  virtual std::vector<TokenId> Encode(std::string_view text, bool add_special) const = 0;

  // Decodes ids to text through the decoder; `skip_special` drops special
  // added tokens. Unknown ids are skipped.
  virtual std::string Decode(std::span<const TokenId> ids, bool skip_special) const = 0;

  // Number of ids (the model vocabulary plus added tokens: max id + 1).
  virtual size_t VocabSize() const = 0;
  // The token string for an id, as stored in the vocabulary.
  virtual std::optional<std::string> IdToToken(TokenId id) const = 0;
  virtual std::optional<TokenId> TokenToId(std::string_view token) const = 0;
  // True for added tokens marked `special` (control tokens).
  virtual bool IsSpecial(TokenId id) const = 0;
};

}  // namespace llmhost
