// `llmhost serve [--model-dir DIR]... [--host H] [--port P] ...`: serves the
// models under the model directories behind OpenAI- and Anthropic-compatible
// HTTP APIs until SIGINT/SIGTERM, then drains and exits 0.
//
// Settings: command line > environment (LLMHOST_<FLAG>) > <home>/settings.json
// > defaults (server/serve_settings.h). Prints "llmhost: listening on
// http://HOST:PORT" (https:// with --ssl-cert) on stdout once the port is
// bound (with --port 0, the port picked).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "backend/device.h"
#include "cli/commands.h"
#include "cli/model_args.h"
#include "kv/tiered_block_store.h"
#include "pool/cpu_engine_factory.h"
#include "pool/engine_pool.h"
#include "pool/memory_enforcer.h"
#include "server/api_server.h"
#include "server/serve_settings.h"
#include "server/tls_context.h"
#include "util/file.h"
#include "util/log.h"

namespace llmhost::cli {

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost: serve: %s\n", message.c_str());
  return 1;
}

// Seconds that SIGTERM/SIGINT allow for writing dirty hot KV blocks to the SSD.
constexpr double kCacheFlushTimeoutS = 60;

// The KV block store of --cache-mode (null when off).
Result<std::shared_ptr<TieredBlockStore>> OpenKvStore(const server::ServeSettings& s, const SystemMemory& sys) {
  ASSIGN_OR_RETURN(CacheMode mode, ParseCacheMode(s.cache_mode));
  if (mode == CacheMode::kOff) return std::shared_ptr<TieredBlockStore>();
  TieredStoreOptions o;
  o.mode = mode;
  o.hot_max_bytes = s.hot_cache_max_size.Resolve(sys.EffectiveTotal());
  o.cache_dir = s.cache_dir;
  o.ssd_auto = s.ssd_cache_max_size.is_auto;
  if (!o.ssd_auto) o.ssd_max_bytes = s.ssd_cache_max_size.bytes;
  auto store = TieredBlockStore::Open(o);
  if (!store.ok()) return store.status().WithContext("the KV cache (--cache-dir " + s.cache_dir + ")");
  return std::shared_ptr<TieredBlockStore>(std::move(*store));
}

int RunServe(const server::SettingValues& cli_values) {
  auto settings = server::ResolveServeSettings(cli_values, [](const char* name) { return std::getenv(name); });
  if (!settings.ok()) return Fail(settings.status().message());
  const server::ServeSettings& s = *settings;
  SetLogFormat(*ParseLogFormat(s.log_format));  // validated by ResolveServeSettings
  if (s.batch_invariant.has_value()) {
    // First, before any thread or backend exists (the CUDA backend reads the
    // switch at each step; setenv beside another thread's getenv is a race).
    setenv("LLMHOST_CUDA_BATCH_INVARIANT", *s.batch_invariant ? "on" : "off", 1);
    if (!*s.batch_invariant) LOG_INFO("serve: batch invariance off: a GPU's large batches go to cuBLASLt");
  }
  auto precision = ParsePrecision(s.precision);
  if (!precision.ok()) return Fail(precision.status().message());
  std::shared_ptr<const server::TlsServerContext> tls;  // before any model loads: a bad file stops us at once
  if (!s.ssl_cert.empty()) {
    auto loaded = server::TlsServerContext::Load(s.ssl_cert, s.ssl_key);
    if (!loaded.ok()) return Fail(loaded.status().message());
    tls = std::move(*loaded);
  }

  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error code, not a signal
  const uint64_t fds = server::RaiseFileDescriptorLimit();
  if (fds < 8192) LOG_WARN("serve: only " << fds << " file descriptors (RLIMIT_NOFILE): few connections fit");

  auto probe = std::make_shared<LinuxMemoryProbe>();
  auto store_or = OpenKvStore(s, probe->System());
  if (!store_or.ok()) return Fail(store_or.status().message());
  const std::shared_ptr<TieredBlockStore> store = *store_or;
  if (store) {
    const TierStats ts = store->stats();
    LOG_INFO("serve: KV cache " << s.cache_mode << ": hot " << FormatBytes(ts.hot_max_bytes) << " ("
                                << s.hot_cache_max_size.ToString() << "), SSD " << s.cache_dir << " holds "
                                << ts.ssd_files << " blocks (" << FormatBytes(ts.ssd_bytes) << ") of "
                                << FormatBytes(ts.ssd_effective_max_bytes));
  }

  PoolOptions po;
  po.model_dirs = s.model_dirs;
  po.guard.tier = *ParseGuardTier(s.memory_guard);  // validated by ResolveServeSettings
  po.guard.custom_ceiling_bytes = static_cast<uint64_t>(s.memory_guard_gb * static_cast<double>(kGiB));
  po.guard.prefill_guard = s.prefill_guard;
  po.guard.gpu_ceiling_bytes = static_cast<uint64_t>(s.gpu_memory_guard_gb * static_cast<double>(kGiB));
  po.model_wait_timeout_s = s.model_wait_timeout;
  if (s.idle_ttl > 0) po.idle_ttl_s = s.idle_ttl;
  po.settings_path = JoinPath(s.home, "model_settings.json");
  if (store) {
    po.cache_ram_bytes = [store] { return store->ram_bytes(); };
    po.shrink_cache = [store](uint64_t keep) { return store->ShrinkHot(keep); };
  }
  CpuEngineFactoryOptions fo;
  auto device = ParseDevice(s.device);  // validated by ResolveServeSettings
  if (!device.ok()) return Fail(device.status().message());
  fo.device = *device;
  if (fo.device.kind == DeviceKind::kCuda) {
    // Refused at start, not at each model's load: a GPU asked for and absent
    // (auto falls back to the CPU).
    auto check = MakeBackend(fo.device, *precision, nullptr);
    if (!check.ok() && s.device != "auto") return Fail("--device " + s.device + ": " + check.status().message());
    if (check.ok()) {
      LOG_INFO("serve: models compute on " << (*check)->name());
      probe->set_cuda_fallback(true);
      // cuda:N serves on that GPU alone; auto and cuda on every GPU there is,
      // each model placed where it fits.
      const bool one = s.device.rfind("cuda:", 0) == 0;
      po.gpus.clear();
      for (const CudaMemory& c : CudaMemoryInfo()) {
        if ((!one || c.index == fo.device.index) && po.gpus.size() < static_cast<size_t>(kMaxGpus)) {
          po.gpus.push_back(GpuTarget{c.index, c.pci});
        }
      }
      if (po.gpus.empty()) po.gpus.push_back(GpuTarget{fo.device.index, {}});
    } else {
      LOG_WARN("serve: a GPU is present but unusable (" << check.status().message() << "): computing on the CPU");
      fo.device = DeviceSpec{};
    }
  }
  fo.tensor_parallel = s.tensor_parallel;
  if (s.tensor_parallel > 1) {
    if (fo.device.kind == DeviceKind::kCuda && po.gpus.size() < static_cast<size_t>(s.tensor_parallel)) {
      return Fail("--tensor-parallel " + std::to_string(s.tensor_parallel) + ": the server computes on " +
                  std::to_string(po.gpus.size()) + " GPU(s)");
    }
    LOG_INFO("serve: models are split over " << s.tensor_parallel
                                             << (fo.device.kind == DeviceKind::kCuda ? " GPUs" : " CPU stand-ins (a test setup)"));
  }
  fo.engine.max_concurrent_requests = s.max_concurrent_requests;
  fo.engine.max_queue = s.max_queue;
  fo.engine.block_size = s.block_size;
  if (s.prefill_chunk_tokens > 0) fo.engine.prefill_chunk_tokens = fo.gpu_prefill_chunk_tokens = s.prefill_chunk_tokens;
  fo.precision = *precision;
  auto kv_dtype = ParseKvDtype(s.kv_dtype);
  if (!kv_dtype.ok()) return Fail(kv_dtype.status().message());
  fo.kv_dtype = *kv_dtype;
  // A KV cache reserves address space for its model's full contexts; never
  // more than the machine's memory (it only holds what it is granted).
  fo.engine.kv_max_bytes = probe->System().EffectiveTotal();
  fo.engine.block_store = store;
  if (store) {
    WeightsHasherOptions ho;
    ho.cache_path = JoinPath(s.home, "weights_digests.json");
    fo.hasher = std::make_shared<WeightsHasher>(ho);
  }
  auto pool_or = EnginePool::Create(po, std::make_unique<CpuEngineFactory>(fo), probe);
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
  EnforcerOptions eo;
  if (store) {
    EnginePool* p = pool.get();
    // Hard pressure: the hot tier gives back what lies above the soft target.
    eo.shrink_hot_cache = [store, p](uint64_t target_usage) {
      const uint64_t usage = p->SampleRss().usage;  // the enforcer's reading
      if (usage <= target_usage) return false;
      const uint64_t ram = store->ram_bytes(), excess = usage - target_usage;
      return store->ShrinkHot(ram > excess ? ram - excess : 0) > 0;
    };
    eo.on_level = [store](PressureLevel level) { store->SetPressure(level != PressureLevel::kOk); };
  }
  MemoryEnforcer enforcer(pool.get(), eo);
  enforcer.Start();
  pool->PreloadPinned();

  auto api = server::ApiServer::Create(s, pool.get(), &enforcer, /*handle_signals=*/true, store.get(), tls);
  if (!api.ok()) return Fail(api.status().message());
  std::printf("llmhost: listening on %s://%s:%d\n", tls ? "https" : "http", s.host.c_str(), (*api)->port());
  std::fflush(stdout);
  (*api)->Run();  // drained; what still ran was cancelled
  enforcer.Stop();
  // Engines first: their threads may hold the last references to requests'
  // connections, which must go while the HTTP server still exists.
  pool->Shutdown();
  api->reset();
  pool.reset();
  if (store) {
    // Dirty hot blocks reach the SSD, so that the next start finds them.
    const TierStats before = store->stats();
    const Status flushed = store->Flush(kCacheFlushTimeoutS);
    if (flushed.ok()) {
      LOG_INFO("serve: KV cache flushed (" << before.hot_blocks << " hot blocks, " << store->stats().ssd_files
                                           << " block files)");
    } else {
      LOG_WARN("serve: KV cache flush incomplete: " << flushed.message());
    }
  }
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
      "Per-model settings (alias, pinned, ttl_seconds, sampling, ...) live in <home>/model_settings.json.\n"
      "KV cache: full blocks of every prompt stay in RAM (--hot-cache-max-size) and on disk (--cache-dir),\n"
      "so a repeated prefix is restored instead of recomputed, also after a restart (--cache-mode).");
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
