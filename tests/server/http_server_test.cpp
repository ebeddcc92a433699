// The HTTP transport alone (HttpServer with test handlers): keep-alive,
// pipelining, chunked streams, HTTP/1.0 streams, limits (413, 431, 400,
// --max-connections, the header timeout), Expect: 100-continue, hang-up
// detection, many idle connections, and the shutdown drain.
#include "server/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "http_test_client.h"

namespace llmhost::server::http_server_test {
namespace {

using testing::ConnectLocal;
using testing::FormatRequest;
using testing::ReadResponse;
using testing::Request;
using testing::HttpReply;
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
    } else if (r.path == "/stream-late") {
      // The last piece has long been written when End() comes.
      w->StartStream(200, "text/event-stream", {});
      w->Write("data: x\n\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
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

// Reads until the server closes (true) or the receive timeout passes (false).
bool ReadToClose(int fd, std::string* out) {
  char tmp[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
    if (n == 0) return true;
    if (n < 0) return false;
    out->append(tmp, static_cast<size_t>(n));
  }
}

// HTTP/1.0 has no chunked framing: a stream ends when the server closes the
// connection. Its last write carries no bytes, and the exchange must end
// with it whether or not an earlier write is still in flight.
TEST_F(HttpServerTest, Http10StreamsEndByClosingTheConnection) {
  for (const char* path : {"/stream-late", "/stream"}) {
    for (int i = 0; i < 20; ++i) {
      int fd = ConnectLocal(port_, 10);
      ASSERT_GE(fd, 0);
      ASSERT_TRUE(SendAll(fd, std::string("GET ") + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"));
      std::string text;
      ASSERT_TRUE(ReadToClose(fd, &text)) << path << " #" << i << ": the stream never ended: " << text;
      ::close(fd);
      EXPECT_EQ(text.rfind("HTTP/1.0 200", 0), 0u) << text;
      EXPECT_EQ(text.find("Transfer-Encoding"), std::string::npos) << text;
      EXPECT_NE(text.find(std::string(path) == "/stream" ? "one two three" : "data: x"), std::string::npos) << text;
    }
  }
  for (int i = 0; i < 100 && server_->stats().requests_active != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(server_->stats().requests_active, 0);
}

// Headers must arrive within the header timeout once a request has begun;
// before its first byte a connection is idle (keep-alive) and may wait.
TEST_F(HttpServerTest, HeaderTimeoutClosesTricklingClients) {
  TearDown();
  HttpServerOptions o;
  o.header_timeout = std::chrono::seconds(1);
  Start(o);
  int slow = ConnectLocal(port_, 10);
  ASSERT_GE(slow, 0);
  ASSERT_TRUE(SendAll(slow, "GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Te"));
  const auto t0 = std::chrono::steady_clock::now();
  std::string ignored;
  EXPECT_TRUE(ReadToClose(slow, &ignored)) << "closed after the header timeout";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
  ::close(slow);
  // Idle for longer than the header timeout, then a whole request: answered.
  int idle = ConnectLocal(port_, 10);
  ASSERT_GE(idle, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::string buf;
  ASSERT_TRUE(SendAll(idle, FormatRequest("POST", "/echo", "late")));
  EXPECT_EQ(ReadResponse(idle, &buf).body, "POST  late");
  ::close(idle);
}

TEST_F(HttpServerTest, MaxConnectionsRefusesTheNextWith503) {
  TearDown();
  HttpServerOptions o;
  o.max_connections = 2;
  Start(o);
  std::vector<int> open;
  for (int i = 0; i < 2; ++i) {
    int fd = ConnectLocal(port_, 10);
    ASSERT_GE(fd, 0);
    std::string buf;
    ASSERT_TRUE(SendAll(fd, FormatRequest("POST", "/echo", "x")));
    EXPECT_EQ(ReadResponse(fd, &buf).status, 200);
    open.push_back(fd);  // kept alive
  }
  int third = ConnectLocal(port_, 10);
  ASSERT_GE(third, 0);
  std::string buf;
  auto refused = ReadResponse(third, &buf);
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.headers["retry-after"], "1");
  EXPECT_NE(refused.body.find("max-connections"), std::string::npos) << refused.body;
  ::close(third);
  EXPECT_EQ(server_->stats().connections_refused, 1);
  // A connection closed makes room again.
  ::close(open.back());
  open.pop_back();
  HttpReply again;
  for (int i = 0; i < 50 && again.status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    again = Request(port_, "POST", "/echo", "y");
  }
  EXPECT_EQ(again.status, 200);
  for (int fd : open) ::close(fd);
}

}  // namespace
}  // namespace llmhost::server::http_server_test
