// What route handlers see of HTTP: a parsed request, a complete response, and
// a ResponseWriter that sends either one response or a chunked stream. The
// transport (http_server.cpp, Boost.Beast) stays behind these types so that
// handlers and their tests never include Beast.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmhost::server {

// Header names are lower-cased by the transport.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", "OPTIONS", ...
  std::string target;  // as sent: path and query
  std::string path;    // target without the query ("/v1/messages")
  std::string query;   // after '?', "" when none
  HeaderList headers;
  std::string body;
  std::string remote;  // peer address, for logs
  bool tls = false;    // came over HTTPS
  // X-Request-Id of the exchange (server/request_id.h): the client's when
  // sane, else generated; the transport sends it back on every response.
  std::string request_id;

  // The first value of header `lower_name`, "" when absent.
  std::string_view Header(std::string_view lower_name) const {
    for (const auto& [k, v] : headers) {
      if (k == lower_name) return v;
    }
    return {};
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  HeaderList headers;  // extra headers (Retry-After, ...)
  std::string body;
};

// One request's way back to its client. Thread-safe: a handler may call it
// from any thread (the engine's, a worker's). Exactly one of Send() or
// StartStream() ... End() completes the exchange; calls after completion or
// after the client has gone are ignored.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;

  // Headers added to whatever response is sent (CORS, ...). Call before
  // Send / StartStream.
  virtual void AddHeader(std::string name, std::string value) = 0;
  // A complete response (Content-Length framing).
  virtual void Send(HttpResponse response) = 0;
  // A streamed response: status and headers now (chunked framing, or
  // read-until-close for HTTP/1.0), then pieces, then End().
  virtual void StartStream(int status, std::string content_type, HeaderList headers) = 0;
  virtual void Write(std::string data) = 0;
  virtual void End() = 0;

  // `fn` runs once, on a transport thread, when the client can no longer be
  // answered: it hung up, a write failed or timed out, or the server is
  // closing connections at the end of a drain. Runs at once if that already
  // happened. Not called when the exchange completed normally.
  virtual void OnClose(std::function<void()> fn) = 0;
  virtual bool closed() const = 0;
  // Bytes queued for the client and not yet written (back-pressure).
  virtual size_t pending_bytes() const = 0;
  // Runs `fn` on a transport thread (the connection's), in the order of the
  // calls: work that must leave the calling thread (an engine's executor)
  // and stay ordered.
  virtual void Post(std::function<void()> fn) = 0;
};

using RequestHandler = std::function<void(HttpRequest request, std::shared_ptr<ResponseWriter> writer)>;

// Builds the response the transport sends by itself for a request it could
// not hand over (400 malformed HTTP, 413 body too large, 431 header too
// large, 503 shutting down). `target` is "" when the request line was unreadable.
using TransportErrorResponder =
    std::function<HttpResponse(int status, const std::string& message, const std::string& target)>;

}  // namespace llmhost::server
