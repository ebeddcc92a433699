#include "util/json.h"

#include "util/file.h"

namespace llmhost {

int JsonNestingDepth(std::string_view text, int limit) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        max_depth = depth;
        if (max_depth > limit) return max_depth;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

namespace {

template <class J>
Result<J> Parse(std::string_view text, std::string_view what, size_t max_bytes) {
  const std::string w(what);
  if (text.size() > max_bytes) {
    return Status::InvalidArgument(w + ": " + std::to_string(text.size()) + " bytes, more than the " +
                                   std::to_string(max_bytes) + " allowed");
  }
  if (JsonNestingDepth(text, kJsonMaxDepth) > kJsonMaxDepth) {
    return Status::InvalidArgument(w + ": nests deeper than " + std::to_string(kJsonMaxDepth) + " levels");
  }
  try {
    return J::parse(text.begin(), text.end());
  } catch (const typename J::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 9: ...".
    std::string msg = e.what();
    if (const size_t b = msg.find("] "); msg.rfind("[json.exception.", 0) == 0 && b != std::string::npos) {
      msg = msg.substr(b + 2);
    }
    return Status::InvalidArgument(w + ": not valid JSON: " + msg);
  }
}

template <class J>
Result<J> ReadFile(const std::string& path, size_t max_bytes) {
  Result<std::string> text = ReadFileToString(path, max_bytes);
  if (!text.ok()) {
    const Status& st = text.status();
    return st.code() == StatusCode::kInvalidArgument ? Status::Corruption(st.message()) : st;
  }
  Result<J> j = Parse<J>(*text, path, max_bytes);
  if (!j.ok()) return Status::Corruption(j.status().message());
  return j;
}

}  // namespace

Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what, size_t max_bytes) {
  return Parse<nlohmann::json>(text, what, max_bytes);
}

Result<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, std::string_view what,
                                                size_t max_bytes) {
  return Parse<nlohmann::ordered_json>(text, what, max_bytes);
}

Result<nlohmann::json> ReadJsonFile(const std::string& path, size_t max_bytes) {
  return ReadFile<nlohmann::json>(path, max_bytes);
}

Result<nlohmann::ordered_json> ReadOrderedJsonFile(const std::string& path, size_t max_bytes) {
  return ReadFile<nlohmann::ordered_json>(path, max_bytes);
}

}  // namespace llmhost
