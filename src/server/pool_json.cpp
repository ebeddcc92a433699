#include "server/pool_json.h"

#include <cstdio>

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json BudgetJson(const MemoryLimits& l, uint64_t usage, uint64_t committed) {
  return Json{{"ceiling_bytes", l.admission_ceiling},
              {"soft_bytes", l.soft_bytes},
              {"hard_bytes", l.hard_bytes},
              {"usage_bytes", usage},
              {"committed_bytes", committed},
              {"level", PressureLevelName(LevelFor(usage, l))},
              {"static_ceiling_bytes", l.static_ceiling},
              {"dynamic_ceiling_bytes", l.dynamic_ceiling},
              {"prefill_limit_bytes", l.prefill_limit}};
}

}  // namespace

Json ModelStatusJson(const ModelStatus& m, bool detail) {
  Json j = {{"id", m.id},
            {"alias", OrNull(m.alias)},
            {"kind", ModelKindName(m.kind)},
            {"loaded", m.loaded},
            {"loading", m.loading},
            {"pinned", m.pinned},
            {"memory_bytes", m.memory_bytes},
            {"estimated_bytes", m.estimated_bytes},
            {"last_access", OrNull(m.last_access)},
            {"ttl_seconds", OrNull(m.ttl_seconds)},
            {"active_requests", m.active_requests},
            {"max_context_window", OrNull(m.max_context_window)},
            {"gpu", OrNull(m.gpu)}};
  if (detail) {
    j["path"] = m.path;
    j["type"] = m.type;
    j["weight_bytes"] = m.weight_bytes;
    j["pending_unload"] = m.pending_unload;
    j["default"] = m.is_default;
    j["hidden"] = m.hidden;
    j["waiting_requests"] = m.waiting_requests;
    j["load_error"] = OrNull(m.load_error);
  }
  return j;
}

void SendJson(const std::shared_ptr<ResponseWriter>& writer, const Json& j, int status) {
  HttpResponse r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  writer->Send(std::move(r));
}

Json MemoryJson(const MemorySnapshot& m, double load_seconds_per_gb) {
  const MemoryLimits& h = m.host;
  Json j = BudgetJson(h, m.usage, m.committed[0]);
  j["level"] = PressureLevelName(m.level);  // the worse of both budgets
  j["guard"] = h.guard_on;
  j["tier"] = GuardTierName(h.tier);
  j["binding"] = h.Describe();
  j["footprint_bytes"] = m.footprint;
  j["pss_bytes"] = m.pss;
  j["device_active_bytes"] = m.device_active[0];
  j["cache_bytes"] = m.cache_bytes;
  j["total_bytes"] = h.total;
  j["available_bytes"] = m.system.EffectiveAvailable();
  j["cgroup_limit_bytes"] = m.system.cgroup_limit;
  j["admission_paused"] = m.admission_paused;
  j["load_seconds_per_gb"] = load_seconds_per_gb;
  // Every GPU models may be placed on, each its own budget; "device" is the
  // first of them (one-GPU servers read it alone).
  Json devices = Json::array();
  for (size_t n = 0; n < m.devices.size(); ++n) {
    const DeviceBudgetSnapshot& d = m.devices[n];
    if (!d.present) continue;
    Json e = BudgetJson(d.limits, d.usage, m.committed[BudgetIndex(GpuBudget(static_cast<int>(n)))]);
    e["gpu"] = d.gpu;
    e["cuda_index"] = d.cuda_index;
    devices.push_back(std::move(e));
  }
  if (!devices.empty()) {
    j["device"] = devices[0];
    j["devices"] = devices;
    Json gpus = Json::array();
    for (const GpuMemory& g : m.gpus) {
      bool budgeted = false;
      for (const DeviceBudgetSnapshot& d : m.devices) budgeted = budgeted || (d.present && d.gpu == g.index);
      Json e = {{"index", g.index},           {"name", g.name},
                {"total_bytes", g.total_bytes}, {"free_bytes", g.free_bytes},
                {"used_bytes", g.used_bytes},   {"budgeted", budgeted}};
      if (g.pci.known()) {
        char id[32];
        std::snprintf(id, sizeof(id), "%04x:%02x:%02x.0", g.pci.domain, g.pci.bus, g.pci.device);
        e["pci_bus_id"] = id;
      }
      gpus.push_back(std::move(e));
    }
    j["gpus"] = std::move(gpus);
  }
  return j;
}

}  // namespace llmhost::server
