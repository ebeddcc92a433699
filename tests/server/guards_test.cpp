// What keeps bad input and foreign web pages from hurting a running server:
// the Host / Origin guard of an open loopback server (DNS rebinding, cross-
// site requests), HEAD on every GET route, settings PUTs nested too deeply
// or too large (400, nothing stored, the server still up), a missing --home
// created by the first setting, and a model whose chat template does not
// parse named as such.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "http_test_client.h"
#include "pool/cpu_engine_factory.h"
#include "server/api_server.h"
#include "server/host_guard.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::server::guards_test {
namespace {

using Json = nlohmann::json;
using testing::Request;
namespace fs = std::filesystem;

HttpRequest WithHeaders(std::initializer_list<std::pair<std::string, std::string>> headers) {
  HttpRequest r;
  r.method = "GET";
  r.path = "/v1/models";
  for (const auto& [k, v] : headers) r.headers.emplace_back(k, v);
  return r;
}

TEST(HostGuard, NamesAndAddresses) {
  EXPECT_EQ(HostWithoutPort("Example.COM:8000"), "example.com");
  EXPECT_EQ(HostWithoutPort("[::1]:8000"), "::1");
  EXPECT_EQ(HostWithoutPort("localhost."), "localhost");
  EXPECT_EQ(HostWithoutPort("[::1"), "");
  for (const char* yes : {"localhost", "app.localhost", "127.0.0.1", "127.3.2.1", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackName(yes)) << yes;
  }
  for (const char* no : {"localhost.evil.example", "evil.example", "0.0.0.0", "10.0.0.1", "::", "128.0.0.1"}) {
    EXPECT_FALSE(IsLoopbackName(no)) << no;
  }
}

TEST(HostGuard, OpenLoopbackServersAnswerLoopbackHostsOnly) {
  CorsPolicy cors({"http://app.example:3000"});
  HostGuard open("127.0.0.1", /*open=*/true, {"llm.lan"}, &cors);
  EXPECT_FALSE(open.Check(WithHeaders({{"host", "127.0.0.1:8000"}})));
  EXPECT_FALSE(open.Check(WithHeaders({{"host", "localhost:8000"}})));
  EXPECT_FALSE(open.Check(WithHeaders({{"host", "[::1]:8000"}})));
  EXPECT_FALSE(open.Check(WithHeaders({{"host", "LLM.lan:8000"}}))) << "--allowed-hosts";
  EXPECT_FALSE(open.Check(WithHeaders({}))) << "no Host: not a browser";
  MaybeError rebinding = open.Check(WithHeaders({{"host", "evil.example:8000"}}));
  ASSERT_TRUE(rebinding);
  EXPECT_EQ(rebinding->status, 403);
  EXPECT_NE(rebinding->message.find("--allowed-hosts"), std::string::npos);
  // Cross-site pages: refused unless --cors-origins allows them; the
  // server's own pages (Origin = the Host) pass.
  MaybeError cross = open.Check(WithHeaders({{"host", "127.0.0.1:8000"}, {"origin", "https://evil.example"}}));
  ASSERT_TRUE(cross);
  EXPECT_EQ(cross->status, 403);
  EXPECT_NE(cross->message.find("--cors-origins"), std::string::npos);
  EXPECT_TRUE(open.Check(WithHeaders({{"host", "127.0.0.1:8000"}, {"origin", "null"}})));
  EXPECT_FALSE(open.Check(WithHeaders({{"host", "127.0.0.1:8000"}, {"origin", "http://127.0.0.1:8000"}})));
  EXPECT_FALSE(open.Check(WithHeaders({{"host", "127.0.0.1:8000"}, {"origin", "http://app.example:3000"}})));
  // With an API key the key is the guard; on a public address every Host is
  // expected; '*' allows any Host.
  HostGuard keyed("127.0.0.1", /*open=*/false, {}, &cors);
  EXPECT_FALSE(keyed.Check(WithHeaders({{"host", "evil.example"}, {"origin", "https://evil.example"}})));
  HostGuard public_addr("0.0.0.0", /*open=*/true, {}, &cors);
  EXPECT_FALSE(public_addr.Check(WithHeaders({{"host", "my-box:8000"}})));
  HostGuard any("127.0.0.1", /*open=*/true, {"*"}, &cors);
  EXPECT_FALSE(any.Check(WithHeaders({{"host", "evil.example"}})));
}

class GuardServer {
 public:
  GuardServer(const std::string& model_dir, const std::string& settings_path, ServeSettings s = {}) {
    PoolOptions po;
    po.model_dirs = {model_dir};
    po.guard.tier = GuardTier::kOff;
    po.settings_path = settings_path;
    CpuEngineFactoryOptions fo;
    fo.engine.max_concurrent_requests = 2;
    fo.engine.kv_blocks = 64;
    fo.engine.block_size = 16;
    fo.precision = Precision::kReference;
    auto pool = EnginePool::Create(po, std::make_unique<CpuEngineFactory>(fo), std::make_shared<LinuxMemoryProbe>());
    EXPECT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    s.port = 0;
    s.host = "127.0.0.1";
    s.max_queue = 8;
    auto api = ApiServer::Create(s, pool_.get(), nullptr, /*handle_signals=*/false);
    EXPECT_TRUE(api.ok()) << api.status().ToString();
    api_ = std::move(*api);
    thread_ = std::thread([this] { api_->Run(); });
  }
  ~GuardServer() {
    api_->Shutdown();
    thread_.join();
    pool_->Shutdown();
    api_.reset();
    pool_.reset();
  }
  int port() const { return api_->port(); }

 private:
  std::unique_ptr<EnginePool> pool_;
  std::unique_ptr<ApiServer> api_;
  std::thread thread_;
};

std::string CopyModel(const std::string& name, const std::string& dir) {
  fs::copy(::llmhost::testing::TestDataDir() + "/models/" + name, dir + "/" + name, fs::copy_options::recursive);
  return dir + "/" + name;
}

TEST(Guards, HostHeadAndCrossSiteThroughTheServer) {
  const std::string dir = ::llmhost::testing::MakeTempDir();
  CopyModel("qwen3-tiny", dir);
  GuardServer srv(dir, "");
  auto evil = Request(srv.port(), "GET", "/v1/models", "", {{"Host", "evil.example:8000"}});
  EXPECT_EQ(evil.status, 403);
  EXPECT_EQ(Json::parse(evil.body)["error"]["code"], "forbidden");
  auto cross = Request(srv.port(), "POST", "/admin/api/models/qwen3-tiny/load", "",
                       {{"Origin", "https://evil.example"}});
  EXPECT_EQ(cross.status, 403);
  EXPECT_EQ(Json::parse(Request(srv.port(), "GET", "/admin/api/models").body)["models"][0]["loaded"], false)
      << "the refused request did nothing";
  // HEAD: GET's status and headers, no body, on every GET route.
  for (const char* path : {"/health", "/v1/models", "/v1/models/qwen3-tiny", "/v1/models/status", "/api/status",
                           "/admin/api/models", "/admin/api/models/qwen3-tiny", "/admin/api/models/qwen3-tiny/settings",
                           "/admin/api/cache", "/admin/api/status"}) {
    auto get = Request(srv.port(), "GET", path);
    auto head = Request(srv.port(), "HEAD", path);
    // The cache route is 404 here: this server runs without cache tiers.
    EXPECT_EQ(get.status, std::string(path) == "/admin/api/cache" ? 404 : 200) << path << ": " << get.body;
    EXPECT_EQ(head.status, get.status) << path;
    EXPECT_TRUE(head.body.empty()) << path;
    EXPECT_FALSE(head.headers["content-length"].empty()) << path;
  }
  EXPECT_EQ(Request(srv.port(), "HEAD", "/v1/chat/completions").status, 405);
}

TEST(Guards, SettingsTooDeepOrTooLargeAreRefusedAndNothingIsStored) {
  const std::string dir = ::llmhost::testing::MakeTempDir();
  CopyModel("qwen3-tiny", dir);
  const std::string settings = dir + "/home/model_settings.json";
  GuardServer srv(dir, settings);
  const std::string path = "/admin/api/models/qwen3-tiny/settings";
  for (int depth : {100000, 3000, 129}) {
    const std::string body = R"({"chat_template_kwargs": {"a": )" + std::string(depth, '[') + std::string(depth, ']') + "}}";
    auto r = Request(srv.port(), "PUT", path, body);
    EXPECT_EQ(r.status, 400) << depth << ": " << r.body;
    EXPECT_NE(r.body.find("nests deeper than 128"), std::string::npos) << r.body;
  }
  // Within the JSON limit, beyond what a template kwarg may nest.
  auto deep = Request(srv.port(), "PUT", path, R"({"chat_template_kwargs": {"a": [[[[[[[[[[1]]]]]]]]]]}})");
  EXPECT_EQ(deep.status, 400);
  EXPECT_EQ(Json::parse(deep.body)["error"]["param"], "chat_template_kwargs.a") << deep.body;
  auto big = Request(srv.port(), "PUT", path,
                     Json{{"chat_template_kwargs", {{"text", std::string(100 << 10, 'x')}}}}.dump());
  EXPECT_EQ(big.status, 400) << big.body;
  for (const char* alias : {R"({"alias": "  "})", R"({"alias": "a/b"})", R"({"alias": "x\u0001"})"}) {
    auto r = Request(srv.port(), "PUT", path, alias);
    EXPECT_EQ(r.status, 400) << alias;
    EXPECT_EQ(Json::parse(r.body)["error"]["param"], "alias") << r.body;
  }
  EXPECT_EQ(Request(srv.port(), "GET", "/health").status, 200) << "the server is still up";
  EXPECT_FALSE(FileExists(settings)) << "nothing was stored";
  // A valid change creates the missing home and is served.
  auto ok = Request(srv.port(), "PUT", path, R"({"alias": "fast", "chat_template_kwargs": {"enable_thinking": false}})");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_TRUE(FileExists(settings));
  auto chat = Request(srv.port(), "POST", "/v1/chat/completions",
                      R"({"model": "fast", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(chat.status, 200) << chat.body;
}

TEST(Guards, AChatTemplateThatDoesNotParseIsNamed) {
  const std::string dir = ::llmhost::testing::MakeTempDir();
  const std::string model = CopyModel("qwen3-tiny", dir);
  ASSERT_TRUE(WriteFileAtomic(model + "/chat_template.jinja", "{% for m in messages %}{{ m.content }").ok());
  GuardServer srv(dir, "");
  auto r = Request(srv.port(), "POST", "/v1/chat/completions",
                   R"({"model": "qwen3-tiny", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(r.status, 400);
  const std::string msg = Json::parse(r.body)["error"]["message"];
  EXPECT_NE(msg.find("chat template does not parse"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("has no chat template"), std::string::npos) << msg;
  // The raw route still works.
  EXPECT_EQ(Request(srv.port(), "POST", "/v1/completions", R"({"model": "qwen3-tiny", "max_tokens": 2, "prompt": "hi"})")
                .status,
            200);
}

}  // namespace
}  // namespace llmhost::server::guards_test
