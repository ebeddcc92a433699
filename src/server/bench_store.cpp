#include "server/bench_store.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "util/file.h"
#include "util/json.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

bool IsRecord(const Json& j) { return j.is_object() && j.contains("id") && j["id"].is_string(); }

}  // namespace

BenchStore::BenchStore(std::string file, size_t max_results)
    : file_(std::move(file)), max_results_(std::max<size_t>(max_results, 1)) {}

Status BenchStore::Load() {
  if (file_.empty() || !FileExists(file_)) return Status::OK();
  Result<Json> doc = ReadOrderedJsonFile(file_, kMaxFileBytes);
  if (!doc.ok()) return doc.status();
  if (!doc->is_array()) return Status::Corruption(file_ + ": not a JSON array of bench results");
  std::vector<Json> kept;
  for (Json& r : *doc) {
    if (kept.size() == max_results_) break;
    if (IsRecord(r)) kept.push_back(std::move(r));
  }
  std::lock_guard<std::mutex> lock(mu_);
  records_ = std::move(kept);
  return Status::OK();
}

Status BenchStore::Add(Json record) {
  if (!IsRecord(record)) return Status::InvalidArgument("a bench record needs a string \"id\"");
  std::lock_guard<std::mutex> lock(mu_);
  const std::string id = record["id"].get<std::string>();
  std::erase_if(records_, [&](const Json& r) { return r["id"] == id; });
  records_.insert(records_.begin(), std::move(record));
  if (records_.size() > max_results_) records_.resize(max_results_);
  return Save();
}

Result<bool> BenchStore::Remove(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::erase_if(records_, [&](const Json& r) { return r["id"] == id; }) == 0) return false;
  RETURN_IF_ERROR(Save());
  return true;
}

std::vector<Json> BenchStore::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

std::optional<Json> BenchStore::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Json& r : records_) {
    if (r["id"] == id) return r;
  }
  return std::nullopt;
}

Status BenchStore::Save() const {
  if (file_.empty()) return Status::OK();
  std::error_code ec;
  std::filesystem::create_directories(DirName(file_), ec);
  if (ec) return Status::IOError("cannot create " + DirName(file_) + ": " + ec.message());
  const Json all(records_);
  return WriteFileAtomic(file_, all.dump(1, ' ', false, Json::error_handler_t::replace) + "\n");
}

}  // namespace llmhost::server
