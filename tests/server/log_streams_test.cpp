#include "server/log_streams.h"

#include <gtest/gtest.h>

#include <string>

namespace llmhost::server::log_streams_test {
namespace {

// Records what a stream is sent; closed and back-pressure are set by the test.
class RecordingWriter : public ResponseWriter {
 public:
  void AddHeader(std::string, std::string) override {}
  void Send(HttpResponse r) override { sent_status = r.status; }
  void StartStream(int status, std::string ct, HeaderList) override {
    started = status;
    content_type = ct;
  }
  void Write(std::string data) override { body += data; }
  void End() override { ended = true; }
  void OnClose(std::function<void()>) override {}
  bool closed() const override { return is_closed; }
  size_t pending_bytes() const override { return pending; }
  void Post(std::function<void()> fn) override { fn(); }

  int sent_status = 0, started = 0;
  std::string content_type, body;
  bool ended = false, is_closed = false;
  size_t pending = 0;
};

HttpRequest Get(const std::string& query = "") {
  HttpRequest r;
  r.method = "GET";
  r.path = "/admin/api/logs";
  r.query = query;
  return r;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(LogStreamsTest, StartsWithTheRecentLinesThenFollows) {
  LogTail tail(1000);
  for (int i = 0; i < 250; ++i) tail.Append(LogLevel::kInfo, "old " + std::to_string(i));
  LogStreams streams(&tail);
  auto w = std::make_shared<RecordingWriter>();
  streams.Start(Get(), w);
  EXPECT_EQ(w->started, 200);
  EXPECT_EQ(w->content_type, "text/event-stream");
  EXPECT_EQ(Count(w->body, "event: log\n"), LogStreams::kBacklogLines);
  EXPECT_EQ(w->body.find("\"old 49\""), std::string::npos);
  EXPECT_NE(w->body.find("\"old 50\""), std::string::npos);
  w->body.clear();
  tail.Append(LogLevel::kWarn, "new \"quoted\" line");
  streams.Pump();
  EXPECT_EQ(w->body, "event: log\ndata: {\"level\":\"warn\",\"line\":\"new \\\"quoted\\\" line\",\"seq\":251}\n\n");
  w->body.clear();
  streams.Pump();
  EXPECT_EQ(w->body, "");  // nothing new
}

TEST(LogStreamsTest, LevelFilter) {
  LogTail tail(100);
  LogStreams streams(&tail);
  auto w = std::make_shared<RecordingWriter>();
  streams.Start(Get("x=1&level=warn"), w);
  tail.Append(LogLevel::kInfo, "info line");
  tail.Append(LogLevel::kError, "error line");
  streams.Pump();
  EXPECT_EQ(w->body.find("info line"), std::string::npos);
  EXPECT_NE(w->body.find("error line"), std::string::npos);
}

TEST(LogStreamsTest, BadLevelIs400) {
  LogStreams streams(nullptr);
  auto w = std::make_shared<RecordingWriter>();
  streams.Start(Get("level=loud"), w);
  EXPECT_EQ(w->sent_status, 400);
  EXPECT_EQ(w->started, 0);
  EXPECT_EQ(streams.size(), 0u);
  EXPECT_EQ(*LogLevelFromQuery(""), LogLevel::kDebug);
  EXPECT_EQ(*LogLevelFromQuery("level=error"), LogLevel::kError);
}

TEST(LogStreamsTest, SlowAndClosedClientsAreDropped) {
  LogTail tail(100);
  LogStreams streams(&tail);
  auto slow = std::make_shared<RecordingWriter>();
  auto gone = std::make_shared<RecordingWriter>();
  auto fine = std::make_shared<RecordingWriter>();
  for (auto& w : {slow, gone, fine}) streams.Start(Get(), w);
  EXPECT_EQ(streams.size(), 3u);
  slow->pending = LogStreams::kMaxPendingBytes + 1;
  gone->is_closed = true;
  tail.Append(LogLevel::kInfo, "x");
  streams.Pump();
  EXPECT_EQ(streams.size(), 1u);
  EXPECT_TRUE(slow->ended);
  EXPECT_EQ(slow->body, "");
  EXPECT_NE(fine->body.find("\"x\""), std::string::npos);
}

TEST(LogStreamsTest, ReportsLinesMissedWhenBehindTheRing) {
  LogTail tail(5);
  LogStreams streams(&tail);
  auto w = std::make_shared<RecordingWriter>();
  streams.Start(Get(), w);
  for (int i = 0; i < LogStreams::kMaxLinesPerPump + 20; ++i) tail.Append(LogLevel::kInfo, "l");
  streams.Pump();
  EXPECT_NE(w->body.find("event: missed\ndata: {\"lines\":515}"), std::string::npos);
  EXPECT_EQ(Count(w->body, "event: log\n"), 5u);
}

TEST(LogStreamsTest, BoundedCountAndEndAll) {
  LogTail tail(10);
  LogStreams streams(&tail);
  std::vector<std::shared_ptr<RecordingWriter>> ws;
  for (size_t i = 0; i < LogStreams::kMaxStreams; ++i) {
    ws.push_back(std::make_shared<RecordingWriter>());
    streams.Start(Get(), ws.back());
  }
  auto extra = std::make_shared<RecordingWriter>();
  streams.Start(Get(), extra);
  EXPECT_EQ(extra->sent_status, 429);
  streams.EndAll();
  EXPECT_EQ(streams.size(), 0u);
  for (auto& w : ws) EXPECT_TRUE(w->ended);
  auto late = std::make_shared<RecordingWriter>();
  streams.Start(Get(), late);
  EXPECT_EQ(late->sent_status, 503);
}

TEST(LogStreamsTest, InvalidUtf8IsReplacedNotThrown) {
  LogTail tail(10);
  LogStreams streams(&tail);
  auto w = std::make_shared<RecordingWriter>();
  streams.Start(Get(), w);
  tail.Append(LogLevel::kInfo, "bad \xff byte");
  streams.Pump();
  EXPECT_NE(w->body.find("bad \xEF\xBF\xBD byte"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::server::log_streams_test
