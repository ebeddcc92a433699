// API keys: with none configured the server is open; otherwise every route
// but /health and CORS preflights needs `Authorization: Bearer KEY` or
// `x-api-key: KEY`. Keys are compared by SHA-256 digest in constant time
// (the time does not depend on where a guess first differs, nor on which
// key matched).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/http_types.h"
#include "util/sha256.h"

namespace llmhost::server {

class ApiKeyAuth {
 public:
  explicit ApiKeyAuth(const std::vector<std::string>& keys);
  bool open() const { return digests_.empty(); }
  // nullopt when allowed; else 401 "API key required" / "Invalid API key".
  MaybeError Check(const HttpRequest& request) const;
  // Whether `key` (surrounding blanks ignored) is one of the keys; constant time.
  bool Matches(std::string_view key) const;

 private:
  std::vector<Sha256Digest> digests_;
};

}  // namespace llmhost::server
