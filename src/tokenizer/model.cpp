#include "tokenizer/model.h"

#include <algorithm>

namespace llmhost::tok {

void Model::AddToVocab(std::string token, TokenId id) {
  if (static_cast<size_t>(id) >= id_to_token_.size()) {
    id_to_token_.resize(static_cast<size_t>(id) + 1);
    has_id_.resize(static_cast<size_t>(id) + 1, false);
  }
  id_to_token_[id] = token;
  has_id_[id] = true;
  vocab_[std::move(token)] = id;
}

Status ReadVocabObject(const Json& j, const std::string& ctx,
                       std::vector<std::pair<std::string, TokenId>>* out) {
  if (!j.is_object()) return Status::InvalidArgument(ctx + ": expected an object {token: id}");
  out->reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_integer())
      return Status::InvalidArgument(ctx + "[\"" + it.key() + "\"]: expected an integer id");
    int64_t id = it.value().get<int64_t>();
    if (id < 0 || id > kMaxTokenId)
      return Status::InvalidArgument(ctx + "[\"" + it.key() + "\"]: id " + std::to_string(id) +
                                     " out of range");
    out->emplace_back(it.key(), static_cast<TokenId>(id));
  }
  // The reverse map is a vector indexed by id: refuse wildly sparse ids
  // (a corrupt file) rather than allocate for them.
  int64_t max_id = -1;
  for (const auto& [tok, id] : *out) max_id = std::max<int64_t>(max_id, id);
  if (max_id >= 4 * static_cast<int64_t>(out->size()) + 1024)
    return Status::InvalidArgument(ctx + ": id " + std::to_string(max_id) + " is far beyond the " +
                                   std::to_string(out->size()) + " entries (corrupt vocabulary?)");
  return Status::OK();
}

Result<std::unique_ptr<Model>> ParseModel(const Json& j, const std::string& ctx) {
  if (!j.is_object()) return Status::InvalidArgument(ctx + ": expected an object");
  std::string type;
  RETURN_IF_ERROR(ReadString(j, "type", ctx, &type));
  if (type.empty()) {
    // Untagged (old) files: guess from the fields, as HF's deserializer does.
    if (Field(j, "merges") != nullptr) type = "BPE";
    else if (Field(j, "max_input_chars_per_word") != nullptr) type = "WordPiece";
    else if (const Json* v = Field(j, "vocab"); v != nullptr && v->is_array()) type = "Unigram";
    else type = "WordLevel";
  }
  if (type == "BPE") return ParseBpe(j, ctx);
  if (type == "WordPiece") return ParseWordPiece(j, ctx);
  if (type == "Unigram") return ParseUnigram(j, ctx);
  if (type == "WordLevel") return ParseWordLevel(j, ctx);
  return Status::NotSupported(ctx + ": model type '" + type + "' is not supported");
}

}  // namespace llmhost::tok
