// Commands that talk to a running `llmhost serve` (as Ollama's do):
//   ls            every model: state, memory (or its estimate), context
//   ps            the loaded models: memory, where, requests, when they expire
//   show MODEL    one model: format, family, context, capabilities (--template: its chat template)
//   run MODEL [PROMPT...]   a chat in the terminal, streamed; with a prompt, one answer and exit
// --url (LLMHOST_URL, default http://127.0.0.1:8000; https:// too) and --api-key (LLMHOST_API_KEY).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/server_client.h"
#include "pool/memory_limits.h"

namespace llmhost::cli {

namespace {

using Json = nlohmann::json;

struct ClientOptions {
  std::string url;
  std::string api_key;
};

void AddClientOptions(CLI::App* cmd, ClientOptions* o) {
  const char* env_url = std::getenv("LLMHOST_URL");
  o->url = env_url && *env_url ? env_url : "http://127.0.0.1:8000";
  const char* env_key = std::getenv("LLMHOST_API_KEY");
  // LLMHOST_API_KEY may list several keys (serve's form): the first is ours.
  if (env_key && *env_key) o->api_key = std::string(env_key).substr(0, std::string(env_key).find(','));
  cmd->add_option("--url", o->url, "The server (LLMHOST_URL)")->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "Its API key (LLMHOST_API_KEY)");
}

// The server's error text from a reply body (OpenAI's, Anthropic's or Ollama's shape).
std::string ErrorText(const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const Json& e = j["error"];
    if (e.is_string()) return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
  }
  return body;
}

// The exchange's outcome on stderr when it failed; false then.
bool Report(const ClientOptions& o, const Result<HttpReply>& r) {
  if (!r.ok()) {
    std::fprintf(stderr, "llmhost: no llmhost server answers at %s (%s): start one with `llmhost serve`, or pass --url\n",
                 o.url.c_str(), r.status().message().c_str());
    return false;
  }
  if (r->status == 200) return true;
  std::fprintf(stderr, "llmhost: %d: %s\n", r->status, ErrorText(r->body).c_str());
  return false;
}

std::optional<Json> GetJson(const ClientOptions& o, const std::string& path, const std::string& body = "") {
  Result<HttpReply> r = HttpCall(o.url, body.empty() ? "GET" : "POST", path, body, o.api_key);
  if (!Report(o, r)) return std::nullopt;
  Json j = Json::parse(r->body, nullptr, false);
  if (j.is_discarded()) {
    std::fprintf(stderr, "llmhost: the server's answer to %s is not JSON\n", path.c_str());
    return std::nullopt;
  }
  return j;
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 3, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
}

std::string Bytes(const Json& v) { return v.is_number() && v.get<uint64_t>() > 0 ? FormatBytes(v.get<uint64_t>()) : "-"; }

int Ls(const ClientOptions& o) {
  std::optional<Json> j = GetJson(o, "/v1/models/status");
  if (!j) return 1;
  std::vector<std::vector<std::string>> rows = {{"NAME", "STATE", "SIZE", "CONTEXT"}};
  const Json models = j->value("models", Json::array());
  for (const Json& m : models) {
    if (m.value("hidden", false)) continue;
    const bool loaded = m.value("loaded", false);
    std::string name = m.value("id", "");
    if (m.contains("alias") && m["alias"].is_string()) name += " (" + m["alias"].get<std::string>() + ")";
    const std::string state = m.value("loading", false) ? "loading" : loaded ? "loaded" : "";
    const Json& ctx = m.contains("max_context_window") ? m["max_context_window"] : Json();
    rows.push_back({name, state.empty() ? "-" : state,
                    loaded ? Bytes(m.value("memory_bytes", Json())) : Bytes(m.value("estimated_bytes", Json())),
                    ctx.is_number() ? std::to_string(ctx.get<int64_t>()) : "-"});
  }
  PrintTable(rows);
  return 0;
}

int Ps(const ClientOptions& o) {
  std::optional<Json> j = GetJson(o, "/api/ps");
  if (!j) return 1;
  std::vector<std::vector<std::string>> rows = {{"NAME", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL"}};
  const Json models = j->value("models", Json::array());
  for (const Json& m : models) {
    const bool gpu = m.value("size_vram", 0) > 0;
    rows.push_back({m.value("name", ""), Bytes(m.value("size", Json())), gpu ? "GPU" : "CPU",
                    m.contains("context_length") ? std::to_string(m["context_length"].get<int64_t>()) : "-",
                    m.value("expires_at", "") == "9999-12-31T23:59:59Z" ? "forever" : m.value("expires_at", "-")});
  }
  PrintTable(rows);
  return 0;
}

int Show(const ClientOptions& o, const std::string& model, bool template_only) {
  std::optional<Json> j = GetJson(o, "/api/show", Json{{"model", model}}.dump());
  if (!j) return 1;
  if (template_only) {
    std::printf("%s\n", j->value("template", "").c_str());
    return 0;
  }
  const Json details = j->value("details", Json::object());
  std::vector<std::vector<std::string>> rows = {{"model", model},
                                                {"format", details.value("format", "")},
                                                {"family", details.value("family", "")}};
  const Json info = j->value("model_info", Json::object());
  for (const auto& [k, v] : info.items()) {
    if (k.size() > 15 && k.substr(k.size() - 15) == ".context_length") rows.push_back({"context", v.dump()});
  }
  std::string caps;
  const Json capabilities = j->value("capabilities", Json::array());
  for (const Json& c : capabilities) caps += (caps.empty() ? "" : ", ") + c.get<std::string>();
  rows.push_back({"capabilities", caps});
  // The modelfile's FROM line names where the model is read from.
  const std::string modelfile = j->value("modelfile", "");
  const size_t from = modelfile.find("\nFROM ");
  if (from != std::string::npos) {
    const size_t end = modelfile.find('\n', from + 1);
    rows.push_back({"path", modelfile.substr(from + 6, end == std::string::npos ? std::string::npos : end - from - 6)});
  }
  PrintTable(rows);
  return 0;
}

// One assistant turn, streamed to stdout (reasoning dimmed on a terminal);
// the answer's text in `reply`. False when the exchange failed.
bool Turn(const ClientOptions& o, const std::string& model, const Json& messages, std::string* reply) {
  const Json body = {{"model", model}, {"messages", messages}, {"stream", true}};
  const bool tty = isatty(fileno(stdout));
  std::string pending;  // a partial SSE line
  bool in_reasoning = false;
  std::string error;
  auto on_data = [&](const char* data, size_t n) {
    pending.append(data, n);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.rfind("data: ", 0) != 0) continue;
      const std::string payload = line.substr(6);
      if (payload == "[DONE]") continue;
      Json j = Json::parse(payload, nullptr, false);
      if (!j.is_object()) continue;
      if (j.contains("error")) {
        error = j["error"].value("message", payload);
        continue;
      }
      for (const Json& choice : j.value("choices", Json::array())) {
        const Json delta = choice.value("delta", Json::object());
        if (delta.contains("reasoning_content") && delta["reasoning_content"].is_string()) {
          if (!in_reasoning) std::printf("%s", tty ? "\x1b[2m" : "Thinking: ");
          in_reasoning = true;
          std::printf("%s", delta["reasoning_content"].get<std::string>().c_str());
        }
        if (delta.contains("content") && delta["content"].is_string()) {
          if (in_reasoning) std::printf("%s", tty ? "\x1b[0m\n\n" : "\n\n");
          in_reasoning = false;
          const std::string text = delta["content"].get<std::string>();
          *reply += text;
          std::printf("%s", text.c_str());
        }
      }
      std::fflush(stdout);
    }
    return true;
  };
  Result<HttpReply> r = HttpCall(o.url, "POST", "/v1/chat/completions", body.dump(), o.api_key,
                                 [&](std::string_view piece) { return on_data(piece.data(), piece.size()); });
  if (in_reasoning && tty) std::printf("\x1b[0m");
  std::printf("\n");
  if (!r.ok()) return Report(o, r);
  if (r->status != 200) {
    std::fprintf(stderr, "llmhost: %d: %s\n", r->status, ErrorText(r->body).c_str());
    return false;
  }
  if (!error.empty()) {
    std::fprintf(stderr, "llmhost: %s\n", error.c_str());
    return false;
  }
  return true;
}

int Run(const ClientOptions& o, const std::string& model, const std::vector<std::string>& prompt_words) {
  Json messages = Json::array();
  std::string reply;
  if (!prompt_words.empty()) {
    std::string prompt;
    for (const std::string& w : prompt_words) prompt += (prompt.empty() ? "" : " ") + w;
    messages.push_back({{"role", "user"}, {"content", prompt}});
    return Turn(o, model, messages, &reply) ? 0 : 1;
  }
  const bool tty = isatty(fileno(stdin));
  if (tty) std::printf("Chatting with %s at %s. /bye (or end of input) leaves, /clear forgets.\n", model.c_str(), o.url.c_str());
  for (std::string line;;) {
    if (tty) std::printf(">>> "), std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line == "/bye") break;
    if (line == "/clear") {
      messages = Json::array();
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    reply.clear();
    if (!Turn(o, model, messages, &reply)) return 1;
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
  return 0;
}

}  // namespace

void RegisterClientCommands(CLI::App& app) {
  auto ls_opts = std::make_shared<ClientOptions>();
  CLI::App* ls = app.add_subcommand("ls", "List the models a running server serves");
  AddClientOptions(ls, ls_opts.get());
  ls->callback([ls_opts] { ExitCode() = Ls(*ls_opts); });

  auto ps_opts = std::make_shared<ClientOptions>();
  CLI::App* ps = app.add_subcommand("ps", "List the models a running server has loaded");
  AddClientOptions(ps, ps_opts.get());
  ps->callback([ps_opts] { ExitCode() = Ps(*ps_opts); });

  struct ShowArgs {
    ClientOptions client;
    std::string model;
    bool template_only = false;
  };
  auto show_args = std::make_shared<ShowArgs>();
  CLI::App* show = app.add_subcommand("show", "Show a model's details from a running server");
  AddClientOptions(show, &show_args->client);
  show->add_option("model", show_args->model, "The model's name")->required();
  show->add_flag("--template", show_args->template_only, "Print its chat template only");
  show->callback([show_args] { ExitCode() = Show(show_args->client, show_args->model, show_args->template_only); });

  struct RunArgs {
    ClientOptions client;
    std::string model;
    std::vector<std::string> prompt;
  };
  auto run_args = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Chat with a model of a running server (one answer when a prompt is given)");
  AddClientOptions(run, &run_args->client);
  run->add_option("model", run_args->model, "The model's name")->required();
  run->add_option("prompt", run_args->prompt, "A prompt: answered once, then the command exits");
  run->callback([run_args] { ExitCode() = Run(run_args->client, run_args->model, run_args->prompt); });
}

}  // namespace llmhost::cli
