#include "backend/host_floats.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <utility>

namespace llmhost {

HostFloats& HostFloats::operator=(const HostFloats& o) {
  if (this == &o) return *this;
  alloc_ = o.alloc_;
  clear();
  resize(o.size_);
  if (o.size_ != 0) std::memcpy(data_, o.data_, o.size_ * sizeof(float));
  return *this;
}

void HostFloats::Grow(size_t n, bool keep) {
  if (n > std::numeric_limits<size_t>::max() / (2 * sizeof(float))) throw std::length_error("HostFloats: too large");
  // Geometric growth: page-locked allocations are slow (the pages are
  // pinned one by one), and a step's row count moves up and down.
  const size_t cap = std::max(n, capacity_ + capacity_ / 2);
  const size_t bytes = cap * sizeof(float);
  void* p = alloc_.allocate != nullptr && alloc_.release != nullptr ? alloc_.allocate(bytes) : nullptr;
  void (*release)(void*) = p != nullptr ? alloc_.release : nullptr;
  if (p == nullptr) p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  const size_t kept = keep ? size_ : 0;
  if (kept != 0) std::memcpy(p, data_, kept * sizeof(float));
  Release();
  size_ = kept;
  data_ = static_cast<float*>(p);
  capacity_ = cap;
  release_ = release;
}

void HostFloats::resize(size_t n, float value) {
  if (n > capacity_) Grow(n, true);
  if (n > size_) std::fill(data_ + size_, data_ + n, value);
  size_ = n;
}

void HostFloats::resize_for_overwrite(size_t n) {
  if (n > capacity_) Grow(n, false);
  size_ = n;
}

void HostFloats::Release() {
  if (data_ != nullptr) release_ != nullptr ? release_(data_) : std::free(data_);
  data_ = nullptr;
  size_ = capacity_ = 0;
  release_ = nullptr;
}

void HostFloats::Swap(HostFloats& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  std::swap(capacity_, o.capacity_);
  std::swap(alloc_, o.alloc_);
  std::swap(release_, o.release_);
}

}  // namespace llmhost
