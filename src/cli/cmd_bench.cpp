// `llmhost bench MODEL`: measures a running server with streamed
// /v1/completions requests (greedy, ignore_eos, so that every request
// generates what it asks for):
//   prefill        a prompt of about --prompt-tokens tokens, one token out:
//                  its uncached tokens / time to first token
//   cached prefix  the same prompt again: time to first token, tokens reused
//   decode         a short prompt, --decode-tokens out: tokens after the
//                  first / time between the first and the last
//   concurrency    for each level of --concurrency, that many such requests
//                  at once: generated tokens / wall time, mean TTFT
// A warm-up request first loads the model and measures tokens per word, so
// that the prefill prompt has about --prompt-tokens tokens. Prompts start
// with a random word, so no earlier run's cache helps. A table, or JSON with --json.
// Without a server it says so: the numbers that matter are the server's.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/client_options.h"
#include "cli/commands.h"
#include "cli/server_client.h"
#include "cli/text_table.h"

namespace llmhost::cli {

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  ClientOptions client;
  std::string model;
  int64_t prompt_tokens = 512;
  int64_t decode_tokens = 64;
  std::vector<int> concurrency = {1, 4};
  bool json = false;
};

// One streamed request's figures.
struct Sample {
  double ttft_s = 0;    // to the first generated text
  double decode_s = 0;  // from the first generated text to the last
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  std::string error;  // "" when it succeeded
};

// About `words` tokens of text: common words (one token each in most
// vocabularies) after a random one that keeps caches from matching.
std::string PromptText(int64_t words, std::mt19937_64& rng) {
  static constexpr const char* kWords[] = {"the", "time",  "people", "water", "year", "way",  "day",
                                           "man", "thing", "world",  "life",  "hand", "part", "child",
                                           "eye", "place", "work",   "week",  "case", "point"};
  std::ostringstream out;
  out << "bench" << rng() % 1000000;
  for (int64_t i = 1; i < words; ++i) out << ' ' << kWords[rng() % (sizeof kWords / sizeof *kWords)];
  return out.str();
}

Sample Stream(const BenchOptions& o, const std::string& prompt, int64_t max_tokens) {
  const Json body = {{"model", o.model},
                     {"prompt", prompt},
                     {"max_tokens", max_tokens},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
  Sample s;
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
      for (const Json& c : j.value("choices", Json::array())) {
        if (!c.contains("text") || !c["text"].is_string() || c["text"].get<std::string>().empty()) continue;
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
    s.error = "the server streamed no text";
  }
  if (got_text) {
    s.ttft_s = std::chrono::duration<double>(first - start).count();
    s.decode_s = std::chrono::duration<double>(last - first).count();
  }
  return s;
}

double PerSecond(double n, double seconds) { return seconds > 0 ? n / seconds : 0; }

struct Level {
  int concurrency = 0;
  int64_t generated = 0;
  double wall_s = 0, mean_ttft_s = 0;
};

Level Sweep(const BenchOptions& o, int concurrency, std::mt19937_64& rng, std::string* error) {
  std::vector<std::string> prompts;
  for (int i = 0; i < concurrency; ++i) prompts.push_back(PromptText(32, rng));
  std::vector<Sample> samples(concurrency);
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < concurrency; ++i) {
    threads.emplace_back([&, i] { samples[i] = Stream(o, prompts[i], o.decode_tokens); });
  }
  for (std::thread& t : threads) t.join();
  Level l;
  l.concurrency = concurrency;
  l.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Sample& s : samples) {
    if (!s.error.empty()) *error = s.error;
    l.generated += s.completion_tokens;
    l.mean_ttft_s += s.ttft_s / concurrency;
  }
  return l;
}

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

int Fail(const std::string& what, const std::string& message) {
  std::fprintf(stderr, "llmhost: bench: %s: %s\n", what.c_str(), message.c_str());
  return 1;
}

int RunBench(const BenchOptions& o) {
  std::mt19937_64 rng(std::random_device{}());
  constexpr int64_t kWarmWords = 64;
  Sample warm = Stream(o, PromptText(kWarmWords, rng), 1);
  if (!warm.error.empty()) {
    Result<HttpReply> probe = HttpCall(o.client.url, "GET", "/health", "", o.client.api_key);
    if (!probe.ok() && NoServerListening(probe.status())) {
      return Fail("no server at " + o.client.url,
                  "bench measures a running server (its scheduler, prefix cache and concurrency): start one with "
                  "`llmhost serve` and run bench again, or pass --url");
    }
    return Fail("the warm-up request", warm.error);
  }
  // Words for --prompt-tokens tokens, at the warm-up prompt's tokens per word.
  const double tokens_per_word = static_cast<double>(std::max<int64_t>(warm.prompt_tokens, 1)) / kWarmWords;
  const int64_t words =
      std::max<int64_t>(8, static_cast<int64_t>(static_cast<double>(o.prompt_tokens) / tokens_per_word));
  const std::string long_prompt = PromptText(words, rng);
  const Sample prefill = Stream(o, long_prompt, 1);
  if (!prefill.error.empty()) return Fail("prefill", prefill.error);
  const Sample cached = Stream(o, long_prompt, 1);
  if (!cached.error.empty()) return Fail("cached prefix", cached.error);
  const Sample decode = Stream(o, PromptText(32, rng), o.decode_tokens);
  if (!decode.error.empty()) return Fail("decode", decode.error);
  std::vector<Level> levels;
  for (int c : o.concurrency) {
    std::string error;
    levels.push_back(Sweep(o, c, rng, &error));
    if (!error.empty()) return Fail("concurrency " + std::to_string(c), error);
  }

  const double prefill_rate =
      PerSecond(static_cast<double>(prefill.prompt_tokens - prefill.cached_tokens), prefill.ttft_s);
  const double decode_rate = PerSecond(static_cast<double>(decode.completion_tokens - 1), decode.decode_s);
  if (o.json) {
    Json sweep = Json::array();
    for (const Level& l : levels) {
      sweep.push_back({{"concurrency", l.concurrency},
                       {"generated_tokens", l.generated},
                       {"wall_s", l.wall_s},
                       {"tokens_per_s", PerSecond(static_cast<double>(l.generated), l.wall_s)},
                       {"mean_ttft_ms", l.mean_ttft_s * 1000}});
    }
    const Json out = {{"model", o.model},
                      {"url", o.client.url},
                      {"prefill",
                       {{"prompt_tokens", prefill.prompt_tokens},
                        {"cached_tokens", prefill.cached_tokens},
                        {"ttft_ms", prefill.ttft_s * 1000},
                        {"tokens_per_s", prefill_rate}}},
                      {"cached_prefix",
                       {{"prompt_tokens", cached.prompt_tokens},
                        {"cached_tokens", cached.cached_tokens},
                        {"ttft_ms", cached.ttft_s * 1000}}},
                      {"decode", {{"generated_tokens", decode.completion_tokens}, {"tokens_per_s", decode_rate}}},
                      {"concurrency", std::move(sweep)}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("llmhost bench: %s at %s\n\n", o.model.c_str(), o.client.url.c_str());
  std::vector<std::vector<std::string>> rows = {{"TEST", "PROMPT", "CACHED", "GENERATED", "TTFT ms", "TOKENS/S"}};
  rows.push_back({"prefill", std::to_string(prefill.prompt_tokens), std::to_string(prefill.cached_tokens), "1",
                  Fixed(prefill.ttft_s * 1000, 1), Fixed(prefill_rate, 1) + " (prompt)"});
  rows.push_back({"cached prefix", std::to_string(cached.prompt_tokens), std::to_string(cached.cached_tokens), "1",
                  Fixed(cached.ttft_s * 1000, 1), "-"});
  rows.push_back({"decode", std::to_string(decode.prompt_tokens), std::to_string(decode.cached_tokens),
                  std::to_string(decode.completion_tokens), Fixed(decode.ttft_s * 1000, 1),
                  Fixed(decode_rate, 1) + " (one stream)"});
  for (const Level& l : levels) {
    rows.push_back({"concurrency " + std::to_string(l.concurrency), "-", "-", std::to_string(l.generated),
                    Fixed(l.mean_ttft_s * 1000, 1) + " (mean)",
                    Fixed(PerSecond(static_cast<double>(l.generated), l.wall_s), 1) + " (all streams)"});
  }
  PrintTable(rows);
  return 0;
}

}  // namespace

void RegisterBenchCommands(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure a running server: prefill, decode, cached-prefix TTFT and a concurrency sweep");
  AddClientOptions(cmd, &o->client);
  cmd->add_option("model", o->model, "The model's name")->required();
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "the prefill prompt's length, about (default 512)")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 20));
  cmd->add_option("--decode-tokens", o->decode_tokens, "tokens each decode request generates (default 64)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 16));
  cmd->add_option("--concurrency", o->concurrency, "streams at once, one level each (default 1,4)")
      ->delimiter(',')
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--json", o->json, "print JSON instead of a table");
  cmd->callback([o] { ExitCode() = RunBench(*o); });
}

}  // namespace llmhost::cli
