// PassArena: one device buffer that a model's forward passes carve their
// scratch from, grown to the largest pass and kept between passes. A pass
// then allocates nothing: on a GPU, cudaMalloc / cudaFree per pass would
// cost a device-wide synchronization each, stalling every other model's
// work on that GPU. Not thread-safe: one pass at a time (callers lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "util/status.h"

namespace llmhost {

class PassArena {
 public:
  explicit PassArena(Backend* backend) : b_(backend) {}
  ~PassArena() { b_->Free(buf_); }
  PassArena(const PassArena&) = delete;
  PassArena& operator=(const PassArena&) = delete;

  // Bytes one Alloc of n elements of T takes from the arena.
  template <typename T>
  static size_t Bytes(int64_t n) {
    return (static_cast<size_t>(n) * sizeof(T) + kAlign - 1) / kAlign * kAlign;
  }

  // Starts a pass that will Alloc / Put at most `bytes` (a sum of Bytes<T>):
  // the buffer grows when it is smaller (the old one freed first, so the
  // peak is the new size), and carving starts over at its beginning. The
  // previous pass must have synchronized (CopyOut does).
  Status Begin(size_t bytes, const std::string& tag) {
    used_ = 0;
    if (bytes <= buf_.bytes) return Status::OK();
    b_->Free(buf_);
    ASSIGN_OR_RETURN(buf_, b_->Allocate(bytes, tag));
    return Status::OK();
  }

  template <typename T>
  Result<T*> Alloc(int64_t n, const char* what) {
    const size_t bytes = Bytes<T>(n);
    if (used_ + bytes > buf_.bytes) {
      return Status::Internal(std::string("pass arena: ") + what + " does not fit what the pass reserved");
    }
    T* p = reinterpret_cast<T*>(buf_.as<char>() + used_);
    used_ += bytes;
    return p;
  }

  // A copy of host data (which must stay unchanged until the pass synchronizes).
  template <typename T>
  Result<T*> Put(const std::vector<T>& host, const char* what) {
    const size_t at = used_;
    ASSIGN_OR_RETURN(T* p, Alloc<T>(static_cast<int64_t>(host.size()), what));
    b_->CopyToDevice(buf_, at, host.data(), host.size() * sizeof(T));
    return p;
  }

  // out = the out.size() floats at `dev` (carved from this arena), once
  // every enqueued op has finished.
  Status CopyOut(const float* dev, std::vector<float>& out) {
    RETURN_IF_ERROR(b_->Synchronize());
    const auto at = static_cast<size_t>(reinterpret_cast<const char*>(dev) - buf_.as<char>());
    if (reinterpret_cast<const char*>(dev) < buf_.as<char>() || at + out.size() * sizeof(float) > used_) {
      return Status::Internal("pass arena: a result outside the pass's buffers");
    }
    b_->CopyToHost(out.data(), buf_, at, out.size() * sizeof(float));
    return b_->Synchronize();
  }

  size_t capacity() const { return buf_.bytes; }

 private:
  static constexpr size_t kAlign = 256;

  Backend* b_;
  DeviceBuffer buf_;
  size_t used_ = 0;
};

}  // namespace llmhost
