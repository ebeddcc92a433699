#include "engine/live_request.h"

namespace llmhost {

const char* LiveStateName(LiveState s) {
  switch (s) {
    case LiveState::kQueued: return "queued";
    case LiveState::kPrefilling: return "prefilling";
    case LiveState::kGenerating: return "generating";
  }
  return "";
}

}  // namespace llmhost
