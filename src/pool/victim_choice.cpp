#include "pool/victim_choice.h"

#include <algorithm>

namespace llmhost {

std::optional<size_t> ChooseVictim(const std::vector<VictimCandidate>& c, int64_t bytes_needed,
                                   const std::string& exclude_id) {
  std::vector<size_t> eligible;
  for (size_t i = 0; i < c.size(); ++i) {
    const VictimCandidate& v = c[i];
    if (!v.loaded || v.loading || v.pinned || v.leased || v.active) continue;
    if (!exclude_id.empty() && v.id == exclude_id) continue;
    eligible.push_back(i);
  }
  if (eligible.empty()) return std::nullopt;
  // Least recently used first; ids break ties so the choice is deterministic.
  std::stable_sort(eligible.begin(), eligible.end(), [&](size_t a, size_t b) {
    if (c[a].last_access != c[b].last_access) return c[a].last_access < c[b].last_access;
    return c[a].id < c[b].id;
  });
  if (bytes_needed <= 0) return eligible.front();
  for (size_t i : eligible) {
    if (c[i].freeable_bytes >= static_cast<uint64_t>(bytes_needed)) return i;
  }
  size_t best = eligible.front();
  for (size_t i : eligible) {
    if (c[i].freeable_bytes > c[best].freeable_bytes) best = i;
  }
  return best;
}

}  // namespace llmhost
