// libFuzzer target: per-model settings (the admin API's PUT body and
// model_settings.json) and the memory probes' text parsers on arbitrary
// bytes. A patch that applies must survive a round trip through its JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pool/memory_probe.h"
#include "pool/model_discovery.h"
#include "pool/model_settings.h"
#include "util/json.h"

using namespace llmhost;

static volatile uint64_t g_sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // As the admin route and the settings file read it: bounded.
  Result<nlohmann::json> parsed = ParseJson(text, "fuzz", kJsonSettingsMaxBytes);
  if (parsed.ok()) {
    const nlohmann::json& j = *parsed;
    Result<ModelSettings> s = ApplyModelSettingsJson(ModelSettings(), j);
    if (s.ok()) {
      Result<ModelSettings> again = ApplyModelSettingsJson(ModelSettings(), ModelSettingsToJson(*s));
      if (!again.ok() || !(*again == *s)) std::abort();
      g_sink = s->RuntimeKey().size();
    }
  }
  g_sink = ParseSmapsRollup(text).rss_bytes + ParseProcStatus(text).rss_bytes + ParseCgroupLimit(text) +
           ParseKeyValue(text, "inactive_file") + ParseCgroupPath(text).size() +
           ParseCgroupPath(text, "memory").size() + HfCacheModelId(std::string(text)).size();
  SystemMemory m;
  ParseMeminfo(text, &m);
  g_sink = m.EffectiveAvailable() + m.EffectiveTotal();
  return 0;
}
