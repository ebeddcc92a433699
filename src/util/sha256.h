// SHA-256 (OpenSSL's EVP) for block keys, weight identities and checksums.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace llmhost {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental hasher: Update() any number of times, then Finish() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  Sha256Digest Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

Sha256Digest Sha256Of(std::string_view data);
std::string ToHex(const uint8_t* data, size_t size);
inline std::string ToHex(const Sha256Digest& d) { return ToHex(d.data(), d.size()); }

}  // namespace llmhost
