// A grow-only, 64-byte aligned buffer for per-thread kernel scratch (packed
// weight panels, accumulators): allocated on first use, reused across calls,
// freed with its thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace llmhost::cpu {

template <typename T>
class AlignedScratch {
 public:
  AlignedScratch() = default;
  AlignedScratch(const AlignedScratch&) = delete;
  AlignedScratch& operator=(const AlignedScratch&) = delete;
  ~AlignedScratch() { std::free(p_); }

  // At least `count` elements; earlier contents are not kept when it grows.
  T* Get(int64_t count) {
    if (count > cap_) {
      std::free(p_);
      cap_ = (count + 31) / 32 * 32;  // whole 64-byte lines for every element size used
      p_ = static_cast<T*>(std::aligned_alloc(64, static_cast<size_t>(cap_) * sizeof(T)));
    }
    return p_;
  }

 private:
  T* p_ = nullptr;
  int64_t cap_ = 0;
};

}  // namespace llmhost::cpu
