#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <functional>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace llmhost::tok {
namespace {

constexpr int kMaxDepth = 16;

// The GPT-2 pattern ByteLevel uses when use_regex is set.
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// Applies `split` (text -> kept ranges) to every piece.
void SplitEach(std::vector<Piece>* pieces,
               const std::function<std::vector<Range>(std::string_view)>& split) {
  std::vector<Piece> out;
  out.reserve(pieces->size());
  for (Piece& p : *pieces) {
    for (const Range& r : split(p.text)) {
      if (r.second <= r.first) continue;
      out.push_back(Piece{p.text.substr(r.first, r.second - r.first), p.at_start && r.first == 0});
    }
  }
  *pieces = std::move(out);
}

// Every character for which pred holds is one delimiter match.
std::vector<Range> CharMatches(std::string_view s, const std::function<bool(char32_t)>& pred) {
  std::vector<Range> m;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    char32_t c = NextCodePoint(s, &pos);
    if (pred(c)) m.emplace_back(start, pos);
  }
  return m;
}

class SplitPre : public PreTokenizer {
 public:
  SplitPre(Pattern p, SplitBehavior b, bool invert) : pattern_(std::move(p)), behavior_(b), invert_(invert) {}
  void PreTokenize(std::vector<Piece>* pieces) const override {
    SplitEach(pieces, [&](std::string_view s) {
      return SplitRanges(pattern_.FindAll(s), s.size(), behavior_, invert_);
    });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPre : public PreTokenizer {
 public:
  ByteLevelPre(bool add_prefix_space, std::shared_ptr<const Regex> re)
      : add_prefix_space_(add_prefix_space), re_(std::move(re)) {}
  void PreTokenize(std::vector<Piece>* pieces) const override {
    if (add_prefix_space_) {
      for (Piece& p : *pieces)
        if (p.text.empty() || p.text[0] != ' ') p.text.insert(0, 1, ' ');
    }
    if (re_) {
      SplitEach(pieces, [&](std::string_view s) {
        return SplitRanges(re_->FindAll(s), s.size(), SplitBehavior::kIsolated);
      });
    }
    for (Piece& p : *pieces) p.text = ByteLevelEncode(p.text);
  }

 private:
  bool add_prefix_space_;
  std::shared_ptr<const Regex> re_;  // null when use_regex is false
};

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePre : public PreTokenizer {
 public:
  MetaspacePre(char32_t replacement, PrependScheme scheme, bool split)
      : replacement_(utf8::Encode(replacement)), scheme_(scheme), split_(split) {}
  void PreTokenize(std::vector<Piece>* pieces) const override {
    Pattern space = Pattern::Literal(" ");
    for (Piece& p : *pieces) {
      p.text = space.ReplaceAll(p.text, replacement_);
      bool starts = p.text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (scheme_ == PrependScheme::kAlways ||
                      (scheme_ == PrependScheme::kFirst && p.at_start)))
        p.text.insert(0, replacement_);
    }
    if (split_) {
      Pattern rep = Pattern::Literal(replacement_);
      SplitEach(pieces, [&](std::string_view s) {
        return SplitRanges(rep.FindAll(s), s.size(), SplitBehavior::kMergedWithNext);
      });
    }
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

// A split on a per-character predicate.
class CharSplitPre : public PreTokenizer {
 public:
  CharSplitPre(std::function<bool(char32_t)> pred, SplitBehavior b) : pred_(std::move(pred)), behavior_(b) {}
  void PreTokenize(std::vector<Piece>* pieces) const override {
    SplitEach(pieces, [&](std::string_view s) {
      return SplitRanges(CharMatches(s, pred_), s.size(), behavior_);
    });
  }

 private:
  std::function<bool(char32_t)> pred_;
  SplitBehavior behavior_;
};

bool IsBertPunctuation(char32_t c) {
  return (c < 0x80 && c > 0x20 && c != 0x7F && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z') &&
          !(c >= '0' && c <= '9')) ||
         IsPunctuation(c);
}

class SequencePre : public PreTokenizer {
 public:
  explicit SequencePre(std::vector<std::unique_ptr<PreTokenizer>> items) : items_(std::move(items)) {}
  void PreTokenize(std::vector<Piece>* pieces) const override {
    for (const auto& p : items_) p->PreTokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> items_;
};

Result<char32_t> ReadReplacementChar(const Json& j, const std::string& ctx) {
  std::string rep = "\xE2\x96\x81";  // U+2581
  RETURN_IF_ERROR(ReadString(j, "replacement", ctx, &rep));
  size_t pos = 0;
  if (rep.empty() || !utf8::IsValid(rep)) return Status::InvalidArgument(ctx + ".replacement: expected one character");
  char32_t c = NextCodePoint(rep, &pos);
  if (pos != rep.size()) return Status::InvalidArgument(ctx + ".replacement: expected one character");
  return c;
}

Result<PrependScheme> ReadPrependScheme(const Json& j, const std::string& ctx) {
  std::string scheme = "always";
  RETURN_IF_ERROR(ReadString(j, "prepend_scheme", ctx, &scheme));
  if (Field(j, "prepend_scheme") == nullptr) {  // legacy files: add_prefix_space
    bool add = true;
    RETURN_IF_ERROR(ReadBool(j, "add_prefix_space", ctx, &add));
    scheme = add ? "always" : "never";
  }
  if (scheme == "always") return PrependScheme::kAlways;
  if (scheme == "first") return PrependScheme::kFirst;
  if (scheme == "never") return PrependScheme::kNever;
  return Status::InvalidArgument(ctx + ".prepend_scheme: unknown value '" + scheme + "'");
}

}  // namespace

Result<SplitBehavior> ParseSplitBehavior(const std::string& name, const std::string& ctx) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return Status::InvalidArgument(ctx + ".behavior: unknown value '" + name + "'");
}

std::vector<Range> SplitRanges(const std::vector<Range>& matches, size_t len,
                               SplitBehavior behavior, bool invert) {
  // (range, is_match) covering the whole text, as HF's Pattern::find_matches.
  std::vector<std::pair<Range, bool>> all;
  all.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (const Range& m : matches) {
    if (m.first < prev || m.second < m.first || m.second > len) continue;  // defensive
    if (prev != m.first) all.push_back({{prev, m.first}, invert});
    all.push_back({m, !invert});
    prev = m.second;
  }
  if (prev != len) all.push_back({{prev, len}, invert});
  if (len == 0) all.push_back({{0, 0}, invert});

  std::vector<Range> out;
  out.reserve(all.size());
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (auto& [r, m] : all) out.push_back(r);
      break;
    case SplitBehavior::kRemoved:
      for (auto& [r, m] : all)
        if (!m) out.push_back(r);
      break;
    case SplitBehavior::kContiguous: {
      bool prev_match = false;
      for (auto& [r, m] : all) {
        if (m == prev_match && !out.empty()) out.back().second = r.second;
        else out.push_back(r);
        prev_match = m;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool prev_match = false;
      for (auto& [r, m] : all) {
        if (m && !prev_match && !out.empty()) out.back().second = r.second;
        else out.push_back(r);
        prev_match = m;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool prev_match = false;
      for (size_t i = all.size(); i-- > 0;) {
        auto& [r, m] = all[i];
        if (m && !prev_match && !out.empty()) out.back().first = r.first;
        else out.push_back(r);
        prev_match = m;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
  }
  return out;
}

Result<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const Json& j, const std::string& ctx,
                                                        int depth) {
  if (depth > kMaxDepth) return Status::InvalidArgument(ctx + ": nesting too deep");
  ASSIGN_OR_RETURN(std::string type, ComponentType(j, ctx));
  using Ptr = std::unique_ptr<PreTokenizer>;
  if (type == "Split") {
    ASSIGN_OR_RETURN(PatternSpec spec, ReadPattern(j, ctx));
    ASSIGN_OR_RETURN(Pattern pattern, Pattern::FromSpec(spec));
    std::string behavior = "Removed";
    RETURN_IF_ERROR(ReadString(j, "behavior", ctx, &behavior, /*required=*/true));
    ASSIGN_OR_RETURN(SplitBehavior b, ParseSplitBehavior(behavior, ctx));
    bool invert = false;
    RETURN_IF_ERROR(ReadBool(j, "invert", ctx, &invert));
    return Ptr(new SplitPre(std::move(pattern), b, invert));
  }
  if (type == "ByteLevel") {
    bool add_prefix_space = true, use_regex = true;
    RETURN_IF_ERROR(ReadBool(j, "add_prefix_space", ctx, &add_prefix_space));
    RETURN_IF_ERROR(ReadBool(j, "use_regex", ctx, &use_regex));
    std::shared_ptr<const Regex> re;
    if (use_regex) {
      ASSIGN_OR_RETURN(re, Regex::Compile(kGpt2Pattern));
    }
    return Ptr(new ByteLevelPre(add_prefix_space, std::move(re)));
  }
  if (type == "Metaspace") {
    ASSIGN_OR_RETURN(char32_t rep, ReadReplacementChar(j, ctx));
    ASSIGN_OR_RETURN(PrependScheme scheme, ReadPrependScheme(j, ctx));
    bool split = true;
    RETURN_IF_ERROR(ReadBool(j, "split", ctx, &split));
    return Ptr(new MetaspacePre(rep, scheme, split));
  }
  if (type == "Whitespace") {
    // \w+|[^\w\s]+ as Rust's regex crate defines \w and \s.
    PatternSpec spec{true,
                     "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]+|"
                     "[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}\\p{White_Space}]+"};
    ASSIGN_OR_RETURN(Pattern pattern, Pattern::FromSpec(spec));
    return Ptr(new SplitPre(std::move(pattern), SplitBehavior::kRemoved, /*invert=*/true));
  }
  if (type == "WhitespaceSplit") return Ptr(new CharSplitPre(IsWhitespace, SplitBehavior::kRemoved));
  if (type == "BertPreTokenizer") {
    std::vector<Ptr> items;
    items.push_back(Ptr(new CharSplitPre(IsWhitespace, SplitBehavior::kRemoved)));
    items.push_back(Ptr(new CharSplitPre(IsBertPunctuation, SplitBehavior::kIsolated)));
    return Ptr(new SequencePre(std::move(items)));
  }
  if (type == "Punctuation") {
    std::string behavior = "Isolated";
    RETURN_IF_ERROR(ReadString(j, "behavior", ctx, &behavior));
    ASSIGN_OR_RETURN(SplitBehavior b, ParseSplitBehavior(behavior, ctx));
    return Ptr(new CharSplitPre(IsBertPunctuation, b));
  }
  if (type == "Digits") {
    bool individual = false;
    RETURN_IF_ERROR(ReadBool(j, "individual_digits", ctx, &individual));
    return Ptr(new CharSplitPre(IsNumeric,  // Rust char::is_numeric (all of N)

                                individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous));
  }
  if (type == "CharDelimiterSplit") {
    std::string delim;
    RETURN_IF_ERROR(ReadString(j, "delimiter", ctx, &delim, /*required=*/true));
    size_t pos = 0;
    if (delim.empty() || !utf8::IsValid(delim))
      return Status::InvalidArgument(ctx + ".delimiter: expected one character");
    char32_t d = NextCodePoint(delim, &pos);
    return Ptr(new CharSplitPre([d](char32_t c) { return c == d; }, SplitBehavior::kRemoved));
  }
  if (type == "Sequence") {
    const Json* list = Field(j, "pretokenizers");
    if (list == nullptr || !list->is_array())
      return Status::InvalidArgument(ctx + ".pretokenizers: expected an array");
    std::vector<Ptr> items;
    for (size_t i = 0; i < list->size(); ++i) {
      ASSIGN_OR_RETURN(Ptr p, ParsePreTokenizer((*list)[i],
                                                ctx + ".pretokenizers[" + std::to_string(i) + "]",
                                                depth + 1));
      items.push_back(std::move(p));
    }
    return Ptr(new SequencePre(std::move(items)));
  }
  return Status::NotSupported(ctx + ": pre-tokenizer type '" + type + "' is not supported");
}

}  // namespace llmhost::tok
