// Tokenization models of tokenizer.json ("model"): BPE, WordPiece, Unigram,
// WordLevel. A model turns one pre-tokenized piece into ids and owns the base
// vocabulary. Immutable after loading (caches are internally synchronized).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_util.h"
#include "tokenizer/tokenizer.h"

namespace llmhost::tok {

// Hash for heterogeneous (string_view) lookup in unordered maps.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
using VocabMap = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

// Ids above this are rejected as corrupt (VocabSize allocates per id).
constexpr int64_t kMaxTokenId = (1 << 24) - 1;

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one piece (valid UTF-8, non-empty) to *out.
  virtual void Tokenize(std::string_view piece, std::vector<TokenId>* out) const = 0;

  std::optional<TokenId> TokenToId(std::string_view token) const {
    auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
  }
  // nullptr when the id has no token.
  const std::string* IdToToken(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
    return &id_to_token_[id];
  }
  size_t VocabSize() const { return id_to_token_.size(); }

 protected:
  // Registers token <-> id; the reverse map grows to max id + 1.
  void AddToVocab(std::string token, TokenId id);
  VocabMap vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
};

// Parses the "model" object; the type comes from "type" or, when absent, from
// the fields present (as HF does for old files).
Result<std::unique_ptr<Model>> ParseModel(const Json& j, const std::string& ctx);

Result<std::unique_ptr<Model>> ParseBpe(const Json& j, const std::string& ctx);
Result<std::unique_ptr<Model>> ParseWordPiece(const Json& j, const std::string& ctx);
Result<std::unique_ptr<Model>> ParseUnigram(const Json& j, const std::string& ctx);
Result<std::unique_ptr<Model>> ParseWordLevel(const Json& j, const std::string& ctx);

// Reads a {"token": id, ...} object into (token, id) pairs with id checks.
Status ReadVocabObject(const Json& j, const std::string& ctx,
                       std::vector<std::pair<std::string, TokenId>>* out);

}  // namespace llmhost::tok
