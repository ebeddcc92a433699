// Scheduler::CollectLive: the status page's view of the requests held now.
#include <algorithm>

#include "engine/scheduler.h"

namespace llmhost {

int64_t Scheduler::CollectLive(std::vector<LiveRequest>* out, size_t max) const {
  size_t n = 0;
  int64_t total = 0;
  std::vector<uint64_t> unlisted;  // requests past `max` seen through a later choice
  auto add = [&](const Sequence& s, bool running) {
    LiveRequest* e = nullptr;
    if (s.choice() > 0) {  // another choice of a request met before?
      for (size_t i = 0; i < n && !e; ++i) {
        if ((*out)[i].id == s.id()) e = &(*out)[i];
      }
      if (!e && std::find(unlisted.begin(), unlisted.end(), s.id()) != unlisted.end()) return;
    }
    if (!e) {
      ++total;
      if (n >= max) {
        unlisted.push_back(s.id());
        return;
      }
      if (n == out->size()) out->emplace_back();
      e = &(*out)[n++];
      e->id = s.id();
      e->request_id = s.request_id();
      e->prompt_tokens = s.prompt_tokens();
      e->prompt_done = std::min(s.cs().kv.length, s.prompt_tokens());
      e->state = !running ? LiveState::kQueued
                 : e->prompt_done < e->prompt_tokens ? LiveState::kPrefilling : LiveState::kGenerating;
      e->generated = 0;
      e->decode_tokens = 0;
      e->arrived = s.arrived();
      e->first_token.reset();
    }
    e->generated += s.generated();
    if (const auto& first = s.first_token()) {
      e->decode_tokens += s.generated() - 1;
      if (!e->first_token || *first < *e->first_token) e->first_token = first;
    }
  };
  for (const auto& s : running_) add(*s, true);
  for (const auto& s : waiting_) add(*s, false);
  out->resize(n);
  return total;
}

}  // namespace llmhost
