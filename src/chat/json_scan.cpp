#include "chat/json_scan.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "chat/markup_scan.h"

namespace llmhost::json_scan {
namespace {

constexpr size_t kMaxDepth = 256;  // deeper is not a tool call; keeps validation cheap

Span ScanString(std::string_view s, size_t pos) {
  for (size_t i = pos + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return {State::kComplete, i + 1};
    } else if (static_cast<unsigned char>(s[i]) < 0x20) {
      return {State::kError, i};
    }
  }
  return {State::kIncomplete, s.size()};
}

bool IsScalarByte(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '+' || c == '-' ||
         c == '.';
}

// The end of the number at s[i] in JSON's syntax,
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; npos where there is none.
size_t JsonNumberEnd(std::string_view s, size_t i) {
  auto digits = [&](size_t at) {
    size_t j = at;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    return j;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i >= s.size() || s[i] < '0' || s[i] > '9') return std::string_view::npos;
  i = s[i] == '0' ? i + 1 : digits(i);
  if (i < s.size() && s[i] == '.') {
    const size_t j = digits(i + 1);
    if (j == i + 1) return std::string_view::npos;
    i = j;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const size_t k = digits(j);
    if (k == j) return std::string_view::npos;
    i = k;
  }
  return i;
}

std::string DecodeString(std::string_view token) {
  auto j = nlohmann::json::parse(token, nullptr, /*allow_exceptions=*/false);
  return j.is_string() ? j.get<std::string>() : std::string();
}

}  // namespace

Span ScanValue(std::string_view s, size_t pos) {
  if (pos >= s.size()) return {State::kIncomplete, s.size()};
  char c = s[pos];
  if (c == '"') return ScanString(s, pos);
  if (c != '{' && c != '[') {
    size_t i = pos;
    while (i < s.size() && IsScalarByte(s[i])) ++i;
    if (i == pos) return {State::kError, pos};
    if (i == s.size()) return {State::kIncomplete, i};  // the number may go on
    return {State::kComplete, i};
  }
  std::string closers;
  for (size_t i = pos; i < s.size(); ++i) {
    char b = s[i];
    if (b == '"') {
      Span str = ScanString(s, i);
      if (str.state != State::kComplete) return str;
      i = str.end - 1;
    } else if (b == '{' || b == '[') {
      if (closers.size() >= kMaxDepth) return {State::kError, i};
      closers.push_back(b == '{' ? '}' : ']');
    } else if (b == '}' || b == ']') {
      if (b != closers.back()) return {State::kError, i};
      closers.pop_back();
      if (closers.empty()) return {State::kComplete, i + 1};
    }
  }
  return {State::kIncomplete, s.size()};
}

bool IsValidJson(std::string_view text) {
  // nlohmann refuses numbers past the double range, which JSON allows: each
  // number is held to JSON's syntax here and stands as 0 for the rest.
  std::string copy;
  copy.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      Span str = ScanString(text, i);
      if (str.state != State::kComplete) return false;
      copy.append(text.substr(i, str.end - i));
      i = str.end;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const size_t end = JsonNumberEnd(text, i);
      if (end == std::string_view::npos) return false;
      copy += '0';
      i = end;
    } else {
      copy += c;
      ++i;
    }
  }
  return nlohmann::json::accept(copy);
}

CallObject ScanCallObject(std::string_view s, size_t pos, const std::vector<std::string_view>& name_keys,
                          const std::vector<std::string_view>& argument_keys) {
  CallObject out;
  auto is_in = [](const std::vector<std::string_view>& keys, const std::string& k) {
    return std::find(keys.begin(), keys.end(), k) != keys.end();
  };
  auto fail = [&](size_t at) {
    out.state = State::kError;
    out.end = at;
    out.arguments.clear();
    return out;
  };
  bool have_args = false, args_is_string = false;
  std::string_view args_text;
  size_t i = pos + 1;
  for (bool first = true;; first = false) {
    i = markup::SkipSpace(s, i);
    if (i >= s.size()) return out;
    if (s[i] == '}' && first) {
      ++i;
      break;
    }
    if (s[i] != '"') return fail(i);
    Span key = ScanString(s, i);
    if (key.state == State::kError) return fail(key.end);
    if (key.state == State::kIncomplete) return out;
    std::string k = DecodeString(s.substr(i, key.end - i));
    i = markup::SkipSpace(s, key.end);
    if (i >= s.size()) return out;
    if (s[i] != ':') return fail(i);
    i = markup::SkipSpace(s, i + 1);
    if (i >= s.size()) return out;
    size_t vstart = i;
    Span value = ScanValue(s, vstart);
    if (value.state == State::kError) return fail(value.end);
    if (value.state == State::kIncomplete) {
      if (is_in(argument_keys, k) && out.name_known && s[vstart] == '{') out.arguments = std::string(s.substr(vstart));
      return out;
    }
    std::string_view v = s.substr(vstart, value.end - vstart);
    if (is_in(name_keys, k) && !out.name_known) {
      if (v.empty() || v[0] != '"' || !IsValidJson(v)) return fail(vstart);
      out.name = DecodeString(v);
      out.name_known = true;
    } else if (is_in(argument_keys, k) && !have_args) {
      have_args = true;
      args_is_string = v[0] == '"';
      args_text = v;
      if (!args_is_string && v[0] != '{') return fail(vstart);
    }
    i = markup::SkipSpace(s, value.end);
    if (i >= s.size()) {
      if (have_args && out.name_known && !args_is_string) out.arguments = std::string(args_text);
      return out;
    }
    if (s[i] == ',') {
      if (have_args && out.name_known && !args_is_string) out.arguments = std::string(args_text);
      ++i;
      continue;
    }
    if (s[i] != '}') return fail(i);
    ++i;
    break;
  }
  if (!out.name_known || out.name.empty() || !IsValidJson(s.substr(pos, i - pos))) return fail(i);
  if (!have_args) {
    out.arguments = "{}";
  } else if (args_is_string) {
    std::string inner = DecodeString(args_text);
    auto j = nlohmann::json::parse(inner, nullptr, false);
    if (!j.is_object()) return fail(i);
    out.arguments = inner;
  } else {
    out.arguments = std::string(args_text);
  }
  out.state = State::kComplete;
  out.end = i;
  return out;
}

CallObject ScanArgumentsObject(std::string_view s, size_t pos) {
  CallObject out;
  if (pos >= s.size()) return out;
  if (s[pos] != '{') {
    out.state = State::kError;
    out.end = pos;
    return out;
  }
  Span v = ScanValue(s, pos);
  out.end = v.end;
  if (v.state == State::kIncomplete) {
    out.arguments = std::string(s.substr(pos));
    return out;
  }
  if (v.state == State::kError || !IsValidJson(s.substr(pos, v.end - pos))) {
    out.state = State::kError;
    return out;
  }
  out.state = State::kComplete;
  out.arguments = std::string(s.substr(pos, v.end - pos));
  return out;
}

void AppendJsonEscaped(std::string& out, std::string_view text) {
  static const char* kHex = "0123456789abcdef";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out.push_back(kHex[(c >> 4) & 0xf]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
}

std::string QuoteJson(std::string_view text) {
  std::string out = "\"";
  AppendJsonEscaped(out, text);
  out += '"';
  return out;
}

}  // namespace llmhost::json_scan
