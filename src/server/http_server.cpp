// HttpServer on Boost.Asio + Boost.Beast. The only file of llmhost that
// includes Asio/Beast (they are slow to compile).
//
// Per connection, one Session on its own strand. Its life:
//   (TLS only: DetectTls — the first bytes must open a TLS handshake — then
//    Handshake; both within header_timeout)
//   ReadRequest (header, then body, with timeouts and limits)
//     → hand the request to the handler (worker pool) → while it is answered,
//       a "monitor" read watches for a hang-up (data that arrives is kept for
//       the next request)
//     → the response goes out through a queue of strings (one write in flight)
//     → keep-alive: cancel the monitor and read the next request; else close.
// Responses are formatted here as plain HTTP/1.1 text; Beast parses requests.
// Over TLS the same code reads and writes through an asio::ssl::stream layered
// on the session's tcp_stream (WithStream picks one), so the timeouts, the
// hang-up monitor and the shutdown work the same for both.
#include "server/http_server.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <boost/asio.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server/request_id.h"
#include "server/tls_context.h"
#include "util/log.h"

namespace llmhost::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
// TLS over the session's own tcp_stream (held by reference), whose timeouts
// then bound every TLS read and write.
using TlsStream = net::ssl::stream<beast::tcp_stream&>;

namespace {

constexpr size_t kMaxPipelinedBytes = 1u << 20;  // buffered ahead while a request is answered
constexpr size_t kMonitorReadBytes = 4096;

std::string StatusLine(int status, int version) {
  std::string reason(http::obsolete_reason(static_cast<http::status>(status)));
  if (reason.empty() || reason == "<unknown-status>") reason = "Status";
  return std::string(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ") + std::to_string(status) + " " +
         reason + "\r\n";
}

// Header values must not break the framing: CR/LF dropped.
void AppendHeader(std::string& out, const std::string& name, const std::string& value) {
  out += name;
  out += ": ";
  for (char c : value) {
    if (c != '\r' && c != '\n') out += c;
  }
  out += "\r\n";
}

std::string ChunkFrame(const std::string& data) {
  char size[20];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  std::string out = size;
  out += data;
  out += "\r\n";
  return out;
}

// The client went away, its connection broke or timed out: no response can
// reach it (TLS: a close without close_notify, or a failed record).
bool IsHangUp(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
         ec == net::error::operation_aborted || ec == net::error::connection_reset ||
         ec == net::ssl::error::stream_truncated || ec.category() == net::error::get_ssl_category();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

class Session;

class HttpServer::Impl {
 public:
  Impl(const HttpServerOptions& o, RequestHandler h, TransportErrorResponder e)
      : opts(o), handler(std::move(h)), error_responder(std::move(e)),
        workers(static_cast<size_t>(std::max(1, o.worker_threads))), acceptor(ioc),
        signals(ioc), shutdown_timer(ioc), accept_retry_timer(ioc) {}

  Status Listen();
  void Accept();
  size_t SessionCount() const {
    std::lock_guard<std::mutex> lock(mu);
    return sessions.size();
  }
  void RefuseConnection(tcp::socket socket);
  void BeginShutdown();
  void ShutdownTick();
  void Register(Session* s, std::weak_ptr<Session> w) {
    std::lock_guard<std::mutex> lock(mu);
    sessions.emplace(s, std::move(w));
  }
  void Unregister(Session* s) {
    std::lock_guard<std::mutex> lock(mu);
    sessions.erase(s);
  }
  template <class F>
  void ForEachSession(F f);

  // Declared first, destroyed last: sessions unregister from the io_context's destructor.
  mutable std::mutex mu;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;  // guarded by mu
  HttpServerOptions opts;
  RequestHandler handler;
  TransportErrorResponder error_responder;
  net::io_context ioc;
  net::thread_pool workers;
  tcp::acceptor acceptor;
  net::signal_set signals;
  net::steady_timer shutdown_timer;
  net::steady_timer accept_retry_timer;
  std::chrono::steady_clock::time_point drain_deadline;
  bool force_closed = false;  // on the io thread running ShutdownTick
  int bound_port = 0;
  std::atomic<bool> shutting_down{false};
  std::atomic<int64_t> requests_active{0};
  std::atomic<int64_t> requests_total{0};
  std::atomic<int64_t> connections_refused{0};
  std::chrono::steady_clock::time_point last_refusal_log{};  // on the accepting strand
};

// The ResponseWriter of one request. Its methods run on any thread; each
// check-then-post happens under mu_ so the posted operations keep the order
// of the calls (the strand runs them FIFO).
class Exchange final : public ResponseWriter, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<Session> session, int version, bool head, std::string request_id)
      : session_(std::move(session)), version_(version), head_(head), request_id_(std::move(request_id)) {
    extra_.emplace_back("X-Request-Id", request_id_);
  }

  void AddHeader(std::string name, std::string value) override {
    std::lock_guard<std::mutex> lock(mu_);
    extra_.emplace_back(std::move(name), std::move(value));
  }
  void Send(HttpResponse response) override;
  void StartStream(int status, std::string content_type, HeaderList headers) override;
  void Write(std::string data) override;
  void End() override;
  void OnClose(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_) {
      lock.unlock();
      if (!done_) fn();
      return;
    }
    on_close_ = std::move(fn);
  }
  bool closed() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  size_t pending_bytes() const override { return pending_.load(); }
  void Post(std::function<void()> fn) override;

  // From the session (strand): the client can no longer be answered.
  void MarkClosed() {
    std::function<void()> fn;
    bool done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return;
      closed_ = true;
      fn = std::move(on_close_);
      done = done_;
    }
    if (fn && !done) fn();
  }
  void Written(size_t n) { pending_ -= std::min(n, pending_.load()); }
  int version() const { return version_; }

 private:
  std::string Head(int status, const std::string& content_type, const HeaderList& headers,
                   const HeaderList& extra, const std::string* content_length, bool keep_alive);

  std::shared_ptr<Session> session_;
  const int version_;
  const bool head_;
  const std::string request_id_;  // in every log line of the work posted through Post()
  mutable std::mutex mu_;
  HeaderList extra_;
  bool started_ = false;  // StartStream called
  bool done_ = false;     // Send or End called
  bool closed_ = false;
  std::function<void()> on_close_;
  std::atomic<size_t> pending_{0};
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl* server)
      : stream_(std::move(socket)), server_(server) {}
  ~Session() { server_->Unregister(this); }

  void Start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (self->server_->opts.tls) {
        self->DetectTls();
      } else {
        self->ReadRequest();
      }
    });
  }
  // Any thread.
  void Post(std::function<void()> fn) { net::post(stream_.get_executor(), std::move(fn)); }

  // --- On the strand ---
  void QueueWrite(std::string data, bool completes_exchange) {
    if (closed_) return;
    if (!data.empty()) out_.push_back(std::move(data));
    if (completes_exchange) response_complete_ = true;
    if (writing_) return;  // OnWrite continues
    if (!out_.empty()) {
      DoWrite();
    } else if (response_complete_) {
      // Nothing left to send (an HTTP/1.0 stream ends with no bytes of its
      // own): the exchange is complete now, not on a write that never comes.
      FinishExchange();
    }
  }
  bool keep_alive() const { return keep_alive_ && !server_->shutting_down.load(); }
  void OnServerShutdown() {
    if (closed_) return;
    keep_alive_ = false;
    if (!exchange_) CloseNow();  // idle, or between requests
  }
  void CloseNow();

 private:
  // Calls f(stream) with what carries HTTP: the TLS stream once its handshake
  // has begun, else the TCP stream.
  template <class F>
  void WithStream(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(stream_);
    }
  }
  void DetectTls();
  void Handshake();
  void ReadRequest();
  void ReadHeader();
  void OnHeader(beast::error_code ec);
  void OnBody(beast::error_code ec);
  void Dispatch();
  void StartMonitor();
  void OnMonitor(beast::error_code ec, size_t n);
  void DoWrite();
  void OnWrite(beast::error_code ec, size_t n);
  void FinishExchange();
  // `incoming_id`: the request's X-Request-Id when its headers were read.
  void RespondError(int status, const std::string& message, std::string_view incoming_id = {});
  void LingerClose();

  beast::tcp_stream stream_;
  std::optional<TlsStream> tls_;  // over stream_ (declared after it: destroyed first)
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpServer::Impl* server_;
  std::string target_;  // of the request being read/answered (for error shapes)
  std::shared_ptr<Exchange> exchange_;  // the request being answered
  std::deque<std::string> out_;
  bool writing_ = false;
  bool reading_ = false;  // a read (request or monitor) is pending
  bool response_complete_ = false;
  bool keep_alive_ = true;
  bool closed_ = false;
  bool close_after_write_ = false;  // after a transport error response
  bool lingering_ = false;
  bool counted_ = false;  // exchange_ counted in requests_active
  char discard_[4096];
};

// ---------------------------------------------------------------- Exchange

std::string Exchange::Head(int status, const std::string& content_type, const HeaderList& headers,
                           const HeaderList& extra, const std::string* content_length,
                           bool keep_alive) {
  std::string out = StatusLine(status, version_);
  AppendHeader(out, "Server", "llmhost");
  if (!content_type.empty()) AppendHeader(out, "Content-Type", content_type);
  for (const auto& [k, v] : headers) AppendHeader(out, k, v);
  for (const auto& [k, v] : extra) AppendHeader(out, k, v);
  if (content_length) {
    AppendHeader(out, "Content-Length", *content_length);
  } else if (version_ != 10) {
    AppendHeader(out, "Transfer-Encoding", "chunked");
  }
  if (!keep_alive) {
    AppendHeader(out, "Connection", "close");
  } else if (version_ == 10) {
    AppendHeader(out, "Connection", "keep-alive");
  }
  out += "\r\n";
  return out;
}

void Exchange::Send(HttpResponse response) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_ || closed_ || started_) return;
  done_ = true;
  auto s = session_;
  s->Post([self = shared_from_this(), s, extra = extra_, r = std::move(response)]() mutable {
    const std::string len = std::to_string(r.body.size());
    std::string out =
        self->Head(r.status, r.content_type, r.headers, extra, &len, s->keep_alive());
    if (!self->head_) out += r.body;
    self->pending_ += out.size();
    s->QueueWrite(std::move(out), /*completes_exchange=*/true);
  });
}

void Exchange::StartStream(int status, std::string content_type, HeaderList headers) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_ || closed_ || started_) return;
  started_ = true;
  auto s = session_;
  s->Post([self = shared_from_this(), s, status, extra = extra_, ct = std::move(content_type),
           h = std::move(headers)] {
    // HTTP/1.0 has no chunked framing: the body ends when the connection does.
    std::string out =
        self->Head(status, ct, h, extra, nullptr, self->version_ != 10 && s->keep_alive());
    self->pending_ += out.size();
    s->QueueWrite(std::move(out), false);
  });
}

void Exchange::Post(std::function<void()> fn) {
  session_->Post([id = request_id_, fn = std::move(fn)] {
    ScopedRequestId scope(id);
    fn();
  });
}

void Exchange::Write(std::string data) {
  if (data.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || done_ || closed_) return;
  pending_ += data.size();
  auto s = session_;
  s->Post([self = shared_from_this(), s, d = std::move(data)]() mutable {
    s->QueueWrite(self->version_ == 10 ? std::move(d) : ChunkFrame(d), false);
  });
}

void Exchange::End() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || done_ || closed_) return;
  done_ = true;
  auto s = session_;
  s->Post([self = shared_from_this(), s] {
    std::string last = self->version_ == 10 ? std::string() : std::string("0\r\n\r\n");
    self->pending_ += last.size();
    s->QueueWrite(std::move(last), true);
  });
}

// ---------------------------------------------------------------- Session

// A TLS port: a client whose first bytes do not open a TLS handshake (plain
// HTTP, most likely) is told so in a plain-text 400 and closed. The deadline
// covers the handshake too, so a silent client cannot stay.
void Session::DetectTls() {
  stream_.expires_after(server_->opts.header_timeout);
  reading_ = true;
  beast::async_detect_ssl(stream_, buffer_, [self = shared_from_this()](beast::error_code ec, bool is_tls) {
    self->reading_ = false;
    if (self->closed_) return;
    if (ec) {
      self->CloseNow();
    } else if (!is_tls) {
      self->RespondError(400, "this port speaks HTTPS only: use an https:// URL");
    } else {
      self->Handshake();
    }
  });
}

void Session::Handshake() {
  SSL* ssl = SSL_new(server_->opts.tls->native());
  if (!ssl) {
    LOG_WARN("http: TLS: cannot create a connection (out of memory?)");
    CloseNow();
    return;
  }
  tls_.emplace(stream_, ssl);  // owns ssl
  reading_ = true;
  // The bytes DetectTls read begin the handshake.
  tls_->async_handshake(net::ssl::stream_base::server, buffer_.data(),
                        [self = shared_from_this()](beast::error_code ec, size_t used) {
                          self->reading_ = false;
                          if (self->closed_) return;
                          if (ec) {
                            LOG_DEBUG("http: TLS handshake failed: " << ec.message());
                            self->CloseNow();
                            return;
                          }
                          // The client cannot send more before the handshake ends (no early
                          // data): bytes it did not take would be raw TLS, not HTTP.
                          if (used != self->buffer_.size()) {
                            self->CloseNow();
                            return;
                          }
                          self->buffer_.consume(used);
                          self->ReadRequest();
                        });
}

void Session::ReadRequest() {
  if (closed_ || reading_) return;
  if (server_->shutting_down.load()) {
    CloseNow();
    return;
  }
  target_.clear();
  if (buffer_.size() > 0) {  // pipelined: the next request has begun
    ReadHeader();
    return;
  }
  // Idle until the first byte (idle timeout), then the header timeout: a
  // client that trickles its headers cannot hold a connection for the
  // whole keep-alive time.
  stream_.expires_after(server_->opts.idle_timeout);
  reading_ = true;
  auto on_read = [self = shared_from_this()](beast::error_code ec, size_t n) {
    self->reading_ = false;
    if (self->closed_) return;
    if (ec) {
      self->CloseNow();  // idle timeout, hang-up
      return;
    }
    self->buffer_.commit(n);
    self->ReadHeader();
  };
  WithStream([&](auto& s) { s.async_read_some(buffer_.prepare(kMonitorReadBytes), on_read); });
}

void Session::ReadHeader() {
  parser_.emplace();
  parser_->body_limit(server_->opts.max_body_bytes);
  parser_->header_limit(static_cast<uint32_t>(server_->opts.max_header_bytes));
  stream_.expires_after(server_->opts.header_timeout);
  reading_ = true;
  auto on_header = [self = shared_from_this()](beast::error_code ec, size_t) {
    self->reading_ = false;
    self->OnHeader(ec);
  };
  WithStream([&](auto& s) { http::async_read_header(s, buffer_, *parser_, on_header); });
}

void Session::OnHeader(beast::error_code ec) {
  if (closed_) return;
  if (ec) {
    if (IsHangUp(ec)) {
      CloseNow();
    } else if (ec == http::error::header_limit) {
      RespondError(431, "request headers exceed " + std::to_string(server_->opts.max_header_bytes) +
                            " bytes");
    } else if (ec == http::error::body_limit) {
      target_ = std::string(parser_->get().target());
      RespondError(413,
                   "request body exceeds the limit of " + std::to_string(server_->opts.max_body_bytes) +
                       " bytes (--max-body-size)",
                   parser_->get()["X-Request-Id"]);
    } else {
      RespondError(400, "malformed HTTP request: " + ec.message());
    }
    return;
  }
  target_ = std::string(parser_->get().target());
  if (parser_->get().version() != 10 &&
      beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
    QueueWrite("HTTP/1.1 100 Continue\r\n\r\n", false);
  }
  stream_.expires_after(server_->opts.read_timeout);
  reading_ = true;
  auto on_body = [self = shared_from_this()](beast::error_code ec, size_t) {
    self->reading_ = false;
    self->OnBody(ec);
  };
  WithStream([&](auto& s) { http::async_read(s, buffer_, *parser_, on_body); });
}

void Session::OnBody(beast::error_code ec) {
  if (closed_) return;
  if (ec) {
    if (ec == http::error::body_limit) {
      RespondError(413,
                   "request body exceeds the limit of " + std::to_string(server_->opts.max_body_bytes) +
                       " bytes (--max-body-size)",
                   parser_->get()["X-Request-Id"]);
    } else if (IsHangUp(ec)) {
      CloseNow();
    } else {
      RespondError(400, "malformed HTTP request: " + ec.message());
    }
    return;
  }
  Dispatch();
}

void Session::Dispatch() {
  http::request<http::string_body> req = parser_->release();
  parser_.reset();
  keep_alive_ = req.keep_alive();
  if (server_->shutting_down.load()) {
    keep_alive_ = false;
    RespondError(503, "the server is shutting down", req["X-Request-Id"]);
    return;
  }
  HttpRequest r;
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  const size_t q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) r.query = r.target.substr(q + 1);
  for (const auto& f : req) r.headers.emplace_back(Lower(f.name_string()), std::string(f.value()));
  r.body = std::move(req.body());
  beast::error_code ec;
  auto ep = stream_.socket().remote_endpoint(ec);
  if (!ec) r.remote = ep.address().to_string() + ":" + std::to_string(ep.port());
  r.tls = tls_.has_value();
  r.request_id = RequestIdFor(r.Header("x-request-id"));

  exchange_ = std::make_shared<Exchange>(shared_from_this(), req.version(), req.method() == http::verb::head,
                                         r.request_id);
  response_complete_ = false;
  counted_ = true;
  server_->requests_active++;
  server_->requests_total++;
  net::post(server_->workers, [server = server_, r = std::move(r), ex = exchange_]() mutable {
    const std::string target = r.target;
    ScopedRequestId scope(r.request_id);
    try {
      server->handler(std::move(r), ex);
    } catch (const std::exception& e) {
      LOG_ERROR("http: handler threw: " << e.what());
      ex->Send(server->error_responder(500, std::string("internal error: ") + e.what(), target));
    } catch (...) {
      ex->Send(server->error_responder(500, "internal error", target));
    }
  });
  StartMonitor();
}

void Session::StartMonitor() {
  if (closed_ || reading_ || !exchange_ || buffer_.size() >= kMaxPipelinedBytes) return;
  stream_.expires_never();
  reading_ = true;
  auto on_read = [self = shared_from_this()](beast::error_code ec, size_t n) {
    self->reading_ = false;
    self->OnMonitor(ec, n);
  };
  WithStream([&](auto& s) { s.async_read_some(buffer_.prepare(kMonitorReadBytes), on_read); });
}

void Session::OnMonitor(beast::error_code ec, size_t n) {
  if (closed_) return;
  if (!ec) buffer_.commit(n);
  if (ec && ec != net::error::operation_aborted) {
    CloseNow();  // the client hung up (or the read failed): cancel the work
    return;
  }
  if (exchange_) {
    StartMonitor();
  } else if (keep_alive()) {
    ReadRequest();
  } else {
    CloseNow();
  }
}

void Session::DoWrite() {
  if (out_.empty() || closed_) return;
  writing_ = true;
  // Coalesce small pieces (token deltas) into one write.
  while (out_.size() > 1 && out_.front().size() < 65536) {
    std::string second = std::move(out_[1]);
    out_.erase(out_.begin() + 1);
    out_.front() += second;
  }
  // With a read pending this sets the write timer only (Beast keeps one per direction).
  stream_.expires_after(server_->opts.write_timeout);
  auto on_write = [self = shared_from_this()](beast::error_code ec, size_t n) {
    self->writing_ = false;
    self->OnWrite(ec, n);
  };
  WithStream([&](auto& s) { net::async_write(s, net::buffer(out_.front()), on_write); });
}

void Session::OnWrite(beast::error_code ec, size_t n) {
  if (closed_) return;
  if (exchange_) exchange_->Written(n);
  if (ec) {
    CloseNow();
    return;
  }
  out_.pop_front();
  if (!out_.empty()) {
    DoWrite();
  } else if (response_complete_) {
    FinishExchange();
  }
}

void Session::FinishExchange() {
  response_complete_ = false;
  const bool http10_stream = exchange_ && exchange_->version() == 10;
  exchange_.reset();
  if (counted_) {
    counted_ = false;
    server_->requests_active--;
  }
  if (close_after_write_ || !keep_alive() || http10_stream) {
    keep_alive_ = false;  // a pending monitor read must not start another request
    LingerClose();
  } else if (reading_) {
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // the monitor read ends; OnMonitor reads the next request
  } else {
    ReadRequest();
  }
}

void Session::RespondError(int status, const std::string& message, std::string_view incoming_id) {
  keep_alive_ = false;
  close_after_write_ = true;
  HttpResponse r = server_->error_responder(status, message, target_);
  if (status == 503) r.headers.emplace_back("Retry-After", "1");
  r.headers.emplace_back("X-Request-Id", RequestIdFor(incoming_id));
  std::string out = StatusLine(status, 11);
  AppendHeader(out, "Server", "llmhost");
  AppendHeader(out, "Content-Type", r.content_type);
  for (const auto& [k, v] : r.headers) AppendHeader(out, k, v);
  AppendHeader(out, "Content-Length", std::to_string(r.body.size()));
  AppendHeader(out, "Connection", "close");
  out += "\r\n";
  out += r.body;
  response_complete_ = true;
  QueueWrite(std::move(out), true);
}

// After an error response with unread input (an oversized body): half-close
// and discard what the client still sends for a short while, so the client
// reads the response instead of a connection reset. Over TLS the TCP stream
// stays open for the discarding reads (TLS records need both directions).
void Session::LingerClose() {
  if (closed_) return;
  beast::error_code ignored;
  if (!tls_) stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (reading_) {
    stream_.socket().cancel(ignored);
    return;  // the pending read's handler runs; CloseNow follows below on its error
  }
  if (!lingering_) {
    lingering_ = true;
    stream_.expires_after(std::chrono::seconds(2));  // for all the discarding, not per read
  }
  reading_ = true;
  auto on_read = [self = shared_from_this()](beast::error_code ec, size_t) {
    self->reading_ = false;
    if (ec) {
      self->CloseNow();
    } else {
      self->LingerClose();  // discard and read again
    }
  };
  WithStream([&](auto& s) { s.async_read_some(net::buffer(discard_), on_read); });
}

void Session::CloseNow() {
  if (closed_) return;
  closed_ = true;
  if (exchange_) exchange_->MarkClosed();
  exchange_.reset();
  if (counted_) {
    counted_ = false;
    server_->requests_active--;
  }
  out_.clear();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  // A handler may still hold this session (through its writer); it no
  // longer counts as a connection.
  server_->Unregister(this);
}

// ---------------------------------------------------------------- Impl

template <class F>
void HttpServer::Impl::ForEachSession(F f) {
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [p, w] : sessions) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) f(s);
}

Status HttpServer::Impl::Listen() {
  beast::error_code ec;
  auto address = net::ip::make_address(opts.host, ec);
  if (ec) return Status::InvalidArgument("--host: '" + opts.host + "' is not an IP address");
  tcp::endpoint ep(address, static_cast<unsigned short>(opts.port));
  const std::string where = opts.host + ":" + std::to_string(opts.port);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Status::IOError("cannot listen on " + where + ": " + ec.message());
  bound_port = acceptor.local_endpoint().port();
  return Status::OK();
}

void HttpServer::Impl::Accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (shutting_down.load() || !acceptor.is_open()) return;
    if (ec) {
      // Out of descriptors (EMFILE) or a transient error: retry shortly
      // instead of spinning.
      LOG_WARN("http: accept failed: " << ec.message());
      accept_retry_timer.expires_after(std::chrono::milliseconds(100));
      accept_retry_timer.async_wait([this](beast::error_code) { Accept(); });
      return;
    }
    beast::error_code ignored;
    if (SessionCount() >= static_cast<size_t>(std::max(1, opts.max_connections))) {
      RefuseConnection(std::move(socket));
      Accept();
      return;
    }
    socket.set_option(tcp::no_delay(true), ignored);  // token deltas go out at once
    auto s = std::make_shared<Session>(std::move(socket), this);
    Register(s.get(), s);
    s->Start();
    Accept();
  });
}

// Over --max-connections: a short 503 (it fits the socket's send buffer, so
// the write does not block), then close. A TLS port closes at once (a TLS
// client could not read plain bytes).
void HttpServer::Impl::RefuseConnection(tcp::socket socket) {
  const int64_t refused = ++connections_refused;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_refusal_log >= std::chrono::seconds(10)) {
    last_refusal_log = now;
    LOG_WARN("http: " << opts.max_connections << " connections are open (--max-connections): refusing new ones ("
                      << refused << " refused so far)");
  }
  beast::error_code ignored;
  if (opts.tls) {
    socket.close(ignored);
    return;
  }
  HttpResponse r = error_responder(503, "too many open connections (the server's --max-connections is " +
                                            std::to_string(opts.max_connections) + "); retry later",
                                   "/");
  std::string out = StatusLine(503, 11);
  AppendHeader(out, "Server", "llmhost");
  AppendHeader(out, "Content-Type", r.content_type);
  AppendHeader(out, "Retry-After", "1");
  AppendHeader(out, "Content-Length", std::to_string(r.body.size()));
  AppendHeader(out, "Connection", "close");
  out += "\r\n";
  out += r.body;
  socket.non_blocking(true, ignored);
  socket.write_some(net::buffer(out), ignored);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

void HttpServer::Impl::BeginShutdown() {
  if (shutting_down.exchange(true)) return;
  LOG_INFO("http: shutting down: no new connections; draining requests in flight (at most "
           << opts.drain_timeout.count() << " s)");
  beast::error_code ignored;
  acceptor.close(ignored);
  signals.cancel(ignored);
  accept_retry_timer.cancel();
  ForEachSession([](const std::shared_ptr<Session>& s) {
    s->Post([s] { s->OnServerShutdown(); });
  });
  drain_deadline = std::chrono::steady_clock::now() + opts.drain_timeout;
  ShutdownTick();
}

void HttpServer::Impl::ShutdownTick() {
  size_t open;
  {
    std::lock_guard<std::mutex> lock(mu);
    open = sessions.size();
  }
  const auto now = std::chrono::steady_clock::now();
  if (open == 0 && requests_active.load() == 0) {
    ioc.stop();
    return;
  }
  if (now >= drain_deadline && !force_closed) {
    force_closed = true;
    LOG_WARN("http: drain timeout: closing " << open << " connections");
    ForEachSession([](const std::shared_ptr<Session>& s) { s->Post([s] { s->CloseNow(); }); });
  }
  if (now >= drain_deadline + std::chrono::seconds(5)) {
    ioc.stop();
    return;
  }
  shutdown_timer.expires_after(std::chrono::milliseconds(50));
  shutdown_timer.async_wait([this](beast::error_code ec) {
    if (!ec) ShutdownTick();
  });
}

// ---------------------------------------------------------------- HttpServer

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  impl_->workers.join();
  // Sessions still referenced by a handler keep pointers into the
  // io_context; they are destroyed with it, once the context is stopped.
  impl_->ioc.stop();
}

Result<std::unique_ptr<HttpServer>> HttpServer::Create(const HttpServerOptions& options,
                                                       RequestHandler handler,
                                                       TransportErrorResponder error_responder) {
  auto impl = std::make_unique<Impl>(options, std::move(handler), std::move(error_responder));
  RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->bound_port; }

void HttpServer::Run() {
  Impl* impl = impl_.get();
  if (impl->opts.handle_signals) {
    impl->signals.add(SIGINT);
    impl->signals.add(SIGTERM);
    impl->signals.async_wait([impl](beast::error_code ec, int sig) {
      if (ec) return;
      LOG_INFO("http: signal " << sig << " received");
      impl->BeginShutdown();
    });
  }
  impl->Accept();
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, impl->opts.io_threads); ++i) {
    threads.emplace_back([impl] { impl->ioc.run(); });
  }
  impl->ioc.run();
  for (auto& t : threads) t.join();
}

void HttpServer::Shutdown() {
  Impl* impl = impl_.get();
  net::post(impl->ioc, [impl] { impl->BeginShutdown(); });
}

bool HttpServer::shutting_down() const { return impl_->shutting_down.load(); }

HttpServerStats HttpServer::stats() const {
  HttpServerStats s;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    s.connections = static_cast<int64_t>(impl_->sessions.size());
  }
  s.requests_active = impl_->requests_active.load();
  s.requests_total = impl_->requests_total.load();
  s.connections_refused = impl_->connections_refused.load();
  return s;
}

uint64_t RaiseFileDescriptorLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return rl.rlim_cur;
}

}  // namespace llmhost::server
