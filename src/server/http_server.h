// HttpServer: an event-driven HTTP/1.1 server (Boost.Asio + Boost.Beast behind
// a pimpl). A few I/O threads serve every connection: an idle keep-alive
// connection costs a socket and a small buffer, never a thread.
//
// Each request is parsed with limits (header bytes, body bytes, read
// timeouts); malformed HTTP is answered 400, an oversized body 413, oversized
// headers 431, and the connection closed. A complete request goes to the
// handler on a worker thread (handlers may tokenize or load a model); while it
// is answered, the connection is watched for a hang-up, which fires the
// writer's OnClose so the work can be cancelled.
//
// With `tls` set the port speaks HTTPS only: each connection must open with a
// TLS handshake, finished within `header_timeout`; a plain-HTTP request is
// answered 400 and closed. Requests then flow exactly as over plain HTTP, with
// HttpRequest::tls set.
//
// Shutdown (Shutdown(), or SIGINT/SIGTERM when handle_signals): stop
// accepting, close idle connections, let requests in flight finish for up to
// `drain_timeout`, then close the rest and return from Run().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "server/http_types.h"
#include "util/status.h"

namespace llmhost::server {

class TlsServerContext;  // server/tls_context.h

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: an ephemeral port (see port())
  int io_threads = 2;
  int worker_threads = 4;  // run the handlers
  size_t max_body_bytes = 32u << 20;
  size_t max_header_bytes = 64u << 10;
  std::chrono::seconds idle_timeout{300};    // keep-alive: waiting for a request's first byte
  std::chrono::seconds header_timeout{30};   // from a request's first byte to the end of its headers;
                                             // from accepting a TLS connection to the end of its handshake
  std::chrono::seconds read_timeout{60};     // a request's body
  std::chrono::seconds write_timeout{120};   // one write to a client that does not read
  std::chrono::seconds drain_timeout{30};
  int max_connections = 10000;               // beyond it a new connection gets 503 and is closed
  bool handle_signals = false;               // SIGINT/SIGTERM start the shutdown
  std::shared_ptr<const TlsServerContext> tls;  // set: HTTPS only
};

struct HttpServerStats {
  int64_t connections = 0;       // open now
  int64_t requests_active = 0;   // handed to the handler, not yet answered
  int64_t requests_total = 0;
  int64_t connections_refused = 0;  // over max_connections
};

class HttpServer {
 public:
  // Binds and listens (SO_REUSEADDR); IOError naming the address when it fails.
  static Result<std::unique_ptr<HttpServer>> Create(const HttpServerOptions& options,
                                                    RequestHandler handler,
                                                    TransportErrorResponder error_responder);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;  // the bound port
  // Serves until the shutdown completes. Call once.
  void Run();
  // Starts the shutdown from any thread (idempotent); Run() returns when done.
  void Shutdown();
  bool shutting_down() const;
  HttpServerStats stats() const;

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Raises RLIMIT_NOFILE's soft limit to its hard limit; returns the new soft limit.
uint64_t RaiseFileDescriptorLimit();

}  // namespace llmhost::server
