// A plain HTTP/1.1 client for the commands that talk to a running
// `llmhost serve` (ls, ps, show, run): one request per connection
// (Connection: close), Content-Length, chunked or read-to-close bodies,
// delivered as they arrive. No TLS: the server speaks plain HTTP.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace llmhost::cli {

struct HttpReply {
  int status = 0;
  std::string body;  // empty when `on_body` took it
};

// `base`: "http://HOST[:PORT]" (port 80 by default). `on_body` (optional)
// gets the body's bytes as they arrive; returning false stops reading.
// IOError when the server cannot be reached or the reply is not HTTP.
Result<HttpReply> HttpCall(const std::string& base, const std::string& method, const std::string& path,
                           const std::string& body, const std::string& bearer_token,
                           const std::function<bool(std::string_view)>& on_body = {});

}  // namespace llmhost::cli
