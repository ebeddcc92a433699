#include "server/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <vector>

#include "util/file.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

constexpr size_t kMaxPemBytes = 1u << 20;  // a certificate chain or key is a few KiB

// TLS 1.2: ECDHE key exchange (forward secrecy) and AEAD ciphers only.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CtxPtr = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

// OpenSSL's first queued error as text; clears the queue.
std::string OpenSslReason() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// Never prompts on the terminal: an encrypted key fails to load instead.
int NoPassphrase(char*, int, int, void*) { return 0; }

BioPtr MemoryBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), BIO_free);
}

// Every certificate of a PEM file, in order (the server's own first).
Result<std::vector<X509Ptr>> ParseCertificates(const std::string& where, const std::string& pem) {
  BioPtr bio = MemoryBio(pem);
  std::vector<X509Ptr> certs;
  ERR_clear_error();
  while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)) certs.emplace_back(c, X509_free);
  // Reading stops at the end of the text (no further PEM start line) or at a damaged block.
  const unsigned long e = ERR_peek_last_error();
  const bool at_end = ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
  if (e != 0 && !at_end) {
    return Status::InvalidArgument(where + ": certificate " + std::to_string(certs.size() + 1) +
                                   " cannot be parsed (" + OpenSslReason() + ")");
  }
  ERR_clear_error();
  if (certs.empty()) return Status::InvalidArgument(where + ": no PEM certificate in it");
  return certs;
}

Result<KeyPtr> ParseKey(const std::string& where, const std::string& pem) {
  BioPtr bio = MemoryBio(pem);
  ERR_clear_error();
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr), EVP_PKEY_free);
  if (key) return key;
  const std::string reason = OpenSslReason();
  if (pem.find("ENCRYPTED") != std::string::npos) {
    return Status::InvalidArgument(where + ": the key is encrypted; give an unencrypted PEM key (openssl pkey -in " +
                                   "KEY -out PLAIN_KEY)");
  }
  return Status::InvalidArgument(where + ": no PEM private key in it (" + reason + ")");
}

void WarnIfExpired(const std::string& where, X509* cert) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    LOG_WARN("serve: " << where << ": the certificate has expired: clients will refuse it");
  } else if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    LOG_WARN("serve: " << where << ": the certificate is not valid yet: clients will refuse it");
  }
}

}  // namespace

Result<std::shared_ptr<TlsServerContext>> TlsServerContext::Load(const std::string& cert_file,
                                                                 const std::string& key_file) {
  const std::string cert_where = "--ssl-cert " + cert_file;
  const std::string key_where = "--ssl-key " + key_file;
  auto cert_pem = ReadFileToString(cert_file, kMaxPemBytes);
  if (!cert_pem.ok()) return cert_pem.status().WithContext("--ssl-cert");
  auto key_pem = ReadFileToString(key_file, kMaxPemBytes);
  if (!key_pem.ok()) return key_pem.status().WithContext("--ssl-key");
  ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, ParseCertificates(cert_where, *cert_pem));
  ASSIGN_OR_RETURN(KeyPtr key, ParseKey(key_where, *key_pem));
  if (X509_check_private_key(certs[0].get(), key.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(key_where + ": the key does not match the certificate in " + cert_where);
  }
  WarnIfExpired(cert_where, certs[0].get());

  CtxPtr ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return Status::Internal("TLS: cannot create a context: " + OpenSslReason());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_cipher_list(ctx.get(), kTls12Ciphers) != 1) {
    return Status::Internal("TLS: the cipher list is refused: " + OpenSslReason());
  }
  // A certificate or key that OpenSSL's security level refuses (e.g. a 1024-bit RSA key).
  if (SSL_CTX_use_certificate(ctx.get(), certs[0].get()) != 1) {
    return Status::InvalidArgument(cert_where + ": " + OpenSslReason());
  }
  for (size_t i = 1; i < certs.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx.get(), certs[i].get()) != 1) {
      return Status::InvalidArgument(cert_where + ": certificate " + std::to_string(i + 1) + ": " + OpenSslReason());
    }
  }
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 || SSL_CTX_check_private_key(ctx.get()) != 1) {
    return Status::InvalidArgument(key_where + ": " + OpenSslReason());
  }
  return std::shared_ptr<TlsServerContext>(new TlsServerContext(ctx.release()));
}

TlsServerContext::~TlsServerContext() { SSL_CTX_free(ctx_); }

}  // namespace llmhost::server
