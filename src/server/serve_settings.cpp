#include "server/serve_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include <nlohmann/json.hpp>

#include "backend/device.h"
#include "kv/block_store.h"
#include "model/kv_cache.h"
#include "pool/memory_limits.h"
#include "util/file.h"
#include "util/json.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

// Where a value came from, for error messages.
struct Value {
  std::vector<std::string> items;
  std::string source;  // "--port", "LLMHOST_PORT", "settings.json: port"
};

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

std::string SnakeCase(const std::string& flag) {
  std::string s = flag;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

// settings.json → values by flag name. Unknown keys are left for other
// parts of llmhost (per-model settings, later issues).
Result<std::map<std::string, Value>> ReadSettingsFile(const std::string& path) {
  std::map<std::string, Value> out;
  if (!FileExists(path)) return out;
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path, kJsonSettingsMaxBytes));
  if (!j.is_object()) {
    return Status::InvalidArgument(path + ": not a JSON object");
  }
  for (const ServeFlag& f : ServeFlags()) {
    for (const std::string& key : {SnakeCase(f.name), std::string(f.name)}) {
      auto it = j.find(key);
      if (it == j.end() || it->is_null()) continue;
      Value v;
      v.source = path + ": " + key;
      auto add = [&](const nlohmann::json& x) -> Status {
        if (x.is_string()) {
          v.items.push_back(x.get<std::string>());
        } else if (x.is_number_integer() || x.is_number_unsigned()) {
          v.items.push_back(std::to_string(x.get<int64_t>()));
        } else if (x.is_number_float()) {
          v.items.push_back(x.dump());
        } else if (x.is_boolean()) {
          v.items.push_back(x.get<bool>() ? "true" : "false");
        } else {
          return Status::InvalidArgument(v.source + ": expected a string or a number");
        }
        return Status::OK();
      };
      if (it->is_array()) {
        for (const auto& x : *it) RETURN_IF_ERROR(add(x));
      } else {
        RETURN_IF_ERROR(add(*it));
      }
      out[f.name] = std::move(v);
      break;
    }
  }
  return out;
}

Result<double> ParseNumber(const Value& v, double min, double max) {
  const std::string& s = v.items.back();
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno != 0 || !(x >= min && x <= max)) {
    return Status::InvalidArgument(v.source + ": '" + s + "' is not a number in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "]");
  }
  return x;
}

Result<int> ParseInt(const Value& v, int min, int max) {
  const std::string& s = v.items.back();
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || x < min || x > max) {
    return Status::InvalidArgument(v.source + ": '" + s + "' is not an integer in [" +
                                   std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int>(x);
}

Result<bool> ParseOnOff(const Value& v) {
  const std::string& s = v.items.back();
  if (s == "on" || s == "true" || s == "1") return true;
  if (s == "off" || s == "false" || s == "0") return false;
  return Status::InvalidArgument(v.source + ": '" + s + "' (expected on or off)");
}

std::string DefaultHome(const EnvLookup& env) {
  const char* home = env("HOME");
  return JoinPath(home && *home ? home : "/tmp", ".llmhost");
}

}  // namespace

const std::vector<ServeFlag>& ServeFlags() {
  static const std::vector<ServeFlag> kFlags = {
      {"home", false, "settings, model settings and cache (default ~/.llmhost)"},
      {"host", false, "address to listen on (default 127.0.0.1)"},
      {"port", false, "port to listen on; 0 picks a free one (default 8000)"},
      {"model-dir", true,
       "a directory of models, or one random-weights model (random:ARCH:DTYPE:CONFIG.json[:SEED], generated in "
       "memory); repeatable (default <home>/models)"},
      {"max-concurrent-requests", false, "requests decoded together (default 8)"},
      {"max-queue", false, "requests waiting beyond those; more get 503 (default max(4 x concurrent, 32))"},
      {"block-size", false, "KV cache block size in tokens (default 256)"},
      {"prefill-chunk-tokens", false,
       "prompt tokens prefilled in one step beside the running streams (default 512 on the CPU, 2048 on a GPU)"},
      {"api-key", true, "require this API key (Bearer or x-api-key); repeatable (default: open)"},
      {"sse-keepalive", false, "keep-alive while a prompt is prefilled: chunk, comment or off (default chunk)"},
      {"max-body-size", false, "largest request body, e.g. 32MB (default 32MB)"},
      {"cors-origins", true, "origins allowed to call from a browser ('*': any); repeatable (default none)"},
      {"allowed-hosts", true,
       "Host names a loopback server without --api-key answers besides localhost and loopback addresses "
       "('*': any); repeatable (default none)"},
      {"max-connections", false, "open client connections; more are answered 503 and closed (default 10000)"},
      {"header-timeout", false,
       "seconds a client may take to send a request's headers, or to finish a TLS handshake (default 30)"},
      {"drain-timeout", false, "seconds to let requests finish on SIGTERM/SIGINT (default 30)"},
      {"io-threads", false, "HTTP I/O threads (default 2)"},
      {"stats-interval", false, "seconds between the dashboard's chart samples, kept for an hour (default 5)"},
      {"ssl-cert", false,
       "serve HTTPS (TLS 1.2+) only, with this PEM certificate (chain: the server's first); needs --ssl-key"},
      {"ssl-key", false, "the PEM private key (unencrypted) of --ssl-cert"},
      {"precision", false,
       "CPU matmul precision: auto (default: int8 activations for quantized weights, AMX-BF16 prompts where the "
       "CPU has it), fast, fast-int8, fast-bf16 (AMX) or f32"},
      {"kv-dtype", false,
       "KV cache element type: auto (the model's 16-bit type: bf16 for bf16 weights, else f16), bf16, f16 or f32 "
       "(default auto)"},
      {"device", false,
       "where models compute: auto (the GPUs when this build has CUDA and the machine has GPUs, else the CPU; "
       "default), cpu, cuda (every GPU, each its own memory budget: a model loads on the one where it fits with "
       "the fewest evictions) or cuda:N (that GPU alone: the CUDA device number, as CUDA_VISIBLE_DEVICES renumbers "
       "them); a model's own `device` setting overrides it"},
      {"tensor-parallel", false,
       "split each model over N GPUs (tensor parallelism over NCCL; default 1); a model's own "
       "`tensor_parallel` setting overrides it"},
      {"log-format", false,
       "stderr log lines: text (default) or json (one object per line with ts, level, msg, request_id)"},
      {"gpu-memory-guard-gb", false,
       "the GPU's memory ceiling in GiB, fractions allowed (default: its memory less max(512 MiB, 5%))"},
      {"memory-guard", false,
       "memory guard tier: off, safe, balanced, aggressive or custom (default balanced)"},
      {"memory-guard-gb", false, "custom memory ceiling in GiB, fractions allowed; implies --memory-guard custom"},
      {"prefill-guard", false, "refuse prompts whose prefill would exceed memory: on or off (default on)"},
      {"batch-invariant", false,
       "on (default): a GPU gives a token the same bits alone and in any batch; off: past 8 sequences a step's "
       "generated tokens of 16-bit weights go to cuBLASLt, faster at large batches (on an H100, 128 streams of an "
       "8B model: +66%), in bits that depend on the batch (as LLMHOST_CUDA_BATCH_INVARIANT=off)"},
      {"model-wait-timeout", false,
       "seconds a request may wait for its model to load or for memory, then 503 (default 120)"},
      {"idle-ttl", false, "seconds a model may stay idle before it is unloaded; 0: never (default 0)"},
      {"cache-mode", false,
       "KV cache tiers: write-back, write-through, hot-only or off (default write-back)"},
      {"hot-cache-max-size", false,
       "RAM for KV blocks, shared by all models: a size (e.g. 4GB) or a share of RAM (e.g. 10%) (default 10%)"},
      {"cache-dir", false, "folder of the SSD tier of the KV cache (default <home>/cache)"},
      {"ssd-cache-max-size", false,
       "disk for KV blocks: a size (e.g. 100GB) or auto = half of free space + the cache (default 100GB)"},
  };
  return kFlags;
}

std::string EnvName(const std::string& flag) {
  std::string s = "LLMHOST_";
  for (char c : flag) s += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Result<uint64_t> ParseByteSize(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (c != ' ') s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i > 15) return Status::InvalidArgument("'" + text + "' is not a size (e.g. 32MB)");
  uint64_t n = std::stoull(s.substr(0, i));
  std::string unit = s.substr(i);
  uint64_t mult = 1;
  if (unit.empty() || unit == "b") {
    mult = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    mult = 1ull << 10;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    mult = 1ull << 20;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    mult = 1ull << 30;
  } else if (unit == "t" || unit == "tb" || unit == "tib") {
    mult = 1ull << 40;
  } else {
    return Status::InvalidArgument("'" + text + "': unknown size unit (use B, KB, MB, GB or TB)");
  }
  if (n > UINT64_MAX / mult) return Status::InvalidArgument("'" + text + "' is too large");
  return n * mult;
}

Result<SizeSetting> ParseSizeSetting(const std::string& text, bool allow_percent, bool allow_auto) {
  SizeSetting out;
  if (allow_auto && text == "auto") {
    out.is_auto = true;
    return out;
  }
  if (allow_percent && !text.empty() && text.back() == '%') {
    char* end = nullptr;
    const std::string num = text.substr(0, text.size() - 1);
    const double p = std::strtod(num.c_str(), &end);
    if (num.empty() || end != num.c_str() + num.size() || !(p > 0) || p > 100) {
      return Status::InvalidArgument("'" + text + "': a percentage must be in (0, 100]");
    }
    out.percent = p;
    return out;
  }
  auto bytes = ParseByteSize(text);
  if (!bytes.ok()) {
    std::string also;
    if (allow_percent) also = "a percentage of RAM such as 10%";
    if (allow_auto) also += std::string(also.empty() ? "" : " or ") + "auto";
    return Status::InvalidArgument(bytes.status().message() + (also.empty() ? "" : "; or " + also));
  }
  out.bytes = *bytes;
  return out;
}

uint64_t SizeSetting::Resolve(uint64_t base) const {
  if (percent > 0) return static_cast<uint64_t>(static_cast<double>(base) * percent / 100.0);
  return bytes;
}

std::string SizeSetting::ToString() const {
  if (is_auto) return "auto";
  if (percent > 0) {
    std::string p = std::to_string(percent);
    p.erase(p.find_last_not_of('0') + 1);
    if (!p.empty() && p.back() == '.') p.pop_back();
    return p + "%";
  }
  return std::to_string(bytes);
}

Result<ServeSettings> ResolveServeSettings(const SettingValues& cli, const EnvLookup& env) {
  ServeSettings s;
  // --home first: it locates settings.json.
  if (auto it = cli.find("home"); it != cli.end() && !it->second.empty()) {
    s.home = it->second.back();
  } else if (const char* h = env("LLMHOST_HOME"); h && *h) {
    s.home = h;
  } else {
    s.home = DefaultHome(env);
  }
  ASSIGN_OR_RETURN(auto file, ReadSettingsFile(JoinPath(s.home, "settings.json")));

  auto lookup = [&](const ServeFlag& f) -> std::optional<Value> {
    if (auto it = cli.find(f.name); it != cli.end() && !it->second.empty()) {
      Value v{it->second, std::string("--") + f.name};
      if (f.list) {  // --api-key a,b is two keys, like the environment's list
        std::vector<std::string> items;
        for (const auto& x : it->second) {
          for (auto& y : SplitList(x)) items.push_back(y);
        }
        v.items = items;
      }
      return v;
    }
    const std::string name = EnvName(f.name);
    if (const char* e = env(name.c_str()); e && *e) {
      return Value{f.list ? SplitList(e) : std::vector<std::string>{e}, name};
    }
    if (auto it = file.find(f.name); it != file.end()) return it->second;
    return std::nullopt;
  };

  std::string guard_source;  // where --memory-guard came from, for errors
  std::pair<std::string, std::string> tls_sources;  // where --ssl-cert and --ssl-key came from
  for (const ServeFlag& f : ServeFlags()) {
    const std::string name = f.name;
    if (name == "home") continue;
    std::optional<Value> v = lookup(f);
    if (!v || v->items.empty()) continue;
    const std::string& last = v->items.back();
    if (name == "host") {
      s.host = last;
    } else if (name == "port") {
      ASSIGN_OR_RETURN(s.port, ParseInt(*v, 0, 65535));
    } else if (name == "model-dir") {
      s.model_dirs = v->items;
    } else if (name == "max-concurrent-requests") {
      ASSIGN_OR_RETURN(s.max_concurrent_requests, ParseInt(*v, 1, 4096));
    } else if (name == "max-queue") {
      ASSIGN_OR_RETURN(s.max_queue, ParseInt(*v, 0, 1 << 20));
    } else if (name == "block-size") {
      ASSIGN_OR_RETURN(s.block_size, ParseInt(*v, 1, 1 << 16));
    } else if (name == "prefill-chunk-tokens") {
      ASSIGN_OR_RETURN(s.prefill_chunk_tokens, ParseInt(*v, 16, 1 << 16));
    } else if (name == "api-key") {
      s.api_keys = v->items;
    } else if (name == "sse-keepalive") {
      if (last == "chunk") {
        s.sse_keepalive = KeepAliveMode::kChunk;
      } else if (last == "comment") {
        s.sse_keepalive = KeepAliveMode::kComment;
      } else if (last == "off") {
        s.sse_keepalive = KeepAliveMode::kOff;
      } else {
        return Status::InvalidArgument(v->source + ": '" + last + "' (expected chunk, comment or off)");
      }
    } else if (name == "max-body-size") {
      auto bytes = ParseByteSize(last);
      if (!bytes.ok()) return Status::InvalidArgument(v->source + ": " + bytes.status().message());
      if (*bytes < 1024) return Status::InvalidArgument(v->source + ": at least 1KB");
      s.max_body_size = *bytes;
    } else if (name == "cors-origins") {
      s.cors_origins = v->items;
    } else if (name == "allowed-hosts") {
      s.allowed_hosts = v->items;
    } else if (name == "max-connections") {
      ASSIGN_OR_RETURN(s.max_connections, ParseInt(*v, 1, 1 << 24));
    } else if (name == "header-timeout") {
      ASSIGN_OR_RETURN(s.header_timeout, ParseInt(*v, 1, 3600));
    } else if (name == "drain-timeout") {
      ASSIGN_OR_RETURN(s.drain_timeout, ParseInt(*v, 0, 3600));
    } else if (name == "io-threads") {
      ASSIGN_OR_RETURN(s.io_threads, ParseInt(*v, 1, 64));
    } else if (name == "tensor-parallel") {
      ASSIGN_OR_RETURN(s.tensor_parallel, ParseInt(*v, 1, 64));
    } else if (name == "stats-interval") {
      ASSIGN_OR_RETURN(s.stats_interval, ParseInt(*v, 1, 60));
    } else if (name == "ssl-cert") {
      s.ssl_cert = last;
      tls_sources.first = v->source;
    } else if (name == "ssl-key") {
      s.ssl_key = last;
      tls_sources.second = v->source;
    } else if (name == "memory-guard") {
      auto tier = ParseGuardTier(last);
      if (!tier.ok()) return Status::InvalidArgument(v->source + ": " + tier.status().message());
      s.memory_guard = GuardTierName(*tier);
      guard_source = v->source;
    } else if (name == "memory-guard-gb") {
      ASSIGN_OR_RETURN(s.memory_guard_gb, ParseNumber(*v, 0, 1 << 20));
      if (s.memory_guard_gb <= 0) return Status::InvalidArgument(v->source + ": the ceiling must be above 0 GiB");
    } else if (name == "prefill-guard") {
      ASSIGN_OR_RETURN(s.prefill_guard, ParseOnOff(*v));
    } else if (name == "batch-invariant") {
      ASSIGN_OR_RETURN(s.batch_invariant, ParseOnOff(*v));
    } else if (name == "model-wait-timeout") {
      ASSIGN_OR_RETURN(s.model_wait_timeout, ParseNumber(*v, 0, 86400));
    } else if (name == "idle-ttl") {
      if (last == "none" || last == "off") {
        s.idle_ttl = 0;
      } else {
        ASSIGN_OR_RETURN(s.idle_ttl, ParseInt(*v, 0, 365 * 24 * 3600));
      }
    } else if (name == "cache-mode") {
      auto mode = ParseCacheMode(last);
      if (!mode.ok()) return Status::InvalidArgument(v->source + ": " + mode.status().message());
      s.cache_mode = CacheModeName(*mode);
    } else if (name == "hot-cache-max-size" || name == "ssd-cache-max-size") {
      const bool hot = name == "hot-cache-max-size";
      auto size = ParseSizeSetting(last, /*allow_percent=*/hot, /*allow_auto=*/!hot);
      if (!size.ok()) return Status::InvalidArgument(v->source + ": " + size.status().message());
      (hot ? s.hot_cache_max_size : s.ssd_cache_max_size) = *size;
    } else if (name == "cache-dir") {
      s.cache_dir = last;
    } else if (name == "kv-dtype") {
      if (!ParseKvDtype(last).ok()) {
        return Status::InvalidArgument(v->source + ": '" + last + "' (expected auto, f32, bf16, f16 or fp8)");
      }
      s.kv_dtype = last;
    } else if (name == "device") {
      auto d = ParseDevice(last);
      if (!d.ok()) return Status::InvalidArgument(v->source + ": " + d.status().message());
      s.device = last;
    } else if (name == "log-format") {
      auto format = ParseLogFormat(last);
      if (!format.ok()) return Status::InvalidArgument(v->source + ": " + format.status().message());
      s.log_format = last;
    } else if (name == "gpu-memory-guard-gb") {
      ASSIGN_OR_RETURN(s.gpu_memory_guard_gb, ParseNumber(*v, 0, 1 << 20));
      if (s.gpu_memory_guard_gb <= 0) return Status::InvalidArgument(v->source + ": the ceiling must be above 0 GiB");
    } else if (name == "precision") {
      if (last != "auto" && last != "fast" && last != "fast-int8" && last != "fast-bf16" && last != "f32") {
        return Status::InvalidArgument(v->source + ": '" + last +
                                       "' (expected auto, fast, fast-int8, fast-bf16 or f32)");
      }
      s.precision = last;
    }
  }
  // A custom ceiling implies the custom tier; the custom tier needs one.
  if (s.memory_guard_gb > 0 && s.memory_guard != "custom") {
    if (s.memory_guard == "off" && !guard_source.empty()) {
      return Status::InvalidArgument(guard_source + ": 'off' contradicts --memory-guard-gb (a custom ceiling)");
    }
    s.memory_guard = "custom";
  }
  if (s.memory_guard == "custom" && s.memory_guard_gb <= 0) {
    return Status::InvalidArgument(guard_source + ": the custom tier needs --memory-guard-gb (the ceiling in GiB)");
  }
  if (s.ssl_cert.empty() != s.ssl_key.empty()) {
    return Status::InvalidArgument(s.ssl_cert.empty()
                                       ? tls_sources.second + " needs --ssl-cert too (the certificate of the key)"
                                       : tls_sources.first + " needs --ssl-key too (the certificate's private key)");
  }
  if (s.model_dirs.empty()) s.model_dirs.push_back(JoinPath(s.home, "models"));
  if (s.cache_dir.empty()) s.cache_dir = JoinPath(s.home, "cache");
  if (s.max_queue == 0) s.max_queue = std::max(4 * s.max_concurrent_requests, 32);
  return s;
}

}  // namespace llmhost::server
