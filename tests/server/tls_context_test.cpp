// TlsServerContext::Load: a certificate (or chain) and its key load; every bad
// file is an error that names the flag, the file and the problem.
#include "server/tls_context.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tls_test_util.h"
#include "util/file.h"

namespace llmhost::server::tls_context_test {
namespace {

using testing::MakeCertificate;
using testing::TestCertificate;
using testing::WriteKeyPem;
using testing::WritePem;

class TlsContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    MakeCertificate(&server_, "localhost");
    cert_ = JoinPath(dir_, "cert.pem");
    key_ = JoinPath(dir_, "key.pem");
    ASSERT_TRUE(WritePem(cert_, server_.cert));
    ASSERT_TRUE(WriteKeyPem(key_, server_.key));
  }

  std::string Error(const std::string& cert, const std::string& key) {
    auto r = TlsServerContext::Load(cert, key);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.status().message();
  }

  std::string dir_, cert_, key_;
  TestCertificate server_;
};

TEST_F(TlsContextTest, LoadsACertificateAndItsKey) {
  auto ctx = TlsServerContext::Load(cert_, key_);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  SSL_CTX* native = (*ctx)->native();
  ASSERT_NE(native, nullptr);
  EXPECT_EQ(SSL_CTX_get_min_proto_version(native), TLS1_2_VERSION);
  EXPECT_EQ(X509_cmp(SSL_CTX_get0_certificate(native), server_.cert), 0);
}

TEST_F(TlsContextTest, LoadsAChainWithItsIntermediate) {
  TestCertificate ca, leaf;
  MakeCertificate(&ca, "Test CA", nullptr, /*ca=*/true);
  MakeCertificate(&leaf, "localhost", &ca);
  const std::string chain = JoinPath(dir_, "chain.pem"), leaf_key = JoinPath(dir_, "leaf.key");
  ASSERT_TRUE(WritePem(chain, leaf.cert));
  ASSERT_TRUE(WritePem(JoinPath(dir_, "ca.pem"), ca.cert));
  auto ca_pem = ReadFileToString(JoinPath(dir_, "ca.pem"));
  auto leaf_pem = ReadFileToString(chain);
  ASSERT_TRUE(ca_pem.ok() && leaf_pem.ok());
  ASSERT_TRUE(WriteFileAtomic(chain, *leaf_pem + *ca_pem).ok());
  ASSERT_TRUE(WriteKeyPem(leaf_key, leaf.key));
  auto ctx = TlsServerContext::Load(chain, leaf_key);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  STACK_OF(X509)* extra = nullptr;
  ASSERT_EQ(SSL_CTX_get0_chain_certs((*ctx)->native(), &extra), 1);
  ASSERT_NE(extra, nullptr);
  ASSERT_EQ(sk_X509_num(extra), 1);
  EXPECT_EQ(X509_cmp(sk_X509_value(extra, 0), ca.cert), 0);
  // The CA's key is not the leaf's.
  const std::string ca_key = JoinPath(dir_, "ca.key");
  ASSERT_TRUE(WriteKeyPem(ca_key, ca.key));
  EXPECT_NE(Error(chain, ca_key).find("does not match"), std::string::npos);
}

TEST_F(TlsContextTest, MissingFilesNameTheFlagAndTheFile) {
  const std::string missing = JoinPath(dir_, "nope.pem");
  EXPECT_EQ(Error(missing, key_), "--ssl-cert: " + missing + ": no such file");
  EXPECT_EQ(Error(cert_, missing), "--ssl-key: " + missing + ": no such file");
  // A directory cannot be read as a file.
  EXPECT_EQ(Error(dir_, key_).rfind("--ssl-cert: ", 0), 0u);
}

TEST_F(TlsContextTest, FilesWithoutPemContentAreRefused) {
  const std::string junk = JoinPath(dir_, "junk.pem");
  ASSERT_TRUE(WriteFileAtomic(junk, "not a certificate\n").ok());
  EXPECT_EQ(Error(junk, key_), "--ssl-cert " + junk + ": no PEM certificate in it");
  const std::string key_msg = Error(cert_, junk);
  EXPECT_EQ(key_msg.rfind("--ssl-key " + junk + ": no PEM private key in it", 0), 0u) << key_msg;
  // The key and the certificate given the other way round.
  EXPECT_EQ(Error(key_, cert_), "--ssl-cert " + key_ + ": no PEM certificate in it");
  // A damaged second certificate.
  auto pem = ReadFileToString(cert_);
  ASSERT_TRUE(pem.ok());
  const std::string damaged = JoinPath(dir_, "damaged.pem");
  ASSERT_TRUE(WriteFileAtomic(damaged, *pem + "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").ok());
  const std::string msg = Error(damaged, key_);
  EXPECT_EQ(msg.rfind("--ssl-cert " + damaged + ": certificate 2 cannot be parsed", 0), 0u) << msg;
}

TEST_F(TlsContextTest, AKeyOfAnotherCertificateIsRefused) {
  TestCertificate other;
  MakeCertificate(&other, "other");
  const std::string other_key = JoinPath(dir_, "other.key");
  ASSERT_TRUE(WriteKeyPem(other_key, other.key));
  EXPECT_EQ(Error(cert_, other_key),
            "--ssl-key " + other_key + ": the key does not match the certificate in --ssl-cert " + cert_);
}

TEST_F(TlsContextTest, AnEncryptedKeyIsRefusedWithoutPrompting) {
  const std::string encrypted = JoinPath(dir_, "encrypted.key");
  ASSERT_TRUE(WriteKeyPem(encrypted, server_.key, "secret"));
  const std::string msg = Error(cert_, encrypted);
  EXPECT_EQ(msg.rfind("--ssl-key " + encrypted + ": the key is encrypted", 0), 0u) << msg;
}

}  // namespace
}  // namespace llmhost::server::tls_context_test
