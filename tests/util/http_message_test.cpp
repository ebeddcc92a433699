#include "util/http_message.h"

#include <gtest/gtest.h>

namespace llmhost::http_message_test {
namespace {

TEST(HttpMessageTest, ParsesStatusAndHeaders) {
  auto h = ParseResponseHead(
      "HTTP/1.1 302 Found\r\nLocation: https://cdn/x\r\ncontent-length:  0 \r\nX-Linked-Etag: \"abc\"\r\n");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->status, 302);
  EXPECT_EQ(h->reason, "Found");
  EXPECT_EQ(h->Header("location"), "https://cdn/x");
  EXPECT_EQ(h->Header("Content-Length"), "0");
  EXPECT_EQ(h->Header("x-linked-etag"), "\"abc\"");
  EXPECT_TRUE(h->HasHeader("LOCATION"));
  EXPECT_FALSE(h->HasHeader("ETag"));
  EXPECT_EQ(h->Header("ETag"), "");
}

TEST(HttpMessageTest, RejectsMalformedHeads) {
  for (const char* bad : {"HTTP/2 200 OK\r\n", "ICY 200 OK\r\n", "HTTP/1.1 2x0 OK\r\n",
                          "HTTP/1.1 200 OK\r\nNoColon\r\n", "HTTP/1.1 200 OK\r\nA: b\r\n  folded\r\n",
                          "HTTP/1.1 200 OK\r\nBad Name: x\r\n", "HTTP/1.1 200 OK\r\n: empty\r\n"}) {
    auto h = ParseResponseHead(bad);
    EXPECT_FALSE(h.ok()) << bad;
    if (!h.ok()) {
      EXPECT_EQ(h.status().code(), StatusCode::kCorruption) << bad;
    }
  }
  EXPECT_FALSE(ParseResponseHead("HTTP/1.1 200 OK\r\nX: " + std::string(70000, 'a') + "\r\n").ok());
}

TEST(HttpMessageTest, ContentRange) {
  auto r = ParseContentRange("bytes 100-199/1000");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, 100u);
  EXPECT_EQ(r->last, 199u);
  EXPECT_EQ(r->total, 1000u);
  auto star = ParseContentRange("bytes 0-9/*");
  ASSERT_TRUE(star.ok());
  EXPECT_EQ(star->total, 0u);
  for (const char* bad : {"bytes 10-5/100", "bytes 0-99/99", "items 0-1/2", "bytes -5/10", "bytes 0-1"}) {
    EXPECT_FALSE(ParseContentRange(bad).ok()) << bad;
  }
}

constexpr char kChunked[] = "5;ext=1\r\nhello\r\nA\r\n, chunked!\r\n0\r\nTrailer: x\r\n\r\nNEXT";

TEST(HttpMessageTest, ChunkedWholeAndByteByByte) {
  const std::string in = kChunked;
  {
    ChunkedDecoder d;
    std::string out;
    size_t used = 0;
    ASSERT_TRUE(d.Feed(in, &out, &used).ok());
    EXPECT_TRUE(d.done());
    EXPECT_EQ(out, "hello, chunked!");
    EXPECT_EQ(in.substr(used), "NEXT");  // bytes past the body are left unread
  }
  ChunkedDecoder d;
  std::string out;
  size_t total_used = 0;
  for (size_t i = 0; i < in.size() && !d.done(); ++i) {
    size_t used = 0;
    ASSERT_TRUE(d.Feed(std::string_view(in).substr(i, 1), &out, &used).ok()) << i;
    total_used += used;
  }
  EXPECT_TRUE(d.done());
  EXPECT_EQ(out, "hello, chunked!");
  EXPECT_EQ(total_used, in.size() - 4);
}

TEST(HttpMessageTest, ChunkedRejectsBadFraming) {
  for (const char* bad : {"zz\r\n", "5\r\nhelloX\r\n", "FFFFFFFFFFFFFFFF\r\n"}) {
    ChunkedDecoder d;
    std::string out;
    size_t used = 0;
    Status s = d.Feed(bad, &out, &used);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << bad;
  }
  ChunkedDecoder d;
  std::string out;
  size_t used = 0;
  EXPECT_FALSE(d.Feed(std::string(5000, '1'), &out, &used).ok());  // a size line without end
}

}  // namespace
}  // namespace llmhost::http_message_test
