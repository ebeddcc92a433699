#include "server/request_id.h"

#include <cstdint>
#include <cstdio>
#include <random>

namespace llmhost::server {

bool IsSaneRequestId(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes) return false;
  for (char c : id) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e) return false;
  }
  return true;
}

std::string NewRequestId() {
  thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    std::seed_seq seed{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seed);
  }();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

std::string RequestIdFor(std::string_view incoming) {
  return IsSaneRequestId(incoming) ? std::string(incoming) : NewRequestId();
}

}  // namespace llmhost::server
