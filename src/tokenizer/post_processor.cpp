#include "tokenizer/post_processor.h"

#include <map>

#include "tokenizer/model.h"

namespace llmhost::tok {
namespace {

constexpr int kMaxDepth = 16;

// Template pieces: a sequence (A or B) or a special token's ids.
struct TemplatePiece {
  bool is_sequence;
  bool sequence_b;           // for sequences
  std::vector<TokenId> ids;  // for special tokens
};

class TemplateProc : public PostProcessor {
 public:
  TemplateProc(std::vector<TemplatePiece> single, std::vector<TemplatePiece> pair)
      : single_(std::move(single)), pair_(std::move(pair)) {}
  std::vector<TokenId> Process(const std::vector<TokenId>& a,
                               const std::vector<TokenId>* b) const override {
    std::vector<TokenId> out;
    if (b != nullptr && pair_.empty()) {  // no pair template (HF requires one): A's, then B
      out = Process(a, nullptr);
      out.insert(out.end(), b->begin(), b->end());
      return out;
    }
    for (const TemplatePiece& p : b ? pair_ : single_) {
      if (!p.is_sequence) out.insert(out.end(), p.ids.begin(), p.ids.end());
      else if (!p.sequence_b) out.insert(out.end(), a.begin(), a.end());
      else if (b) out.insert(out.end(), b->begin(), b->end());
    }
    return out;
  }
  void SingleSpecials(std::vector<TokenId>* before, std::vector<TokenId>* after) const override {
    bool seen = false;
    for (const TemplatePiece& p : single_) {
      if (p.is_sequence) seen = true;
      else (seen ? after : before)->insert((seen ? after : before)->end(), p.ids.begin(), p.ids.end());
    }
  }

 private:
  std::vector<TemplatePiece> single_, pair_;
};

// BERT: [CLS] A [SEP] (B [SEP]); RoBERTa: <s> A </s> (</s> B </s>).
class ClsSepProc : public PostProcessor {
 public:
  ClsSepProc(TokenId cls, TokenId sep, bool double_sep) : cls_(cls), sep_(sep), double_sep_(double_sep) {}
  std::vector<TokenId> Process(const std::vector<TokenId>& a,
                               const std::vector<TokenId>* b) const override {
    std::vector<TokenId> out;
    out.push_back(cls_);
    out.insert(out.end(), a.begin(), a.end());
    out.push_back(sep_);
    if (b) {
      if (double_sep_) out.push_back(sep_);
      out.insert(out.end(), b->begin(), b->end());
      out.push_back(sep_);
    }
    return out;
  }
  void SingleSpecials(std::vector<TokenId>* before, std::vector<TokenId>* after) const override {
    before->push_back(cls_);
    after->push_back(sep_);
  }

 private:
  TokenId cls_, sep_;
  bool double_sep_;
};

// ByteLevel only trims offsets: ids pass through.
class IdentityProc : public PostProcessor {
 public:
  std::vector<TokenId> Process(const std::vector<TokenId>& a,
                               const std::vector<TokenId>* b) const override {
    std::vector<TokenId> out = a;
    if (b) out.insert(out.end(), b->begin(), b->end());
    return out;
  }
  void SingleSpecials(std::vector<TokenId>*, std::vector<TokenId>*) const override {}
  bool IsIdentity() const override { return true; }
};

class SequenceProc : public PostProcessor {
 public:
  explicit SequenceProc(std::vector<std::unique_ptr<PostProcessor>> items) : items_(std::move(items)) {}
  std::vector<TokenId> Process(const std::vector<TokenId>& a,
                               const std::vector<TokenId>* b) const override {
    // Each processor sees the previous result; a pair merges at the first
    // processor that adds ids.
    std::vector<TokenId> cur = a;
    const std::vector<TokenId>* pair = b;
    for (const auto& p : items_) {
      if (p->IsIdentity()) continue;
      cur = p->Process(cur, pair);
      pair = nullptr;
    }
    if (pair) cur.insert(cur.end(), pair->begin(), pair->end());
    return cur;
  }
  void SingleSpecials(std::vector<TokenId>* before, std::vector<TokenId>* after) const override {
    for (const auto& p : items_) {
      std::vector<TokenId> b, a;
      p->SingleSpecials(&b, &a);
      before->insert(before->begin(), b.begin(), b.end());
      after->insert(after->end(), a.begin(), a.end());
    }
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> items_;
};

Result<TokenId> ReadTokenPair(const Json& j, const char* key, const std::string& ctx) {
  const Json* f = Field(j, key);
  if (f == nullptr || !f->is_array() || f->size() != 2 || !(*f)[1].is_number_integer())
    return Status::InvalidArgument(ctx + "." + key + ": expected [token, id]");
  int64_t id = (*f)[1].get<int64_t>();
  if (id < 0 || id > kMaxTokenId) return Status::InvalidArgument(ctx + "." + key + ": bad id");
  return static_cast<TokenId>(id);
}

// Parses "single"/"pair": a list of {"SpecialToken": {"id": name}} /
// {"Sequence": {"id": "A"|"B"}} (or the string form "$A", "[CLS]", "$B:1").
Result<std::vector<TemplatePiece>> ParseTemplate(const Json& list, const Json& specials,
                                                 const std::string& ctx) {
  std::vector<TemplatePiece> out;
  if (!list.is_array()) return Status::InvalidArgument(ctx + ": expected an array");
  auto special_ids = [&](const std::string& name, const std::string& c) -> Result<std::vector<TokenId>> {
    const Json* st = Field(specials, name);
    const Json* ids = st ? Field(*st, "ids") : nullptr;
    if (ids == nullptr || !ids->is_array())
      return Status::InvalidArgument(c + ": special token '" + name + "' is not in special_tokens");
    std::vector<TokenId> v;
    for (const Json& x : *ids) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > kMaxTokenId)
        return Status::InvalidArgument(c + ": bad id for special token '" + name + "'");
      v.push_back(static_cast<TokenId>(x.get<int64_t>()));
    }
    return v;
  };
  for (size_t i = 0; i < list.size(); ++i) {
    std::string c = ctx + "[" + std::to_string(i) + "]";
    const Json& e = list[i];
    TemplatePiece p{};
    if (e.is_string()) {  // "$A", "$B", "$A:1", or a special token name ("[CLS]:0")
      std::string s = e.get<std::string>();
      size_t colon = s.rfind(':');
      if (colon != std::string::npos && colon > 0) s = s.substr(0, colon);
      if (!s.empty() && s[0] == '$') {
        p.is_sequence = true;
        p.sequence_b = s == "$B" || s == "$1";
      } else {
        ASSIGN_OR_RETURN(p.ids, special_ids(s, c));
      }
    } else if (const Json* seq = Field(e, "Sequence")) {
      std::string id;
      RETURN_IF_ERROR(ReadString(*seq, "id", c + ".Sequence", &id, true));
      p.is_sequence = true;
      p.sequence_b = id == "B";
    } else if (const Json* sp = Field(e, "SpecialToken")) {
      std::string id;
      RETURN_IF_ERROR(ReadString(*sp, "id", c + ".SpecialToken", &id, true));
      ASSIGN_OR_RETURN(p.ids, special_ids(id, c));
    } else {
      return Status::InvalidArgument(c + ": expected Sequence or SpecialToken");
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<PostProcessor>> ParsePostProcessor(const Json& j, const std::string& ctx,
                                                          int depth) {
  if (depth > kMaxDepth) return Status::InvalidArgument(ctx + ": nesting too deep");
  ASSIGN_OR_RETURN(std::string type, ComponentType(j, ctx));
  using Ptr = std::unique_ptr<PostProcessor>;
  if (type == "TemplateProcessing") {
    static const Json kEmpty = Json::object();
    const Json* specials = Field(j, "special_tokens");
    if (specials == nullptr) specials = &kEmpty;
    const Json* single = Field(j, "single");
    const Json* pair = Field(j, "pair");
    if (single == nullptr) return Status::InvalidArgument(ctx + ": missing field 'single'");
    ASSIGN_OR_RETURN(auto s, ParseTemplate(*single, *specials, ctx + ".single"));
    std::vector<TemplatePiece> p;
    if (pair != nullptr) {
      ASSIGN_OR_RETURN(p, ParseTemplate(*pair, *specials, ctx + ".pair"));
    }
    return Ptr(new TemplateProc(std::move(s), std::move(p)));
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    ASSIGN_OR_RETURN(TokenId cls, ReadTokenPair(j, "cls", ctx));
    ASSIGN_OR_RETURN(TokenId sep, ReadTokenPair(j, "sep", ctx));
    return Ptr(new ClsSepProc(cls, sep, type == "RobertaProcessing"));
  }
  if (type == "ByteLevel") return Ptr(new IdentityProc());
  if (type == "Sequence") {
    const Json* list = Field(j, "processors");
    if (list == nullptr || !list->is_array())
      return Status::InvalidArgument(ctx + ".processors: expected an array");
    std::vector<Ptr> items;
    for (size_t i = 0; i < list->size(); ++i) {
      ASSIGN_OR_RETURN(Ptr p, ParsePostProcessor((*list)[i],
                                                 ctx + ".processors[" + std::to_string(i) + "]",
                                                 depth + 1));
      items.push_back(std::move(p));
    }
    return Ptr(new SequenceProc(std::move(items)));
  }
  return Status::NotSupported(ctx + ": post-processor type '" + type + "' is not supported");
}

}  // namespace llmhost::tok
