// WordPiece (BERT): greedy longest-match-first over the vocabulary, later
// pieces carry the continuing-subword prefix ("##"); a piece that cannot be
// covered, or is longer than max_input_chars_per_word, becomes one unk.
#include "tokenizer/model.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace llmhost::tok {
namespace {

class WordPieceModel : public Model {
 public:
  Status Load(const Json& j, const std::string& ctx) {
    const Json* v = Field(j, "vocab");
    if (v == nullptr) return Status::InvalidArgument(ctx + ": missing field 'vocab'");
    std::vector<std::pair<std::string, TokenId>> vocab;
    RETURN_IF_ERROR(ReadVocabObject(*v, ctx + ".vocab", &vocab));
    for (auto& [tok, id] : vocab) {
      max_token_bytes_ = std::max(max_token_bytes_, tok.size());
      AddToVocab(std::move(tok), id);
    }
    RETURN_IF_ERROR(ReadString(j, "unk_token", ctx, &unk_token_));
    RETURN_IF_ERROR(ReadString(j, "continuing_subword_prefix", ctx, &prefix_));
    int64_t max_chars = 100;
    RETURN_IF_ERROR(ReadInt(j, "max_input_chars_per_word", ctx, &max_chars));
    max_chars_ = max_chars < 0 ? 0 : static_cast<size_t>(max_chars);
    return Status::OK();
  }

  void Tokenize(std::string_view piece, std::vector<TokenId>* out) const override {
    std::optional<TokenId> unk = TokenToId(unk_token_);
    if (utf8::CodePointCount(piece) > max_chars_) {
      if (unk) out->push_back(*unk);
      return;
    }
    std::vector<TokenId> sub;
    std::string cand;
    size_t start = 0;
    while (start < piece.size()) {
      // Longer candidates than the longest token cannot match: start there.
      size_t end = piece.size();
      size_t limit = start + max_token_bytes_;
      if (end > limit) {
        end = limit;
        while (end > start && (static_cast<uint8_t>(piece[end]) & 0xC0) == 0x80) --end;
      }
      std::optional<TokenId> found;
      while (start < end) {
        cand.clear();
        if (start > 0) cand += prefix_;
        cand.append(piece.substr(start, end - start));
        if ((found = TokenToId(cand))) break;
        --end;  // step back one character
        while (end > start && (static_cast<uint8_t>(piece[end]) & 0xC0) == 0x80) --end;
      }
      if (!found) {
        if (unk) out->push_back(*unk);
        return;
      }
      sub.push_back(*found);
      start = end;
    }
    out->insert(out->end(), sub.begin(), sub.end());
  }

 private:
  std::string unk_token_ = "[UNK]";
  std::string prefix_ = "##";
  size_t max_chars_ = 100;
  size_t max_token_bytes_ = 0;
};

// WordLevel: the whole piece is one token, else unk.
class WordLevelModel : public Model {
 public:
  Status Load(const Json& j, const std::string& ctx) {
    const Json* v = Field(j, "vocab");
    if (v == nullptr) return Status::InvalidArgument(ctx + ": missing field 'vocab'");
    std::vector<std::pair<std::string, TokenId>> vocab;
    RETURN_IF_ERROR(ReadVocabObject(*v, ctx + ".vocab", &vocab));
    for (auto& [tok, id] : vocab) AddToVocab(std::move(tok), id);
    RETURN_IF_ERROR(ReadString(j, "unk_token", ctx, &unk_token_));
    return Status::OK();
  }
  void Tokenize(std::string_view piece, std::vector<TokenId>* out) const override {
    if (auto id = TokenToId(piece)) out->push_back(*id);
    else if (auto unk = TokenToId(unk_token_)) out->push_back(*unk);
  }

 private:
  std::string unk_token_ = "<unk>";
};

}  // namespace

Result<std::unique_ptr<Model>> ParseWordPiece(const Json& j, const std::string& ctx) {
  auto model = std::make_unique<WordPieceModel>();
  RETURN_IF_ERROR(model->Load(j, ctx));
  return std::unique_ptr<Model>(std::move(model));
}

Result<std::unique_ptr<Model>> ParseWordLevel(const Json& j, const std::string& ctx) {
  auto model = std::make_unique<WordLevelModel>();
  RETURN_IF_ERROR(model->Load(j, ctx));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace llmhost::tok
