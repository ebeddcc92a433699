#include "util/log_tail.h"

#include <algorithm>

namespace llmhost {

LogTail::LogTail(size_t capacity, size_t max_line_bytes)
    : capacity_(std::max<size_t>(1, capacity)), max_line_bytes_(max_line_bytes) {}

// `line` cut to at most `max` bytes, not inside a UTF-8 sequence.
static std::string Cut(const std::string& line, size_t max) {
  if (line.size() <= max) return line;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(line[n]) & 0xC0) == 0x80) --n;
  return line.substr(0, n) + "...";
}

void LogTail::Append(LogLevel level, const std::string& line) {
  std::string kept = Cut(line, max_line_bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  ring_.push_back({++last_seq_, level, std::move(kept)});
  if (ring_.size() > capacity_) ring_.pop_front();
}

LogTail::Page LogTail::Since(uint64_t after, LogLevel min_level, size_t max) const {
  std::lock_guard<std::mutex> lock(mu_);
  Page page;
  page.next = std::min(after, last_seq_);
  if (ring_.empty() || after >= last_seq_) return page;
  const uint64_t oldest = ring_.front().seq;
  if (after + 1 < oldest) page.missed = oldest - after - 1;
  page.next = std::max(after, oldest - 1);
  // Sequence numbers are consecutive in the ring: index by offset.
  size_t i = after < oldest ? 0 : static_cast<size_t>(after + 1 - oldest);
  for (; i < ring_.size() && page.records.size() < max; ++i) {
    const LogRecord& r = ring_[i];
    page.next = r.seq;
    if (r.level >= min_level) page.records.push_back(r);
  }
  return page;
}

size_t LogTail::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_.size();
}

uint64_t LogTail::last_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_seq_;
}

LogTail& ProcessLogTail() {
  static LogTail* tail = new LogTail(2000);  // never destroyed: threads may log during exit
  return *tail;
}

}  // namespace llmhost
