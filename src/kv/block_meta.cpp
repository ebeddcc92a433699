// BlockMeta helpers and the --cache-mode names (kv/block_store.h).
#include <string>

#include "formats/dtype.h"
#include "kv/block_store.h"

namespace llmhost {

uint64_t BlockMeta::data_bytes() const {
  std::optional<DType> dt = DTypeFromName(dtype);
  if (!dt || n_layers <= 0 || block_size <= 0 || kv_dim <= 0) return 0;
  uint64_t n = 2 * DTypeSize(*dt);
  // Overflow (absurd shapes from an untrusted header) reads as "unknown": 0.
  for (int64_t d : {n_layers, block_size, kv_dim}) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return 0;
  }
  return n;
}

bool BlockMeta::SameShape(const BlockMeta& other) const {
  return fingerprint == other.fingerprint && n_layers == other.n_layers &&
         block_size == other.block_size && kv_dim == other.kv_dim && dtype == other.dtype &&
         token_count == other.token_count;
}

Result<CacheMode> ParseCacheMode(std::string_view text) {
  if (text == "write-back") return CacheMode::kWriteBack;
  if (text == "write-through") return CacheMode::kWriteThrough;
  if (text == "hot-only") return CacheMode::kHotOnly;
  if (text == "off") return CacheMode::kOff;
  return Status::InvalidArgument("cache mode '" + std::string(text) +
                                 "': expected write-back, write-through, hot-only or off");
}

const char* CacheModeName(CacheMode mode) {
  switch (mode) {
    case CacheMode::kWriteBack: return "write-back";
    case CacheMode::kWriteThrough: return "write-through";
    case CacheMode::kHotOnly: return "hot-only";
    case CacheMode::kOff: return "off";
  }
  return "unknown";
}

}  // namespace llmhost
