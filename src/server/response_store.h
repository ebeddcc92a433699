// ResponseStore: the Responses API's stored responses (`store`, default
// true), for GET /v1/responses/{id} and for continuing a conversation with
// previous_response_id. Bounded: the oldest go first beyond kMaxResponses
// or kMaxBytes. In memory only (a restart forgets them). Thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace llmhost::server {

struct StoredResponse {
  nlohmann::ordered_json response;      // the response object as returned
  nlohmann::ordered_json conversation;  // chat messages: the input's and the output's (no instructions)
};

class ResponseStore {
 public:
  static constexpr size_t kMaxResponses = 1000;
  static constexpr size_t kMaxBytes = size_t{256} << 20;

  void Put(const std::string& id, StoredResponse stored);
  std::optional<StoredResponse> Get(const std::string& id) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::pair<StoredResponse, size_t>> by_id_;  // → (entry, its bytes)
  std::deque<std::string> order_;                                    // oldest first
  size_t bytes_ = 0;
};

}  // namespace llmhost::server
