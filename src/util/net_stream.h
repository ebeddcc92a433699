// A client connection: TCP, optionally wrapped in TLS (OpenSSL). TLS peers
// are verified against the system's CA store (SSL_CERT_FILE / SSL_CERT_DIR
// override it, as for every OpenSSL program) and the certificate must name
// the host. Blocking I/O with timeouts; one thread at a time per stream.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "util/status.h"

namespace llmhost {

struct NetTimeouts {
  int connect_ms = 15000;  // resolving, connecting and the TLS handshake
  int io_ms = 60000;       // the longest wait for any one read or write
};

class NetStream {
 public:
  // IOError naming host:port when it cannot connect, the handshake fails or
  // the certificate does not verify.
  static Result<std::unique_ptr<NetStream>> Connect(const std::string& host, int port, bool tls,
                                                    const NetTimeouts& timeouts);
  ~NetStream();
  NetStream(const NetStream&) = delete;
  NetStream& operator=(const NetStream&) = delete;

  // Up to `size` bytes; 0 at the end of the stream. IOError on a timeout or
  // a reset.
  Result<size_t> Read(char* buf, size_t size);
  Status WriteAll(std::string_view data);

 private:
  struct Impl;
  explicit NetStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmhost
