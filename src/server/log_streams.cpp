#include "server/log_streams.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "util/log_json.h"

namespace llmhost::server {

namespace {

std::string Event(const char* name, const nlohmann::json& data) {
  // Log lines may hold any bytes: invalid UTF-8 is replaced, never thrown on.
  return std::string("event: ") + name + "\ndata: " + data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n\n";
}

}  // namespace

Result<LogLevel> LogLevelFromQuery(const std::string& query) {
  size_t start = 0;
  while (start <= query.size()) {
    const size_t end = std::min(query.find('&', start), query.size());
    const std::string pair = query.substr(start, end - start);
    if (pair.rfind("level=", 0) == 0) {
      const std::string v = pair.substr(6);
      for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
        if (v == LogLevelName(l)) return l;
      }
      return Status::InvalidArgument("level: '" + v.substr(0, 32) + "' (expected debug, info, warn or error)");
    }
    start = end + 1;
  }
  return LogLevel::kDebug;
}

void LogStreams::Start(const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  Result<LogLevel> level = LogLevelFromQuery(request.query);
  if (!level.ok()) return writer->Send(ErrorResponse(BadRequest(level.status().message(), "level"), ApiFlavor::kOpenAI));
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return writer->Send(ErrorResponse(ErrorWithStatus(503, "the server is stopping"), ApiFlavor::kOpenAI));
  if (streams_.size() >= kMaxStreams) {
    return writer->Send(ErrorResponse(
        ErrorWithStatus(429, "too many log streams open (at most " + std::to_string(kMaxStreams) + ")"),
        ApiFlavor::kOpenAI));
  }
  writer->StartStream(200, "text/event-stream", {{"Cache-Control", "no-store"}});
  const uint64_t last = tail_->last_seq();
  Stream s{writer, *level, last - std::min<uint64_t>(last, std::min(kBacklogLines, tail_->size()))};
  if (Send(s)) streams_.push_back(std::move(s));
}

bool LogStreams::Send(Stream& s) const {
  if (s.writer->closed()) return false;
  if (s.writer->pending_bytes() > kMaxPendingBytes) {
    s.writer->End();  // the client does not read: drop it rather than queue without bound
    return false;
  }
  const LogTail::Page page = tail_->Since(s.cursor, s.min_level, kMaxLinesPerPump);
  std::string out;
  if (page.missed > 0) out += Event("missed", {{"lines", page.missed}});
  for (const LogRecord& r : page.records) {
    out += Event("log", {{"seq", r.seq}, {"level", LogLevelName(r.level)}, {"line", r.line}});
  }
  s.cursor = page.next;
  if (!out.empty()) s.writer->Write(std::move(out));
  return true;
}

void LogStreams::Pump() {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(streams_, [this](Stream& s) { return !Send(s); });
}

void LogStreams::EndAll() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  for (Stream& s : streams_) s.writer->End();
  streams_.clear();
}

size_t LogStreams::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

}  // namespace llmhost::server
