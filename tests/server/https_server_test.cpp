// HttpServer with TLS (HttpServerOptions::tls): requests and streams over
// TLS 1.2 and 1.3, older protocols refused, plain HTTP answered 400, a silent
// client dropped after the handshake deadline, hang-ups detected through TLS,
// and the shutdown with TLS connections open.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "server/http_server.h"
#include "server/tls_context.h"
#include "test_util.h"
#include "tls_test_util.h"
#include "util/file.h"

namespace llmhost::server::https_server_test {
namespace {

using testing::ConnectLocal;
using testing::FormatRequest;
using testing::TlsClient;

class HttpsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = testing::MakeTempDir();
    ASSERT_FALSE(dir.empty());
    testing::TestCertificate cert;
    testing::MakeCertificate(&cert, "localhost");
    cert_file_ = JoinPath(dir, "cert.pem");
    const std::string key_file = JoinPath(dir, "key.pem");
    ASSERT_TRUE(testing::WritePem(cert_file_, cert.cert));
    ASSERT_TRUE(testing::WriteKeyPem(key_file, cert.key));
    auto tls = TlsServerContext::Load(cert_file_, key_file);
    ASSERT_TRUE(tls.ok()) << tls.status().ToString();
    tls_ = *tls;
    Start(std::chrono::seconds(30));
  }

  void Start(std::chrono::seconds header_timeout) {
    HttpServerOptions o;
    o.port = 0;
    o.tls = tls_;
    o.header_timeout = header_timeout;
    o.drain_timeout = std::chrono::seconds(20);
    auto handler = [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) { Handle(std::move(r), std::move(w)); };
    auto errors = [](int status, const std::string& message, const std::string&) {
      HttpResponse r;
      r.status = status;
      r.body = "{\"error\":\"" + message + "\"}";
      return r;
    };
    auto s = HttpServer::Create(o, handler, errors);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    port_ = server_->port();
    thread_ = std::thread([this] { server_->Run(); });
  }

  void TearDown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_.clear();
    }
    if (server_) server_->Shutdown();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }

  void Handle(HttpRequest r, std::shared_ptr<ResponseWriter> w) {
    if (r.path == "/echo") {
      HttpResponse resp;
      resp.content_type = "text/plain";
      resp.body = std::string(r.tls ? "tls " : "plain ") + r.method + " " + r.body;
      w->Send(std::move(resp));
    } else if (r.path == "/stream") {
      w->StartStream(200, "text/event-stream", {});
      w->Write("data: one\n\n");
      w->Write("data: two\n\n");
      w->End();
    } else if (r.path == "/hold") {
      w->StartStream(200, "text/event-stream", {});
      w->Write("started\n");
      w->OnClose([this] {
        std::lock_guard<std::mutex> lock(mu_);
        closed_++;
        cv_.notify_all();
      });
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(w);
      cv_.notify_all();
    } else {
      w->Send(HttpResponse{404, "text/plain", {}, ""});
    }
  }

  template <class Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), pred);
  }

  std::shared_ptr<const TlsServerContext> tls_;
  std::string cert_file_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<ResponseWriter>> held_;
  int closed_ = 0;
};

TEST_F(HttpsServerTest, RequestsOnAKeptAliveConnection) {
  TlsClient c(port_, cert_file_);
  ASSERT_TRUE(c.handshake_ok());
  EXPECT_EQ(c.version(), "TLSv1.3");
  std::string buf;
  for (const char* body : {"first", "second"}) {
    ASSERT_TRUE(c.Send(FormatRequest("POST", "/echo", body)));
    ASSERT_TRUE(c.ReadUntil(std::string("tls POST ") + body, &buf)) << buf;
  }
  EXPECT_EQ(buf.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << buf;
}

TEST_F(HttpsServerTest, Tls12IsServedAndOlderProtocolsAreRefused) {
  TlsClient v12(port_, cert_file_, TLS1_2_VERSION);
  ASSERT_TRUE(v12.handshake_ok());
  EXPECT_EQ(v12.version(), "TLSv1.2");
  ASSERT_TRUE(v12.Send(FormatRequest("GET", "/echo", "", {{"Connection", "close"}})));
  EXPECT_NE(v12.ReadToEnd().find("tls GET "), std::string::npos);
  for (int old : {TLS1_1_VERSION, TLS1_VERSION}) {
    TlsClient c(port_, cert_file_, old);
    EXPECT_FALSE(c.handshake_ok()) << old;
  }
}

TEST_F(HttpsServerTest, StreamsAreChunkedOverTls) {
  TlsClient c(port_, cert_file_);
  ASSERT_TRUE(c.Send(FormatRequest("GET", "/stream", "", {{"Connection", "close"}})));
  const std::string text = c.ReadToEnd();
  EXPECT_NE(text.find("Transfer-Encoding: chunked"), std::string::npos) << text;
  EXPECT_NE(text.find("data: one\n\n"), std::string::npos) << text;
  EXPECT_NE(text.find("data: two\n\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\n0\r\n\r\n"), std::string::npos) << text;
}

TEST_F(HttpsServerTest, PlainHttpIsAnswered400AndClosed) {
  int fd = ConnectLocal(port_, 10);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(testing::SendAll(fd, FormatRequest("GET", "/echo", "")));
  std::string buf;
  const testing::HttpReply r = testing::ReadResponse(fd, &buf);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("HTTPS only"), std::string::npos) << r.body;
  EXPECT_EQ(r.headers.at("connection"), "close");
  EXPECT_FALSE(testing::ReadMore(fd, &buf)) << "closed after the answer";
  ::close(fd);
}

TEST_F(HttpsServerTest, ASilentClientIsDroppedAtTheHandshakeDeadline) {
  TearDown();
  Start(std::chrono::seconds(1));
  for (const std::string& sent : {std::string(), std::string("\x16\x03\x01", 3)}) {  // nothing; a record's start
    int fd = ConnectLocal(port_, 10);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(sent.empty() || testing::SendAll(fd, sent));
    const auto t0 = std::chrono::steady_clock::now();
    std::string buf;
    EXPECT_FALSE(testing::ReadMore(fd, &buf));
    EXPECT_TRUE(buf.empty());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
    ::close(fd);
  }
  for (int i = 0; i < 100 && server_->stats().connections != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(server_->stats().connections, 0);
}

TEST_F(HttpsServerTest, HangUpFiresOnCloseThroughTls) {
  TlsClient c(port_, cert_file_);
  ASSERT_TRUE(c.Send(FormatRequest("GET", "/hold", "")));
  ASSERT_TRUE(WaitFor([&] { return held_.size() == 1; }));
  std::string buf;
  ASSERT_TRUE(c.ReadUntil("started", &buf));
  c.Close();  // no close_notify: the TCP connection just ends
  EXPECT_TRUE(WaitFor([&] { return closed_ == 1; }));
  EXPECT_TRUE(held_[0]->closed());
}

TEST_F(HttpsServerTest, ShutdownClosesIdleTlsConnectionsAndFinishesStreams) {
  TlsClient idle(port_, cert_file_);
  ASSERT_TRUE(idle.handshake_ok());
  TlsClient busy(port_, cert_file_);
  ASSERT_TRUE(busy.Send(FormatRequest("GET", "/hold", "")));
  ASSERT_TRUE(WaitFor([&] { return held_.size() == 1; }));
  server_->Shutdown();
  EXPECT_EQ(idle.ReadToEnd(), "");  // closed at once
  std::shared_ptr<ResponseWriter> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w = held_[0];
  }
  w->Write("last\n");
  w->End();
  std::string text = busy.ReadToEnd();
  EXPECT_NE(text.find("last\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\n0\r\n\r\n"), std::string::npos) << "the stream ended whole: " << text;
  thread_.join();  // Run() returned: the drain is over
}

}  // namespace
}  // namespace llmhost::server::https_server_test
