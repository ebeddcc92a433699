// TlsServerContext: the OpenSSL server context of `serve --ssl-cert FILE
// --ssl-key FILE`. Loaded once at start (so a bad file stops the server before
// it loads models); every TLS connection makes its SSL object from it.
//
// Policy: TLS 1.2 and 1.3 only. TLS 1.2 offers forward-secret AEAD suites only
// (ECDHE with AES-GCM or ChaCha20-Poly1305); TLS 1.3 keeps OpenSSL's suites (all
// AEAD). No compression, no renegotiation. The key must be an unencrypted PEM
// key (a service has no one to type a passphrase).
//
// Thread-safe once loaded (OpenSSL allows SSL_new on one SSL_CTX from any thread).
#pragma once

#include <memory>
#include <string>

#include "util/status.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace llmhost::server {

class TlsServerContext {
 public:
  // `cert_file`: PEM, the server's certificate first, then any intermediate
  // certificates. `key_file`: its PEM private key. Errors name the flag and the
  // file: unreadable (NotFound / IOError), no certificate or key in it, an
  // encrypted key, or a key that does not match the certificate (InvalidArgument).
  static Result<std::shared_ptr<TlsServerContext>> Load(const std::string& cert_file, const std::string& key_file);
  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  ssl_ctx_st* native() const { return ctx_; }

 private:
  explicit TlsServerContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;  // owned
};

}  // namespace llmhost::server
