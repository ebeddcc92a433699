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

// An added token of the vocabulary (tokenizer.json "added_tokens").
struct AddedTokenInfo {
  TokenId id = 0;
  std::string content;
  bool special = false;
};

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
  // Invalid UTF-8 never fails: each invalid byte is encoded as U+FFFD.
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
  // The bytes token `id` adds to a text when it follows other tokens: its
  // string through the decoder alone (byte-level and <0xNN> tokens give raw
  // bytes, possibly part of a UTF-8 character; SentencePiece's U+2581 a
  // space). Special tokens give their text. nullopt for an unknown id.
  virtual std::optional<std::string> TokenBytes(TokenId id) const = 0;

  // Encodes a pair (e.g. query + document for a cross-encoder) as HF does:
  // each text alone, then the post-processor's pair template when
  // `add_special` (else the two id lists concatenated).
  virtual std::vector<TokenId> EncodePair(std::string_view a, std::string_view b,
                                          bool add_special) const {
    std::vector<TokenId> ids = Encode(a, add_special);
    std::vector<TokenId> second = Encode(b, add_special);
    ids.insert(ids.end(), second.begin(), second.end());
    return ids;
  }
  // The added tokens (empty when the vocabulary has none).
  virtual std::vector<AddedTokenInfo> AddedTokens() const { return {}; }
  // The ids the post-processor puts before / after a single sequence when
  // add_special is set (e.g. {BOS} / {}, or {[CLS]} / {[SEP]}).
  virtual std::vector<TokenId> SpecialPrefixIds() const { return {}; }
  virtual std::vector<TokenId> SpecialSuffixIds() const { return {}; }
};

}  // namespace llmhost
