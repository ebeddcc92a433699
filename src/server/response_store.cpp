#include "server/response_store.h"

namespace llmhost::server {

void ResponseStore::Put(const std::string& id, StoredResponse stored) {
  const size_t bytes = stored.response.dump().size() + stored.conversation.dump().size();
  std::lock_guard<std::mutex> lock(mu_);
  if (by_id_.count(id)) return;  // ids are random: never replaced
  by_id_.emplace(id, std::make_pair(std::move(stored), bytes));
  order_.push_back(id);
  bytes_ += bytes;
  while (order_.size() > 1 && (order_.size() > kMaxResponses || bytes_ > kMaxBytes)) {
    auto it = by_id_.find(order_.front());
    bytes_ -= it->second.second;
    by_id_.erase(it);
    order_.pop_front();
  }
}

std::optional<StoredResponse> ResponseStore::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second.first;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_id_.size();
}

}  // namespace llmhost::server
