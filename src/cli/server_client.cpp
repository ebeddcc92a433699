#include "cli/server_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace llmhost::cli {

namespace {

constexpr int kConnectTimeoutMs = 5000;
constexpr int kReadTimeoutMs = 600000;  // a long prompt's prefill may take minutes

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status ParseBase(const std::string& base, std::string* host, std::string* port) {
  const std::string scheme = "http://";
  if (base.rfind(scheme, 0) != 0) return Status::InvalidArgument("'" + base + "' is not an http:// URL");
  std::string rest = base.substr(scheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.find('/') != std::string::npos) {
    return Status::InvalidArgument("'" + base + "': give the server as http://HOST[:PORT], without a path");
  }
  const size_t colon = rest.rfind(':');
  const bool bracketed = rest.front() == '[';
  if (colon != std::string::npos && (!bracketed || rest.find(']') < colon)) {
    *host = rest.substr(0, colon);
    *port = rest.substr(colon + 1);
  } else {
    *host = rest;
    *port = "80";
  }
  if (bracketed && host->size() >= 2) *host = host->substr(1, host->size() - 2);
  return Status::OK();
}

Result<int> Connect(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int e = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); e != 0) {
    return Status::IOError(host + ":" + port + ": " + ::gai_strerror(e));
  }
  std::string last = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int r = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      r = ::poll(&p, 1, kConnectTimeoutMs) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0
              ? 0
              : -1;
      if (err) errno = err;
    }
    if (r == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    last = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return Status::IOError(host + ":" + port + ": " + last);
}

// Reads what is there (waiting up to the read timeout); 0 at the end.
Result<size_t> ReadSome(int fd, char* buf, size_t size) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, kReadTimeoutMs) != 1) return Status::IOError("the server sent nothing for too long");
  ssize_t n = ::recv(fd, buf, size, 0);
  if (n < 0) return Status::IOError(std::string("reading the reply: ") + std::strerror(errno));
  return static_cast<size_t>(n);
}

// Decodes a chunked body as it arrives.
class Dechunker {
 public:
  // Appends decoded bytes to `out`; false on a malformed chunk.
  bool Feed(std::string_view in, std::string* out) {
    buf_.append(in);
    for (;;) {
      if (done_) return true;
      if (left_ == 0) {
        const size_t nl = buf_.find("\r\n");
        if (nl == std::string::npos) return true;
        if (nl == 0 && after_chunk_) {  // the CRLF that ends a chunk's data
          buf_.erase(0, 2);
          after_chunk_ = false;
          continue;
        }
        char* end = nullptr;
        const unsigned long long n = std::strtoull(buf_.c_str(), &end, 16);
        if (end == buf_.c_str()) return false;
        buf_.erase(0, nl + 2);
        if (n == 0) {
          done_ = true;
          return true;
        }
        left_ = n;
        after_chunk_ = true;
      }
      if (buf_.empty()) return true;
      const size_t take = std::min<size_t>(left_, buf_.size());
      out->append(buf_, 0, take);
      buf_.erase(0, take);
      left_ -= take;
    }
  }
  bool done() const { return done_; }

 private:
  std::string buf_;
  uint64_t left_ = 0;
  bool after_chunk_ = false, done_ = false;
};

}  // namespace

Result<HttpReply> HttpCall(const std::string& base, const std::string& method, const std::string& path,
                           const std::string& body, const std::string& bearer_token,
                           const std::function<bool(std::string_view)>& on_body) {
  std::string host, port;
  RETURN_IF_ERROR(ParseBase(base, &host, &port));
  ASSIGN_OR_RETURN(int raw, Connect(host, port));
  Fd fd{raw};
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: " + host + ":" + port +
                        "\r\nConnection: close\r\nAccept: */*\r\n";
  if (!bearer_token.empty()) request += "Authorization: Bearer " + bearer_token + "\r\n";
  if (!body.empty() || method == "POST") {
    request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  for (size_t sent = 0; sent < request.size();) {
    pollfd p{fd.fd, POLLOUT, 0};
    if (::poll(&p, 1, kConnectTimeoutMs) != 1) return Status::IOError("sending the request timed out");
    ssize_t n = ::send(fd.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN) return Status::IOError(std::string("sending the request: ") + std::strerror(errno));
    if (n > 0) sent += static_cast<size_t>(n);
  }
  HttpReply reply;
  std::string head;
  char buf[16384];
  // The status line and headers.
  size_t header_end = std::string::npos;
  while (header_end == std::string::npos) {
    ASSIGN_OR_RETURN(size_t n, ReadSome(fd.fd, buf, sizeof buf));
    if (n == 0) return Status::IOError("the server closed the connection before replying");
    head.append(buf, n);
    header_end = head.find("\r\n\r\n");
    if (head.size() > (1 << 20)) return Status::IOError("the reply's headers are too long");
  }
  if (head.rfind("HTTP/1.", 0) != 0 || head.size() < 12) return Status::IOError("the reply is not HTTP");
  reply.status = std::atoi(head.c_str() + 9);
  std::string headers = head.substr(0, header_end);
  for (char& c : headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool chunked = headers.find("\r\ntransfer-encoding: chunked") != std::string::npos;
  std::optional<uint64_t> length;
  if (size_t at = headers.find("\r\ncontent-length:"); at != std::string::npos) {
    length = std::strtoull(headers.c_str() + at + 17, nullptr, 10);
  }
  std::string rest = head.substr(header_end + 4);
  Dechunker dechunker;
  uint64_t received = 0;
  bool stop = false;
  auto deliver = [&](std::string_view raw_bytes) -> Status {
    std::string piece;
    if (chunked) {
      if (!dechunker.Feed(raw_bytes, &piece)) return Status::IOError("a malformed chunk in the reply");
    } else {
      piece.assign(raw_bytes);
    }
    received += raw_bytes.size();
    if (on_body) {
      if (!piece.empty() && !on_body(piece)) stop = true;
    } else {
      reply.body += piece;
    }
    return Status::OK();
  };
  RETURN_IF_ERROR(deliver(rest));
  auto finished = [&] { return stop || (chunked ? dechunker.done() : length && received >= *length); };
  while (!finished()) {
    ASSIGN_OR_RETURN(size_t n, ReadSome(fd.fd, buf, sizeof buf));
    if (n == 0) break;  // read-to-close, or the server went away
    RETURN_IF_ERROR(deliver(std::string_view(buf, n)));
  }
  return reply;
}

}  // namespace llmhost::cli
