// Request ids: one per HTTP request, echoed in the response's X-Request-Id
// header and carried by the log lines written while it is handled. A client's
// own X-Request-Id is kept when it is a sane token (1-128 bytes of visible
// ASCII, 0x21-0x7E: no spaces, no control characters, nothing that could
// break a header or a log line); otherwise the server makes one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace llmhost::server {

constexpr size_t kMaxRequestIdBytes = 128;

bool IsSaneRequestId(std::string_view id);
// 16 lower-case hex digits from a per-thread generator seeded by std::random_device.
std::string NewRequestId();
// `incoming` when sane, else a new id.
std::string RequestIdFor(std::string_view incoming);

}  // namespace llmhost::server
