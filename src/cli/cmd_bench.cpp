// `llmhost bench MODEL`: prefill, cached-prefix TTFT, decode and a
// concurrency sweep (engine/bench_run.h says how each is measured), as a
// table or JSON (--json).
//   a server answers at --url   streamed /v1/completions requests to it
//                               (greedy, ignore_eos), so that its scheduler,
//                               prefix cache and HTTP are measured
//   none                        the model in this process (its folder or
//                               .gguf, or a name in the model directories)
//                               behind an Engine of its own, as the server's
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/client_options.h"
#include "cli/commands.h"
#include "cli/local_engine.h"
#include "cli/local_models.h"
#include "cli/server_client.h"
#include "cli/text_table.h"
#include "engine/bench_run.h"
#include "engine/engine_bench_stream.h"

namespace llmhost::cli {

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  ClientOptions client;
  LocalModelOptions local;
  std::string model;
  std::string device = "cpu";
  BenchParams params;
  bool json = false;
};

// One streamed /v1/completions request to the server.
BenchSample ServerStream(const BenchOptions& o, const std::string& prompt, int64_t max_tokens) {
  const Json body = {{"model", o.model},
                     {"prompt", prompt},
                     {"max_tokens", max_tokens},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
  BenchSample s;
  std::string pending;
  const Clock::time_point start = Clock::now();
  Clock::time_point first, last;
  bool got_text = false;
  auto on_data = [&](std::string_view piece) {
    pending.append(piece);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") continue;
      const Json j = Json::parse(line.substr(6), nullptr, false);
      if (!j.is_object()) continue;
      if (j.contains("error")) s.error = j["error"].is_object() ? j["error"].value("message", "") : j["error"].dump();
      // Any choice chunk marks a token's arrival: a token whose bytes end
      // inside a UTF-8 character streams as empty text (held for the next).
      for (const Json& c : j.value("choices", Json::array())) {
        if (!c.is_object()) continue;
        last = Clock::now();
        if (!got_text) first = last;
        got_text = true;
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        const Json& u = j["usage"];
        s.prompt_tokens = u.value("prompt_tokens", int64_t{0});
        s.completion_tokens = u.value("completion_tokens", int64_t{0});
        if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
          s.cached_tokens = u["prompt_tokens_details"].value("cached_tokens", int64_t{0});
        }
      }
    }
    return true;
  };
  Result<HttpReply> r = HttpCall(o.client.url, "POST", "/v1/completions", body.dump(), o.client.api_key, on_data);
  if (!r.ok()) {
    s.error = r.status().message();
  } else if (r->status != 200) {
    s.error = std::to_string(r->status) + ": " + ErrorText(r->body);
  } else if (!got_text && s.error.empty()) {
    s.error = "the server streamed no tokens";
  }
  if (got_text) {
    s.ttft_s = std::chrono::duration<double>(first - start).count();
    s.decode_s = std::chrono::duration<double>(last - first).count();
  }
  return s;
}

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost: bench: %s\n", message.c_str());
  return 1;
}

// The figures as a table or JSON; `where`: "at URL" or "in this process".
void Print(const BenchOptions& o, const BenchResult& r, const std::string& where, bool in_process) {
  if (o.json) {
    Json out = {{"model", o.model}, {"in_process", in_process}};
    if (!in_process) out["url"] = o.client.url;
    const Json figures = BenchResultJson(r);  // (a temporary's items() would dangle)
    for (auto& [k, v] : figures.items()) out[k] = v;
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("llmhost bench: %s %s\n\n", o.model.c_str(), where.c_str());
  std::vector<std::vector<std::string>> rows = {{"TEST", "PROMPT", "CACHED", "GENERATED", "TTFT ms", "TOKENS/S"}};
  rows.push_back({"prefill", std::to_string(r.prefill.prompt_tokens), std::to_string(r.prefill.cached_tokens), "1",
                  Fixed(r.prefill.ttft_s * 1000, 1), Fixed(r.prefill_tokens_per_s(), 1) + " (prompt)"});
  rows.push_back({"cached prefix", std::to_string(r.cached.prompt_tokens), std::to_string(r.cached.cached_tokens),
                  "1", Fixed(r.cached.ttft_s * 1000, 1), "-"});
  rows.push_back({"decode", std::to_string(r.decode.prompt_tokens), std::to_string(r.decode.cached_tokens),
                  std::to_string(r.decode.completion_tokens), Fixed(r.decode.ttft_s * 1000, 1),
                  Fixed(r.decode_tokens_per_s(), 1) + " (one stream)"});
  for (const BenchLevel& l : r.levels) {
    const double rate = l.wall_s > 0 ? static_cast<double>(l.generated_tokens) / l.wall_s : 0;
    rows.push_back({"concurrency " + std::to_string(l.concurrency), "-", "-", std::to_string(l.generated_tokens),
                    Fixed(l.mean_ttft_s * 1000, 1) + " (mean)", Fixed(rate, 1) + " (all streams)"});
  }
  PrintTable(rows);
}

// With no server listening: the model in this process.
int BenchLocal(const BenchOptions& o) {
  Result<std::string> path = LocalModelPath(o.local, o.model);
  if (!path.ok()) return Fail("no server at " + o.client.url + ", and " + path.status().message());
  std::fprintf(stderr, "llmhost: no server at %s: benchmarking %s in this process\n", o.client.url.c_str(),
               path->c_str());
  const int streams = *std::max_element(o.params.concurrency.begin(), o.params.concurrency.end());
  Result<std::unique_ptr<LocalEngine>> local = LocalEngine::Load(*path, o.device, streams);
  if (!local.ok()) return Fail(local.status().ToString());
  Result<BenchResult> r = RunBench(o.params, EngineBenchStream((*local)->engine(), (*local)->tokenizer()));
  if (!r.ok()) return Fail(r.status().message());
  Print(o, *r, "in this process", /*in_process=*/true);
  return 0;
}

int Bench(const BenchOptions& o) {
  Result<HttpReply> probe = HttpCall(o.client.url, "GET", "/health", "", o.client.api_key);
  if (!probe.ok() && NoServerListening(probe.status())) return BenchLocal(o);
  Result<BenchResult> r =
      RunBench(o.params, [&o](const std::string& prompt, int64_t max_tokens) {
        return ServerStream(o, prompt, max_tokens);
      });
  if (!r.ok()) return Fail(r.status().message());
  Print(o, *r, "at " + o.client.url, /*in_process=*/false);
  return 0;
}

}  // namespace

void RegisterBenchCommands(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure prefill, decode, cached-prefix TTFT and a concurrency sweep: on the running server, "
               "else in this process");
  AddClientOptions(cmd, &o->client);
  AddLocalModelOptions(cmd, &o->local);
  cmd->add_option("model", o->model, "The model's name (without a server: or its folder or .gguf file)")
      ->required();
  cmd->add_option("--prompt-tokens", o->params.prompt_tokens, "the prefill prompt's length, about (default 512)")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 20));
  cmd->add_option("--decode-tokens", o->params.decode_tokens, "tokens each decode request generates (default 64)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 16));
  cmd->add_option("--concurrency", o->params.concurrency, "streams at once, one level each (default 1,4)")
      ->delimiter(',')
      ->check(CLI::Range(1, 256));
  cmd->add_option("--device", o->device, "without a server: cpu (default), cuda, cuda:N or auto");
  cmd->add_flag("--json", o->json, "print JSON instead of a table");
  cmd->callback([o] { ExitCode() = Bench(*o); });
}

}  // namespace llmhost::cli
