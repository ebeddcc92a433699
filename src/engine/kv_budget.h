// KvBudget: where an engine's KV cache gets the memory it grows into. The
// cache starts at a floor that its model's admission paid for; every block
// beyond is claimed here first (the engine pool: counted in the committed
// bytes, granted only under the memory ceiling) and returned when the cache
// shrinks again (idle, or under memory pressure).
//
// Claim and Return are called on the engine's executor thread; an
// implementation must be thread-safe and must not block for long (a denied
// claim is retried: the engine polls while a request waits for blocks).
#pragma once

#include <cstdint>

namespace llmhost {

class KvBudget {
 public:
  virtual ~KvBudget() = default;
  // True: `bytes` more are granted (and counted). False: not now.
  virtual bool Claim(uint64_t bytes) = 0;
  // Gives back bytes granted earlier.
  virtual void Return(uint64_t bytes) = 0;
};

}  // namespace llmhost
