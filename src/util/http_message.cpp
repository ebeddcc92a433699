#include "util/http_message.h"

#include <strings.h>

#include <algorithm>
#include <cctype>

namespace llmhost {

namespace {

constexpr size_t kMaxLine = 4096;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ParseUint(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  *v = x;
  return true;
}

}  // namespace

std::string HttpResponseHead::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
  }
  return "";
}

bool HttpResponseHead::HasHeader(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return true;
  }
  return false;
}

Result<HttpResponseHead> ParseResponseHead(std::string_view head) {
  if (head.size() > kHttpMaxHeadBytes) return Status::Corruption("HTTP response headers exceed 64 KiB");
  HttpResponseHead r;
  size_t eol = head.find('\n');
  std::string_view status_line = Trim(head.substr(0, eol));
  // "HTTP/1.1 200 OK"
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ' ||
      !std::isdigit(static_cast<unsigned char>(status_line[9])) ||
      !std::isdigit(static_cast<unsigned char>(status_line[10])) ||
      !std::isdigit(static_cast<unsigned char>(status_line[11]))) {
    return Status::Corruption("not an HTTP/1.x status line: '" + std::string(status_line.substr(0, 80)) + "'");
  }
  r.status = (status_line[9] - '0') * 100 + (status_line[10] - '0') * 10 + (status_line[11] - '0');
  r.reason = std::string(Trim(status_line.substr(12)));
  while (eol != std::string_view::npos && eol + 1 < head.size()) {
    size_t start = eol + 1;
    eol = head.find('\n', start);
    std::string_view line = head.substr(start, eol == std::string_view::npos ? head.npos : eol - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    if (line[0] == ' ' || line[0] == '\t') return Status::Corruption("HTTP header line folding is not allowed");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Status::Corruption("malformed HTTP header line: '" + std::string(line.substr(0, 80)) + "'");
    }
    std::string_view name = line.substr(0, colon);
    for (char c : name) {
      if (c == ' ' || c == '\t') return Status::Corruption("space in the HTTP header name '" + std::string(name) + "'");
    }
    r.headers.emplace_back(std::string(name), std::string(Trim(line.substr(colon + 1))));
  }
  return r;
}

Result<ContentRange> ParseContentRange(std::string_view value) {
  auto bad = [&] { return Status::Corruption("bad Content-Range '" + std::string(value) + "'"); };
  value = Trim(value);
  if (value.substr(0, 6) != "bytes ") return bad();
  value.remove_prefix(6);
  size_t dash = value.find('-'), slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) return bad();
  ContentRange cr;
  if (!ParseUint(value.substr(0, dash), &cr.first) || !ParseUint(value.substr(dash + 1, slash - dash - 1), &cr.last) ||
      cr.last < cr.first) {
    return bad();
  }
  std::string_view total = value.substr(slash + 1);
  if (total != "*" && (!ParseUint(total, &cr.total) || cr.total <= cr.last)) return bad();
  return cr;
}

Status ChunkedDecoder::Feed(std::string_view in, std::string* out, size_t* consumed) {
  size_t i = 0;
  while (i < in.size() && state_ != State::kDone) {
    if (state_ == State::kData) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(left_, in.size() - i));
      out->append(in.data() + i, n);
      i += n;
      left_ -= n;
      if (left_ == 0) state_ = State::kDataEnd;
      continue;
    }
    // Line states: collect up to '\n'.
    size_t nl = in.find('\n', i);
    size_t end = nl == std::string_view::npos ? in.size() : nl;
    line_.append(in.data() + i, end - i);
    if (line_.size() > kMaxLine) return Status::Corruption("chunked body: a line longer than 4 KiB");
    i = end;
    if (nl == std::string_view::npos) break;
    ++i;  // the '\n'
    std::string_view line = line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (state_ == State::kSize) {
      std::string_view hex = Trim(line.substr(0, line.find(';')));
      if (hex.empty() || hex.size() > 15) return Status::Corruption("chunked body: bad chunk size '" + std::string(hex) + "'");
      uint64_t size = 0;
      for (char c : hex) {
        int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f')                   ? c - 'a' + 10
                : (c >= 'A' && c <= 'F')                   ? c - 'A' + 10
                                                           : -1;
        if (d < 0) return Status::Corruption("chunked body: bad chunk size '" + std::string(hex) + "'");
        size = size * 16 + static_cast<uint64_t>(d);
      }
      left_ = size;
      state_ = size == 0 ? State::kTrailer : State::kData;
    } else if (state_ == State::kDataEnd) {
      if (!line.empty()) return Status::Corruption("chunked body: no CRLF after a chunk's data");
      state_ = State::kSize;
    } else if (state_ == State::kTrailer) {
      if (line.empty()) state_ = State::kDone;
    }
    line_.clear();
  }
  *consumed = i;
  return Status::OK();
}

}  // namespace llmhost
