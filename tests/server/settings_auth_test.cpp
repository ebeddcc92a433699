// Serve settings precedence (CLI > environment > settings.json > defaults),
// API-key auth, CORS.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "server/auth.h"
#include "server/cors.h"
#include "server/serve_settings.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::server::settings_auth_test {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(ServeSettings, Defaults) {
  FakeEnv env;
  env.vars["HOME"] = "/home/u";
  auto s = ResolveServeSettings({}, env.lookup());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->home, "/home/u/.llmhost");
  EXPECT_EQ(s->host, "127.0.0.1");
  EXPECT_EQ(s->port, 8000);
  EXPECT_EQ(s->model_dirs, std::vector<std::string>{"/home/u/.llmhost/models"});
  EXPECT_EQ(s->max_concurrent_requests, 8);
  EXPECT_EQ(s->max_queue, 32);  // max(4 × 8, 32)
  EXPECT_EQ(s->block_size, 256);
  EXPECT_EQ(s->prefill_chunk_tokens, 0);  // the device's default
  EXPECT_TRUE(s->api_keys.empty());
  EXPECT_EQ(s->sse_keepalive, KeepAliveMode::kChunk);
  EXPECT_EQ(s->max_body_size, 32ull << 20);
  EXPECT_TRUE(s->cors_origins.empty());
  EXPECT_TRUE(s->allowed_hosts.empty());
  EXPECT_EQ(s->max_connections, 10000);
  EXPECT_EQ(s->header_timeout, 30);
}

TEST(ServeSettings, ConnectionFlags) {
  FakeEnv env;
  env.vars["HOME"] = "/tmp";
  env.vars["LLMHOST_ALLOWED_HOSTS"] = "llm.lan,box.local";
  auto s = ResolveServeSettings({{"max-connections", {"500"}}, {"header-timeout", {"5"}}}, env.lookup());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->allowed_hosts, (std::vector<std::string>{"llm.lan", "box.local"}));
  EXPECT_EQ(s->max_connections, 500);
  EXPECT_EQ(s->header_timeout, 5);
  auto chunk = ResolveServeSettings({{"prefill-chunk-tokens", {"4096"}}}, env.lookup());
  ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
  EXPECT_EQ(chunk->prefill_chunk_tokens, 4096);
  auto tiny = ResolveServeSettings({{"prefill-chunk-tokens", {"8"}}}, env.lookup());
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("--prefill-chunk-tokens"), std::string::npos) << tiny.status().message();
  auto bad = ResolveServeSettings({{"max-connections", {"0"}}}, env.lookup());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--max-connections"), std::string::npos);
}

// --batch-invariant: unset unless given (the GPU's switch is then left as it
// is), on/off from the command line or the environment, anything else refused.
TEST(ServeSettings, BatchInvarianceIsOnOffOrLeftAlone) {
  FakeEnv env;
  env.vars["HOME"] = "/tmp";
  auto unset = ResolveServeSettings({}, env.lookup());
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_FALSE(unset->batch_invariant.has_value());
  auto off = ResolveServeSettings({{"batch-invariant", {"off"}}}, env.lookup());
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  ASSERT_TRUE(off->batch_invariant.has_value());
  EXPECT_FALSE(*off->batch_invariant);
  env.vars["LLMHOST_BATCH_INVARIANT"] = "on";
  auto from_env = ResolveServeSettings({}, env.lookup());
  ASSERT_TRUE(from_env.ok()) << from_env.status().ToString();
  ASSERT_TRUE(from_env->batch_invariant.has_value());
  EXPECT_TRUE(*from_env->batch_invariant);
  auto bad = ResolveServeSettings({{"batch-invariant", {"fast"}}}, env.lookup());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--batch-invariant"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("expected on or off"), std::string::npos) << bad.status().message();
}

// --ssl-cert and --ssl-key: both (from any source) or neither.
TEST(ServeSettings, TlsFilesComeInPairs) {
  FakeEnv env;
  env.vars["HOME"] = "/tmp";
  auto plain = ResolveServeSettings({}, env.lookup());
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->ssl_cert.empty());
  EXPECT_TRUE(plain->ssl_key.empty());
  env.vars["LLMHOST_SSL_KEY"] = "/etc/llmhost/key.pem";
  auto both = ResolveServeSettings({{"ssl-cert", {"/etc/llmhost/cert.pem"}}}, env.lookup());
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both->ssl_cert, "/etc/llmhost/cert.pem");
  EXPECT_EQ(both->ssl_key, "/etc/llmhost/key.pem");
  auto key_only = ResolveServeSettings({}, env.lookup());
  ASSERT_FALSE(key_only.ok());
  EXPECT_EQ(key_only.status().message(), "LLMHOST_SSL_KEY needs --ssl-cert too (the certificate of the key)");
  auto cert_only = ResolveServeSettings({{"ssl-cert", {"c.pem"}}}, FakeEnv{{{"HOME", "/tmp"}}}.lookup());
  ASSERT_FALSE(cert_only.ok());
  EXPECT_EQ(cert_only.status().message(), "--ssl-cert needs --ssl-key too (the certificate's private key)");
}

TEST(ServeSettings, LogFormat) {
  FakeEnv env;
  env.vars["HOME"] = "/tmp";
  EXPECT_EQ(ResolveServeSettings({}, env.lookup())->log_format, "text");
  env.vars["LLMHOST_LOG_FORMAT"] = "json";
  EXPECT_EQ(ResolveServeSettings({}, env.lookup())->log_format, "json");
  auto bad = ResolveServeSettings({{"log-format", {"xml"}}}, env.lookup());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--log-format: 'xml' (expected text or json)"), std::string::npos)
      << bad.status().message();
}

TEST(ServeSettings, CliBeatsEnvBeatsFileBeatsDefault) {
  const std::string home = testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(JoinPath(home, "settings.json"),
                              R"({"port": 9001, "max_concurrent_requests": 3, "host": "0.0.0.0",
                                  "api-key": ["file-key"], "block_size": 64, "unrelated": {"x": 1}})")
                  .ok());
  FakeEnv env;
  env.vars["LLMHOST_HOME"] = home;
  env.vars["LLMHOST_PORT"] = "9002";
  env.vars["LLMHOST_MAX_CONCURRENT_REQUESTS"] = "20";
  env.vars["LLMHOST_API_KEY"] = "k1, k2";
  SettingValues cli = {{"port", {"9003"}}, {"model-dir", {"/a", "/b"}}};
  auto s = ResolveServeSettings(cli, env.lookup());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->home, home);
  EXPECT_EQ(s->port, 9003);                    // CLI
  EXPECT_EQ(s->max_concurrent_requests, 20);  // environment over the file
  EXPECT_EQ(s->max_queue, 80);                 // max(4 × 20, 32)
  EXPECT_EQ(s->host, "0.0.0.0");               // file
  EXPECT_EQ(s->block_size, 64);                // file
  EXPECT_EQ(s->api_keys, (std::vector<std::string>{"k1", "k2"}));  // environment list
  EXPECT_EQ(s->model_dirs, (std::vector<std::string>{"/a", "/b"}));
  // Without the environment, the file's values show.
  FakeEnv env2;
  env2.vars["LLMHOST_HOME"] = home;
  auto f = ResolveServeSettings({}, env2.lookup());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->port, 9001);
  EXPECT_EQ(f->api_keys, std::vector<std::string>{"file-key"});
}

TEST(ServeSettings, DeviceAndGpuCeiling) {
  FakeEnv env;
  env.vars["HOME"] = "/tmp";
  auto d = ResolveServeSettings({}, env.lookup());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->device, "auto");
  EXPECT_EQ(d->gpu_memory_guard_gb, 0);
  env.vars["LLMHOST_DEVICE"] = "cpu";
  auto s = ResolveServeSettings({{"gpu-memory-guard-gb", {"7.5"}}}, env.lookup());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->device, "cpu");
  EXPECT_EQ(s->gpu_memory_guard_gb, 7.5);
  for (const char* bad : {"gpu", "cuda:", "cuda:x"}) {
    auto b = ResolveServeSettings({{"device", {bad}}}, FakeEnv{{{"HOME", "/tmp"}}}.lookup());
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("--device"), std::string::npos) << b.status().message();
  }
  // Any GPU by its CUDA number (whether it exists is checked when serve starts).
  auto one = ResolveServeSettings({{"device", {"cuda:1"}}}, FakeEnv{{{"HOME", "/tmp"}}}.lookup());
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->device, "cuda:1");
  auto zero = ResolveServeSettings({{"gpu-memory-guard-gb", {"0"}}}, FakeEnv{{{"HOME", "/tmp"}}}.lookup());
  EXPECT_FALSE(zero.ok());
}

TEST(ServeSettings, BadValuesNameTheirSource) {
  FakeEnv env;
  env.vars["HOME"] = testing::MakeTempDir();
  env.vars["LLMHOST_PORT"] = "eighty";
  auto s = ResolveServeSettings({}, env.lookup());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("LLMHOST_PORT"), std::string::npos) << s.status().message();
  auto k = ResolveServeSettings({{"sse-keepalive", {"sometimes"}}}, FakeEnv{{{"HOME", "/tmp"}}}.lookup());
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("--sse-keepalive"), std::string::npos);
  auto b = ResolveServeSettings({{"max-body-size", {"12 parsecs"}}}, FakeEnv{{{"HOME", "/tmp"}}}.lookup());
  ASSERT_FALSE(b.ok());
  const std::string home = testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(JoinPath(home, "settings.json"), "[1, 2").ok());
  auto f = ResolveServeSettings({{"home", {home}}}, FakeEnv{}.lookup());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("settings.json"), std::string::npos);
}

TEST(ServeSettings, MemoryGuardFlagsFromEverySource) {
  FakeEnv env;
  env.vars["HOME"] = "/tmp";
  auto d = ResolveServeSettings({}, env.lookup());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->memory_guard, "balanced");
  EXPECT_EQ(d->memory_guard_gb, 0);
  EXPECT_TRUE(d->prefill_guard);
  EXPECT_EQ(d->model_wait_timeout, 120);
  EXPECT_EQ(d->idle_ttl, 0);
  // --memory-guard-gb (fractions allowed) implies custom.
  auto c = ResolveServeSettings({{"memory-guard-gb", {"1.5"}}, {"prefill-guard", {"off"}},
                                 {"model-wait-timeout", {"2.5"}}, {"idle-ttl", {"600"}}},
                                env.lookup());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->memory_guard, "custom");
  EXPECT_DOUBLE_EQ(c->memory_guard_gb, 1.5);
  EXPECT_FALSE(c->prefill_guard);
  EXPECT_DOUBLE_EQ(c->model_wait_timeout, 2.5);
  EXPECT_EQ(c->idle_ttl, 600);
  // Environment and settings.json (a fractional number in JSON).
  const std::string home = testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(JoinPath(home, "settings.json"),
                              R"({"memory_guard": "aggressive", "idle_ttl": 30, "memory_guard_gb": 0.75})")
                  .ok());
  FakeEnv env2;
  env2.vars["LLMHOST_HOME"] = home;
  env2.vars["LLMHOST_MEMORY_GUARD"] = "safe";
  auto e = ResolveServeSettings({}, env2.lookup());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->memory_guard, "custom");  // the file's ceiling wins over the tier: it implies custom
  EXPECT_DOUBLE_EQ(e->memory_guard_gb, 0.75);
  EXPECT_EQ(e->idle_ttl, 30);
  // Errors name their source.
  struct Bad {
    SettingValues cli;
    const char* text;
  } bad[] = {
      {{{"memory-guard", {"huge"}}}, "--memory-guard: 'huge'"},
      {{{"memory-guard", {"custom"}}}, "needs --memory-guard-gb"},
      {{{"memory-guard", {"off"}}, {"memory-guard-gb", {"2"}}}, "contradicts --memory-guard-gb"},
      {{{"memory-guard-gb", {"0"}}}, "--memory-guard-gb"},
      {{{"memory-guard-gb", {"lots"}}}, "--memory-guard-gb: 'lots'"},
      {{{"prefill-guard", {"maybe"}}}, "--prefill-guard: 'maybe'"},
      {{{"model-wait-timeout", {"-1"}}}, "--model-wait-timeout"},
      {{{"idle-ttl", {"1.5"}}}, "--idle-ttl"},
  };
  for (const Bad& b : bad) {
    auto r = ResolveServeSettings(b.cli, env.lookup());
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_NE(r.status().message().find(b.text), std::string::npos) << r.status().message();
  }
}

TEST(ServeSettings, ByteSizesAndEnvNames) {
  EXPECT_EQ(*ParseByteSize("32MB"), 32ull << 20);
  EXPECT_EQ(*ParseByteSize("512kib"), 512ull << 10);
  EXPECT_EQ(*ParseByteSize("1g"), 1ull << 30);
  EXPECT_EQ(*ParseByteSize("1048576"), 1048576ull);
  EXPECT_FALSE(ParseByteSize("MB").ok());
  EXPECT_FALSE(ParseByteSize("-5MB").ok());
  EXPECT_EQ(EnvName("max-concurrent-requests"), "LLMHOST_MAX_CONCURRENT_REQUESTS");
  EXPECT_EQ(EnvName("api-key"), "LLMHOST_API_KEY");
}

TEST(ServeSettings, KvCacheFlags) {
  auto d = ResolveServeSettings({{"home", {"/h"}}}, [](const char*) -> const char* { return nullptr; });
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cache_mode, "write-back");
  EXPECT_EQ(d->cache_dir, "/h/cache");
  EXPECT_EQ(d->hot_cache_max_size.Resolve(1000), 100u);  // 10% of RAM
  EXPECT_EQ(d->ssd_cache_max_size.Resolve(0), 100ull << 30);

  auto s = ResolveServeSettings({{"home", {"/h"}},
                                 {"cache-mode", {"hot-only"}},
                                 {"hot-cache-max-size", {"2GiB"}},
                                 {"cache-dir", {"/ssd/kv"}},
                                 {"ssd-cache-max-size", {"auto"}}},
                                [](const char*) -> const char* { return nullptr; });
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->cache_mode, "hot-only");
  EXPECT_EQ(s->hot_cache_max_size.Resolve(1000), 2ull << 30);
  EXPECT_EQ(s->cache_dir, "/ssd/kv");
  EXPECT_TRUE(s->ssd_cache_max_size.is_auto);

  auto env = ResolveServeSettings({{"home", {"/h"}}}, [](const char* n) -> const char* {
    return std::string(n) == "LLMHOST_HOT_CACHE_MAX_SIZE" ? "25%" : nullptr;
  });
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->hot_cache_max_size.Resolve(4000), 1000u);

  auto bad_mode = ResolveServeSettings({{"cache-mode", {"sometimes"}}}, [](const char*) -> const char* { return nullptr; });
  ASSERT_FALSE(bad_mode.ok());
  EXPECT_NE(bad_mode.status().message().find("--cache-mode"), std::string::npos) << bad_mode.status().message();
  EXPECT_NE(bad_mode.status().message().find("write-through"), std::string::npos) << bad_mode.status().message();
  EXPECT_FALSE(ParseSizeSetting("150%", true, false).ok());
  EXPECT_FALSE(ParseSizeSetting("0%", true, false).ok());
  auto no_pct = ParseSizeSetting("10%", false, true);  // the SSD cap takes no percentage
  ASSERT_FALSE(no_pct.ok());
  EXPECT_NE(no_pct.status().message().find("; or auto"), std::string::npos) << no_pct.status().message();
  EXPECT_FALSE(ParseSizeSetting("auto", true, false).ok());  // nor the hot tier auto
  EXPECT_EQ(ParseSizeSetting("1.5%", true, false)->percent, 1.5);
  EXPECT_EQ(*ParseByteSize("2TB"), 2ull << 40);
  EXPECT_FALSE(ParseByteSize("99999999999999T").ok());  // overflow
}

HttpRequest WithHeaders(HeaderList h) {
  HttpRequest r;
  r.headers = std::move(h);
  return r;
}

TEST(ApiKeyAuth, OpenBearerXApiKeyAndErrors) {
  EXPECT_FALSE(ApiKeyAuth({}).Check(HttpRequest{}));
  ApiKeyAuth auth({"secret-1", "secret-2"});
  EXPECT_FALSE(auth.Check(WithHeaders({{"authorization", "Bearer secret-1"}})));
  EXPECT_FALSE(auth.Check(WithHeaders({{"authorization", "bearer  secret-2 "}})));
  EXPECT_FALSE(auth.Check(WithHeaders({{"x-api-key", "secret-2"}})));
  auto missing = auth.Check(HttpRequest{});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 401);
  EXPECT_NE(missing->message.find("API key required"), std::string::npos);
  auto wrong = auth.Check(WithHeaders({{"authorization", "Bearer secret-3"}}));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->message, "Invalid API key");
  EXPECT_TRUE(auth.Check(WithHeaders({{"x-api-key", "secret-1x"}})));
  EXPECT_TRUE(auth.Check(WithHeaders({{"authorization", "Basic secret-1"}})));
}

TEST(Cors, AllowedOriginsAndPreflight) {
  CorsPolicy none({});
  HttpRequest r = WithHeaders({{"origin", "http://app.local:3000"},
                               {"access-control-request-headers", "authorization, content-type"}});
  EXPECT_TRUE(none.ResponseHeaders(r).empty());
  EXPECT_EQ(none.Preflight(r).status, 403);
  CorsPolicy some({"http://app.local:3000/"});
  HeaderList h = some.ResponseHeaders(r);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0], (std::pair<std::string, std::string>{"Access-Control-Allow-Origin", "http://app.local:3000"}));
  HttpResponse p = some.Preflight(r);
  EXPECT_EQ(p.status, 204);
  bool methods = false, headers = false;
  for (auto& [k, v] : p.headers) {
    methods |= k == "Access-Control-Allow-Methods" && v.find("POST") != std::string::npos;
    headers |= k == "Access-Control-Allow-Headers" && v == "authorization, content-type";
  }
  EXPECT_TRUE(methods);
  EXPECT_TRUE(headers);
  EXPECT_TRUE(some.ResponseHeaders(WithHeaders({{"origin", "http://evil.example"}})).empty());
  EXPECT_FALSE(CorsPolicy({"*"}).ResponseHeaders(WithHeaders({{"origin", "http://x"}})).empty());
}

}  // namespace
}  // namespace llmhost::server::settings_auth_test
