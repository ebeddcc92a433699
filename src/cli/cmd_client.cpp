// Commands that talk to a running `llmhost serve` (as Ollama's do):
//   ls            every model: state, memory (or its estimate), context
//   ps            the loaded models: memory, where, requests, when they expire
//   show MODEL    one model: format, family, context, capabilities (--template: its chat template)
//   run MODEL [PROMPT...]   a chat in the terminal, streamed; with a prompt, one answer and exit;
//                 with no server listening, the model runs in this process (local_chat.h)
//   rm MODEL...   deletes models' files: through the server (DELETE /api/delete), or, with no
//                 server listening, in the model directories (pool/model_removal.h)
// --url (LLMHOST_URL, default http://127.0.0.1:8000; https:// too) and --api-key (LLMHOST_API_KEY).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/client_options.h"
#include "cli/commands.h"
#include "cli/local_chat.h"
#include "cli/local_models.h"
#include "cli/server_client.h"
#include "cli/text_table.h"
#include "cli/turn_printer.h"
#include "pool/memory_limits.h"
#include "pool/model_removal.h"

namespace llmhost::cli {

namespace {

using Json = nlohmann::json;

// The exchange's outcome on stderr when it failed; false then.
bool Report(const ClientOptions& o, const Result<HttpReply>& r) {
  if (!r.ok()) {
    std::fprintf(stderr,
                 "llmhost: no llmhost server answers at %s (%s): start one with `llmhost serve`, or pass --url\n",
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

std::string Bytes(const Json& v) {
  return v.is_number() && v.get<uint64_t>() > 0 ? FormatBytes(v.get<uint64_t>()) : "-";
}

int Ls(const ClientOptions& o) {
  std::optional<Json> j = GetJson(o, "/v1/models/status");
  if (!j) return 1;
  std::vector<std::vector<std::string>> rows = {{"NAME", "KIND", "STATE", "SIZE", "CONTEXT"}};
  const Json models = j->value("models", Json::array());
  for (const Json& m : models) {
    if (m.value("hidden", false)) continue;
    const bool loaded = m.value("loaded", false);
    std::string name = m.value("id", "");
    if (m.contains("alias") && m["alias"].is_string()) name += " (" + m["alias"].get<std::string>() + ")";
    const std::string state = m.value("loading", false) ? "loading" : loaded ? "loaded" : "";
    const Json& ctx = m.contains("max_context_window") ? m["max_context_window"] : Json();
    rows.push_back({name, m.value("kind", "chat"), state.empty() ? "-" : state,
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
  std::vector<std::vector<std::string>> rows = {
      {"model", model}, {"format", details.value("format", "")}, {"family", details.value("family", "")}};
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

struct RunOptions {
  ClientOptions client;
  LocalModelOptions local;
  std::string model;
  std::vector<std::string> prompt;
  int64_t max_tokens = 0;  // 0: the server's default (in this process: 1024)
  std::string device = "cpu";
};

// One assistant turn from the server, streamed through `printer`. False when
// the exchange failed (the reason on stderr).
bool ServerTurn(const RunOptions& o, const Json& messages, TurnPrinter* printer) {
  Json body = {{"model", o.model}, {"messages", messages}, {"stream", true}};
  if (o.max_tokens > 0) body["max_tokens"] = o.max_tokens;
  std::string pending;  // a partial SSE line
  std::string error;
  auto on_data = [&](std::string_view piece) {
    pending.append(piece);
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
          printer->Reasoning(delta["reasoning_content"].get<std::string>());
        }
        if (delta.contains("content") && delta["content"].is_string()) {
          printer->Content(delta["content"].get<std::string>());
        }
      }
    }
    return true;
  };
  Result<HttpReply> r = HttpCall(o.client.url, "POST", "/v1/chat/completions", body.dump(), o.client.api_key, on_data);
  printer->Finish();
  if (!r.ok()) return Report(o.client, r);
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

// The conversation: one turn for a prompt given on the command line, else one
// per line of stdin (until /bye or its end). `turn` answers the messages.
int Converse(const RunOptions& o, const std::string& where,
             const std::function<bool(const Json&, TurnPrinter*)>& turn) {
  Json messages = Json::array();
  if (!o.prompt.empty()) {
    std::string prompt;
    for (const std::string& w : o.prompt) prompt += (prompt.empty() ? "" : " ") + w;
    messages.push_back({{"role", "user"}, {"content", prompt}});
    TurnPrinter printer;
    return turn(messages, &printer) ? 0 : 1;
  }
  const bool tty = isatty(fileno(stdin));
  if (tty) {
    std::printf("Chatting with %s %s. /bye (or end of input) leaves, /clear forgets.\n", o.model.c_str(),
                where.c_str());
  }
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
    TurnPrinter printer;
    if (!turn(messages, &printer)) return 1;
    messages.push_back({{"role", "assistant"}, {"content", printer.reply()}});
  }
  return 0;
}

// With no server listening: the model in this process.
int RunLocal(const RunOptions& o) {
  Result<std::string> path = LocalModelPath(o.local, o.model);
  if (!path.ok()) {
    std::fprintf(stderr, "llmhost: no server at %s, and %s\n", o.client.url.c_str(), path.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "llmhost: no server at %s: running %s in this process\n", o.client.url.c_str(), path->c_str());
  Result<std::unique_ptr<LocalChat>> chat = LocalChat::Load(*path, o.device);
  if (!chat.ok()) {
    std::fprintf(stderr, "llmhost: %s\n", chat.status().ToString().c_str());
    return 1;
  }
  LocalTurnOptions turn_options;
  if (o.max_tokens > 0) turn_options.max_tokens = o.max_tokens;
  return Converse(o, "in this process", [&](const Json& messages, TurnPrinter* printer) {
    Status s = (*chat)->Reply(nlohmann::ordered_json::parse(messages.dump()), turn_options, printer);
    printer->Finish();
    if (!s.ok()) std::fprintf(stderr, "llmhost: %s\n", s.ToString().c_str());
    return s.ok();
  });
}

int Run(const RunOptions& o) {
  Result<HttpReply> probe = HttpCall(o.client.url, "GET", "/health", "", o.client.api_key);
  if (!probe.ok() && NoServerListening(probe.status())) return RunLocal(o);
  return Converse(o, "at " + o.client.url,
                  [&](const Json& messages, TurnPrinter* printer) { return ServerTurn(o, messages, printer); });
}

// Deletes through the server; with none listening, in the model directories.
int Rm(const ClientOptions& client, const LocalModelOptions& local, const std::vector<std::string>& names) {
  int failures = 0;
  std::optional<std::vector<DiscoveredModel>> models;  // discovered once no server answered
  for (const std::string& name : names) {
    if (!models) {
      Result<HttpReply> r = HttpCall(client.url, "DELETE", "/api/delete", Json{{"model", name}}.dump(), client.api_key);
      if (r.ok() && r->status == 200) {
        std::printf("deleted '%s' (through the server at %s)\n", name.c_str(), client.url.c_str());
        continue;
      }
      if (r.ok() || !NoServerListening(r.status())) {
        failures += !Report(client, r);
        continue;
      }
      Result<std::vector<DiscoveredModel>> found = LocalModels(local);
      if (!found.ok()) {
        std::fprintf(stderr, "llmhost: no server at %s, and %s\n", client.url.c_str(),
                     found.status().message().c_str());
        return 1;
      }
      models = std::move(*found);
    }
    const DiscoveredModel* m = FindModelByName(*models, name);
    if (!m) {
      std::fprintf(stderr, "llmhost: model '%s' not found (no server at %s; looked in the model directories)\n",
                   name.c_str(), client.url.c_str());
      ++failures;
      continue;
    }
    Result<ModelRemoval> removed = RemoveModelFiles(*m);
    if (!removed.ok()) {
      std::fprintf(stderr, "llmhost: %s: %s\n", m->id.c_str(), removed.status().message().c_str());
      ++failures;
      continue;
    }
    std::printf("deleted '%s' (no server at %s: %s from %s)\n", m->id.c_str(), client.url.c_str(),
                FormatBytes(removed->bytes).c_str(), m->path.c_str());
    models->erase(models->begin() + (m - models->data()));
  }
  return failures == 0 ? 0 : 1;
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

  auto run_args = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand(
      "run", "Chat with a model (one answer when a prompt is given): on the running server, else in this process");
  AddClientOptions(run, &run_args->client);
  AddLocalModelOptions(run, &run_args->local);
  run->add_option("model", run_args->model, "The model's name (without a server: or its folder or .gguf file)")
      ->required();
  run->add_option("prompt", run_args->prompt, "A prompt: answered once, then the command exits");
  run->add_option("--max-tokens", run_args->max_tokens, "tokens per answer at most (default: the server's; 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  run->add_option("--device", run_args->device, "without a server: cpu (default), cuda, cuda:N or auto");
  run->callback([run_args] { ExitCode() = Run(*run_args); });

  struct RmArgs {
    ClientOptions client;
    LocalModelOptions local;
    std::vector<std::string> models;
  };
  auto rm_args = std::make_shared<RmArgs>();
  CLI::App* rm =
      app.add_subcommand("rm", "Delete models' files: through the running server, else in the model directories");
  AddClientOptions(rm, &rm_args->client);
  AddLocalModelOptions(rm, &rm_args->local);
  rm->add_option("models", rm_args->models, "The models' names")->required();
  rm->footer(
      "A server unloads an idle loaded model first, and refuses (409) a pinned one or one serving or awaited by\n"
      "requests. Only the model's own files go: its folder, its .gguf file, or its Hugging Face cache snapshot\n"
      "with the blobs no other snapshot shares; links are removed, never followed.");
  rm->callback([rm_args] { ExitCode() = Rm(rm_args->client, rm_args->local, rm_args->models); });
}

}  // namespace llmhost::cli
