// HTTP/1.1 response framing for the client: the status line and headers, and
// a streaming decoder of chunked bodies. Both bound what they accept, since
// the bytes come from the network.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace llmhost {

inline constexpr size_t kHttpMaxHeadBytes = 64 << 10;

struct HttpResponseHead {
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent

  // The first header of that name (case-insensitive), "" when absent.
  std::string Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
};

// Parses "HTTP/1.x NNN reason\r\n" and "Name: value\r\n" lines, up to but not
// including the blank line. Corruption naming the problem for anything else
// (obsolete line folding included).
Result<HttpResponseHead> ParseResponseHead(std::string_view head);

// "bytes 100-199/1000" → {100, 1000} (total 0 when "*"); Corruption otherwise.
struct ContentRange {
  uint64_t first = 0, last = 0, total = 0;
};
Result<ContentRange> ParseContentRange(std::string_view value);

// Decodes a chunked body fed in arbitrary pieces. Chunk extensions are
// ignored; trailers are read and dropped. A chunk-size line longer than 4 KiB
// or a size above 2^62 is Corruption.
class ChunkedDecoder {
 public:
  // Appends the data decoded from `in` to `out`. After done(), the bytes of
  // `in` past the body are left unread (*consumed says how many were used).
  Status Feed(std::string_view in, std::string* out, size_t* consumed);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  State state_ = State::kSize;
  std::string line_;
  uint64_t left_ = 0;  // bytes of the current chunk still to come
};

}  // namespace llmhost
