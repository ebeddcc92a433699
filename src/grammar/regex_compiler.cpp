#include "grammar/regex_compiler.h"

#include <string>
#include <vector>

#include "grammar/codepoint_set.h"
#include "grammar/json_string_chars.h"
#include "grammar/regex_classes.h"
#include "util/utf8.h"

namespace llmhost::grammar {
namespace {

// One class member: a single character (ranges need one) or a class escape.
struct ClassAtom {
  CodepointSet set;
  bool single = false;
  char32_t c = 0;
};

// A top-level alternative with its anchors.
struct Branch {
  NodeId node = -1;
  bool starts_anchored = false, ends_anchored = false;
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Recursive descent over the pattern, emitting grammar nodes as it goes.
// Nesting is bounded by kMaxRegexNesting, so recursion depth is too.
class RegexCompiler {
 public:
  RegexCompiler(Grammar& g, std::string_view pattern, RegexText text, const CodepointSet& excluded)
      : g_(g), p_(pattern), text_(text), excluded_(excluded) {}

  Result<NodeId> Compile(bool search) {
    if (p_.size() > kMaxPatternBytes) return Error(0, "pattern of " + std::to_string(p_.size()) + " bytes is too long");
    std::vector<NodeId> alts;
    while (true) {
      ASSIGN_OR_RETURN(Branch b, ParseSequence(0, /*top=*/true));
      std::vector<NodeId> parts;
      if (search && !b.starts_anchored) parts.push_back(AnyText());
      parts.push_back(b.node);
      if (search && !b.ends_anchored) parts.push_back(AnyText());
      alts.push_back(g_.Seq(std::move(parts)));
      if (AtEnd()) break;
      if (Peek() == ')') return Error(pos_, "unbalanced ')'");
      ++pos_;  // '|'
    }
    return g_.Alt(std::move(alts));
  }

 private:
  bool AtEnd() const { return pos_ >= p_.size(); }
  char Peek() const { return p_[pos_]; }

  Status Error(size_t at, const std::string& what) const {
    return Status::InvalidArgument("regex: " + what + " at offset " + std::to_string(at));
  }
  Status Unsupported(size_t at, const std::string& construct) const {
    return Error(at, construct + " is not supported");
  }

  NodeId Emit(const CodepointSet& in) {
    const CodepointSet set = excluded_.empty() ? in : in.Minus(excluded_);
    return text_ == RegexText::kUtf8 ? g_.Codepoints(set.ranges()) : JsonStringChar(g_, set);
  }
  NodeId AnyText() { return g_.Repeat(Emit(CodepointSet::All()), 0, -1); }

  Result<NodeId> ParseAlternation(int depth) {
    std::vector<NodeId> alts;
    while (true) {
      ASSIGN_OR_RETURN(Branch b, ParseSequence(depth, /*top=*/false));
      alts.push_back(b.node);
      if (AtEnd() || Peek() != '|') break;
      ++pos_;
    }
    return g_.Alt(std::move(alts));
  }

  // Terms up to '|', ')' or the end. ^ and $ only at the ends of a top-level
  // alternative (elsewhere they would need lookaround).
  Result<Branch> ParseSequence(int depth, bool top) {
    Branch b;
    std::vector<NodeId> items;
    if (top && !AtEnd() && Peek() == '^') {
      b.starts_anchored = true;
      ++pos_;
    }
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      if (Peek() == '^') return Unsupported(pos_, "anchor '^' inside the pattern");
      if (Peek() == '$') {
        bool at_branch_end = pos_ + 1 == p_.size() || p_[pos_ + 1] == '|';
        if (!top || !at_branch_end) return Unsupported(pos_, "anchor '$' inside the pattern");
        b.ends_anchored = true;
        ++pos_;
        break;
      }
      ASSIGN_OR_RETURN(NodeId atom, ParseAtom(depth));
      ASSIGN_OR_RETURN(NodeId quantified, ParseQuantifier(atom));
      items.push_back(quantified);
    }
    b.node = items.empty() ? g_.Empty() : g_.Seq(std::move(items));
    return b;
  }

  // {n}, {n,} or {n,m} at pos_; false (pos_ unchanged) when the text there
  // is not a quantifier (then '{' is a literal, as ECMAScript's Annex B says).
  Result<bool> ParseBraces(int32_t* min, int32_t* max) {
    size_t i = pos_ + 1;
    auto number = [&](int64_t* out) {
      size_t start = i;
      *out = 0;
      while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') {
        *out = std::min<int64_t>(*out * 10 + (p_[i] - '0'), int64_t{1} << 40);
        ++i;
      }
      return i > start;
    };
    int64_t lo = 0, hi = -1;
    if (!number(&lo)) return false;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      if (!number(&hi)) hi = -1;
    } else {
      hi = lo;
    }
    if (i >= p_.size() || p_[i] != '}') return false;
    if (lo > kMaxRepeat || hi > kMaxRepeat)
      return Unsupported(pos_, "a repetition count above " + std::to_string(kMaxRepeat));
    if (hi >= 0 && lo > hi)
      return Error(pos_, "quantifier {" + std::to_string(lo) + "," + std::to_string(hi) + "} out of order");
    *min = static_cast<int32_t>(lo);
    *max = static_cast<int32_t>(hi);
    pos_ = i + 1;
    return true;
  }

  // Is a quantifier at pos_? Consumes it when so.
  Result<bool> ParseQuantifierBounds(int32_t* min, int32_t* max) {
    if (AtEnd()) return false;
    switch (Peek()) {
      case '*':
        *min = 0, *max = -1;
        ++pos_;
        return true;
      case '+':
        *min = 1, *max = -1;
        ++pos_;
        return true;
      case '?':
        *min = 0, *max = 1;
        ++pos_;
        return true;
      case '{':
        return ParseBraces(min, max);
      default:
        return false;
    }
  }

  Result<NodeId> ParseQuantifier(NodeId atom) {
    int32_t min = 1, max = 1;
    ASSIGN_OR_RETURN(bool quantified, ParseQuantifierBounds(&min, &max));
    if (!quantified) return atom;
    if (!AtEnd() && Peek() == '?') ++pos_;  // lazy: same language
    size_t at = pos_;
    int32_t again_min, again_max;
    ASSIGN_OR_RETURN(bool again, ParseQuantifierBounds(&again_min, &again_max));
    if (again) return Error(at, "nothing to repeat");
    return g_.Repeat(atom, min, max);
  }

  Result<NodeId> ParseAtom(int depth) {
    size_t at = pos_;
    char c = Peek();
    switch (c) {
      case '(':
        return ParseGroup(depth);
      case '[': {
        ASSIGN_OR_RETURN(CodepointSet set, ParseClass());
        return Emit(set);
      }
      case '.':
        ++pos_;
        return Emit(RegexDot());
      case '*':
      case '+':
      case '?':
        return Error(at, "nothing to repeat");
      case '{': {
        int32_t min, max;
        ASSIGN_OR_RETURN(bool quantifier, ParseBraces(&min, &max));
        if (quantifier) return Error(at, "nothing to repeat");
        ++pos_;
        return Emit(CodepointSet::Of('{', '{'));
      }
      case '\\': {
        ASSIGN_OR_RETURN(ClassAtom a, ParseEscape(/*in_class=*/false));
        return Emit(a.set);
      }
      default: {
        ASSIGN_OR_RETURN(char32_t cp, ParseLiteral());
        return Emit(CodepointSet::Of(cp, cp));
      }
    }
  }

  Result<char32_t> ParseLiteral() {
    size_t at = pos_;
    char32_t cp = utf8::DecodeOne(p_, &pos_);
    if (cp == utf8::kReplacement && p_.substr(at, pos_ - at) != "\xEF\xBF\xBD") return Error(at, "invalid UTF-8");
    return cp;
  }

  Result<NodeId> ParseGroup(int depth) {
    size_t at = pos_;
    if (depth + 1 > kMaxRegexNesting) return Unsupported(at, "nesting deeper than " + std::to_string(kMaxRegexNesting));
    ++pos_;
    if (!AtEnd() && Peek() == '?') {
      std::string_view rest = p_.substr(pos_);
      if (rest.starts_with("?:")) {
        pos_ += 2;
      } else if (rest.starts_with("?=") || rest.starts_with("?!")) {
        return Unsupported(at, "lookahead '(" + std::string(rest.substr(0, 2)) + "'");
      } else if (rest.starts_with("?<=") || rest.starts_with("?<!")) {
        return Unsupported(at, "lookbehind '(" + std::string(rest.substr(0, 3)) + "'");
      } else if (rest.starts_with("?<")) {
        size_t close = rest.find('>');
        if (close == std::string_view::npos || close == 2) return Error(at, "bad group name");
        for (char ch : rest.substr(2, close - 2)) {
          bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                    ch == '$';
          if (!ok) return Error(at, "bad group name");
        }
        pos_ += close + 1;
      } else {
        return Unsupported(at, "group syntax '(" + std::string(rest.substr(0, 2)) + "'");
      }
    }
    ASSIGN_OR_RETURN(NodeId body, ParseAlternation(depth + 1));
    if (AtEnd()) return Error(at, "unterminated group '('");
    ++pos_;  // ')'
    return body;
  }

  Result<CodepointSet> ParseClass() {
    size_t at = pos_;
    ++pos_;
    bool negate = false;
    if (!AtEnd() && Peek() == '^') {
      negate = true;
      ++pos_;
    }
    // ECMAScript's [] matches nothing and [^] anything; other dialects read
    // ']' there as a literal. Refuse rather than guess.
    if (!AtEnd() && Peek() == ']') return Unsupported(at, negate ? "class '[^]'" : "empty class '[]'");
    CodepointSet set;
    while (true) {
      if (AtEnd()) return Error(at, "unterminated class '['");
      if (Peek() == ']') break;
      size_t atom_at = pos_;
      ASSIGN_OR_RETURN(ClassAtom lo, ParseClassAtom());
      if (pos_ + 1 < p_.size() && Peek() == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        ASSIGN_OR_RETURN(ClassAtom hi, ParseClassAtom());
        if (!lo.single || !hi.single) return Unsupported(atom_at, "a class range with a class escape");
        if (lo.c > hi.c) return Error(atom_at, "class range out of order");
        set.Add(lo.c, hi.c);
      } else {
        set.Add(lo.set);
      }
    }
    ++pos_;  // ']'
    if (negate) set = set.Complement();
    if (set.empty()) return Unsupported(at, "a class that matches nothing");
    return set;
  }

  Result<ClassAtom> ParseClassAtom() {
    if (Peek() == '\\') return ParseEscape(/*in_class=*/true);
    ASSIGN_OR_RETURN(char32_t cp, ParseLiteral());
    return Single(cp);
  }

  static ClassAtom Single(char32_t cp) { return {CodepointSet::Of(cp, cp), true, cp}; }
  static ClassAtom Class(CodepointSet set) { return {std::move(set), false, 0}; }

  // \HHHH (after "\u") or \u{H...}; a surrogate pair written as two \u
  // escapes is one code point.
  Result<char32_t> ParseUnicodeEscape(size_t at) {
    if (!AtEnd() && Peek() == '{') {
      size_t close = p_.find('}', pos_);
      if (close == std::string_view::npos || close == pos_ + 1 || close - pos_ > 9)
        return Error(at, "bad escape '\\u{'");
      uint32_t v = 0;
      for (size_t i = pos_ + 1; i < close; ++i) {
        int h = HexValue(p_[i]);
        if (h < 0) return Error(at, "bad escape '\\u{'");
        v = v * 16 + static_cast<uint32_t>(h);
        if (v > kMaxCodepoint) return Error(at, "escape beyond U+10FFFF");
      }
      pos_ = close + 1;
      if (v >= 0xD800 && v <= 0xDFFF) return Unsupported(at, "a lone surrogate escape");
      return static_cast<char32_t>(v);
    }
    auto hex4 = [&](size_t i) -> int {
      if (i + 4 > p_.size()) return -1;
      int v = 0;
      for (size_t k = i; k < i + 4; ++k) {
        int h = HexValue(p_[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
      }
      return v;
    };
    int v = hex4(pos_);
    if (v < 0) return Error(at, "bad escape '\\u'");
    pos_ += 4;
    if (v >= 0xD800 && v <= 0xDBFF && p_.substr(pos_).starts_with("\\u")) {
      int low = hex4(pos_ + 2);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        pos_ += 6;
        return static_cast<char32_t>(0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00));
      }
    }
    if (v >= 0xD800 && v <= 0xDFFF) return Unsupported(at, "a lone surrogate escape");
    return static_cast<char32_t>(v);
  }

  Result<ClassAtom> ParseEscape(bool in_class) {
    size_t at = pos_;
    ++pos_;
    if (AtEnd()) return Error(at, "trailing backslash");
    char c = Peek();
    ++pos_;
    switch (c) {
      case 'd':
        return Class(RegexDigits());
      case 'D':
        return Class(RegexDigits().Complement());
      case 'w':
        return Class(RegexWordChars());
      case 'W':
        return Class(RegexWordChars().Complement());
      case 's':
        return Class(RegexWhitespace());
      case 'S':
        return Class(RegexWhitespace().Complement());
      case 'n':
        return Single('\n');
      case 'r':
        return Single('\r');
      case 't':
        return Single('\t');
      case 'f':
        return Single('\f');
      case 'v':
        return Single('\v');
      case 'b':
        if (in_class) return Single('\b');
        return Unsupported(at, "word boundary '\\b'");
      case 'B':
        return Unsupported(at, "word boundary '\\B'");
      case 'k':
        return Unsupported(at, "backreference '\\k'");
      case 'p':
      case 'P':
        return Unsupported(at, std::string("Unicode property escape '\\") + c + "'");
      case 'c': {
        if (AtEnd() || !((Peek() >= 'a' && Peek() <= 'z') || (Peek() >= 'A' && Peek() <= 'Z')))
          return Error(at, "bad escape '\\c'");
        char letter = Peek();
        ++pos_;
        return Single(static_cast<char32_t>(letter % 32));
      }
      case 'x': {
        if (pos_ + 2 > p_.size() || HexValue(p_[pos_]) < 0 || HexValue(p_[pos_ + 1]) < 0)
          return Error(at, "bad escape '\\x'");
        char32_t v = static_cast<char32_t>(HexValue(p_[pos_]) * 16 + HexValue(p_[pos_ + 1]));
        pos_ += 2;
        return Single(v);
      }
      case 'u': {
        ASSIGN_OR_RETURN(char32_t v, ParseUnicodeEscape(at));
        return Single(v);
      }
      case '0':
        if (!AtEnd() && Peek() >= '0' && Peek() <= '9') return Unsupported(at, "octal escape");
        return Single(0);
      default:
        break;
    }
    if (c >= '1' && c <= '9') return Unsupported(at, std::string("backreference '\\") + c + "'");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return Unsupported(at, std::string("escape '\\") + c + "'");
    pos_ = at + 1;
    ASSIGN_OR_RETURN(char32_t cp, ParseLiteral());  // identity escape: \. \/ \- \é ...
    return Single(cp);
  }

  Grammar& g_;
  std::string_view p_;
  RegexText text_;
  CodepointSet excluded_;
  size_t pos_ = 0;
};

}  // namespace

Result<NodeId> CompileRegex(Grammar& g, std::string_view pattern, bool search, RegexText text,
                            const CodepointSet& excluded) {
  return RegexCompiler(g, pattern, text, excluded).Compile(search);
}

}  // namespace llmhost::grammar
