// Request ids: which incoming X-Request-Id values are kept, what a generated
// one looks like, and that the transport echoes the id on plain responses,
// streams and its own errors, and scopes it over the handler and Post().
#include "server/request_id.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <thread>

#include "http_test_client.h"
#include "server/http_server.h"
#include "util/log.h"

namespace llmhost::server::request_id_test {
namespace {

bool LooksGenerated(const std::string& id) { return std::regex_match(id, std::regex("[0-9a-f]{16}")); }

TEST(RequestIdTest, SaneTokensAreVisibleAsciiUpTo128Bytes) {
  EXPECT_TRUE(IsSaneRequestId("abc-123_XYZ.~:/+=@"));
  EXPECT_TRUE(IsSaneRequestId("!"));
  EXPECT_TRUE(IsSaneRequestId(std::string(128, 'a')));
  EXPECT_FALSE(IsSaneRequestId(""));
  EXPECT_FALSE(IsSaneRequestId(std::string(129, 'a')));
  EXPECT_FALSE(IsSaneRequestId("has space"));
  EXPECT_FALSE(IsSaneRequestId("tab\there"));
  EXPECT_FALSE(IsSaneRequestId("new\nline"));
  EXPECT_FALSE(IsSaneRequestId("del\x7f"));
  EXPECT_FALSE(IsSaneRequestId("caf\xC3\xA9"));  // non-ASCII, even valid UTF-8
  EXPECT_FALSE(IsSaneRequestId(std::string("nul\0x", 5)));
}

TEST(RequestIdTest, GeneratedIdsAreSixteenHexDigitsAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewRequestId();
    ASSERT_TRUE(LooksGenerated(id)) << id;
    EXPECT_TRUE(IsSaneRequestId(id));
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(RequestIdTest, IncomingKeptWhenSaneElseReplaced) {
  EXPECT_EQ(RequestIdFor("client-7"), "client-7");
  EXPECT_TRUE(LooksGenerated(RequestIdFor("")));
  EXPECT_TRUE(LooksGenerated(RequestIdFor("two words")));
  EXPECT_TRUE(LooksGenerated(RequestIdFor(std::string(200, 'x'))));
}

// The transport: the handler records the id it sees, directly and in Post().
class RequestIdTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions o;
    o.port = 0;
    o.max_body_bytes = 64;
    auto handler = [](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
      HttpResponse resp;
      resp.content_type = "text/plain";
      if (r.path == "/stream") {
        w->StartStream(200, "text/plain", {});
        w->Write(CurrentRequestId());
        w->End();
      } else if (r.path == "/post") {
        // On a transport thread: the id comes with the posted work.
        w->Post([w] {
          HttpResponse p;
          p.body = CurrentRequestId();
          w->Send(std::move(p));
        });
      } else {
        resp.body = r.request_id + " " + CurrentRequestId();
        w->Send(std::move(resp));
      }
    };
    auto errors = [](int status, const std::string& message, const std::string&) {
      HttpResponse r;
      r.status = status;
      r.body = message;
      return r;
    };
    auto s = HttpServer::Create(o, handler, errors);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    thread_ = std::thread([this] { server_->Run(); });
  }
  void TearDown() override {
    server_->Shutdown();
    thread_.join();
  }

  testing::HttpReply Get(const std::string& path, const std::map<std::string, std::string>& headers = {}) {
    return testing::Request(server_->port(), "GET", path, "", headers);
  }

  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(RequestIdTransportTest, GeneratedIdIsEchoedAndSeenByTheHandler) {
  const testing::HttpReply r = Get("/plain");
  ASSERT_EQ(r.status, 200);
  const std::string id = r.headers.at("x-request-id");
  EXPECT_TRUE(LooksGenerated(id)) << id;
  EXPECT_EQ(r.body, id + " " + id);
  EXPECT_NE(Get("/plain").headers.at("x-request-id"), id);
}

TEST_F(RequestIdTransportTest, SaneIncomingIdIsKeptOnPlainStreamedAndPostedWork) {
  for (const char* path : {"/plain", "/stream", "/post"}) {
    const testing::HttpReply r = Get(path, {{"X-Request-Id", "trace-42"}});
    ASSERT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.headers.at("x-request-id"), "trace-42") << path;
    EXPECT_NE(r.body.find("trace-42"), std::string::npos) << path << ": " << r.body;
  }
}

TEST_F(RequestIdTransportTest, InsaneIncomingIdIsReplaced) {
  const testing::HttpReply r = Get("/plain", {{"X-Request-Id", std::string(129, 'a')}});
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(LooksGenerated(r.headers.at("x-request-id"))) << r.headers.at("x-request-id");
}

TEST_F(RequestIdTransportTest, TransportErrorsCarryAnId) {
  const testing::HttpReply r =
      testing::Request(server_->port(), "POST", "/plain", std::string(100, 'x'), {{"X-Request-Id", "big-1"}});
  ASSERT_EQ(r.status, 413);
  EXPECT_EQ(r.headers.at("x-request-id"), "big-1");
}

}  // namespace
}  // namespace llmhost::server::request_id_test
