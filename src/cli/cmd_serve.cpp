// `llmhost serve [--model-dir DIR]... [--host H] [--port P] ...`: serves the
// models under the model directories behind OpenAI- and Anthropic-compatible
// HTTP APIs until SIGINT/SIGTERM, then drains and exits 0.
//
// Settings: command line > environment (LLMHOST_<FLAG>) > <home>/settings.json
// > defaults (server/serve_settings.h). Prints "llmhost: listening on
// http://HOST:PORT" on stdout once the port is bound (with --port 0, the
// port picked).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "cli/model_args.h"
#include "pool/model_registry.h"
#include "server/api_server.h"
#include "server/serve_settings.h"
#include "util/log.h"

namespace llmhost::cli {

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost: serve: %s\n", message.c_str());
  return 1;
}

int RunServe(const server::SettingValues& cli_values) {
  auto settings = server::ResolveServeSettings(cli_values, [](const char* name) { return std::getenv(name); });
  if (!settings.ok()) return Fail(settings.status().message());
  const server::ServeSettings& s = *settings;
  auto precision = ParsePrecision(s.precision);
  if (!precision.ok()) return Fail(precision.status().message());

  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error code, not a signal
  const uint64_t fds = server::RaiseFileDescriptorLimit();
  if (fds < 8192) LOG_WARN("serve: only " << fds << " file descriptors (RLIMIT_NOFILE): few connections fit");

  ModelRegistryOptions ro;
  ro.model_dirs = s.model_dirs;
  ro.engine.max_concurrent_requests = s.max_concurrent_requests;
  ro.engine.max_queue = s.max_queue;
  ro.engine.block_size = s.block_size;
  ro.precision = *precision;
  std::unique_ptr<ModelRegistry> registry = ModelRegistry::Create(ro);
  const auto models = registry->List();
  if (models.empty()) {
    std::string dirs;
    for (const auto& d : s.model_dirs) dirs += " " + d;
    LOG_WARN("serve: no models found in" << dirs << " (a model is a directory with config.json, or a .gguf file)");
  }
  for (const auto& m : models) LOG_INFO("serve: model " << m.id << " (" << m.path << ")");

  auto api = server::ApiServer::Create(s, registry.get(), /*handle_signals=*/true);
  if (!api.ok()) return Fail(api.status().message());
  std::printf("llmhost: listening on http://%s:%d\n", s.host.c_str(), (*api)->port());
  std::fflush(stdout);
  (*api)->Run();
  api->reset();  // connections closed, requests cancelled
  registry.reset();  // engines stopped
  LOG_INFO("serve: stopped");
  return 0;
}

}  // namespace

void RegisterServeCommands(CLI::App& app) {
  auto values = std::make_shared<server::SettingValues>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve the models of --model-dir over OpenAI- and Anthropic-compatible HTTP APIs");
  cmd->footer(
      "Each flag may also come from the environment (LLMHOST_ + the flag in upper snake case, e.g.\n"
      "LLMHOST_MAX_CONCURRENT_REQUESTS=16; list flags take a comma-separated list, e.g.\n"
      "LLMHOST_API_KEY=k1,k2) or from <home>/settings.json (keys in snake case); the command line wins,\n"
      "then the environment, then settings.json.\n"
      "Endpoints: POST /v1/chat/completions, /v1/completions, /v1/messages, /v1/messages/count_tokens;\n"
      "GET /v1/models, /health, /api/status.");
  for (const server::ServeFlag& f : server::ServeFlags()) {
    CLI::Option* opt = cmd->add_option(std::string("--") + f.name, (*values)[f.name], f.help);
    opt->expected(1);
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  }
  cmd->callback([values] {
    server::SettingValues given;
    for (const auto& [k, v] : *values) {
      if (!v.empty()) given[k] = v;
    }
    ExitCode() = RunServe(given);
  });
}

}  // namespace llmhost::cli
