#include "chat/python_literal.h"

#include <nlohmann/json.hpp>

#include "chat/markup_scan.h"

namespace llmhost {
namespace {

using Json = nlohmann::ordered_json;
constexpr int kMaxDepth = 64;

int HexDigit(char h) {
  return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentByte(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  std::optional<std::vector<PythonCall>> Calls() {
    std::vector<PythonCall> calls;
    if (!Eat('[')) return std::nullopt;
    if (Eat(']')) return AtEnd() ? std::optional(calls) : std::nullopt;
    for (;;) {
      auto call = Call();
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
      if (Eat(',')) {
        if (Eat(']')) break;
        continue;
      }
      if (!Eat(']')) return std::nullopt;
      break;
    }
    if (!AtEnd()) return std::nullopt;
    return calls;
  }

 private:
  void Space() { i_ = markup::SkipSpace(s_, i_); }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    Space();
    return i_ == s_.size();
  }
  std::optional<std::string> Ident() {
    Space();
    if (i_ >= s_.size() || !IsIdentStart(s_[i_])) return std::nullopt;
    size_t b = i_;
    while (i_ < s_.size() && IsIdentByte(s_[i_])) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }

  std::optional<PythonCall> Call() {
    auto name = Ident();
    if (!name) return std::nullopt;
    while (i_ < s_.size() && s_[i_] == '.') {  // module.function
      ++i_;
      if (i_ >= s_.size() || !IsIdentStart(s_[i_])) return std::nullopt;
      auto part = Ident();
      *name += "." + *part;
    }
    if (!Eat('(')) return std::nullopt;
    Json args = Json::object();
    if (!Eat(')')) {
      for (;;) {
        auto key = Ident();
        if (!key || !Eat('=')) return std::nullopt;
        auto v = Value(0);
        if (!v) return std::nullopt;
        args[*key] = std::move(*v);
        if (Eat(',')) {
          if (Eat(')')) break;
          continue;
        }
        if (!Eat(')')) return std::nullopt;
        break;
      }
    }
    return PythonCall{*name, args.dump(-1, ' ', false, Json::error_handler_t::replace)};
  }

  std::optional<Json> Sequence(char close, int depth) {
    Json out = Json::array();
    if (Eat(close)) return out;
    for (;;) {
      auto v = Value(depth + 1);
      if (!v) return std::nullopt;
      out.push_back(std::move(*v));
      if (Eat(',')) {
        if (Eat(close)) return out;
        continue;
      }
      if (!Eat(close)) return std::nullopt;
      return out;
    }
  }

  std::optional<Json> Dict(int depth) {
    Json out = Json::object();
    if (Eat('}')) return out;
    for (;;) {
      auto k = Value(depth + 1);
      if (!k || !Eat(':')) return std::nullopt;
      auto v = Value(depth + 1);
      if (!v) return std::nullopt;
      out[k->is_string() ? k->get<std::string>() : k->dump()] = std::move(*v);
      if (Eat(',')) {
        if (Eat('}')) return out;
        continue;
      }
      if (!Eat('}')) return std::nullopt;
      return out;
    }
  }

  std::optional<Json> String() {
    char q = s_[i_];
    bool triple = s_.substr(i_, 3) == std::string(3, q);
    i_ += triple ? 3 : 1;
    std::string out;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == q && (!triple || s_.substr(i_, 3) == std::string(3, q))) {
        i_ += triple ? 3 : 1;
        return Json(out);
      }
      if (c == '\n' && !triple) return std::nullopt;
      if (c != '\\') {
        out.push_back(c);
        ++i_;
        continue;
      }
      if (++i_ >= s_.size()) return std::nullopt;
      char e = s_[i_++];
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case 'a': out.push_back('\a'); break;
        case '0': out.push_back('\0'); break;
        case '\n': break;  // a continued line
        case 'x': case 'u': case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i_ + n > s_.size()) return std::nullopt;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            char h = s_[i_ + k];
            int d = HexDigit(h);
            if (d < 0) return std::nullopt;
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          i_ += n;
          // A surrogate pair written as two escapes (JSON's way) is one code point.
          if (e == 'u' && cp >= 0xD800 && cp <= 0xDBFF && s_.substr(i_, 2) == "\\u" && i_ + 6 <= s_.size()) {
            uint32_t lo = 0;
            for (size_t k = 2; k < 6 && lo != UINT32_MAX; ++k) {
              const int d = HexDigit(s_[i_ + k]);
              lo = d < 0 ? UINT32_MAX : lo * 16 + static_cast<uint32_t>(d);
            }
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              i_ += 6;
            }
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
          AppendUtf8(out, cp);
          break;
        }
        default: out.push_back(e);  // \\, \', \" and unknown escapes keep the byte
      }
    }
    return std::nullopt;
  }

  std::optional<Json> Number() {
    size_t b = i_;
    if (s_[i_] == '-' || s_[i_] == '+') ++i_;
    while (i_ < s_.size() && (IsIdentByte(s_[i_]) || s_[i_] == '.' ||
                              ((s_[i_] == '-' || s_[i_] == '+') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E')))) {
      ++i_;
    }
    std::string text(s_.substr(b, i_ - b));
    if (!text.empty() && text[0] == '+') text.erase(0, 1);
    Json j = Json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_number()) return std::nullopt;
    return j;
  }

  std::optional<Json> Value(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    Space();
    if (i_ >= s_.size()) return std::nullopt;
    char c = s_[i_];
    if (c == '"' || c == '\'') return String();
    if (c == '[') return ++i_, Sequence(']', depth);
    if (c == '(') return ++i_, Sequence(')', depth);
    if (c == '{') return ++i_, Dict(depth);
    if (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9')) return Number();
    auto word = Ident();
    if (!word) return std::nullopt;
    if (*word == "True" || *word == "true") return Json(true);
    if (*word == "False" || *word == "false") return Json(false);
    if (*word == "None" || *word == "null") return Json(nullptr);
    return std::nullopt;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

std::optional<std::vector<PythonCall>> ParsePythonCalls(std::string_view text) { return Reader(text).Calls(); }

json_scan::Span ScanPythonBrackets(std::string_view s, size_t pos) {
  std::string closers;
  for (size_t i = pos; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != c) j += s[j] == '\\' ? 2 : 1;
      if (j >= s.size()) return {json_scan::State::kIncomplete, s.size()};
      i = j;
    } else if (c == '[' || c == '(' || c == '{') {
      if (closers.size() >= 256) return {json_scan::State::kError, i};
      closers.push_back(c == '[' ? ']' : c == '(' ? ')' : '}');
    } else if (c == ']' || c == ')' || c == '}') {
      if (closers.empty() || c != closers.back()) return {json_scan::State::kError, i};
      closers.pop_back();
      if (closers.empty()) return {json_scan::State::kComplete, i + 1};
    }
  }
  return {json_scan::State::kIncomplete, s.size()};
}

}  // namespace llmhost
