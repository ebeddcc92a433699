// TLS helpers for the server tests: self-signed certificates made with
// OpenSSL at test time (no fixture files), and a small blocking TLS client
// that trusts one certificate.
#pragma once

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "http_test_client.h"

namespace llmhost::testing {

// A P-256 key and a certificate for it, valid for an hour.
struct TestCertificate {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  TestCertificate(const TestCertificate&) = delete;
  TestCertificate& operator=(const TestCertificate&) = delete;
  TestCertificate() = default;
  ~TestCertificate() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

// Self-signed when `issuer` is null, else signed by it. Subject CN=`name`,
// subjectAltName DNS:localhost and IP:127.0.0.1.
inline void MakeCertificate(TestCertificate* out, const char* name, const TestCertificate* issuer = nullptr,
                            bool ca = false) {
  static long serial = 1;
  out->key = EVP_EC_gen("P-256");
  out->cert = X509_new();
  X509_set_version(out->cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(out->cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(out->cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(out->cert), 3600);
  X509_set_pubkey(out->cert, out->key);
  X509_NAME* subject = X509_get_subject_name(out->cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(name), -1, -1, 0);
  X509* signer = issuer ? issuer->cert : out->cert;
  X509_set_issuer_name(out->cert, X509_get_subject_name(signer));
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, signer, out->cert, nullptr, nullptr, 0);
  const char* extensions[][2] = {{"subjectAltName", "DNS:localhost,IP:127.0.0.1"},
                                 {"basicConstraints", ca ? "critical,CA:TRUE" : "CA:FALSE"}};
  for (const auto& [ext_name, value] : extensions) {
    X509_EXTENSION* ext = X509V3_EXT_nconf(nullptr, &ctx, ext_name, value);
    X509_add_ext(out->cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(out->cert, issuer ? issuer->key : out->key, EVP_sha256());
}

inline bool WritePem(const std::string& path, X509* cert) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  const bool ok = PEM_write_X509(f, cert) == 1;
  std::fclose(f);
  return ok;
}

// `passphrase` set: the key is written encrypted (AES-128-CBC).
inline bool WriteKeyPem(const std::string& path, EVP_PKEY* key, const char* passphrase = nullptr) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  const bool ok =
      PEM_write_PrivateKey(f, key, passphrase ? EVP_aes_128_cbc() : nullptr,
                           reinterpret_cast<const unsigned char*>(passphrase),
                           passphrase ? static_cast<int>(std::string(passphrase).size()) : 0, nullptr, nullptr) == 1;
  std::fclose(f);
  return ok;
}

// A blocking TLS connection to 127.0.0.1:port that trusts `ca_file` only.
// `max_version`: the newest protocol it offers (e.g. TLS1_1_VERSION).
class TlsClient {
 public:
  TlsClient(int port, const std::string& ca_file, int max_version = 0, int timeout_s = 20) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_security_level(ctx_, 0);  // lets a test offer old protocols
    if (max_version) {
      SSL_CTX_set_min_proto_version(ctx_, 0);
      SSL_CTX_set_max_proto_version(ctx_, max_version);
    }
    SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    fd_ = ConnectLocal(port, timeout_s);
    if (fd_ < 0) return;
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    handshake_ok_ = SSL_connect(ssl_) == 1;
    ERR_clear_error();
  }
  ~TlsClient() { Close(); }
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  bool handshake_ok() const { return handshake_ok_; }
  // The negotiated protocol, e.g. "TLSv1.3".
  std::string version() const { return ssl_ ? SSL_get_version(ssl_) : ""; }

  bool Send(const std::string& data) {
    return handshake_ok_ && SSL_write(ssl_, data.data(), static_cast<int>(data.size())) ==
                                static_cast<int>(data.size());
  }
  // More bytes into `buf`; false at the end of the stream, on an error or a timeout.
  bool ReadMore(std::string* buf) {
    if (!handshake_ok_) return false;
    char tmp[16384];
    const int n = SSL_read(ssl_, tmp, sizeof(tmp));
    ERR_clear_error();
    if (n <= 0) return false;
    buf->append(tmp, static_cast<size_t>(n));
    return true;
  }
  bool ReadUntil(const std::string& needle, std::string* buf) {
    while (buf->find(needle) == std::string::npos) {
      if (!ReadMore(buf)) return false;
    }
    return true;
  }
  std::string ReadToEnd() {
    std::string buf;
    while (ReadMore(&buf)) {
    }
    return buf;
  }
  // Drops the connection without close_notify (a client that vanishes).
  void Close() {
    if (ssl_) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
    if (ctx_) SSL_CTX_free(ctx_);
    ssl_ = nullptr;
    fd_ = -1;
    ctx_ = nullptr;
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool handshake_ok_ = false;
};

}  // namespace llmhost::testing
