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
#include "pool/cpu_engine_factory.h"
#include "pool/engine_pool.h"
#include "pool/memory_enforcer.h"
#include "server/api_server.h"
#include "server/serve_settings.h"
#include "util/file.h"
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

  PoolOptions po;
  po.model_dirs = s.model_dirs;
  po.guard.tier = *ParseGuardTier(s.memory_guard);  // validated by ResolveServeSettings
  po.guard.custom_ceiling_bytes = static_cast<uint64_t>(s.memory_guard_gb * static_cast<double>(kGiB));
  po.guard.prefill_guard = s.prefill_guard;
  po.model_wait_timeout_s = s.model_wait_timeout;
  if (s.idle_ttl > 0) po.idle_ttl_s = s.idle_ttl;
  po.settings_path = JoinPath(s.home, "model_settings.json");
  CpuEngineFactoryOptions fo;
  fo.engine.max_concurrent_requests = s.max_concurrent_requests;
  fo.engine.max_queue = s.max_queue;
  fo.engine.block_size = s.block_size;
  fo.precision = *precision;
  auto pool_or = EnginePool::Create(po, std::make_unique<CpuEngineFactory>(fo), std::make_shared<LinuxMemoryProbe>());
  if (!pool_or.ok()) return Fail(pool_or.status().message());
  std::unique_ptr<EnginePool> pool = std::move(*pool_or);
  const auto models = pool->Models();
  if (models.empty()) {
    std::string dirs;
    for (const auto& d : s.model_dirs) dirs += " " + d;
    LOG_WARN("serve: no models found in" << dirs << " (a model is a directory with config.json, or a .gguf file)");
  }
  for (const auto& m : models) {
    LOG_INFO("serve: model " << m.id << " (" << m.path << ", " << FormatBytes(m.estimated_bytes) << ")");
  }
  const MemorySnapshot mem = pool->Memory();
  LOG_INFO("serve: memory guard " << GuardTierName(mem.host.tier) << (mem.host.guard_on ? "" : " (best effort)")
                                  << ": ceiling " << FormatBytes(mem.host.admission_ceiling) << " ("
                                  << mem.host.Describe() << "), soft " << FormatBytes(mem.host.soft_bytes)
                                  << ", hard " << FormatBytes(mem.host.hard_bytes) << ", prefill guard "
                                  << (s.prefill_guard ? "on" : "off") << ", footprint " << FormatBytes(mem.footprint));
  MemoryEnforcer enforcer(pool.get());
  enforcer.Start();
  pool->PreloadPinned();

  auto api = server::ApiServer::Create(s, pool.get(), &enforcer, /*handle_signals=*/true);
  if (!api.ok()) return Fail(api.status().message());
  std::printf("llmhost: listening on http://%s:%d\n", s.host.c_str(), (*api)->port());
  std::fflush(stdout);
  (*api)->Run();  // drained; what still ran was cancelled
  enforcer.Stop();
  // Engines first: their threads may hold the last references to requests'
  // connections, which must go while the HTTP server still exists.
  pool->Shutdown();
  api->reset();
  pool.reset();
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
      "GET /v1/models, /v1/models/status, /health, /api/status; admin under /admin/api/.\n"
      "Memory: the pool loads models on demand and evicts idle ones (least recently used) so that\n"
      "the process stays under the memory guard's ceiling; a request whose model must wait for busy\n"
      "models queues (--model-wait-timeout), and only a model that can never fit is refused (507).\n"
      "Per-model settings (alias, pinned, ttl_seconds, sampling, ...) live in <home>/model_settings.json.");
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
