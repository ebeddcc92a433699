// CORS: browsers may call the API from the origins in --cors-origins ("*":
// any). None by default: a web page on another origin cannot read responses.
#pragma once

#include <string>
#include <vector>

#include "server/http_types.h"

namespace llmhost::server {

class CorsPolicy {
 public:
  explicit CorsPolicy(std::vector<std::string> origins);
  // Headers to add to a response to `request` (empty: no Origin, or not allowed).
  HeaderList ResponseHeaders(const HttpRequest& request) const;
  // The answer to an OPTIONS preflight: 204 with the allowed methods and the
  // requested headers when the origin is allowed, else 403.
  HttpResponse Preflight(const HttpRequest& request) const;
  // Whether `origin` is one of --cors-origins (or they include "*").
  bool Allowed(const std::string& origin) const;

 private:
  std::vector<std::string> origins_;
};

}  // namespace llmhost::server
