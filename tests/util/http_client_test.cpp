#include "util/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "test_util.h"
#include "util/http_download.h"
#include "util/sha256.h"

namespace llmhost::http_client_test {
namespace {

// A one-thread HTTP server on 127.0.0.1: reads each connection's request
// head, writes what the handler returns, closes. A reply of kHang writes
// nothing and keeps the connection open until the server stops.
constexpr char kHang[] = "\x01hang";

// The head's size plus its Content-Length (0 when it has none).
size_t RequestSize(const std::string& req) {
  const size_t head = req.find("\r\n\r\n") + 4;
  const size_t at = req.find("Content-Length: ");
  if (at == std::string::npos || at > head) return head;
  return head + std::stoul(req.substr(at + 16));
}

class CannedServer {
 public:
  using Handler = std::function<std::string(const std::string& request)>;

  explicit CannedServer(Handler handler) : handler_(std::move(handler)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 16);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~CannedServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  std::string url(const std::string& host = "127.0.0.1") const {
    return "http://" + host + ":" + std::to_string(port_);
  }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  void Loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos || req.size() < RequestSize(req)) {
        ssize_t n = recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard<std::mutex> l(mu_);
        requests_.push_back(req);
      }
      std::string reply = handler_(req);
      if (reply == kHang) {
        while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      } else {
        send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
      close(c);
    }
  }

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

bool StartsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

Result<std::pair<HttpGetResult, std::string>> Get(const std::string& url, HttpGetOptions o = {}) {
  return HttpGetString(url, o, 1 << 20);
}

TEST(HttpClientTest, ContentLengthAndChunkedBodies) {
  CannedServer server([](const std::string& req) -> std::string {
    if (StartsWith(req, "GET /plain ")) return "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    if (StartsWith(req, "GET /chunked ")) {
      return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n1000\r\n" + std::string(4096, 'z') +
             "\r\n0\r\n\r\n";
    }
    return "HTTP/1.1 200 OK\r\n\r\nuntil close";  // neither: the body ends at close
  });
  auto a = Get(server.url() + "/plain");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->first.head.status, 200);
  EXPECT_EQ(a->second, "hello");
  auto b = Get(server.url() + "/chunked");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->second, "abc" + std::string(4096, 'z'));
  auto c = Get(server.url() + "/eof");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->second, "until close");
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_NE(reqs[0].find("Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"), std::string::npos);
  EXPECT_NE(reqs[0].find("Connection: close\r\n"), std::string::npos);
}

TEST(HttpClientTest, FollowsRedirectsAndKeepsCredentialsToTheFirstHost) {
  int port = 0;
  CannedServer server([&port](const std::string& req) -> std::string {
    if (StartsWith(req, "GET /resolve/file ")) {
      // To another host name (the CDN), absolute.
      return "HTTP/1.1 302 Found\r\nX-Linked-Etag: \"e1\"\r\nLocation: http://localhost:" + std::to_string(port) +
             "/cdn/x?sig=1\r\nContent-Length: 0\r\n\r\n";
    }
    if (StartsWith(req, "GET /cdn/x?sig=1 ")) return "HTTP/1.1 307 Temporary\r\nLocation: ../final\r\n\r\n";
    if (StartsWith(req, "GET /final ")) return "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndata";
    return "HTTP/1.1 500 Unexpected\r\nContent-Length: 0\r\n\r\n";
  });
  port = server.port();
  HttpGetOptions o;
  o.headers.emplace_back("X-Test", "1");
  o.credentials.emplace_back("Authorization", "Bearer secret");
  auto r = Get(server.url() + "/resolve/file", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->second, "data");
  EXPECT_EQ(r->first.redirects, 2);
  EXPECT_EQ(r->first.url, "http://localhost:" + std::to_string(port) + "/final");
  ASSERT_EQ(r->first.redirect_heads.size(), 2u);
  EXPECT_EQ(r->first.redirect_heads[0].Header("X-Linked-Etag"), "\"e1\"");
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_NE(reqs[0].find("Authorization: Bearer secret"), std::string::npos);
  for (size_t i = 1; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].find("Authorization"), std::string::npos) << reqs[i];
    EXPECT_NE(reqs[i].find("X-Test: 1"), std::string::npos) << reqs[i];
    EXPECT_NE(reqs[i].find("Host: localhost:"), std::string::npos) << reqs[i];
  }
}

TEST(HttpClientTest, PostSendsItsBodyAndDoesNotFollowRedirects) {
  CannedServer server([](const std::string& req) -> std::string {
    if (StartsWith(req, "POST /echo ")) {
      const std::string body = req.substr(req.find("\r\n\r\n") + 4);
      return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    }
    return "HTTP/1.1 307 Again\r\nLocation: /echo\r\nContent-Length: 0\r\n\r\n";
  });
  HttpGetOptions o;
  o.method = "POST";
  o.body = R"({"a": 1})";
  auto r = Get(server.url() + "/echo", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->second, R"({"a": 1})");
  EXPECT_NE(server.requests()[0].find("Content-Length: 8\r\n"), std::string::npos) << server.requests()[0];
  auto moved = Get(server.url() + "/elsewhere", o);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->first.head.status, 307) << "a POST's redirect is the caller's to follow";
  EXPECT_EQ(moved->first.redirects, 0);
  o.method = "GET\r\nX: y";
  EXPECT_FALSE(Get(server.url() + "/echo", o).ok()) << "no line break in the method";
}

TEST(HttpClientTest, RedirectLoopIsAnError) {
  CannedServer server([](const std::string&) { return std::string("HTTP/1.1 301 Moved\r\nLocation: /again\r\n\r\n"); });
  HttpGetOptions o;
  o.max_redirects = 3;
  auto r = Get(server.url() + "/start", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("more than 3 redirects"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST(HttpClientTest, ErrorStatusKeepsTheBodyAndShortBodyIsIOError) {
  CannedServer server([](const std::string& req) -> std::string {
    if (StartsWith(req, "GET /missing ")) return "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope";
    return "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd";  // then closes
  });
  auto missing = Get(server.url() + "/missing");
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(missing->first.head.status, 404);
  EXPECT_EQ(missing->first.error_body, "nope");
  EXPECT_EQ(missing->second, "");

  std::string got;
  auto cut = HttpGet(server.url() + "/cut", {}, [&](std::string_view p) {
    got.append(p);
    return Status::OK();
  });
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kIOError);
  EXPECT_NE(cut.status().message().find("after 4 of 10 bytes"), std::string::npos) << cut.status().ToString();
  EXPECT_EQ(got, "abcd");
}

TEST(HttpClientTest, TimeoutsAndRefusedConnections) {
  CannedServer server([](const std::string&) { return std::string(kHang); });
  HttpGetOptions o;
  o.timeouts.io_ms = 200;
  auto r = Get(server.url() + "/slow", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIOError);
  EXPECT_NE(r.status().message().find("timed out"), std::string::npos) << r.status().ToString();

  int closed_port = 0;
  { CannedServer gone([](const std::string&) { return std::string(); }); closed_port = gone.port(); }
  auto refused = Get("http://127.0.0.1:" + std::to_string(closed_port) + "/");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cannot connect"), std::string::npos) << refused.status().ToString();
}

TEST(HttpClientTest, TlsToAPlainServerFailsTheHandshake) {
  CannedServer server([](const std::string&) { return std::string("HTTP/1.1 200 OK\r\n\r\n"); });
  HttpGetOptions o;
  o.timeouts.connect_ms = 300;
  auto r = Get("https://127.0.0.1:" + std::to_string(server.port()) + "/", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIOError);
  EXPECT_NE(r.status().message().find("TLS"), std::string::npos) << r.status().ToString();
}

TEST(HttpDownloadTest, ResumesWithARangeRequest) {
  const std::string dir = testing::MakeTempDir();
  const std::string path = JoinPath(dir, "blob.incomplete");
  ASSERT_TRUE(WriteFileAtomic(path, "hello ").ok());
  CannedServer server([](const std::string& req) -> std::string {
    if (req.find("Range: bytes=6-\r\n") == std::string::npos) return "HTTP/1.1 400 Bad\r\nContent-Length: 0\r\n\r\n";
    return "HTTP/1.1 206 Partial\r\nContent-Range: bytes 6-10/11\r\nContent-Length: 5\r\n\r\nworld";
  });
  DownloadOptions o;
  o.sha256 = true;
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  o.progress = [&](uint64_t done, uint64_t total) {
    seen.emplace_back(done, total);
    return Status::OK();
  };
  auto r = DownloadToFile(server.url() + "/f", path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->response.head.status, 206);
  EXPECT_EQ(r->size, 11u);
  EXPECT_EQ(r->resumed_from, 6u);
  EXPECT_EQ(r->sha256, ToHex(Sha256Of("hello world")));
  EXPECT_EQ(*ReadFileToString(path), "hello world");
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), std::make_pair(uint64_t{11}, uint64_t{11}));
}

TEST(HttpDownloadTest, ServerIgnoringTheRangeStartsOver) {
  const std::string dir = testing::MakeTempDir();
  const std::string path = JoinPath(dir, "blob.incomplete");
  ASSERT_TRUE(WriteFileAtomic(path, "stale partial bytes").ok());
  CannedServer server([](const std::string&) { return std::string("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnew"); });
  DownloadOptions o;
  o.sha256 = true;
  auto r = DownloadToFile(server.url() + "/f", path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->resumed_from, 0u);
  EXPECT_EQ(r->size, 3u);
  EXPECT_EQ(*ReadFileToString(path), "new");
  EXPECT_EQ(r->sha256, ToHex(Sha256Of("new")));
}

TEST(HttpDownloadTest, ErrorStatusLeavesThePartialFile) {
  const std::string dir = testing::MakeTempDir();
  const std::string path = JoinPath(dir, "blob.incomplete");
  ASSERT_TRUE(WriteFileAtomic(path, "keep").ok());
  CannedServer server([](const std::string&) { return std::string("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"); });
  auto r = DownloadToFile(server.url() + "/f", path, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->response.head.status, 403);
  EXPECT_EQ(*ReadFileToString(path), "keep");
}

}  // namespace
}  // namespace llmhost::http_client_test
