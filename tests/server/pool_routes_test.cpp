// The engine pool over HTTP: /v1/models (aliases), /v1/models/status,
// /api/status memory figures, the admin API, and the mapping of pool errors
// (507, 409, 503 Retry-After, 400 prefill_memory_exceeded / aborted, 503
// model_unloaded, in-stream errors). Real tiny models on the CPU backend; a
// fake memory probe (footprint 0 unless a test sets it) so that ceilings are
// exact on a shared machine.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "http_test_client.h"
#include "pool/cpu_engine_factory.h"
#include "server/api_server.h"
#include "test_util.h"

namespace llmhost::server::pool_routes_test {
namespace {

using Json = nlohmann::json;
using testing::Request;

// m1 and m2: two copies of the tiny Qwen3 model: equal sizes. (Two links to
// one directory would be one model: discovery follows no link twice.)
std::string TwoModels() {
  const std::string dir = ::llmhost::testing::MakeTempDir();
  const std::string src = ::llmhost::testing::TestDataDir() + "/models/qwen3-tiny";
  std::filesystem::copy(src, dir + "/m1", std::filesystem::copy_options::recursive);
  std::filesystem::copy(src, dir + "/m2", std::filesystem::copy_options::recursive);
  return dir;
}

CpuEngineFactoryOptions FactoryOptions(int max_running) {
  CpuEngineFactoryOptions fo;
  fo.engine.max_concurrent_requests = max_running;
  fo.engine.kv_blocks = 256;  // 4096 positions: the model's whole context
  fo.engine.block_size = 16;
  fo.precision = Precision::kReference;
  return fo;
}

// The admission size of one model (both are the same).
uint64_t OneModelBytes(const std::string& dir, int max_running) {
  CpuEngineFactory f(FactoryOptions(max_running));
  auto models = DiscoverModels({dir});
  EXPECT_EQ(models.size(), 2u);
  return models.empty() ? 0 : f.ResidentEstimate(models[0], ModelSettings())[0];
}

class PoolServer {
 public:
  // Custom ceiling `ceiling` bytes (0: the guard off).
  PoolServer(const std::string& dir, uint64_t ceiling, double wait_s = 30, int max_running = 4) {
    probe_ = std::make_shared<FakeMemoryProbe>();
    SystemMemory sys;
    sys.mem_total = sys.mem_available = uint64_t{64} << 30;
    sys.ok = true;
    probe_->set_system(sys);
    PoolOptions po;
    po.model_dirs = {dir};
    po.model_wait_timeout_s = wait_s;
    po.settings_path = dir + "/model_settings.json";
    if (ceiling > 0) {
      po.guard.tier = GuardTier::kCustom;
      po.guard.custom_ceiling_bytes = ceiling;
    } else {
      po.guard.tier = GuardTier::kOff;
    }
    auto pool = EnginePool::Create(po, std::make_unique<CpuEngineFactory>(FactoryOptions(max_running)), probe_);
    EXPECT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    ServeSettings s;
    s.port = 0;
    s.max_queue = 32;
    auto api = ApiServer::Create(s, pool_.get(), nullptr, /*handle_signals=*/false);
    EXPECT_TRUE(api.ok()) << api.status().ToString();
    api_ = std::move(*api);
    thread_ = std::thread([this] { api_->Run(); });
  }
  ~PoolServer() {
    StopApi();
    pool_->Shutdown();  // engines first: they may hold the last references to connections
    api_.reset();
    pool_.reset();
  }
  // The HTTP server stops and its background work (bench runs) ends; the pool stays.
  void StopApi() {
    if (!thread_.joinable()) return;
    api_->Shutdown();
    thread_.join();
  }
  int port() const { return api_->port(); }
  EnginePool& pool() { return *pool_; }
  ApiServer& api() { return *api_; }
  FakeMemoryProbe& probe() { return *probe_; }

 private:
  std::shared_ptr<FakeMemoryProbe> probe_;
  std::unique_ptr<EnginePool> pool_;
  std::unique_ptr<ApiServer> api_;
  std::thread thread_;
};

std::string Completion(const std::string& model, int max_tokens, bool stream = false) {
  return Json{{"model", model}, {"prompt", "Hello"}, {"max_tokens", max_tokens}, {"temperature", 0},
              {"ignore_eos", true}, {"stream", stream}}
      .dump();
}

Json ModelStatus(int port, const std::string& id) {
  Json j = Json::parse(Request(port, "GET", "/v1/models/status").body);
  for (const auto& m : j["models"]) {
    if (m["id"] == id) return m;
  }
  return Json();
}

// Opens a streaming completion and reads until the first non-empty text
// (the keep-alive chunk has an empty one).
int OpenStream(int port, const std::string& model, std::string* buf) {
  int fd = testing::ConnectLocal(port);
  EXPECT_GE(fd, 0);
  EXPECT_TRUE(testing::SendAll(fd, testing::FormatRequest("POST", "/v1/completions", Completion(model, 4000, true))));
  auto has_token = [&] {
    for (size_t p = buf->find("\"text\":\""); p != std::string::npos; p = buf->find("\"text\":\"", p + 1)) {
      if (p + 8 < buf->size() && (*buf)[p + 8] != '"') return true;
    }
    return false;
  };
  while (!has_token()) {
    if (!testing::ReadMore(fd, buf)) break;
  }
  return fd;
}

// Reads the rest of a stream (until the server closes it or [DONE]).
void DrainStream(int fd, std::string* buf) {
  while (buf->find("[DONE]") == std::string::npos && testing::ReadMore(fd, buf)) {
  }
}

TEST(PoolRoutes, ModelListsStatusAndMemoryFigures) {
  const std::string dir = TwoModels();
  PoolServer srv(dir, 0);
  // Status of every discovered model, in the documented shape.
  Json st = Json::parse(Request(srv.port(), "GET", "/v1/models/status").body);
  ASSERT_EQ(st["models"].size(), 2u);
  const Json& m1 = st["models"][0];
  for (const char* key : {"id", "alias", "loaded", "loading", "pinned", "memory_bytes", "estimated_bytes",
                          "last_access", "ttl_seconds", "active_requests", "max_context_window"}) {
    EXPECT_TRUE(m1.contains(key)) << key;
  }
  EXPECT_EQ(m1["id"], "m1");
  EXPECT_TRUE(m1["alias"].is_null());
  EXPECT_EQ(m1["loaded"], false);
  EXPECT_EQ(m1["memory_bytes"], 0);
  EXPECT_GT(m1["estimated_bytes"].get<uint64_t>(), 0u);
  EXPECT_TRUE(m1["last_access"].is_null());
  EXPECT_TRUE(m1["ttl_seconds"].is_null());
  ASSERT_EQ(Request(srv.port(), "POST", "/v1/completions", Completion("m1", 2)).status, 200);
  Json after = ModelStatus(srv.port(), "m1");
  EXPECT_EQ(after["loaded"], true);
  EXPECT_GT(after["memory_bytes"].get<uint64_t>(), 0u);
  EXPECT_TRUE(after["last_access"].is_number());
  EXPECT_EQ(after["active_requests"], 0);
  // /api/status: memory figures, requests, models.
  Json s = Json::parse(Request(srv.port(), "GET", "/api/status").body);
  for (const char* key : {"ceiling_bytes", "soft_bytes", "hard_bytes", "usage_bytes", "committed_bytes", "level"}) {
    EXPECT_TRUE(s["memory"].contains(key)) << key;
  }
  EXPECT_GT(s["memory"]["committed_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(s["memory"]["level"], "ok");
  EXPECT_EQ(s["requests"]["active"], 0);
  EXPECT_EQ(s["requests"]["waiting"], 0);
  EXPECT_EQ(s["models"].size(), 2u);
  // An alias: /v1/models lists it as the id (root = the model's own id), and it resolves.
  auto put = Request(srv.port(), "PUT", "/admin/api/models/m2/settings", R"({"alias":"fast"})");
  ASSERT_EQ(put.status, 200) << put.body;
  Json list = Json::parse(Request(srv.port(), "GET", "/v1/models").body);
  std::vector<std::string> ids;
  for (const auto& m : list["data"]) ids.push_back(m["id"].get<std::string>() + "<" + m["root"].get<std::string>());
  EXPECT_EQ(ids, (std::vector<std::string>{"m1<m1", "fast<m2"}));
  EXPECT_EQ(Request(srv.port(), "GET", "/v1/models/fast").status, 200);
  EXPECT_EQ(Request(srv.port(), "POST", "/v1/completions", Completion("fast", 1)).status, 200);
  EXPECT_EQ(ModelStatus(srv.port(), "m2")["alias"], "fast");
  // Settings persist in <home>/model_settings.json.
  EXPECT_NE(ReadFileToString(dir + "/model_settings.json")->find("fast"), std::string::npos);
}

TEST(PoolRoutes, AdminLoadUnloadPinSettingsReload) {
  const std::string dir = TwoModels();
  PoolServer srv(dir, 0);
  Json list = Json::parse(Request(srv.port(), "GET", "/admin/api/models").body);
  EXPECT_EQ(list["models"].size(), 2u);
  EXPECT_TRUE(list["memory"].contains("ceiling_bytes"));
  auto load = Request(srv.port(), "POST", "/admin/api/models/m1/load");
  ASSERT_EQ(load.status, 200) << load.body;
  EXPECT_EQ(ModelStatus(srv.port(), "m1")["loaded"], true);
  EXPECT_EQ(Json::parse(Request(srv.port(), "POST", "/admin/api/models/m1/pin").body)["settings"]["pinned"], true);
  auto pinned = Request(srv.port(), "POST", "/admin/api/models/m1/unload-if-idle");
  EXPECT_EQ(pinned.status, 409);
  EXPECT_EQ(Json::parse(pinned.body)["error"]["code"], "model_busy");
  ASSERT_EQ(Request(srv.port(), "POST", "/admin/api/models/m1/unpin").status, 200);
  EXPECT_EQ(Request(srv.port(), "POST", "/admin/api/models/m1/unload-if-idle").status, 200);
  EXPECT_EQ(ModelStatus(srv.port(), "m1")["loaded"], false);
  ASSERT_EQ(Request(srv.port(), "POST", "/admin/api/models/m1/load").status, 200);
  auto unload = Request(srv.port(), "POST", "/admin/api/models/m1/unload");
  EXPECT_EQ(unload.status, 200);
  EXPECT_EQ(Json::parse(unload.body)["status"], "ok");
  // Settings: get, put (applied at once), a bad value names the field.
  auto put = Request(srv.port(), "PUT", "/admin/api/models/m1/settings",
                     R"({"ttl_seconds": 60, "sampling": {"temperature": 0}, "max_tokens": 3})");
  ASSERT_EQ(put.status, 200) << put.body;
  Json got = Json::parse(Request(srv.port(), "GET", "/admin/api/models/m1/settings").body);
  EXPECT_EQ(got["settings"]["ttl_seconds"], 60);
  EXPECT_EQ(ModelStatus(srv.port(), "m1")["ttl_seconds"], 60);
  // max_tokens from the model's settings applies when the request has none.
  Json gen = Json::parse(Request(srv.port(), "POST", "/v1/completions",
                                 R"({"model":"m1","prompt":"Hello","ignore_eos":true})")
                             .body);
  EXPECT_EQ(gen["usage"]["completion_tokens"], 3);
  auto bad = Request(srv.port(), "PUT", "/admin/api/models/m1/settings", R"({"ttl_seconds": -4})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("ttl_seconds"), std::string::npos);
  EXPECT_EQ(Request(srv.port(), "POST", "/admin/api/models/nope/load").status, 404);
  // Reload discovery: a third model appears.
  std::filesystem::create_directory_symlink(::llmhost::testing::TestDataDir() + "/models/llama3-tiny", dir + "/m3");
  auto reload = Request(srv.port(), "POST", "/admin/api/reload");
  ASSERT_EQ(reload.status, 200);
  EXPECT_EQ(Json::parse(reload.body)["models"], 3);
  EXPECT_EQ(Request(srv.port(), "POST", "/v1/completions", Completion("m3", 1)).status, 200);
  // /v1/models/{id}/unload, as the admin's (202 when the engine still counts
  // the request that just ended; it unloads a step later).
  const int status = Request(srv.port(), "POST", "/v1/models/m3/unload").status;
  EXPECT_TRUE(status == 200 || status == 202) << status;
  for (int i = 0; i < 600 && ModelStatus(srv.port(), "m3")["loaded"] == true; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ModelStatus(srv.port(), "m3")["loaded"], false);
}

TEST(PoolRoutes, TooLargeIs507) {
  PoolServer srv(TwoModels(), /*ceiling=*/4096);
  auto r = Request(srv.port(), "POST", "/v1/completions", Completion("m1", 1));
  EXPECT_EQ(r.status, 507) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["error"]["code"], "model_too_large");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("--memory-guard-gb"), std::string::npos);
  // Anthropic's shape on /v1/messages.
  auto a = Request(srv.port(), "POST", "/v1/messages",
                   R"({"model":"m1","max_tokens":1,"messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(a.status, 507);
  EXPECT_EQ(Json::parse(a.body)["type"], "error");
}

TEST(PoolRoutes, QueuedRequestIsServedWhenTheBusyModelDrains) {
  const std::string dir = TwoModels();
  const uint64_t one = OneModelBytes(dir, 4);
  PoolServer srv(dir, 2 * one - 1);  // one model fits, two do not
  AcquireResult busy = srv.pool().Acquire("m1");  // a request in flight on m1
  ASSERT_TRUE(busy.ok());
  testing::HttpReply queued;
  std::thread t([&] { queued = Request(srv.port(), "POST", "/v1/completions", Completion("m2", 2)); });
  for (int i = 0; i < 600; ++i) {  // until the pool reports it queued for memory
    if (Json::parse(Request(srv.port(), "GET", "/api/status").body)["requests"]["memory_blocked"] == true) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Json st = Json::parse(Request(srv.port(), "GET", "/api/status").body);
  EXPECT_EQ(st["requests"]["waiting"], 1);
  EXPECT_EQ(st["requests"]["memory_blocked"], true);
  busy.lease.reset();  // m1's only request ends: it drains, is evicted, m2 loads
  t.join();
  EXPECT_EQ(queued.status, 200) << queued.body;
  EXPECT_EQ(ModelStatus(srv.port(), "m1")["loaded"], false);
  EXPECT_EQ(ModelStatus(srv.port(), "m2")["loaded"], true);
}

TEST(PoolRoutes, WaitTimeoutIs503WithRetryAfter) {
  const std::string dir = TwoModels();
  const uint64_t one = OneModelBytes(dir, 4);
  PoolServer srv(dir, 2 * one - 1, /*wait_s=*/0.3);
  AcquireResult busy = srv.pool().Acquire("m1");
  ASSERT_TRUE(busy.ok());
  auto r = Request(srv.port(), "POST", "/v1/completions", Completion("m2", 2));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(Json::parse(r.body)["error"]["code"], "model_wait_timeout");
  EXPECT_GE(std::stoi(r.headers["retry-after"]), 1);
}

// A bench run waiting for memory (m1 is leased, only one model fits) gives
// up when the server stops, rather than holding the shutdown for the pool's
// wait limit (30 s here) and then failing for it.
TEST(PoolRoutes, ABenchRunWaitingForItsModelEndsWhenTheServerStops) {
  const std::string dir = TwoModels();
  const uint64_t one = OneModelBytes(dir, 4);
  PoolServer srv(dir, 2 * one - 1);
  AcquireResult busy = srv.pool().Acquire("m1");
  ASSERT_TRUE(busy.ok());
  auto r = Request(srv.port(), "POST", "/admin/api/bench", R"({"model": "m2"})");
  ASSERT_EQ(r.status, 202) << r.body;
  for (int i = 0; i < 600; ++i) {  // until the run's request is queued in the pool
    if (Json::parse(Request(srv.port(), "GET", "/api/status").body)["requests"]["waiting"] == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(Json::parse(Request(srv.port(), "GET", "/api/status").body)["requests"]["waiting"], 1);
  srv.StopApi();
  const auto state = srv.api().bench().StateJson();
  EXPECT_TRUE(state["running"].is_null()) << state.dump();
  ASSERT_TRUE(state["failed"].is_object()) << state.dump();
  EXPECT_NE(state["failed"]["error"].get<std::string>().find("cancelled"), std::string::npos) << state.dump();
  for (const auto& m : srv.pool().ModelStatuses()) {
    if (m.id == "m2") {
      EXPECT_FALSE(m.loaded) << "m2 was never loaded";
    }
  }
}

TEST(PoolRoutes, UnloadOfABusyModelIs202AndItsStreamGets503ModelUnloaded) {
  PoolServer srv(TwoModels(), 0);
  std::string buf;
  int fd = OpenStream(srv.port(), "m1", &buf);
  auto busy = Request(srv.port(), "POST", "/admin/api/models/m1/unload-if-idle");
  EXPECT_EQ(busy.status, 409);
  auto u = Request(srv.port(), "POST", "/admin/api/models/m1/unload");
  EXPECT_EQ(u.status, 202);
  EXPECT_EQ(Json::parse(u.body)["status"], "unloading");
  DrainStream(fd, &buf);
  ::close(fd);
  EXPECT_NE(buf.find("\"code\":\"model_unloaded\""), std::string::npos) << buf.substr(buf.size() > 600 ? buf.size() - 600 : 0);
  EXPECT_NE(buf.find("[DONE]"), std::string::npos);
  for (int i = 0; i < 600 && ModelStatus(srv.port(), "m1")["loaded"] == true; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(ModelStatus(srv.port(), "m1")["loaded"], false);
}

TEST(PoolRoutes, PrefillGuardRejectsWith400AndTheFigures) {
  PoolServer srv(TwoModels(), uint64_t{1} << 30);
  ASSERT_EQ(Request(srv.port(), "POST", "/v1/completions", Completion("m1", 1)).status, 200);
  const uint64_t limit = Json::parse(Request(srv.port(), "GET", "/api/status").body)["memory"]["prefill_limit_bytes"];
  srv.probe().set_footprint(limit - (1u << 20));  // 1 MiB of room left
  Json ids = Json::array();
  for (int i = 0; i < 1500; ++i) ids.push_back(100 + i % 50);
  auto r = Request(srv.port(), "POST", "/v1/completions",
                   Json{{"model", "m1"}, {"prompt", ids}, {"max_tokens", 1}}.dump());
  ASSERT_EQ(r.status, 400) << r.body;
  Json e = Json::parse(r.body)["error"];
  EXPECT_EQ(e["code"], "prefill_memory_exceeded");
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_EQ(e["limit_bytes"], limit);
  EXPECT_GT(e["estimated_bytes"].get<uint64_t>(), limit);
  EXPECT_NE(e["message"].get<std::string>().find("prefill memory guard rejected this prompt"), std::string::npos);
  // A short prompt still fits.
  EXPECT_EQ(Request(srv.port(), "POST", "/v1/completions", Completion("m1", 1)).status, 200);
}

TEST(PoolRoutes, MemoryPressureAbortsMidPrefillAndMidStream) {
  // One running request at a time: the second waits in the engine, not yet prefilled.
  PoolServer srv(TwoModels(), 0, 30, /*max_running=*/1);
  std::string buf;
  int fd = OpenStream(srv.port(), "m1", &buf);
  testing::HttpReply waiting;
  std::thread t([&] { waiting = Request(srv.port(), "POST", "/v1/completions", Completion("m1", 5)); });
  for (int i = 0; i < 600 && ModelStatus(srv.port(), "m1")["active_requests"] != 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(ModelStatus(srv.port(), "m1")["active_requests"], 2);
  ASSERT_TRUE(srv.pool().AbortLruBusy(false));  // what the enforcer does at hard pressure
  t.join();
  EXPECT_EQ(waiting.status, 400) << waiting.body;
  EXPECT_EQ(Json::parse(waiting.body)["error"]["code"], "prefill_memory_aborted");
  EXPECT_EQ(Json::parse(waiting.body)["error"]["message"].get<std::string>().find("rejected"), std::string::npos);
  DrainStream(fd, &buf);
  ::close(fd);
  EXPECT_NE(buf.find("\"code\":\"memory_pressure\""), std::string::npos);
  EXPECT_NE(buf.find("[DONE]"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::server::pool_routes_test
