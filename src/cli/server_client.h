// Requests to a running `llmhost serve` for the commands that talk to one
// (ls, ps, show, run, rm, bench), over util/http_client.h: the server given as
// http(s)://HOST[:PORT], JSON bodies, a bearer key, streamed bodies.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace llmhost::cli {

struct HttpReply {
  int status = 0;
  std::string body;  // a 2xx body `on_body` took stays empty; an error body is always here
};

// `on_body` (optional) gets a 2xx body's bytes as they arrive; returning
// false stops reading. IOError when the server cannot be reached,
// InvalidArgument for a `base` that is not http(s)://HOST[:PORT].
Result<HttpReply> HttpCall(const std::string& base, const std::string& method, const std::string& path,
                           const std::string& body, const std::string& bearer_token,
                           const std::function<bool(std::string_view)>& on_body = {});

// True when `HttpCall` failed because nothing listens at the address
// (connection refused): the commands that can work without a server do.
bool NoServerListening(const Status& status);

}  // namespace llmhost::cli
