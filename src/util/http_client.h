// A small HTTP/1.1 client for GET (and simple POST) requests over plain TCP or TLS
// (util/net_stream.h): redirects followed (301, 302, 303, 307, 308; relative
// or absolute Location, to other hosts), chunked and Content-Length bodies,
// bodies streamed to a callback. One connection per request (Connection:
// close). No proxy support. Blocking: runs on the calling thread, and each
// call is independent (several threads may call at once).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/http_message.h"
#include "util/net_stream.h"
#include "util/status.h"

namespace llmhost {

struct HttpGetOptions {
  // Another method with a body (Content-Length) is sent as is, and its
  // redirects are not followed (the caller sees the 3xx).
  std::string method = "GET";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // sent on every hop
  // Sent only to the host of the first URL: a redirect to another host (a
  // CDN) must not carry credentials. E.g. {"Authorization", "Bearer hf_..."}.
  std::vector<std::pair<std::string, std::string>> credentials;
  NetTimeouts timeouts;
  int max_redirects = 10;
  size_t max_error_body = 64 << 10;  // kept of a non-2xx response's body
  // Called with the final response's head before its body when it is 2xx
  // (e.g. to decide where the body goes); a non-OK Status aborts.
  std::function<Status(const HttpResponseHead&)> on_head;
};

struct HttpGetResult {
  HttpResponseHead head;          // of the final response
  std::string url;                // the URL that gave it (after redirects)
  std::string error_body;         // a non-2xx response's body (truncated at max_error_body)
  int redirects = 0;
  // Headers of each redirect response in order (the Hub puts X-Repo-Commit
  // and X-Linked-Etag on the first one).
  std::vector<HttpResponseHead> redirect_heads;
};

// Receives each piece of a 2xx response's body; a non-OK Status aborts the
// transfer and is returned by HttpGet.
using HttpBodySink = std::function<Status(std::string_view)>;

// GETs `url`. A non-2xx final status is not an error here (the caller
// decides); IOError for the network (naming the URL), Corruption for a
// malformed response, InvalidArgument for a bad URL or too many redirects.
// A body cut short (fewer bytes than Content-Length, an unfinished chunked
// body) is IOError after the sink has received what came.
Result<HttpGetResult> HttpGet(const std::string& url, const HttpGetOptions& options, const HttpBodySink& sink);

// GETs a whole body of at most `max_bytes` into a string (2xx only; else the
// result's status tells). Corruption when the body is larger.
Result<std::pair<HttpGetResult, std::string>> HttpGetString(const std::string& url, const HttpGetOptions& options,
                                                            size_t max_bytes);

}  // namespace llmhost
