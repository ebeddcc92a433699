// A small blocking HTTP/1.1 client for the server tests: raw sockets, so a
// test can send malformed requests, pipeline, hold idle connections or hang
// up mid-stream. Every read has a receive timeout so a broken server fails a
// test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <string>

namespace llmhost::testing {

struct HttpReply {
  int status = 0;  // 0: no (complete) response
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;  // de-chunked
};

inline int ConnectLocal(int port, int timeout_s = 60) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads more bytes into `buf`; false on EOF, error or timeout.
inline bool ReadMore(int fd, std::string* buf) {
  char tmp[16384];
  ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
  if (n <= 0) return false;
  buf->append(tmp, static_cast<size_t>(n));
  return true;
}

// Reads one response from `fd`; `buf` holds bytes already read and keeps
// what follows the response. Skips 1xx interim responses. The response to a
// HEAD request (`head`) has headers only.
inline HttpReply ReadResponse(int fd, std::string* buf, bool head = false) {
  HttpReply r;
  for (;;) {
    size_t end;
    while ((end = buf->find("\r\n\r\n")) == std::string::npos) {
      if (!ReadMore(fd, buf)) return r;
    }
    std::string head = buf->substr(0, end);
    buf->erase(0, end + 4);
    r.headers.clear();
    size_t line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    r.status = std::atoi(status_line.substr(9, 3).c_str());
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t v = line.find_first_not_of(' ', colon + 1);
        r.headers[name] = v == std::string::npos ? "" : line.substr(v);
      }
      pos = e + 2;
    }
    if (r.status >= 100 && r.status < 200) continue;
    break;
  }
  if (head) return r;
  if (r.headers.count("content-length")) {
    const size_t len = std::strtoull(r.headers["content-length"].c_str(), nullptr, 10);
    while (buf->size() < len) {
      if (!ReadMore(fd, buf)) {
        r.status = 0;
        return r;
      }
    }
    r.body = buf->substr(0, len);
    buf->erase(0, len);
  } else if (r.headers["transfer-encoding"] == "chunked") {
    for (;;) {
      size_t e;
      while ((e = buf->find("\r\n")) == std::string::npos) {
        if (!ReadMore(fd, buf)) {
          r.status = 0;
          return r;
        }
      }
      const size_t size = std::strtoull(buf->substr(0, e).c_str(), nullptr, 16);
      while (buf->size() < e + 2 + size + 2) {
        if (!ReadMore(fd, buf)) {
          r.status = 0;
          return r;
        }
      }
      r.body += buf->substr(e + 2, size);
      buf->erase(0, e + 2 + size + 2);
      if (size == 0) break;
    }
  } else {
    while (ReadMore(fd, buf)) {
    }
    r.body = *buf;
    buf->clear();
  }
  return r;
}

inline std::string FormatRequest(const std::string& method, const std::string& path, const std::string& body,
                                 const std::map<std::string, std::string>& headers = {}) {
  std::string req = method + " " + path + " HTTP/1.1\r\n";
  if (!headers.count("Host")) req += "Host: 127.0.0.1\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST") {
    if (!headers.count("Content-Type")) req += "Content-Type: application/json\r\n";
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  req += "\r\n" + body;
  return req;
}

// One request on a new connection.
inline HttpReply Request(int port, const std::string& method, const std::string& path,
                         const std::string& body = "",
                         const std::map<std::string, std::string>& headers = {}) {
  int fd = ConnectLocal(port);
  if (fd < 0) return {};
  std::string buf;
  HttpReply r;
  if (SendAll(fd, FormatRequest(method, path, body, headers))) r = ReadResponse(fd, &buf, method == "HEAD");
  ::close(fd);
  return r;
}

}  // namespace llmhost::testing
