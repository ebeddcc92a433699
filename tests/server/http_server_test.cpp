// The HTTP transport alone (HttpServer with test handlers): keep-alive,
// pipelining, chunked streams, limits (413, 431, 400), Expect: 100-continue,
// hang-up detection, many idle connections, and the shutdown drain.
#include "server/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "http_test_client.h"

namespace llmhost::server {
namespace {

using testing::ConnectLocal;
using testing::FormatRequest;
using testing::ReadResponse;
using testing::Request;
using testing::SendAll;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(HttpServerOptions{}); }

  void Start(HttpServerOptions o) {
    o.port = 0;
    o.max_body_bytes = 4096;
    o.max_header_bytes = 2048;
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
  }

  void Handle(HttpRequest r, std::shared_ptr<ResponseWriter> w) {
    if (r.path == "/echo") {
      HttpResponse resp;
      resp.content_type = "text/plain";
      resp.body = r.method + " " + r.query + " " + r.body;
      resp.headers.emplace_back("X-Header-Seen", std::string(r.Header("x-test")));
      w->Send(std::move(resp));
    } else if (r.path == "/stream") {
      w->StartStream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
      w->Write("one ");
      w->Write("two ");
      w->Write("three");
      w->End();
    } else if (r.path == "/hold") {
      // Answered later (or never): the test watches OnClose.
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
      HttpResponse resp;
      resp.status = 404;
      w->Send(resp);
    }
  }

  // Waits (bounded) until `pred` holds; returns whether it did.
  template <class Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), pred);
  }

  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<ResponseWriter>> held_;
  int closed_ = 0;
};

TEST_F(HttpServerTest, KeepAliveAndPipelining) {
  int fd = ConnectLocal(port_);
  ASSERT_GE(fd, 0);
  std::string buf;
  ASSERT_TRUE(SendAll(fd, FormatRequest("POST", "/echo?a=1", "first", {{"X-Test", "yes"}})));
  auto r1 = ReadResponse(fd, &buf);
  EXPECT_EQ(r1.status, 200);
  EXPECT_EQ(r1.body, "POST a=1 first");
  EXPECT_EQ(r1.headers["x-header-seen"], "yes");
  EXPECT_EQ(r1.headers["content-type"], "text/plain");
  // Two requests in one write: both answered, in order, on the same connection.
  ASSERT_TRUE(SendAll(fd, FormatRequest("POST", "/echo", "second") + FormatRequest("GET", "/echo", "")));
  auto r2 = ReadResponse(fd, &buf);
  auto r3 = ReadResponse(fd, &buf);
  EXPECT_EQ(r2.body, "POST  second");
  EXPECT_EQ(r3.body, "GET  ");
  ::close(fd);
}

TEST_F(HttpServerTest, ChunkedStream) {
  auto r = Request(port_, "GET", "/stream");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["transfer-encoding"], "chunked");
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  EXPECT_EQ(r.headers["cache-control"], "no-cache");
  EXPECT_EQ(r.body, "one two three");
}

TEST_F(HttpServerTest, LimitsAndMalformedRequests) {
  // A body over the limit: 413, then the connection closes.
  auto big = Request(port_, "POST", "/echo", std::string(100000, 'x'));
  EXPECT_EQ(big.status, 413);
  EXPECT_NE(big.body.find("exceeds"), std::string::npos);
  auto headers = Request(port_, "GET", "/echo", "", {{"X-Big", std::string(5000, 'h')}});
  EXPECT_EQ(headers.status, 431);
  for (const std::string raw : {"HELLO\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "POST /echo HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                                "GET /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    int fd = ConnectLocal(port_);
    ASSERT_GE(fd, 0);
    std::string buf;
    ASSERT_TRUE(SendAll(fd, raw));
    auto r = ReadResponse(fd, &buf);
    EXPECT_EQ(r.status, 400) << raw;
    ::close(fd);
  }
  // The server is still fine.
  EXPECT_EQ(Request(port_, "POST", "/echo", "ok").status, 200);
}

TEST_F(HttpServerTest, ExpectContinue) {
  int fd = ConnectLocal(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  std::string buf;
  while (buf.find("\r\n\r\n") == std::string::npos) ASSERT_TRUE(testing::ReadMore(fd, &buf));
  EXPECT_EQ(buf.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << buf;
  buf.erase(0, buf.find("\r\n\r\n") + 4);
  ASSERT_TRUE(SendAll(fd, "hello"));
  auto r = ReadResponse(fd, &buf);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST  hello");
  ::close(fd);
}

TEST_F(HttpServerTest, HangUpFiresOnClose) {
  int fd = ConnectLocal(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, FormatRequest("GET", "/hold", "")));
  ASSERT_TRUE(WaitFor([&] { return held_.size() == 1; }));
  std::string buf;
  while (buf.find("started") == std::string::npos) ASSERT_TRUE(testing::ReadMore(fd, &buf));
  EXPECT_EQ(server_->stats().requests_active, 1);
  ::close(fd);  // the client goes away mid-stream
  EXPECT_TRUE(WaitFor([&] { return closed_ == 1; }));
  EXPECT_TRUE(held_[0]->closed());
  // Writes after the hang-up are ignored, not crashes.
  held_[0]->Write("late");
  held_[0]->End();
}

TEST_F(HttpServerTest, ManyIdleConnectionsAndAThreadFreeDesign) {
  std::vector<int> fds;
  for (int i = 0; i < 300; ++i) {
    int fd = ConnectLocal(port_);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  // Each connection served one request and stays open (keep-alive).
  for (int fd : fds) ASSERT_TRUE(SendAll(fd, FormatRequest("GET", "/echo", "")));
  for (int fd : fds) {
    std::string buf;
    EXPECT_EQ(ReadResponse(fd, &buf).status, 200);
  }
  EXPECT_GE(server_->stats().connections, 300);
  EXPECT_EQ(Request(port_, "POST", "/echo", "still").body, "POST  still");
  for (int fd : fds) ::close(fd);
}

TEST_F(HttpServerTest, ShutdownDrainsRequestsInFlight) {
  int idle = ConnectLocal(port_);
  ASSERT_GE(idle, 0);
  int fd = ConnectLocal(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, FormatRequest("GET", "/hold", "")));
  ASSERT_TRUE(WaitFor([&] { return held_.size() == 1; }));
  server_->Shutdown();
  // New connections are refused once the acceptor is closed; the idle one is closed.
  std::string idle_buf;
  EXPECT_FALSE(testing::ReadMore(idle, &idle_buf));
  ::close(idle);
  // The request in flight finishes normally.
  held_[0]->Write("done");
  held_[0]->End();
  std::string buf;
  auto r = ReadResponse(fd, &buf);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "started\ndone");
  ::close(fd);
  thread_.join();  // Run() returned
  EXPECT_EQ(closed_, 0);
}

}  // namespace
}  // namespace llmhost::server
