// Response bodies and SSE events of the three APIs, checked field by field
// against the documented shapes (OpenAI chat.completion(.chunk),
// text_completion; Anthropic message and its stream events), and the error
// shapes of both.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/response_format.h"

namespace llmhost::server::response_format_test {
namespace {

using Json = nlohmann::json;

ResponseMeta Meta() {
  ResponseMeta m;
  m.id = "id-1";
  m.model = "tiny";
  m.created = 1700000000;
  return m;
}

// Splits an SSE text into (event, data) pairs; comments are kept as event ":".
std::vector<std::pair<std::string, std::string>> Events(const std::string& sse) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event in: " << sse;
    if (end == std::string::npos) break;
    std::string block = sse.substr(pos, end - pos);
    pos = end + 2;
    std::string event, data;
    size_t lpos = 0;
    while (lpos <= block.size()) {
      size_t lend = block.find('\n', lpos);
      if (lend == std::string::npos) lend = block.size();
      std::string line = block.substr(lpos, lend - lpos);
      if (line.rfind("event: ", 0) == 0) event = line.substr(7);
      if (line.rfind("data: ", 0) == 0) data = line.substr(6);
      if (line.rfind(":", 0) == 0) event = ":";
      lpos = lend + 1;
    }
    out.emplace_back(event, data);
  }
  return out;
}

// Choice 0 ends, then the response.
std::string Finish(ResponseFormatter& f, FinishReason r, int64_t prompt, int64_t cached, int64_t completion,
                   const std::string& stop_string = "") {
  std::string out = f.FinishChoice(0, r, stop_string);
  return out + f.End({prompt, cached, completion});
}

TEST(ChatFormat, NonStreamingBody) {
  auto f = MakeChatCompletionsFormatter(Meta(), false);
  EXPECT_EQ(f->Start(0, {10, 4, 0}), "");
  EXPECT_EQ(f->Delta(0, "Hel", {}), "");
  EXPECT_EQ(f->Delta(0, "lo", {}), "");
  Json j = Json::parse(Finish(*f, FinishReason::kLength, 10, 4, 2));
  EXPECT_EQ(j["id"], "id-1");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"], Json::parse(R"({"role":"assistant","content":"Hello"})"));
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"], Json::parse(R"({"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,
                                        "prompt_tokens_details":{"cached_tokens":4}})"));
}

TEST(ChatFormat, StreamChunksUsageAndDone) {
  ResponseMeta meta = Meta();
  meta.include_usage = true;
  auto f = MakeChatCompletionsFormatter(meta, true);
  std::string sse = f->KeepAlive(KeepAliveMode::kChunk) + f->Start(0, {7, 0, 0}) + f->Delta(0, "Hi", {}) +
                    f->Delta(0, "", {}) + Finish(*f, FinishReason::kStop, 7, 0, 1);
  auto ev = Events(sse);
  ASSERT_EQ(ev.size(), 6u) << sse;
  for (size_t i = 0; i < 5; ++i) {
    Json c = Json::parse(ev[i].second);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["id"], "id-1");
  }
  EXPECT_EQ(Json::parse(ev[0].second)["choices"][0]["delta"], Json::object());  // keep-alive
  EXPECT_EQ(Json::parse(ev[1].second)["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(Json::parse(ev[2].second)["choices"][0]["delta"]["content"], "Hi");
  Json last = Json::parse(ev[3].second);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(last["choices"][0]["delta"], Json::object());
  Json usage = Json::parse(ev[4].second);
  EXPECT_EQ(usage["choices"], Json::array());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 1);
  EXPECT_EQ(ev[5].second, "[DONE]");
  // Without include_usage there is no usage chunk.
  auto g = MakeChatCompletionsFormatter(Meta(), true);
  EXPECT_EQ(Events(Finish(*g, FinishReason::kStop, 1, 0, 1)).size(), 2u);
  EXPECT_EQ(f->KeepAlive(KeepAliveMode::kComment), ": keep-alive\n\n");
  EXPECT_EQ(f->KeepAlive(KeepAliveMode::kOff), "");
}

TEST(ChatFormat, Logprobs) {
  ResponseMeta meta = Meta();
  meta.logprobs = true;
  meta.top_logprobs = 1;
  std::vector<TokenLogprob> lp = {{"Hi", -0.5, {{"Hi", -0.5}}}};
  auto s = MakeChatCompletionsFormatter(meta, true);
  Json chunk = Json::parse(Events(s->Delta(0, "Hi", lp))[0].second);
  Json entry = chunk["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(entry["token"], "Hi");
  EXPECT_EQ(entry["logprob"], -0.5);
  EXPECT_EQ(entry["bytes"], Json::parse("[72, 105]"));
  EXPECT_EQ(entry["top_logprobs"][0]["token"], "Hi");
  auto n = MakeChatCompletionsFormatter(meta, false);
  n->Delta(0, "Hi", lp);
  Json body = Json::parse(Finish(*n, FinishReason::kStop, 1, 0, 1));
  EXPECT_EQ(body["choices"][0]["logprobs"]["content"].size(), 1u);
}

TEST(CompletionFormat, BodyStreamAndLogprobs) {
  ResponseMeta meta = Meta();
  meta.logprobs = true;
  auto f = MakeCompletionsFormatter(meta, false);
  f->Delta(0, "ab", {{"a", -1, {}}, {"b", -2, {{"b", -2}, {"c", -3}}}});
  Json j = Json::parse(Finish(*f, FinishReason::kStopString, 3, 0, 2));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "ab");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], Json::parse(R"(["a","b"])"));
  EXPECT_EQ(j["choices"][0]["logprobs"]["token_logprobs"], Json::parse("[-1.0,-2.0]"));
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], Json::parse("[0,1]"));
  EXPECT_EQ(j["choices"][0]["logprobs"]["top_logprobs"][1]["c"], -3.0);
  auto s = MakeCompletionsFormatter(Meta(), true);
  auto ev = Events(s->Delta(0, "x", {}) + Finish(*s, FinishReason::kLength, 1, 0, 1));
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(Json::parse(ev[0].second)["choices"][0]["text"], "x");
  EXPECT_EQ(Json::parse(ev[1].second)["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(ev[2].second, "[DONE]");
}

TEST(MessagesFormat, StreamEventsInOrder) {
  auto f = MakeMessagesFormatter(Meta(), true);
  // One statement per call: the formatter's state orders its output.
  std::string sse = f->KeepAlive(KeepAliveMode::kChunk);
  sse += f->Start(0, {100, 64, 0});
  sse += f->Delta(0, "Hi", {});
  sse += f->Delta(0, " there", {});
  sse += Finish(*f, FinishReason::kStop, 100, 64, 3);
  auto ev = Events(sse);
  std::vector<std::string> names;
  for (auto& [e, d] : ev) {
    names.push_back(e);
    EXPECT_EQ(Json::parse(d)["type"], e) << d;  // each data names its event
  }
  EXPECT_EQ(names, (std::vector<std::string>{"ping", "message_start", "content_block_start", "content_block_delta",
                                             "content_block_delta", "content_block_stop", "message_delta",
                                             "message_stop"}));
  Json start = Json::parse(ev[1].second)["message"];
  EXPECT_EQ(start["id"], "id-1");
  EXPECT_EQ(start["role"], "assistant");
  EXPECT_EQ(start["content"], Json::array());
  EXPECT_TRUE(start["stop_reason"].is_null());
  // input_tokens is the uncached part; the cached part is cache_read_input_tokens.
  EXPECT_EQ(start["usage"]["input_tokens"], 36);
  EXPECT_EQ(start["usage"]["cache_read_input_tokens"], 64);
  EXPECT_EQ(Json::parse(ev[2].second)["content_block"], Json::parse(R"({"type":"text","text":""})"));
  EXPECT_EQ(Json::parse(ev[3].second)["delta"], Json::parse(R"({"type":"text_delta","text":"Hi"})"));
  Json delta = Json::parse(ev[6].second);
  EXPECT_EQ(delta["delta"]["stop_reason"], "end_turn");
  EXPECT_TRUE(delta["delta"]["stop_sequence"].is_null());
  EXPECT_EQ(delta["usage"]["output_tokens"], 3);
  EXPECT_EQ(f->KeepAlive(KeepAliveMode::kComment), ": keep-alive\n\n");
}

TEST(MessagesFormat, NonStreamingStopSequenceAndMaxTokens) {
  auto f = MakeMessagesFormatter(Meta(), false);
  f->Delta(0, "abc", {});
  Json j = Json::parse(Finish(*f, FinishReason::kStopString, 5, 0, 2, "###"));
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["content"], Json::parse(R"([{"type":"text","text":"abc"}])"));
  EXPECT_EQ(j["stop_reason"], "stop_sequence");
  EXPECT_EQ(j["stop_sequence"], "###");
  EXPECT_EQ(j["usage"]["input_tokens"], 5);
  EXPECT_EQ(j["usage"]["output_tokens"], 2);
  auto g = MakeMessagesFormatter(Meta(), false);
  EXPECT_EQ(Json::parse(Finish(*g, FinishReason::kLength, 1, 0, 1))["stop_reason"], "max_tokens");
}

TEST(ChatFormat, ChoicesInterleavedNonStreaming) {
  ResponseMeta meta = Meta();
  meta.choices = 3;
  meta.logprobs = true;
  auto f = MakeChatCompletionsFormatter(meta, false);
  f->Start(1, {4, 0, 0});
  f->Delta(1, "b", {{"b", -2, {}}});
  f->Start(0, {4, 0, 0});
  f->Delta(0, "a", {{"a", -1, {}}});
  f->Start(2, {4, 0, 0});
  f->Delta(2, "c", {});
  f->Delta(1, "b", {{"b", -2, {}}});
  EXPECT_EQ(f->FinishChoice(1, FinishReason::kLength, ""), "");
  f->FinishChoice(2, FinishReason::kStopString, "x");
  f->FinishChoice(0, FinishReason::kStop, "");
  Json j = Json::parse(f->End({4, 0, 5}));
  ASSERT_EQ(j["choices"].size(), 3u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "a");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][1]["message"]["content"], "bb");
  EXPECT_EQ(j["choices"][1]["logprobs"]["content"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][2]["message"]["content"], "c");
  EXPECT_EQ(j["choices"][2]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
}

TEST(ChatFormat, ChoicesStreamEachWithItsIndex) {
  ResponseMeta meta = Meta();
  meta.choices = 2;
  auto f = MakeChatCompletionsFormatter(meta, true);
  std::string sse = f->Start(0, {3, 0, 0}) + f->Delta(0, "x", {}) + f->Start(1, {3, 0, 0}) +
                    f->Delta(1, "y", {}) + f->FinishChoice(1, FinishReason::kLength, "") +
                    f->FinishChoice(0, FinishReason::kStop, "") + f->End({3, 0, 2});
  auto ev = Events(sse);
  ASSERT_EQ(ev.size(), 7u) << sse;
  std::vector<int> index;
  for (size_t i = 0; i + 1 < ev.size(); ++i) index.push_back(Json::parse(ev[i].second)["choices"][0]["index"]);
  EXPECT_EQ(index, (std::vector<int>{0, 0, 1, 1, 1, 0}));
  EXPECT_EQ(Json::parse(ev[2].second)["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(Json::parse(ev[3].second)["choices"][0]["delta"]["content"], "y");
  EXPECT_EQ(Json::parse(ev[4].second)["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(Json::parse(ev[5].second)["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(ev[6].second, "[DONE]");
}

TEST(CompletionFormat, ChoicesKeepTheirOwnTextOffsets) {
  ResponseMeta meta = Meta();
  meta.choices = 2;
  meta.logprobs = true;
  auto f = MakeCompletionsFormatter(meta, false);
  f->Delta(0, "ab", {{"ab", -1, {}}});
  f->Delta(1, "c", {{"c", -1, {}}});
  f->Delta(0, "d", {{"d", -1, {}}});
  f->Delta(1, "e", {{"e", -1, {}}});
  f->FinishChoice(0, FinishReason::kStop, "");
  f->FinishChoice(1, FinishReason::kStop, "");
  Json j = Json::parse(f->End({1, 0, 4}));
  EXPECT_EQ(j["choices"][0]["text"], "abd");
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], Json::parse("[0,2]"));
  EXPECT_EQ(j["choices"][1]["text"], "ce");
  EXPECT_EQ(j["choices"][1]["logprobs"]["text_offset"], Json::parse("[0,1]"));
}

TEST(ErrorShapes, OpenAIAndAnthropic) {
  ApiError e = BadRequest("'x' is bad", "x");
  Json o = Json::parse(ErrorJson(e, ApiFlavor::kOpenAI));
  EXPECT_EQ(o, Json::parse(R"({"error":{"message":"'x' is bad","type":"invalid_request_error","param":"x","code":null}})"));
  Json a = Json::parse(ErrorJson(e, ApiFlavor::kAnthropic));
  EXPECT_EQ(a, Json::parse(R"({"type":"error","error":{"type":"invalid_request_error","message":"'x' is bad"}})"));
  EXPECT_EQ(ErrorType(401, ApiFlavor::kOpenAI), "authentication_error");
  EXPECT_EQ(ErrorType(404, ApiFlavor::kOpenAI), "not_found_error");
  EXPECT_EQ(ErrorType(429, ApiFlavor::kOpenAI), "rate_limit_error");
  EXPECT_EQ(ErrorType(503, ApiFlavor::kOpenAI), "server_error");
  EXPECT_EQ(ErrorType(503, ApiFlavor::kAnthropic), "overloaded_error");
  EXPECT_EQ(ErrorType(413, ApiFlavor::kAnthropic), "request_too_large");
  EXPECT_EQ(ErrorType(500, ApiFlavor::kAnthropic), "api_error");
  EXPECT_EQ(FlavorForPath("/v1/messages"), ApiFlavor::kAnthropic);
  EXPECT_EQ(FlavorForPath("/v1/messages/count_tokens"), ApiFlavor::kAnthropic);
  EXPECT_EQ(FlavorForPath("/v1/chat/completions"), ApiFlavor::kOpenAI);
  ApiError busy = ErrorWithStatus(503, "busy");
  busy.retry_after_s = 1;
  HttpResponse r = ErrorResponse(busy, ApiFlavor::kOpenAI);
  EXPECT_EQ(r.status, 503);
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{"Retry-After", "1"}));
  // Invalid UTF-8 quoted in a message never breaks the body.
  EXPECT_NO_THROW(Json::parse(ErrorJson(BadRequest("bad \xff byte"), ApiFlavor::kOpenAI)));
  // Streamed errors: a data line then [DONE] (OpenAI), an error event (Anthropic).
  auto ev = Events(MakeChatCompletionsFormatter(Meta(), true)->StreamError(e));
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_TRUE(Json::parse(ev[0].second).contains("error"));
  EXPECT_EQ(ev[1].second, "[DONE]");
  auto aev = Events(MakeMessagesFormatter(Meta(), true)->StreamError(e));
  ASSERT_EQ(aev.size(), 1u);
  EXPECT_EQ(aev[0].first, "error");
}

}  // namespace
}  // namespace llmhost::server::response_format_test
