#include "server/auth.h"

#include <cctype>

namespace llmhost::server {

namespace {

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool DigestEqual(const Sha256Digest& a, const Sha256Digest& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

ApiKeyAuth::ApiKeyAuth(const std::vector<std::string>& keys) {
  for (const std::string& k : keys) {
    std::string_view t = Trim(k);
    if (!t.empty()) digests_.push_back(Sha256Of(t));
  }
}

MaybeError ApiKeyAuth::Check(const HttpRequest& request) const {
  if (open()) return std::nullopt;
  std::string_view token;
  std::string_view auth = Trim(request.Header("authorization"));
  if (StartsWithNoCase(auth, "bearer ")) token = Trim(auth.substr(7));
  if (token.empty()) token = Trim(request.Header("x-api-key"));
  if (token.empty()) {
    return ApiError{401, "API key required: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'",
                    "", "invalid_api_key", 0, {}};
  }
  if (!Matches(token)) return ApiError{401, "Invalid API key", "", "invalid_api_key", 0, {}};
  return std::nullopt;
}

bool ApiKeyAuth::Matches(std::string_view key) const {
  const Sha256Digest given = Sha256Of(Trim(key));
  bool match = false;
  for (const Sha256Digest& d : digests_) match |= DigestEqual(given, d);  // no early exit
  return match;
}

}  // namespace llmhost::server
