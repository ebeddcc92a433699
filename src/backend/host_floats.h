// Host memory for what a backend copies back every step (a step's logits):
// heap memory, or page-locked memory from the backend's allocator, which a
// GPU's copy engine writes directly (a copy into pageable memory goes through
// the driver's bounce buffers, at a fraction of the bus's speed: 65 MB a
// step for 128 rows of a 128K vocabulary).
#pragma once

#include <cstddef>
#include <vector>

namespace llmhost {

struct HostAllocator {
  // nullptr (either function, or a null result): the heap.
  void* (*allocate)(size_t bytes) = nullptr;
  void (*release)(void* p) = nullptr;
};

// A float array that keeps its capacity and the allocator its memory came
// from; resize keeps the prefix and zero-fills what it adds, as a vector's.
class HostFloats {
 public:
  HostFloats() = default;
  ~HostFloats() { Release(); }
  HostFloats(const HostFloats& o) { *this = o; }
  HostFloats& operator=(const HostFloats& o);
  HostFloats(HostFloats&& o) noexcept { Swap(o); }
  HostFloats& operator=(HostFloats&& o) noexcept {
    Swap(o);
    return *this;
  }

  // Memory allocated from now on comes from `a`; what is held is kept.
  void set_allocator(HostAllocator a) { alloc_ = a; }
  // Whether the memory held came from the allocator (not the heap).
  bool from_allocator() const { return data_ != nullptr && release_ != nullptr; }

  void resize(size_t n, float value = 0.0f);
  // n elements whose values are left as they are (for a copy that writes
  // them all): growing copies nothing over and fills nothing.
  void resize_for_overwrite(size_t n);
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  float* data() { return data_; }
  const float* data() const { return data_; }
  float& operator[](size_t i) { return data_[i]; }
  const float& operator[](size_t i) const { return data_[i]; }
  float* begin() { return data_; }
  float* end() { return data_ + size_; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }
  // A copy (explicit: a step's logits are up to tens of MB).
  explicit operator std::vector<float>() const { return std::vector<float>(begin(), end()); }

 private:
  void Grow(size_t n, bool keep);
  void Release();
  void Swap(HostFloats& o) noexcept;

  float* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
  HostAllocator alloc_;
  void (*release_)(void*) = nullptr;  // what frees data_ (nullptr: the heap)
};

}  // namespace llmhost
