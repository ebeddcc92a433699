#include "util/hmac.h"

#include <array>
#include <cstdint>

namespace llmhost {

namespace {

constexpr size_t kBlockSize = 64;  // SHA-256's block, in bytes

}  // namespace

Sha256Digest HmacSha256(std::string_view key, std::string_view message) {
  // Keys longer than a block are hashed first; shorter ones are zero-padded.
  std::array<uint8_t, kBlockSize> k{};
  if (key.size() > kBlockSize) {
    const Sha256Digest d = Sha256Of(key);
    for (size_t i = 0; i < d.size(); ++i) k[i] = d[i];
  } else {
    for (size_t i = 0; i < key.size(); ++i) k[i] = static_cast<uint8_t>(key[i]);
  }
  std::array<uint8_t, kBlockSize> inner_pad, outer_pad;
  for (size_t i = 0; i < kBlockSize; ++i) {
    inner_pad[i] = k[i] ^ 0x36;
    outer_pad[i] = k[i] ^ 0x5c;
  }
  Sha256 inner;
  inner.Update(inner_pad.data(), inner_pad.size());
  inner.Update(message);
  const Sha256Digest inner_digest = inner.Finish();
  Sha256 outer;
  outer.Update(outer_pad.data(), outer_pad.size());
  outer.Update(inner_digest.data(), inner_digest.size());
  return outer.Finish();
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace llmhost
