// The Bench page's kept results: the newest `max_results` records in memory,
// each written through to one JSON file (an array, newest first, replaced
// atomically: util/file.h WriteFileAtomic) so that they outlive a restart.
// A record is an object with a string "id" (routes_bench.cpp makes them:
// id, model, created, params, result); the store keeps it as given.
//
// Thread safety: every method may be called from any thread. The file is
// written under the store's lock (records are small; writes are rare).
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost::server {

class BenchStore {
 public:
  static constexpr size_t kDefaultMaxResults = 50;
  static constexpr size_t kMaxFileBytes = size_t{8} << 20;

  // `file` "": in memory only.
  explicit BenchStore(std::string file, size_t max_results = kDefaultMaxResults);

  // Reads the file when there is one (none: OK, empty). Records that are not
  // objects with a string id are skipped; past max_results the oldest go.
  // A file that is not a JSON array within kMaxFileBytes: Corruption naming
  // it (the store stays empty; the next Add replaces the file).
  Status Load();

  // Keeps `record` as the newest (one with the same id replaced) and writes
  // the file. The record stays in memory when the write fails (the error).
  Status Add(nlohmann::ordered_json record);
  // False when no record has `id`; an I/O error when the file could not be written.
  Result<bool> Remove(const std::string& id);

  std::vector<nlohmann::ordered_json> List() const;  // newest first
  std::optional<nlohmann::ordered_json> Get(const std::string& id) const;
  const std::string& file() const { return file_; }

 private:
  Status Save() const;  // with mu_ held

  const std::string file_;
  const size_t max_results_;
  mutable std::mutex mu_;
  std::vector<nlohmann::ordered_json> records_;  // newest first; guarded by mu_
};

}  // namespace llmhost::server
