#include "grammar/gbnf.h"

#include <map>

#include "util/utf8.h"

namespace llmhost::grammar {
namespace {

constexpr int kMaxNesting = 200;  // parentheses

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
 public:
  GbnfParser(Grammar& g, std::string_view text, const TokenVocab* vocab) : g_(g), s_(text), vocab_(vocab) {}

  Result<RuleId> Parse() {
    SkipSpace(true);
    while (pos_ < s_.size()) {
      RETURN_IF_ERROR(ParseRule());
      SkipSpace(true);
    }
    for (const auto& [name, info] : rules_)
      if (!info.defined) return ErrorAt(info.first_use, "rule '" + name + "' is not defined");
    auto root = rules_.find("root");
    if (root == rules_.end() || !root->second.defined) return ErrorAt(s_.size(), "no rule 'root'");
    return root->second.id;
  }

 private:
  struct RuleInfo {
    RuleId id;
    bool defined = false;
    size_t first_use = 0;
  };

  Status ErrorAt(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return Status::InvalidArgument("GBNF line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }

  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }

  // Spaces, tabs and # comments; newlines too where `newlines`.
  void SkipSpace(bool newlines) {
    while (!AtEnd()) {
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && s_[pos_] != '\n' && s_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view ParseName() {
    size_t begin = pos_;
    while (!AtEnd() && IsNameChar(s_[pos_])) ++pos_;
    return s_.substr(begin, pos_ - begin);
  }

  RuleInfo& Rule(std::string_view name, size_t at) {
    auto it = rules_.find(std::string(name));
    if (it != rules_.end()) return it->second;
    RuleInfo info{g_.AddRule(std::string(name)), false, at};
    return rules_.emplace(std::string(name), info).first->second;
  }

  Status ParseRule() {
    size_t at = pos_;
    std::string_view name = ParseName();
    if (name.empty()) return ErrorAt(pos_, "expected a rule name");
    SkipSpace(false);
    if (s_.substr(pos_, 3) != "::=") return ErrorAt(pos_, "expected '::=' after rule name '" + std::string(name) + "'");
    pos_ += 3;
    SkipSpace(true);
    RuleInfo& rule = Rule(name, at);
    if (rule.defined) return ErrorAt(at, "rule '" + std::string(name) + "' is defined twice");
    rule.defined = true;
    RuleId id = rule.id;
    ASSIGN_OR_RETURN(NodeId body, ParseAlternates(0));
    g_.SetBody(id, body);
    if (!AtEnd() && Peek() != '\n' && Peek() != '\r') return ErrorAt(pos_, "expected the end of the line");
    return Status::OK();
  }

  Result<NodeId> ParseAlternates(int depth) {
    std::vector<NodeId> alts;
    ASSIGN_OR_RETURN(NodeId first, ParseSequence(depth));
    alts.push_back(first);
    while (true) {
      // An alternative may also start the next line ("a\n  | b").
      size_t save = pos_;
      SkipSpace(true);
      if (Peek() != '|') {
        pos_ = save;
        break;
      }
      ++pos_;
      SkipSpace(true);
      ASSIGN_OR_RETURN(NodeId next, ParseSequence(depth));
      alts.push_back(next);
    }
    return g_.Alt(std::move(alts));
  }

  // Elements until something that cannot start one; newlines only inside
  // parentheses (depth > 0).
  Result<NodeId> ParseSequence(int depth) {
    std::vector<NodeId> items;
    while (!AtEnd()) {
      size_t at = pos_;
      char c = Peek();
      NodeId item;
      if (c == '"') {
        ASSIGN_OR_RETURN(item, ParseLiteral());
      } else if (c == '[') {
        ASSIGN_OR_RETURN(item, ParseClass());
      } else if (c == '.') {
        ++pos_;
        item = g_.Codepoints({}, /*negate=*/true);
      } else if (c == '<') {
        ASSIGN_OR_RETURN(item, ParseToken());
      } else if (c == '(') {
        if (depth >= kMaxNesting) return ErrorAt(pos_, "parentheses nested too deeply");
        ++pos_;
        SkipSpace(true);
        ASSIGN_OR_RETURN(item, ParseAlternates(depth + 1));
        if (Peek() != ')') return ErrorAt(pos_, "expected ')'");
        ++pos_;
      } else if (IsNameChar(c)) {
        std::string_view name = ParseName();
        // A name followed by ::= starts the next rule: this sequence ends.
        size_t save = pos_;
        SkipSpace(false);
        bool next_rule = s_.substr(pos_, 3) == "::=";
        pos_ = save;
        if (next_rule) {
          pos_ = at;
          break;
        }
        item = g_.Ref(Rule(name, at).id);
      } else {
        break;
      }
      SkipSpace(depth > 0);
      ASSIGN_OR_RETURN(item, ParseRepetition(item, depth));
      items.push_back(item);
    }
    return g_.Seq(std::move(items));
  }

  Result<NodeId> ParseRepetition(NodeId item, int depth) {
    while (true) {
      char c = Peek();
      if (c == '*') {
        item = g_.Repeat(item, 0, -1);
      } else if (c == '+') {
        item = g_.Repeat(item, 1, -1);
      } else if (c == '?') {
        item = g_.Optional(item);
      } else if (c == '{') {
        ASSIGN_OR_RETURN(item, ParseBraces(item));
        SkipSpace(depth > 0);
        continue;
      } else {
        return item;
      }
      ++pos_;
      SkipSpace(depth > 0);
    }
  }

  Result<int32_t> ParseCount() {
    size_t at = pos_;
    int64_t v = 0;
    while (Peek() >= '0' && Peek() <= '9') {
      v = v * 10 + (Peek() - '0');
      if (v > kMaxRepeat) return ErrorAt(at, "repetition count over " + std::to_string(kMaxRepeat));
      ++pos_;
    }
    if (pos_ == at) return ErrorAt(at, "expected a number");
    return static_cast<int32_t>(v);
  }

  Result<NodeId> ParseBraces(NodeId item) {
    size_t at = pos_;
    ++pos_;  // {
    SkipSpace(false);
    ASSIGN_OR_RETURN(int32_t min, ParseCount());
    SkipSpace(false);
    int32_t max = min;
    if (Peek() == ',') {
      ++pos_;
      SkipSpace(false);
      if (Peek() == '}') {
        max = -1;
      } else {
        ASSIGN_OR_RETURN(max, ParseCount());
        SkipSpace(false);
      }
    }
    if (Peek() != '}') return ErrorAt(pos_, "expected '}'");
    ++pos_;
    if (max != -1 && max < min) return ErrorAt(at, "repetition {" + std::to_string(min) + "," + std::to_string(max) + "} has max below min");
    return g_.Repeat(item, min, max);
  }

  Result<char32_t> ParseHex(int digits) {
    size_t at = pos_;
    char32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      char c = Peek();
      int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
      if (d < 0) return ErrorAt(at, "expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<char32_t>(d);
      ++pos_;
    }
    if (v > kMaxCodepoint) return ErrorAt(at, "code point over U+10FFFF");
    return v;
  }

  // One character of a literal or class: a UTF-8 code point or an escape.
  Result<char32_t> ParseChar() {
    size_t at = pos_;
    if (AtEnd()) return ErrorAt(at, "unexpected end of grammar");
    if (Peek() != '\\') {
      size_t p = pos_;
      char32_t c = utf8::DecodeOne(s_, &p);
      if (c == utf8::kReplacement && s_.substr(pos_, p - pos_) != "\xEF\xBF\xBD") return ErrorAt(at, "invalid UTF-8");
      pos_ = p;
      return c;
    }
    ++pos_;
    char e = Peek();
    ++pos_;
    switch (e) {
      case 'x': return ParseHex(2);
      case 'u': return ParseHex(4);
      case 'U': return ParseHex(8);
      case 't': return U'\t';
      case 'r': return U'\r';
      case 'n': return U'\n';
      case '\\': case '"': case '[': case ']': case '-': case '^': return static_cast<char32_t>(e);
      default:
        return ErrorAt(at, std::string("unknown escape '\\") + (e ? std::string(1, e) : std::string()) + "'");
    }
  }

  Result<NodeId> ParseLiteral() {
    ++pos_;  // "
    std::string bytes;
    while (Peek() != '"') {
      if (AtEnd() || Peek() == '\n') return ErrorAt(pos_, "unterminated string");
      ASSIGN_OR_RETURN(char32_t c, ParseChar());
      if (c >= 0xD800 && c <= 0xDFFF) return ErrorAt(pos_, "a surrogate is not a character");
      utf8::Append(&bytes, c);
    }
    ++pos_;
    return g_.Literal(bytes);
  }

  Result<NodeId> ParseClass() {
    ++pos_;  // [
    bool negate = Peek() == '^';
    if (negate) ++pos_;
    std::vector<CodepointRange> ranges;
    while (Peek() != ']') {
      if (AtEnd() || Peek() == '\n') return ErrorAt(pos_, "unterminated character class");
      size_t at = pos_;
      ASSIGN_OR_RETURN(char32_t lo, ParseChar());
      char32_t hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < s_.size()) {
        ++pos_;
        ASSIGN_OR_RETURN(hi, ParseChar());
        if (hi < lo) return ErrorAt(at, "character range out of order");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return g_.Codepoints(std::move(ranges), negate);
  }

  // <[123]>: a token by id; <text>: the special token with that text.
  Result<NodeId> ParseToken() {
    size_t at = pos_;
    if (Peek(1) == '[') {
      pos_ += 2;
      ASSIGN_OR_RETURN(int32_t id, ParseCount());
      if (Peek() != ']' || Peek(1) != '>') return ErrorAt(pos_, "expected ']>'");
      pos_ += 2;
      if (vocab_ != nullptr && static_cast<size_t>(id) >= vocab_->size())
        return ErrorAt(at, "token id " + std::to_string(id) + " is not in the vocabulary");
      return g_.Token(id);
    }
    size_t end = s_.find('>', pos_);
    if (end == std::string_view::npos || s_.substr(pos_, end - pos_).find('\n') != std::string_view::npos)
      return ErrorAt(at, "expected '>' closing the token");
    std::string_view text = s_.substr(pos_, end + 1 - pos_);
    pos_ = end + 1;
    TokenId id = vocab_ != nullptr ? vocab_->SpecialId(text) : -1;
    if (id < 0) return ErrorAt(at, "unknown special token " + std::string(text));
    return g_.Token(id);
  }

  Grammar& g_;
  std::string_view s_;
  const TokenVocab* vocab_;
  size_t pos_ = 0;
  std::map<std::string, RuleInfo> rules_;
};

}  // namespace

Result<RuleId> AddGbnf(Grammar& grammar, std::string_view text, const TokenVocab* vocab) {
  return GbnfParser(grammar, text, vocab).Parse();
}

}  // namespace llmhost::grammar
