// The Bench page's request checks (bench_request.h), kept results
// (bench_store.h: bounded, newest first, persisted, damaged files refused)
// and the one-run-at-a-time slot (bench_runs.h).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "server/bench_request.h"
#include "server/bench_runs.h"
#include "server/bench_store.h"
#include "test_util.h"

namespace llmhost::server::bench_test {
namespace {

using Json = nlohmann::ordered_json;

MaybeError Parse(const std::string& body, BenchRequest* out) { return ParseBenchRequest(Json::parse(body), out); }

TEST(BenchRequest, DefaultsWhenOnlyTheModelIsGiven) {
  BenchRequest r;
  ASSERT_FALSE(Parse(R"({"model": "m"})", &r));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.params.prompt_tokens, 512);
  EXPECT_EQ(r.params.decode_tokens, 64);
  EXPECT_EQ(r.params.concurrency, (std::vector<int>{1, 4}));
}

TEST(BenchRequest, ReadsEveryField) {
  BenchRequest r;
  ASSERT_FALSE(Parse(R"({"model": "m", "prompt_tokens": 100, "max_tokens": 9, "concurrency": [2, 32, 1]})", &r));
  EXPECT_EQ(r.params.prompt_tokens, 100);
  EXPECT_EQ(r.params.decode_tokens, 9);
  EXPECT_EQ(r.params.concurrency, (std::vector<int>{2, 32, 1}));
}

// Each bad body: a 400 whose message names the field.
TEST(BenchRequest, RefusesBadBodiesNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "'model' is required"},
      {R"({"model": ""})", "'model' is required"},
      {R"({"model": 3})", "model"},
      {R"({"model": "m", "prompt_tokens": 7})", "'prompt_tokens' must be between 8 and 16384, got 7"},
      {R"({"model": "m", "prompt_tokens": 16385})", "'prompt_tokens' must be between 8 and 16384"},
      {R"({"model": "m", "max_tokens": 1})", "'max_tokens' must be between 2 and 2048, got 1"},
      {R"({"model": "m", "max_tokens": "64"})", "max_tokens"},
      {R"({"model": "m", "concurrency": 4})", "'concurrency' must be an array"},
      {R"({"model": "m", "concurrency": []})", "'concurrency' must have 1 to 6 levels, got 0"},
      {R"({"model": "m", "concurrency": [1,1,1,1,1,1,1]})", "must have 1 to 6 levels, got 7"},
      {R"({"model": "m", "concurrency": [1, 33]})", "'concurrency[1]' must be between 1 and 32, got 33"},
      {R"({"model": "m", "concurrency": [0]})", "'concurrency[0]' must be between 1 and 32, got 0"},
      {R"({"model": "m", "concurrency": [1.5]})", "concurrency[0]"},
      {R"({"model": "m", "concurrency": [null]})", "'concurrency[0]' must be an integer"},
      {R"({"model": "m", "max_token": 5})", "unknown field 'max_token'"},
  };
  for (const auto& [body, message] : cases) {
    BenchRequest r;
    MaybeError e = Parse(body, &r);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400) << body;
    EXPECT_NE(e->message.find(message), std::string::npos) << body << " → " << e->message;
  }
}

Json Record(const std::string& id) { return Json{{"id", id}, {"model", "m"}, {"result", {{"x", 1}}}}; }

std::vector<std::string> Ids(const BenchStore& store) {
  std::vector<std::string> ids;
  for (const Json& r : store.List()) ids.push_back(r["id"]);
  return ids;
}

TEST(BenchStore, KeepsTheNewestFirstAndBoundsTheCount) {
  BenchStore store("", 3);
  for (const char* id : {"a", "b", "c", "d"}) ASSERT_TRUE(store.Add(Record(id)).ok());
  EXPECT_EQ(Ids(store), (std::vector<std::string>{"d", "c", "b"}));
  ASSERT_TRUE(store.Add(Record("c")).ok());  // the same id again: replaced, now the newest
  EXPECT_EQ(Ids(store), (std::vector<std::string>{"c", "d", "b"}));
  EXPECT_FALSE(store.Add(Json{{"model", "no id"}}).ok());
  EXPECT_FALSE(store.Get("a"));
  ASSERT_TRUE(store.Get("b"));
  EXPECT_EQ((*store.Get("b"))["model"], "m");
}

TEST(BenchStore, PersistsAddsAndRemovesAcrossInstances) {
  const std::string file = testing::MakeTempDir() + "/home/bench.json";  // its folder made on the first write
  {
    BenchStore store(file);
    ASSERT_TRUE(store.Load().ok());  // no file yet
    ASSERT_TRUE(store.Add(Record("one")).ok());
    ASSERT_TRUE(store.Add(Record("two")).ok());
    Result<bool> removed = store.Remove("one");
    ASSERT_TRUE(removed.ok());
    EXPECT_TRUE(*removed);
    removed = store.Remove("one");
    ASSERT_TRUE(removed.ok());
    EXPECT_FALSE(*removed);
  }
  BenchStore again(file);
  ASSERT_TRUE(again.Load().ok());
  EXPECT_EQ(Ids(again), (std::vector<std::string>{"two"}));
  EXPECT_EQ((*again.Get("two"))["result"]["x"], 1);
  std::filesystem::remove_all(std::filesystem::path(file).parent_path().parent_path());
}

TEST(BenchStore, LoadSkipsBadRecordsAndRefusesADamagedFile) {
  const std::string dir = testing::MakeTempDir();
  const std::string file = dir + "/bench.json";
  std::ofstream(file) << R"([{"id": "ok"}, 3, {"id": 4}, {"model": "m"}, {"id": "also"}])";
  BenchStore store(file, 50);
  ASSERT_TRUE(store.Load().ok());
  EXPECT_EQ(Ids(store), (std::vector<std::string>{"ok", "also"}));

  std::ofstream(file) << R"({"id": "not an array"})";
  BenchStore object(file);
  Status s = object.Load();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find(file), std::string::npos) << s.message();

  std::ofstream(file) << "[{\"id\": ";
  BenchStore truncated(file);
  EXPECT_FALSE(truncated.Load().ok());
  EXPECT_TRUE(truncated.List().empty());
  std::filesystem::remove_all(dir);
}

BenchResult SomeResult() {
  BenchResult r;
  r.prefill = {0.5, 0, 100, 0, 1, ""};
  r.cached = {0.1, 0, 100, 64, 1, ""};
  r.decode = {0.01, 0.7, 10, 0, 8, ""};
  r.levels = {{2, 16, 2.0, 0.05}};
  return r;
}

TEST(BenchRuns, OneRunAtATimeAndItsResultKept) {
  BenchRuns runs("");
  BenchRequest request{"m", BenchParams{64, 8, {2}}};
  std::optional<std::string> id = runs.TryBegin(request, 1000);
  ASSERT_TRUE(id);
  EXPECT_FALSE(runs.TryBegin(request, 1001)) << "a second run while one goes";
  runs.Progress(BenchProgress{"decode", 3, 5});
  Json running = *runs.RunJson(*id);
  EXPECT_EQ(running["status"], "running");
  EXPECT_EQ(running["phase"], "decode");
  EXPECT_EQ(running["step"], 3);
  EXPECT_EQ(runs.StateJson()["running"]["id"], *id);

  ASSERT_TRUE(runs.Finish(SomeResult()).ok());
  EXPECT_TRUE(runs.StateJson()["running"].is_null());
  Json done = *runs.RunJson(*id);
  EXPECT_EQ(done["status"], "done");
  EXPECT_EQ(done["created"], 1000);
  EXPECT_EQ(done["params"]["max_tokens"], 8);
  EXPECT_DOUBLE_EQ(done["result"]["prefill"]["tokens_per_s"].get<double>(), 200.0);  // 100 uncached / 0.5 s
  EXPECT_DOUBLE_EQ(done["result"]["decode"]["tokens_per_s"].get<double>(), 10.0);    // 7 after the first / 0.7 s
  EXPECT_EQ(done["result"]["cached_prefix"]["cached_tokens"], 64);
  EXPECT_DOUBLE_EQ(done["result"]["concurrency"][0]["tokens_per_s"].get<double>(), 8.0);

  std::optional<std::string> next = runs.TryBegin(request, 1002);
  ASSERT_TRUE(next) << "the slot is free again";
  EXPECT_NE(*next, *id);
}

TEST(BenchRuns, AFailedRunIsReportedNotKept) {
  BenchRuns runs("");
  std::optional<std::string> id = runs.TryBegin(BenchRequest{"m", {}}, 5);
  ASSERT_TRUE(id);
  ASSERT_TRUE(runs.Finish(Status::Internal("prefill: out of memory")).ok());
  EXPECT_TRUE(runs.store().List().empty());
  Json failed = *runs.RunJson(*id);
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_EQ(failed["error"], "prefill: out of memory");
  EXPECT_EQ(runs.StateJson()["failed"]["id"], *id);
  EXPECT_FALSE(runs.RunJson("bench-unknown"));
}

}  // namespace
}  // namespace llmhost::server::bench_test
