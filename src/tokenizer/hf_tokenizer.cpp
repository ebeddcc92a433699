#include "tokenizer/hf_tokenizer.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace llmhost::tok {

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::Create(const Json& doc) {
  if (!doc.is_object()) return Status::InvalidArgument("tokenizer.json: expected a JSON object");
  std::unique_ptr<HfTokenizer> t(new HfTokenizer());
  const Json* model = Field(doc, "model");
  if (model == nullptr) return Status::InvalidArgument("tokenizer.json: missing field 'model'");
  ASSIGN_OR_RETURN(t->model_, ParseModel(*model, "model"));
  if (const Json* n = Field(doc, "normalizer")) {
    ASSIGN_OR_RETURN(t->normalizer_, ParseNormalizer(*n, "normalizer"));
  }
  if (const Json* p = Field(doc, "pre_tokenizer")) {
    ASSIGN_OR_RETURN(t->pre_tokenizer_, ParsePreTokenizer(*p, "pre_tokenizer"));
  }
  if (const Json* p = Field(doc, "post_processor")) {
    ASSIGN_OR_RETURN(t->post_processor_, ParsePostProcessor(*p, "post_processor"));
  }
  if (const Json* d = Field(doc, "decoder")) {
    ASSIGN_OR_RETURN(t->decoder_, ParseDecoder(*d, "decoder"));
  }
  if (const Json* a = Field(doc, "added_tokens")) {
    ASSIGN_OR_RETURN(t->added_, ParseAddedTokens(*a, "added_tokens"));
  }
  // Index the added tokens; the later of two entries with one id wins.
  for (size_t i = 0; i < t->added_.size(); ++i) {
    t->added_by_id_[t->added_[i].id] = i;
    t->added_by_content_[t->added_[i].content] = t->added_[i].id;
  }
  std::vector<std::string> raw_contents, norm_contents;
  std::vector<const AddedToken*> raw_tokens, norm_tokens;
  for (const AddedToken& a : t->added_) {
    if (a.content.empty()) continue;
    if (a.special) t->special_contents_sorted_.push_back(a.content);
    if (a.normalized) {
      // Matched on normalized text, so its pattern is its normalized content.
      norm_contents.push_back(t->normalizer_ ? t->normalizer_->Normalize(a.content) : a.content);
      norm_tokens.push_back(&a);
    } else {
      raw_contents.push_back(a.content);
      raw_tokens.push_back(&a);
    }
  }
  std::sort(t->special_contents_sorted_.begin(), t->special_contents_sorted_.end());
  t->raw_matcher_.Build(raw_contents, raw_tokens);
  t->normalized_matcher_.Build(norm_contents, norm_tokens);
  return t;
}

const AddedToken* HfTokenizer::FindAdded(TokenId id) const {
  auto it = added_by_id_.find(id);
  return it == added_by_id_.end() ? nullptr : &added_[it->second];
}

void HfTokenizer::EncodeSegment(std::string_view normalized, bool at_start,
                                std::vector<TokenId>* ids) const {
  if (normalized.empty()) return;
  std::vector<Piece> pieces;
  pieces.push_back(Piece{std::string(normalized), at_start});
  if (pre_tokenizer_) pre_tokenizer_->PreTokenize(&pieces);
  for (const Piece& p : pieces)
    if (!p.text.empty()) model_->Tokenize(p.text, ids);
}

std::vector<TokenId> HfTokenizer::EncodeSequence(std::string_view input) const {
  std::string repaired;
  std::string_view text = input;
  if (!utf8::IsValid(input)) {
    repaired = SanitizeUtf8(input);
    text = repaired;
  }
  std::vector<TokenId> ids;
  std::vector<Segment> raw = raw_matcher_.empty()
                                 ? std::vector<Segment>{Segment{0, text.size(), -1}}
                                 : raw_matcher_.Split(text);
  for (const Segment& seg : raw) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    std::string_view part = text.substr(seg.begin, seg.end - seg.begin);
    if (part.empty()) continue;
    std::string normalized = normalizer_ ? normalizer_->Normalize(part) : std::string(part);
    if (normalized.empty()) continue;  // HF drops splits that normalize to ""
    if (normalized_matcher_.empty()) {
      EncodeSegment(normalized, seg.begin == 0, &ids);
      continue;
    }
    for (const Segment& sub : normalized_matcher_.Split(normalized)) {
      if (sub.id >= 0) ids.push_back(sub.id);
      else
        EncodeSegment(std::string_view(normalized).substr(sub.begin, sub.end - sub.begin),
                      seg.begin == 0 && sub.begin == 0, &ids);
    }
  }
  return ids;
}

std::vector<TokenId> HfTokenizer::Encode(std::string_view text, bool add_special) const {
  std::vector<TokenId> ids = EncodeSequence(text);
  if (add_special && post_processor_) return post_processor_->Process(ids, nullptr);
  return ids;
}

std::vector<TokenId> HfTokenizer::EncodePair(std::string_view a, std::string_view b,
                                             bool add_special) const {
  std::vector<TokenId> ia = EncodeSequence(a), ib = EncodeSequence(b);
  if (add_special && post_processor_) return post_processor_->Process(ia, &ib);
  ia.insert(ia.end(), ib.begin(), ib.end());
  return ia;
}

std::string HfTokenizer::Decode(std::span<const TokenId> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (TokenId id : ids) {
    const std::string* tok = nullptr;
    if (const AddedToken* a = FindAdded(id)) tok = &a->content;
    else tok = model_->IdToToken(id);
    if (tok == nullptr) continue;  // unknown id
    if (skip_special && std::binary_search(special_contents_sorted_.begin(),
                                           special_contents_sorted_.end(), *tok))
      continue;
    tokens.push_back(*tok);
  }
  if (decoder_) return decoder_->Decode(std::move(tokens));
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) out.push_back(' ');
    out += tokens[i];
  }
  return out;
}

size_t HfTokenizer::VocabSize() const {
  size_t n = model_->VocabSize();
  for (const AddedToken& a : added_) n = std::max(n, static_cast<size_t>(a.id) + 1);
  return n;
}

std::optional<std::string> HfTokenizer::IdToToken(TokenId id) const {
  if (const AddedToken* a = FindAdded(id)) return a->content;
  if (const std::string* s = model_->IdToToken(id)) return *s;
  return std::nullopt;
}

std::optional<TokenId> HfTokenizer::TokenToId(std::string_view token) const {
  auto it = added_by_content_.find(token);
  if (it != added_by_content_.end()) return it->second;
  return model_->TokenToId(token);
}

bool HfTokenizer::IsSpecial(TokenId id) const {
  const AddedToken* a = FindAdded(id);
  return a != nullptr && a->special;
}

std::optional<std::string> HfTokenizer::TokenBytes(TokenId id) const {
  std::optional<std::string> token = IdToToken(id);
  if (!token) return std::nullopt;
  if (!decoder_) return " " + *token;  // Decode joins token strings with spaces
  bool joined = false;
  return decoder_->TokenBytes(std::move(*token), &joined);
}

std::vector<AddedTokenInfo> HfTokenizer::AddedTokens() const {
  std::vector<AddedTokenInfo> out;
  for (const AddedToken& a : added_) out.push_back(AddedTokenInfo{a.id, a.content, a.special});
  return out;
}

std::vector<TokenId> HfTokenizer::SpecialPrefixIds() const {
  std::vector<TokenId> before, after;
  if (post_processor_) post_processor_->SingleSpecials(&before, &after);
  return before;
}

std::vector<TokenId> HfTokenizer::SpecialSuffixIds() const {
  std::vector<TokenId> before, after;
  if (post_processor_) post_processor_->SingleSpecials(&before, &after);
  return after;
}

}  // namespace llmhost::tok
