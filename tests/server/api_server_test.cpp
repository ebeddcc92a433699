// The whole server in-process (ApiServer + EnginePool + engines) on a free
// port, driven over real sockets: generation against the transformers
// goldens, streaming = non-streaming, 16 parallel streams = alone, the
// engine's pool whole after a client hangs up, errors and their shapes,
// auth, 503 on a full queue, and the realtok fixture's tools prompt.
#include "server/api_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "http_test_client.h"
#include "pool/cpu_engine_factory.h"
#include "server/anthropic_request.h"
#include "server/generation_relay.h"
#include "server/openai_request.h"
#include "server/prompt_builder.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::server::api_server_test {
namespace {

using Json = nlohmann::json;
using testing::Request;

// The pool `llmhost serve` builds, on the CPU reference path, without a
// memory ceiling that tests could trip over on a loaded machine.
std::unique_ptr<EnginePool> MakePool(std::vector<std::string> model_dirs, const ServeSettings& s) {
  PoolOptions po;
  po.model_dirs = std::move(model_dirs);
  po.guard.tier = GuardTier::kOff;
  CpuEngineFactoryOptions fo;
  fo.engine.max_concurrent_requests = s.max_concurrent_requests;
  fo.engine.max_queue = s.max_queue;
  fo.precision = Precision::kReference;
  auto pool = EnginePool::Create(po, std::make_unique<CpuEngineFactory>(fo), std::make_shared<LinuxMemoryProbe>());
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return pool.ok() ? std::move(*pool) : nullptr;
}

class TestServer {
 public:
  TestServer(ServeSettings s, std::vector<std::string> model_dirs) {
    s.port = 0;
    s.host = "127.0.0.1";
    pool_ = MakePool(std::move(model_dirs), s);
    auto api = ApiServer::Create(s, pool_.get(), nullptr, /*handle_signals=*/false);
    EXPECT_TRUE(api.ok()) << api.status().ToString();
    if (!api.ok()) return;
    api_ = std::move(*api);
    thread_ = std::thread([this] { api_->Run(); });
  }
  ~TestServer() {
    if (api_) api_->Shutdown();
    if (thread_.joinable()) thread_.join();
    if (pool_) pool_->Shutdown();  // engines first: they may hold the last references to connections
    api_.reset();
    pool_.reset();
  }
  int port() const { return api_ ? api_->port() : 0; }
  EnginePool& pool() { return *pool_; }

 private:
  std::unique_ptr<EnginePool> pool_;
  std::unique_ptr<ApiServer> api_;
  std::thread thread_;
};

ServeSettings DefaultSettings() {
  ServeSettings s;
  s.max_queue = 32;
  return s;
}

std::string ModelsDir() { return testing::TestDataDir() + "/models"; }

Json Golden(const std::string& name) {
  auto text = ReadFileToString(ModelsDir() + "/golden/" + name + ".json");
  EXPECT_TRUE(text.ok());
  return text.ok() ? Json::parse(*text) : Json();
}

std::string IdsJson(const Json& ids) { return ids.dump(); }

// Text of greedy ids as the engine streams it (special tokens skipped).
std::string DecodeIds(EnginePool& pool, const std::string& model, const std::vector<int32_t>& ids) {
  AcquireResult m = pool.Acquire(model);
  EXPECT_TRUE(m.ok());
  return m.ok() ? m.lease->served()->tokenizer->Decode(ids, /*skip_special=*/true) : "";
}

// Concatenated text of an SSE stream of chat chunks; checks it ends with [DONE].
std::string ChatStreamText(const std::string& sse, Json* usage = nullptr) {
  std::string text;
  size_t pos = 0;
  bool done = false;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    size_t end = sse.find("\n\n", pos);
    std::string data = sse.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    Json c = Json::parse(data);
    if (c.contains("usage") && usage) *usage = c["usage"];
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content")) {
      text += c["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_TRUE(done) << sse;
  return text;
}

Json StatusOf(int port, const std::string& model) {
  auto r = Request(port, "GET", "/api/status");
  Json j = Json::parse(r.body);
  for (const auto& m : j["models"]) {
    if (m["id"] == model) return m;
  }
  return Json();
}

TEST(ApiServer, CompletionsFollowTheGoldenGreedyTokens) {
  TestServer srv(DefaultSettings(), {ModelsDir()});
  ASSERT_GT(srv.port(), 0);
  for (const char* fixture : {"qwen3-tiny", "llama3-tiny"}) {
    const Json g = Golden(fixture)["prompts"]["raw"];
    std::vector<int32_t> greedy = g["greedy_tokens"].get<std::vector<int32_t>>();
    const std::string body = std::string(R"({"model":")") + fixture + R"(","prompt":)" + IdsJson(g["input_ids"]) +
                             R"(,"max_tokens":)" + std::to_string(greedy.size()) +
                             R"(,"temperature":0,"ignore_eos":true})";
    auto r = Request(srv.port(), "POST", "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    Json j = Json::parse(r.body);
    EXPECT_EQ(j["choices"][0]["text"], DecodeIds(srv.pool(), fixture, greedy)) << fixture;
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(j["usage"]["prompt_tokens"], g["input_ids"].size());
    EXPECT_EQ(j["usage"]["completion_tokens"], greedy.size());
  }
}

// logit_bias reaches the sampler: -100 on the first greedy token changes
// the first token; an id outside the vocabulary is a 400.
TEST(ApiServer, LogitBiasChangesTheGreedyToken) {
  TestServer srv(DefaultSettings(), {ModelsDir()});
  const Json g = Golden("qwen3-tiny")["prompts"]["raw"];
  const std::vector<int32_t> greedy = g["greedy_tokens"].get<std::vector<int32_t>>();
  auto ask = [&](const Json& bias) {
    Json body = {{"model", "qwen3-tiny"}, {"prompt", g["input_ids"]}, {"max_tokens", 1}, {"temperature", 0},
                 {"logprobs", 1}, {"logit_bias", bias}};
    return Request(srv.port(), "POST", "/v1/completions", body.dump());
  };
  auto plain = ask(Json::object());
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(Json::parse(plain.body)["choices"][0]["text"], DecodeIds(srv.pool(), "qwen3-tiny", {greedy[0]}));
  auto banned = ask({{std::to_string(greedy[0]), -100}});
  ASSERT_EQ(banned.status, 200) << banned.body;
  EXPECT_NE(Json::parse(banned.body)["choices"][0]["text"], Json::parse(plain.body)["choices"][0]["text"]);
  auto outside = ask({{"999999", 5}});
  EXPECT_EQ(outside.status, 400) << outside.body;
  EXPECT_NE(outside.body.find("logit_bias"), std::string::npos) << outside.body;
}

// n choices: each is what a request of its own with seed + i answers (so
// they are sampled independently, reproducibly), usage counts the prompt
// once and every choice's tokens, and the later choices reuse the first
// one's prompt blocks: the prompt is prefilled about once, not n times.
TEST(ApiServer, ChoicesShareThePromptAndEachIsItsOwnSeededRequest) {
  TestServer srv(DefaultSettings(), {ModelsDir()});
  std::vector<int32_t> prompt;
  for (int i = 0; i < 100; ++i) prompt.push_back(1 + (i * 37) % 500);
  auto ask = [&](int n, int64_t seed, bool stream) {
    Json body = {{"model", "qwen3-tiny"}, {"prompt", prompt}, {"max_tokens", 4}, {"temperature", 1.0},
                 {"seed", seed},          {"n", n},           {"ignore_eos", true}, {"stream", stream}};
    return Request(srv.port(), "POST", "/v1/completions", body.dump());
  };
  auto engine_stats = [&] {
    AcquireResult m = srv.pool().Acquire("qwen3-tiny");
    EXPECT_TRUE(m.ok());
    return m.ok() ? m.lease->served()->engine->Stats() : EngineStats{};
  };
  auto first = ask(1, 7, false);  // loads the model
  ASSERT_EQ(first.status, 200) << first.body;
  const EngineStats before = engine_stats();
  auto r = ask(4, 100, false);
  ASSERT_EQ(r.status, 200) << r.body;
  const EngineStats after = engine_stats();
  Json j = Json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 4u) << r.body;
  EXPECT_EQ(j["usage"]["prompt_tokens"], 100);
  EXPECT_EQ(j["usage"]["completion_tokens"], 16);
  const uint64_t prefilled = after.counters.prefill_tokens - before.counters.prefill_tokens;
  EXPECT_EQ(prefilled, 100u) << "4 choices of a 100-token prompt prefilled " << prefilled << " tokens";
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["finish_reason"], "length");
    auto alone = ask(1, 100 + i, false);
    ASSERT_EQ(alone.status, 200) << alone.body;
    EXPECT_EQ(j["choices"][i]["text"], Json::parse(alone.body)["choices"][0]["text"]) << "choice " << i;
  }
  // Streamed: the same texts, gathered by index, then one [DONE].
  auto s = ask(4, 100, true);
  ASSERT_EQ(s.status, 200);
  std::vector<std::string> texts(4);
  std::vector<int> finishes(4, 0);
  size_t pos = 0;
  int done = 0;
  while ((pos = s.body.find("data: ", pos)) != std::string::npos) {
    size_t end = s.body.find("\n\n", pos);
    std::string data = s.body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") {
      ++done;
      continue;
    }
    Json c = Json::parse(data);
    ASSERT_EQ(c["choices"].size(), 1u) << data;
    const int i = c["choices"][0]["index"];
    ASSERT_TRUE(i >= 0 && i < 4) << data;
    texts[i] += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) ++finishes[i];
  }
  EXPECT_EQ(done, 1);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(texts[i], j["choices"][i]["text"]) << "choice " << i;
    EXPECT_EQ(finishes[i], 1) << "choice " << i;
  }
}

TEST(ApiServer, ChatStreamsWhatItAnswersAndSixteenStreamsMatchOne) {
  TestServer srv(DefaultSettings(), {ModelsDir()});
  const std::string body =
      R"({"model":"qwen3-tiny","messages":[{"role":"system","content":"You are a helpful assistant."},)"
      R"({"role":"user","content":"What is 2+2?"}],"max_tokens":24,"temperature":0,"ignore_eos":true)";
  auto plain = Request(srv.port(), "POST", "/v1/chat/completions", body + "}");
  ASSERT_EQ(plain.status, 200) << plain.body;
  Json pj = Json::parse(plain.body);
  const std::string text = pj["choices"][0]["message"]["content"];
  // The golden chat prompt is this conversation through the model's template.
  const Json g = Golden("qwen3-tiny")["prompts"]["chat"];
  EXPECT_EQ(pj["usage"]["prompt_tokens"], g["input_ids"].size());
  EXPECT_EQ(text, DecodeIds(srv.pool(), "qwen3-tiny", g["greedy_tokens"].get<std::vector<int32_t>>()));

  const std::string stream_body = body + R"(,"stream":true,"stream_options":{"include_usage":true}})";
  auto streamed = Request(srv.port(), "POST", "/v1/chat/completions", stream_body);
  ASSERT_EQ(streamed.status, 200);
  EXPECT_EQ(streamed.headers["content-type"], "text/event-stream");
  EXPECT_EQ(streamed.headers["cache-control"], "no-cache");
  EXPECT_EQ(streamed.headers["x-accel-buffering"], "no");
  Json usage;
  EXPECT_EQ(ChatStreamText(streamed.body, &usage), text);
  EXPECT_EQ(usage["completion_tokens"], 24);

  std::vector<std::string> texts(16);
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      auto r = Request(srv.port(), "POST", "/v1/chat/completions", stream_body);
      texts[i] = r.status == 200 ? ChatStreamText(r.body) : "HTTP " + std::to_string(r.status) + r.body;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(texts[i], text) << "stream " << i;
}

TEST(ApiServer, HangUpMidStreamFreesTheEngine) {
  TestServer srv(DefaultSettings(), {ModelsDir()});
  int fd = testing::ConnectLocal(srv.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(testing::SendAll(
      fd, testing::FormatRequest("POST", "/v1/chat/completions",
                                 R"({"model":"qwen3-tiny","messages":[{"role":"user","content":"hi"}],)"
                                 R"("max_tokens":3000,"temperature":0,"ignore_eos":true,"stream":true})")));
  std::string buf;
  while (buf.find("\"content\":\"") == std::string::npos) ASSERT_TRUE(testing::ReadMore(fd, &buf));
  Json during = StatusOf(srv.port(), "qwen3-tiny");
  ::close(fd);
  Json after;
  for (int i = 0; i < 600; ++i) {  // the engine is told within a step; wait up to a minute
    after = StatusOf(srv.port(), "qwen3-tiny");
    if (after["running"] == 0 && after["kv"]["blocks_used"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(after["running"], 0) << after.dump();
  EXPECT_EQ(after["waiting"], 0);
  EXPECT_EQ(after["kv"]["blocks_used"], 0) << "blocks held after the hang-up: " << after.dump();
  EXPECT_EQ(after["aborted"], 1);
  EXPECT_LT(after["generated_tokens"].get<int64_t>(), 3000) << during.dump();
}

TEST(ApiServer, ErrorsInBothShapes) {
  TestServer srv(DefaultSettings(), {ModelsDir()});
  auto unknown = Request(srv.port(), "POST", "/v1/chat/completions",
                         R"({"model":"no-such","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(unknown.status, 404);
  Json u = Json::parse(unknown.body);
  EXPECT_EQ(u["error"]["type"], "not_found_error");
  EXPECT_NE(u["error"]["message"].get<std::string>().find("qwen3-tiny"), std::string::npos);  // lists models
  auto anth = Request(srv.port(), "POST", "/v1/messages",
                      R"({"model":"no-such","max_tokens":5,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(anth.status, 404);
  Json a = Json::parse(anth.body);
  EXPECT_EQ(a["type"], "error");
  EXPECT_EQ(a["error"]["type"], "not_found_error");
  // A prompt longer than the context.
  std::vector<int32_t> long_prompt(5000, 5);
  auto too_long = Request(srv.port(), "POST", "/v1/completions",
                          R"({"model":"qwen3-tiny","max_tokens":1,"prompt":)" + Json(long_prompt).dump() + "}");
  EXPECT_EQ(too_long.status, 400);
  const int64_t ctx = StatusOf(srv.port(), "qwen3-tiny")["context_length"];
  EXPECT_EQ(Json::parse(too_long.body)["error"]["message"],
            "Prompt too long: 5000 tokens exceeds max context window of " + std::to_string(ctx) + " tokens");
  auto bad_id = Request(srv.port(), "POST", "/v1/completions", R"({"model":"qwen3-tiny","prompt":[99999999]})");
  EXPECT_EQ(bad_id.status, 400);
  EXPECT_EQ(Json::parse(bad_id.body)["error"]["param"], "prompt");
  auto malformed = Request(srv.port(), "POST", "/v1/messages", "{not json");
  EXPECT_EQ(malformed.status, 400);
  EXPECT_EQ(Json::parse(malformed.body)["error"]["type"], "invalid_request_error");
  auto route = Request(srv.port(), "GET", "/v1/nothing");
  EXPECT_EQ(route.status, 404);
  EXPECT_EQ(Request(srv.port(), "GET", "/v1/chat/completions").status, 405);
  auto big = Request(srv.port(), "POST", "/v1/messages", std::string(33 << 20, ' '));
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(Json::parse(big.body)["error"]["type"], "request_too_large");
}

TEST(ApiServer, ApiKeysGuardAllButHealth) {
  ServeSettings s = DefaultSettings();
  s.api_keys = {"k-one", "k-two"};
  TestServer srv(s, {ModelsDir()});
  EXPECT_EQ(Request(srv.port(), "GET", "/health").status, 200);
  auto none = Request(srv.port(), "GET", "/v1/models");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(Json::parse(none.body)["error"]["type"], "authentication_error");
  auto wrong = Request(srv.port(), "POST", "/v1/messages", "{}", {{"x-api-key", "k-three"}});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(Json::parse(wrong.body)["error"]["message"], "Invalid API key");
  EXPECT_EQ(Json::parse(wrong.body)["type"], "error");
  auto ok = Request(srv.port(), "GET", "/v1/models", "", {{"Authorization", "Bearer k-two"}});
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(Json::parse(ok.body)["object"], "list");
  EXPECT_EQ(Request(srv.port(), "GET", "/v1/models", "", {{"x-api-key", "k-one"}}).status, 200);
}

TEST(ApiServer, FullQueueAnswers503WithRetryAfter) {
  ServeSettings s = DefaultSettings();
  s.max_concurrent_requests = 1;
  s.max_queue = 1;
  TestServer srv(s, {ModelsDir()});
  const std::string long_stream =
      R"({"model":"qwen3-tiny","prompt":"a","max_tokens":3500,"temperature":0,"ignore_eos":true,"stream":true})";
  // The four: short (the queued one runs once the first is cancelled; a
  // sanitizer build decodes ~40 tokens/s).
  const std::string short_body =
      R"({"model":"qwen3-tiny","prompt":"a","max_tokens":4,"temperature":0,"ignore_eos":true})";
  // One request running (its first token seen); then four more at once while
  // it runs: one fits the waiting queue, the others are refused. Sent
  // together rather than one by one after polling /api/status, so that the
  // running request (a few seconds of decoding) cannot finish in between
  // even on a loaded machine.
  int running = testing::ConnectLocal(srv.port());
  ASSERT_GE(running, 0);
  ASSERT_TRUE(testing::SendAll(running, testing::FormatRequest("POST", "/v1/completions", long_stream)));
  std::string buf;
  while (buf.find("\"text\"") == std::string::npos) ASSERT_TRUE(testing::ReadMore(running, &buf));
  std::vector<std::thread> senders;
  std::vector<testing::HttpReply> answers(4);
  for (size_t i = 0; i < answers.size(); ++i) {
    senders.emplace_back([&, i] { answers[i] = Request(srv.port(), "POST", "/v1/completions", short_body); });
  }
  // Hanging up cancels the running request, so the queued one runs next.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::close(running);
  for (auto& t : senders) t.join();
  int refused = 0;
  for (auto& a : answers) {
    if (a.status == 200) continue;
    ++refused;
    EXPECT_EQ(a.status, 503) << a.body;
    EXPECT_EQ(a.headers["retry-after"], "1");
    EXPECT_EQ(Json::parse(a.body)["error"]["type"], "server_error");
  }
  // While the first runs, only one fits the queue: the cap refused the rest.
  EXPECT_GE(refused, 1);
}

TEST(ApiServer, AnthropicMessagesAndCountTokens) {
  TestServer srv(DefaultSettings(), {ModelsDir()});
  const std::string conv =
      R"("model":"qwen3-tiny","system":"You are a helpful assistant.",)"
      R"("messages":[{"role":"user","content":[{"type":"text","text":"What is 2+2?"}]}])";
  auto count = Request(srv.port(), "POST", "/v1/messages/count_tokens", "{" + conv + "}");
  ASSERT_EQ(count.status, 200) << count.body;
  const Json g = Golden("qwen3-tiny")["prompts"]["chat"];
  EXPECT_EQ(Json::parse(count.body)["input_tokens"], g["input_ids"].size());
  auto msg = Request(srv.port(), "POST", "/v1/messages",
                     "{" + conv + R"(,"max_tokens":24,"temperature":0,"stream":true})");
  ASSERT_EQ(msg.status, 200);
  EXPECT_NE(msg.body.find("event: message_start"), std::string::npos);
  EXPECT_NE(msg.body.find("event: message_stop"), std::string::npos);
  auto plain = Request(srv.port(), "POST", "/v1/messages", "{" + conv + R"(,"max_tokens":4,"temperature":0})");
  ASSERT_EQ(plain.status, 200);
  Json p = Json::parse(plain.body);
  EXPECT_EQ(p["type"], "message");
  EXPECT_EQ(p["usage"]["input_tokens"].get<int64_t>() + p["usage"]["cache_read_input_tokens"].get<int64_t>(),
            static_cast<int64_t>(g["input_ids"].size()));
}

// The realtok fixture (the real Qwen3 tokenizer and template): the tools
// conversation of its golden renders to exactly the golden ids, from an
// OpenAI request and from the same conversation as an Anthropic request.
TEST(ApiServer, RealtokToolsPromptMatchesGolden) {
  SKIP_IF_NO_SHARED();
  const std::string models = testing::SharedDir() + "/reference/models";
  auto golden_text = ReadFileToString(testing::SharedDir() + "/reference/golden/qwen3-realtok-tiny.json");
  ASSERT_TRUE(golden_text.ok());
  const Json g = Json::parse(*golden_text)["prompts"]["chat"];
  const std::string tools = R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the web",
      "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}])";
  const std::string body = R"({"model": "qwen3-realtok-tiny", "tools": )" + tools + R"(,
    "messages": [{"role": "system", "content": "You can call tools."},
                 {"role": "user", "content": "What's the weather in Paris?"}]})";
  InferenceRequest req;
  ASSERT_FALSE(ParseChatCompletionsRequest(OJson::parse(body), &req));
  auto pool = MakePool({models}, DefaultSettings());
  AcquireResult acquired = pool->Acquire("qwen3-realtok-tiny");
  ASSERT_TRUE(acquired.ok()) << acquired.error.message;
  std::shared_ptr<ServedModel> model = acquired.lease->served();
  std::vector<int32_t> ids;
  ASSERT_FALSE(BuildPromptIds(req, *model, &ids));
  EXPECT_EQ(ids, g["input_ids"].get<std::vector<int32_t>>());

  const std::string anthropic = R"({"model": "qwen3-realtok-tiny", "system": "You can call tools.",
    "tools": [{"name": "get_weather", "description": "Get the current weather in a city",
      "input_schema": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}},
      {"name": "search", "description": "Search the web",
      "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}],
    "messages": [{"role": "user", "content": "What's the weather in Paris?"}], "max_tokens": 16})";
  InferenceRequest areq;
  ASSERT_FALSE(ParseMessagesRequest(OJson::parse(anthropic), false, &areq));
  std::vector<int32_t> aids;
  ASSERT_FALSE(BuildPromptIds(areq, *model, &aids));
  EXPECT_EQ(aids, ids);

  // Over HTTP: greedy tokens as the golden's.
  TestServer srv(DefaultSettings(), {models});
  const std::string gen = R"({"model": "qwen3-realtok-tiny", "tools": )" + tools + R"(,
    "messages": [{"role": "system", "content": "You can call tools."},
                 {"role": "user", "content": "What's the weather in Paris?"}],
    "max_tokens": 16, "temperature": 0, "ignore_eos": true})";
  auto r = Request(srv.port(), "POST", "/v1/chat/completions", gen);
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["choices"][0]["message"]["content"],
            model->tokenizer->Decode(g["greedy_tokens"].get<std::vector<int32_t>>(), true));
}

// A writer that records what is written and keeps posted work until the
// test runs it: what the engine's executor does itself shows.
class QueuedWriter : public ResponseWriter {
 public:
  void AddHeader(std::string, std::string) override {}
  void Send(HttpResponse response) override { Record("send " + response.body); }
  void StartStream(int status, std::string, HeaderList) override { Record("start " + std::to_string(status)); }
  void Write(std::string data) override {
    if (!data.empty()) Record(std::move(data));  // as the transport: nothing to send
  }
  void End() override { Record("end"); }
  void OnClose(std::function<void()>) override {}
  bool closed() const override { return false; }
  size_t pending_bytes() const override { return 0; }
  void Post(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.push_back(std::move(fn));
  }
  size_t posted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return posted_.size();
  }
  // Runs the oldest posted work alone (what the engine posts meanwhile waits).
  bool RunOnePosted() {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (posted_.empty()) return false;
      fn = std::move(posted_.front());
      posted_.pop_front();
    }
    fn();
    return true;
  }
  size_t RunPosted() {
    size_t n = 0;
    for (;;) {
      std::function<void()> fn;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (posted_.empty()) return n;
        fn = std::move(posted_.front());
        posted_.pop_front();
      }
      fn();
      ++n;
    }
  }
  std::vector<std::string> records() const {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

 private:
  void Record(std::string s) {
    std::lock_guard<std::mutex> lock(mu_);
    records_.push_back(std::move(s));
  }
  mutable std::mutex mu_;
  std::deque<std::function<void()>> posted_;
  std::vector<std::string> records_;
};

// The executor only hands events over: formatting, writing and the lease's
// release happen where the writer runs posted work (a transport thread).
TEST(GenerationRelayTest, EventsAreFormattedAndTheLeaseReleasedOffTheExecutor) {
  auto pool = MakePool({ModelsDir()}, DefaultSettings());
  ASSERT_TRUE(pool);
  AcquireResult acquired = pool->Acquire("qwen3-tiny");
  ASSERT_TRUE(acquired.ok()) << acquired.error.message;
  Engine* engine = acquired.lease->served()->engine.get();
  std::shared_ptr<ModelLease> lease(std::move(acquired.lease));
  std::weak_ptr<ModelLease> watch = lease;
  auto writer = std::make_shared<QueuedWriter>();
  ResponseMeta meta;
  meta.id = "cmpl-test";
  meta.model = "qwen3-tiny";
  RelayStats final_stats;
  int done_calls = 0;
  auto relay = GenerationRelay::Create(writer, MakeCompletionsFormatter(meta, /*stream=*/true), std::move(lease),
                                       KeepAliveMode::kOff, ApiFlavor::kOpenAI,
                                       [&](const GenerationRelay*, const RelayStats& s) {
                                         final_stats = s;
                                         ++done_calls;
                                       });
  GenerationRequest r;
  r.prompt = {1, 2, 3, 4};
  r.sampling.temperature = 0;
  r.max_tokens = 3;
  r.ignore_eos = true;
  ASSERT_FALSE(relay->Submit(std::move(r)));
  engine->WaitIdle();  // the executor is done with the request
  const std::vector<std::string> before = writer->records();
  ASSERT_EQ(before.size(), 1u);  // the stream's start, written by Submit on this thread
  EXPECT_EQ(before[0], "start 200");
  EXPECT_FALSE(watch.expired()) << "the lease is released where the final event is handled";
  EXPECT_FALSE(relay->done());
  EXPECT_GE(writer->RunPosted(), 2u);  // token events and the final one
  const std::vector<std::string> after = writer->records();
  EXPECT_TRUE(relay->done());
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(done_calls, 1);
  EXPECT_EQ(final_stats.completion_tokens, 3);
  ASSERT_GE(after.size(), 3u);
  EXPECT_EQ(after.back(), "end");
  EXPECT_NE(after[after.size() - 2].find("[DONE]"), std::string::npos);
}

// A request whose model must load first is granted on the pool's manager
// thread; its prompt is built (template, tokenizer) and submitted where the
// writer runs posted work, not there.
TEST(GenerationRelayTest, AQueuedRequestContinuesOnTheTransportThread) {
  auto pool = MakePool({ModelsDir()}, DefaultSettings());
  ASSERT_TRUE(pool);
  ServeSettings s = DefaultSettings();
  s.port = 0;
  s.host = "127.0.0.1";
  auto api = ApiServer::Create(s, pool.get(), nullptr, /*handle_signals=*/false);
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  auto writer = std::make_shared<QueuedWriter>();
  HttpRequest req;
  req.method = "POST";
  req.path = req.target = "/v1/completions";
  req.body = R"({"model": "qwen3-tiny", "prompt": "Hello", "max_tokens": 2, "temperature": 0})";
  HandleInference(**api, req, writer);  // not loaded: the request queues, the manager thread loads
  for (int i = 0; i < 2000 && writer->posted() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(writer->posted(), 1u) << "the grant, posted to the writer";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  AcquireResult probe = pool->Acquire("qwen3-tiny");  // loaded now: at once
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(probe.lease->served()->engine->Stats().submitted, 0u) << "nothing submitted before the posted work ran";
  probe.lease.reset();
  ASSERT_TRUE(writer->RunOnePosted());  // the continuation, run here: prompt, engine
  // Now the engine answers (its events are posted too).
  std::vector<std::string> got;
  for (int i = 0; i < 2000; ++i) {
    writer->RunPosted();
    got = writer->records();
    if (!got.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rfind("send ", 0), 0u) << got[0];
  EXPECT_NE(got[0].find("\"completion_tokens\":2"), std::string::npos) << got[0];
  pool->Shutdown();
}

}  // namespace
}  // namespace llmhost::server::api_server_test
