#include "util/net_stream.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace llmhost {

namespace {

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

// One client context for the process: verification on, system CA store.
// Created on first use (thread-safe static); never freed.
SSL_CTX* ClientContext() {
  static SSL_CTX* ctx = [] {
    SSL_CTX* c = SSL_CTX_new(TLS_client_method());
    if (c == nullptr) return c;
    SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
    SSL_CTX_set_default_verify_paths(c);
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
    return c;
  }();
  return ctx;
}

// Waits until `fd` is ready for `events`; false on a timeout.
bool WaitFor(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

// A non-blocking connect to each address in turn, bounded by `timeout_ms` in all.
Result<int> ConnectTcp(const std::string& host, int port, int timeout_ms) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (rc != 0) return Status::IOError(where + ": cannot resolve the host: " + gai_strerror(rc));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* a = list; a != nullptr && fd < 0; a = a->ai_next) {
    int s = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) continue;
    if (connect(s, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last_error = std::strerror(errno);
      close(s);
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    int err = 0;
    socklen_t len = sizeof err;
    if (!WaitFor(s, POLLOUT, static_cast<int>(std::max<int64_t>(left.count(), 0)))) {
      last_error = "timed out connecting";
    } else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      last_error = std::strerror(err);
    } else {
      fd = s;
      break;
    }
    close(s);
  }
  freeaddrinfo(list);
  if (fd < 0) return Status::IOError(where + ": cannot connect: " + last_error);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

struct NetStream::Impl {
  int fd = -1;
  SSL* ssl = nullptr;
  int io_ms = 0;
  std::string where;

  ~Impl() {
    if (ssl != nullptr) {
      SSL_free(ssl);
    }
    if (fd >= 0) close(fd);
  }

  // Waits for what a non-blocking TLS call asked for; false on a timeout.
  bool WaitTls(int ssl_result, int timeout_ms) {
    int e = SSL_get_error(ssl, ssl_result);
    if (e == SSL_ERROR_WANT_READ) return WaitFor(fd, POLLIN, timeout_ms);
    if (e == SSL_ERROR_WANT_WRITE) return WaitFor(fd, POLLOUT, timeout_ms);
    return false;
  }

  bool Retryable(int ssl_result) {
    int e = SSL_get_error(ssl, ssl_result);
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
  }
};

NetStream::NetStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NetStream::~NetStream() = default;

Result<std::unique_ptr<NetStream>> NetStream::Connect(const std::string& host, int port, bool tls,
                                                      const NetTimeouts& timeouts) {
  auto impl = std::make_unique<Impl>();
  impl->where = host + ":" + std::to_string(port);
  impl->io_ms = timeouts.io_ms;
  ASSIGN_OR_RETURN(impl->fd, ConnectTcp(host, port, timeouts.connect_ms));
  if (tls) {
    SSL_CTX* ctx = ClientContext();
    if (ctx == nullptr) return Status::IOError("TLS: cannot create a context: " + OpenSslError());
    impl->ssl = SSL_new(ctx);
    if (impl->ssl == nullptr) return Status::IOError("TLS: " + OpenSslError());
    SSL_set_fd(impl->ssl, impl->fd);
    SSL_set_tlsext_host_name(impl->ssl, host.c_str());  // SNI
    // The certificate must name the host (or its IP address).
    if (SSL_set1_host(impl->ssl, host.c_str()) != 1) return Status::IOError("TLS: " + OpenSslError());
    for (;;) {
      int r = SSL_connect(impl->ssl);
      if (r == 1) break;
      if (impl->Retryable(r)) {
        if (impl->WaitTls(r, timeouts.connect_ms)) continue;
        return Status::IOError(impl->where + ": TLS handshake timed out");
      }
      long verify = SSL_get_verify_result(impl->ssl);
      if (verify != X509_V_OK) {
        return Status::IOError(impl->where + ": TLS certificate rejected: " +
                               X509_verify_cert_error_string(verify));
      }
      return Status::IOError(impl->where + ": TLS handshake failed: " + OpenSslError());
    }
  }
  return std::unique_ptr<NetStream>(new NetStream(std::move(impl)));
}

Result<size_t> NetStream::Read(char* buf, size_t size) {
  Impl& s = *impl_;
  for (;;) {
    if (s.ssl != nullptr) {
      int r = SSL_read(s.ssl, buf, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (r > 0) return static_cast<size_t>(r);
      int e = SSL_get_error(s.ssl, r);
      if (e == SSL_ERROR_ZERO_RETURN) return size_t{0};
      if (s.Retryable(r)) {
        if (s.WaitTls(r, s.io_ms)) continue;
        return Status::IOError(s.where + ": timed out reading");
      }
      if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        return Status::IOError(s.where + ": connection closed without a TLS close");
      }
      return Status::IOError(s.where + ": TLS read failed: " + OpenSslError());
    }
    ssize_t r = recv(s.fd, buf, size, 0);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (WaitFor(s.fd, POLLIN, s.io_ms)) continue;
      return Status::IOError(s.where + ": timed out reading");
    }
    return Status::IOError(s.where + ": read failed: " + std::strerror(errno));
  }
}

Status NetStream::WriteAll(std::string_view data) {
  Impl& s = *impl_;
  while (!data.empty()) {
    if (s.ssl != nullptr) {
      int r = SSL_write(s.ssl, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
      if (r > 0) {
        data.remove_prefix(static_cast<size_t>(r));
        continue;
      }
      if (s.Retryable(r) && s.WaitTls(r, s.io_ms)) continue;
      return Status::IOError(s.where + ": TLS write failed: " + OpenSslError());
    }
    ssize_t r = send(s.fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (r >= 0) {
      data.remove_prefix(static_cast<size_t>(r));
      continue;
    }
    if (errno == EINTR) continue;
    if ((errno == EAGAIN || errno == EWOULDBLOCK) && WaitFor(s.fd, POLLOUT, s.io_ms)) continue;
    return Status::IOError(s.where + ": write failed: " + std::strerror(errno));
  }
  return Status::OK();
}

}  // namespace llmhost
