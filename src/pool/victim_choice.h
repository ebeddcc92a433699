// Which loaded model to evict (spec rule 13), as a pure function.
//
// A victim must be loaded, unpinned, not leased, without active requests and
// not the requester. Among those, least recently used first: the first whose
// freeable bytes alone cover `bytes_needed`; when none is big enough, the
// largest (the older one on a tie); with bytes_needed ≤ 0, plain LRU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmhost {

struct VictimCandidate {
  std::string id;
  uint64_t freeable_bytes = 0;
  double last_access = 0;  // larger: more recent
  bool loaded = true;
  bool pinned = false;
  bool leased = false;
  bool active = false;  // requests in its engine (or the check failed)
  bool loading = false;
};

// Index into `candidates`, or nullopt when none may be evicted.
std::optional<size_t> ChooseVictim(const std::vector<VictimCandidate>& candidates, int64_t bytes_needed,
                                   const std::string& exclude_id = "");

}  // namespace llmhost
