// Device buffers a test case allocates, fills and reads back through a
// Backend.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace llmhost::testing {

// Device buffers of one backend for one case; freed at the end.
class Device {
 public:
  explicit Device(Backend& b) : b_(b) {}
  ~Device() {
    for (DeviceBuffer& buf : bufs_) b_.Free(buf);
  }
  template <typename T>
  T* Put(const std::vector<T>& host) {
    T* p = Alloc<T>(static_cast<int64_t>(host.size()));
    if (!host.empty()) b_.CopyToDevice(bufs_.back(), 0, host.data(), host.size() * sizeof(T));
    return p;
  }
  template <typename T>
  T* Alloc(int64_t n) {
    auto buf = b_.Allocate(std::max<size_t>(1, static_cast<size_t>(n) * sizeof(T)), "test");
    EXPECT_TRUE(buf.ok()) << buf.status().ToString();
    bufs_.push_back(*buf);
    return buf->as<T>();
  }
  template <typename T>
  std::vector<T> Get(const T* dev, int64_t n) {
    const Status synced = b_.Synchronize();
    EXPECT_TRUE(synced.ok()) << synced.ToString();
    std::vector<T> host(static_cast<size_t>(n));
    for (const DeviceBuffer& buf : bufs_) {
      const char* base = buf.as<char>();
      const char* p = reinterpret_cast<const char*>(dev);
      if (p >= base && p + n * sizeof(T) <= base + buf.bytes) {
        b_.CopyToHost(host.data(), buf, static_cast<size_t>(p - base), host.size() * sizeof(T));
        return host;
      }
    }
    ADD_FAILURE() << "not a buffer of this case";
    return host;
  }
  // Raw bytes (a KV cache of any dtype).
  void* AllocBytes(size_t bytes) { return Alloc<uint8_t>(static_cast<int64_t>(bytes)); }
  std::vector<uint8_t> GetBytes(const void* dev, size_t bytes) {
    return Get(static_cast<const uint8_t*>(dev), static_cast<int64_t>(bytes));
  }
  Backend& backend() { return b_; }

 private:
  Backend& b_;
  std::vector<DeviceBuffer> bufs_;
};

}  // namespace llmhost::testing
