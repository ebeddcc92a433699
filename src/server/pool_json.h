// JSON shapes of the engine pool's status, shared by /v1/models/status,
// /api/status and the admin API.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>

#include "kv/tiered_block_store.h"
#include "pool/engine_pool.h"
#include "server/http_types.h"

namespace llmhost::server {

// {"id","alias","loaded","loading","pinned","memory_bytes","estimated_bytes",
//  "last_access","ttl_seconds","active_requests","max_context_window"}; with
// `detail`, also path, type, weight_bytes, pending_unload, default, hidden,
// waiting_requests and load_error.
nlohmann::ordered_json ModelStatusJson(const ModelStatus& m, bool detail);

// {"ceiling_bytes","soft_bytes","hard_bytes","usage_bytes","committed_bytes",
//  "level", ...}: the host budget's figures, the readings behind them and,
//  on a GPU machine, the device budget.
nlohmann::ordered_json MemoryJson(const MemorySnapshot& m, double load_seconds_per_gb);

// The KV cache tiers (routes_cache.cpp): {"mode", "saves", "loads", "hits",
// "misses", "errors", "inline_writes", "hot":{...}, "pending":{...},
// "ssd":{...}, "models":{id:{saves, loads, hits, misses, errors}}}.
nlohmann::ordered_json CacheJson(const TieredBlockStore& store);

// Sends `j` as the body (JSON) with `status`.
void SendJson(const std::shared_ptr<ResponseWriter>& writer, const nlohmann::ordered_json& j, int status = 200);

}  // namespace llmhost::server
