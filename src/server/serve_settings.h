// Settings of `llmhost serve`, from four sources, highest first:
//   command line  >  environment (LLMHOST_ + the flag in upper snake case,
//   e.g. LLMHOST_MAX_CONCURRENT_REQUESTS; list flags take a comma-separated
//   list)  >  <home>/settings.json (keys in snake case or as the flag)  >  defaults.
// --home itself comes from the command line, LLMHOST_HOME or ~/.llmhost.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/response_format.h"
#include "util/status.h"

namespace llmhost::server {

// A size given as bytes, a percentage (of RAM) or "auto".
struct SizeSetting {
  uint64_t bytes = 0;
  double percent = 0;  // > 0: this share of the base instead of bytes
  bool is_auto = false;
  // bytes, or percent of `base` (rounded down).
  uint64_t Resolve(uint64_t base) const;
  std::string ToString() const;
};

struct ServeSettings {
  std::string home;                     // ~/.llmhost
  std::string host = "127.0.0.1";
  int port = 8000;                      // 0: any free port
  std::vector<std::string> model_dirs;  // default: <home>/models
  int max_concurrent_requests = 8;
  int max_queue = 0;                    // resolved: max(4 × max_concurrent_requests, 32) when unset
  int block_size = 256;
  int prefill_chunk_tokens = 0;         // prompt tokens a step; 0: the device's default (kCpu/kGpuPrefillChunk)
  std::vector<std::string> api_keys;
  KeepAliveMode sse_keepalive = KeepAliveMode::kChunk;
  uint64_t max_body_size = 32ull << 20;
  std::vector<std::string> cors_origins;
  std::vector<std::string> allowed_hosts;  // Host names beyond loopback ones (server/host_guard.h)
  int max_connections = 10000;          // open client connections
  int header_timeout = 30;              // seconds for a request's headers
  int drain_timeout = 30;               // seconds
  int io_threads = 2;
  int stats_interval = 5;               // seconds between samples of the dashboard's charts (stats_history.h)
  std::string ssl_cert;                 // both set: HTTPS (server/tls_context.h); both empty: plain HTTP
  std::string ssl_key;
  std::string precision = "auto";       // CPU matmul precision: auto, fast, fast-int8, fast-bf16, f32
  std::string kv_dtype = "auto";        // KV cache element type: auto, f32, bf16, f16, fp8 (e4m3)
  std::string device = "auto";          // where models compute: auto, cpu, cuda, cuda:0
  int tensor_parallel = 1;              // GPUs each model is split over (a model's own setting overrides it)
  std::string log_format = "text";      // stderr lines: text or json (util/log_json.h)
  double gpu_memory_guard_gb = 0;       // > 0: the GPU's ceiling in GiB
  // Memory guard (pool/memory_limits.h).
  std::string memory_guard = "balanced";  // off, safe, balanced, aggressive, custom
  double memory_guard_gb = 0;           // the custom ceiling in GiB (> 0 implies custom)
  bool prefill_guard = true;
  // GPU batch invariance (backend/cuda): unset leaves LLMHOST_CUDA_BATCH_INVARIANT as it is.
  std::optional<bool> batch_invariant;
  double model_wait_timeout = 120;      // seconds a request may queue for its model, then 503
  int64_t idle_ttl = 0;                 // seconds idle before a model unloads; 0: never
  // KV cache tiers (kv/tiered_block_store.h).
  std::string cache_mode = "write-back";  // write-back, write-through, hot-only, off
  SizeSetting hot_cache_max_size{0, 10, false};   // of min(MemTotal, cgroup limit)
  std::string cache_dir;                // default <home>/cache
  SizeSetting ssd_cache_max_size{uint64_t{100} << 30, 0, false};  // or auto
};

// One serve flag: its name ("max-concurrent-requests"), whether it repeats,
// the placeholder and help text that `llmhost serve --help` shows.
struct ServeFlag {
  const char* name;
  bool list;
  const char* help;
};
const std::vector<ServeFlag>& ServeFlags();

// Values given for flags, by flag name (a list flag may have several).
using SettingValues = std::map<std::string, std::vector<std::string>>;
using EnvLookup = std::function<const char*(const char*)>;

// Merges the sources and validates every value; InvalidArgument names the
// flag and its source (e.g. "LLMHOST_PORT: 'x' is not a port").
Result<ServeSettings> ResolveServeSettings(const SettingValues& cli, const EnvLookup& env);

// "32MB", "512KiB", "1g", "2T", "1048576" → bytes (K/M/G/T, with an optional
// B or iB, are powers of 1024).
Result<uint64_t> ParseByteSize(const std::string& text);
// A byte size, or "N%" when allow_percent, or "auto" when allow_auto.
Result<SizeSetting> ParseSizeSetting(const std::string& text, bool allow_percent, bool allow_auto);
// "LLMHOST_" + upper snake case of the flag name.
std::string EnvName(const std::string& flag);

}  // namespace llmhost::server
