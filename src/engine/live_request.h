// LiveRequest: what the status page shows of one request an engine holds
// now (queued or running): its progress through the prompt and its output.
// Engine::LiveRequests() returns them; the times are kept as clock points
// so that the ages are those of the moment the caller reads them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmhost {

enum class LiveState {
  kQueued,      // waiting for admission (or preempted, waiting to resume)
  kPrefilling,  // admitted, the prompt not all in the KV cache yet
  kGenerating,  // sampling output tokens
};

// "queued", "prefilling", "generating".
const char* LiveStateName(LiveState s);

struct LiveRequest {
  using Clock = std::chrono::steady_clock;

  uint64_t id = 0;          // the engine's request id
  std::string request_id;   // the HTTP request's id ("" when none)
  LiveState state = LiveState::kQueued;
  int64_t prompt_tokens = 0;
  int64_t prompt_done = 0;  // prompt positions in the KV cache: cached + computed so far
  int64_t generated = 0;    // output tokens, over every choice
  int64_t decode_tokens = 0;  // of those, the ones after each choice's first token
  Clock::time_point arrived;
  std::optional<Clock::time_point> first_token;  // the earliest choice's

  double AgeSeconds(Clock::time_point now) const { return Seconds(now - arrived); }
  std::optional<double> TtftSeconds() const {
    if (!first_token) return std::nullopt;
    return Seconds(*first_token - arrived);
  }
  // Decode speed so far: tokens after the first one over the time since it.
  double DecodeTokensPerSecond(Clock::time_point now) const {
    if (!first_token) return 0;
    const double s = Seconds(now - *first_token);
    return s > 0 ? static_cast<double>(decode_tokens) / s : 0;
  }

 private:
  static double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
};

// A bounded snapshot: at most kMaxLiveRequests entries, oldest first;
// `total` counts every request held (total - requests.size() were left out).
inline constexpr size_t kMaxLiveRequests = 256;
struct LiveRequests {
  std::vector<LiveRequest> requests;
  int64_t total = 0;
};

}  // namespace llmhost
