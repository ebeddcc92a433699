// Ollama's API pieces: request bodies under Ollama's field names (options,
// keep_alive, think, format, messages with object arguments and tool
// names, load-only requests, refused fields), and its NDJSON responses.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/ollama_request.h"
#include "server/response_format.h"

namespace llmhost::server::ollama_test {
namespace {

using Json = nlohmann::json;

MaybeError Chat(const std::string& extra, InferenceRequest* out, std::vector<std::string>* ignored = nullptr) {
  std::vector<std::string> unused;
  return ParseOllamaChatRequest(OJson::parse(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}])" +
                                             extra + "}"),
                                out, ignored ? ignored : &unused);
}

TEST(OllamaRequest, OptionsMapToSampling) {
  InferenceRequest r;
  std::vector<std::string> ignored;
  ASSERT_FALSE(Chat(R"(, "options": {"temperature": 0.2, "top_p": 0.9, "top_k": 7, "min_p": 0.05, "seed": 3,
                       "num_predict": 12, "stop": ["END"], "repeat_penalty": 1.1, "num_ctx": 8192, "num_gpu": 99,
                       "mirostat": 0, "typical_p": 1})",
                    &r, &ignored));
  EXPECT_EQ(r.api, ApiKind::kOllamaChat);
  EXPECT_TRUE(r.stream) << "Ollama streams unless told not to";
  EXPECT_EQ(r.sampling.temperature, 0.2);
  EXPECT_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.top_k, 7);
  EXPECT_EQ(r.sampling.min_p, 0.05);
  EXPECT_EQ(r.sampling.seed, 3u);
  EXPECT_EQ(r.sampling.max_tokens, 12);
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.sampling.repetition_penalty, 1.1);
  EXPECT_EQ(ignored, (std::vector<std::string>{"num_ctx", "num_gpu"}));
  InferenceRequest unlimited;
  ASSERT_FALSE(Chat(R"(, "stream": false, "options": {"num_predict": -1})", &unlimited));
  EXPECT_FALSE(unlimited.sampling.max_tokens.has_value());
  EXPECT_FALSE(unlimited.stream);
  for (const auto& [extra, param] : std::vector<std::pair<std::string, std::string>>{
           {R"(, "options": {"mirostat": 2})", "options.mirostat"},
           {R"(, "options": {"tfs_z": 0.5})", "options.tfs_z"},
           {R"(, "options": {"warp": 1})", "options.warp"},
           {R"(, "options": {"num_predict": 0})", "options.num_predict"},
           {R"(, "options": {"temperature": "hot"})", "options.temperature"},
           {R"(, "options": [])", "options"},
           {R"(, "think": "max")", "think"},
           {R"(, "format": "yaml")", "format"},
           {R"(, "keep_alive": "5 minutes")", "keep_alive"},
           {R"(, "logprobs": true)", "logprobs"}}) {
    InferenceRequest bad;
    MaybeError e = Chat(extra, &bad);
    ASSERT_TRUE(e) << extra;
    EXPECT_EQ(e->param, param) << e->message;
  }
}

TEST(OllamaRequest, KeepAliveDurations) {
  for (const auto& [text, seconds] : std::vector<std::pair<std::string, double>>{
           {R"("5m")", 300}, {R"("1h30m")", 5400}, {R"("90s")", 90}, {R"("1.5h")", 5400}, {R"("-1")", -1},
           {R"("-1m")", -60}, {R"("0")", 0}, {"0", 0}, {"600", 600}, {"-1", -1}, {R"("250ms")", 0.25}}) {
    std::optional<double> out;
    ASSERT_FALSE(ReadKeepAlive(OJson::parse(R"({"keep_alive": )" + text + "}"), &out)) << text;
    EXPECT_DOUBLE_EQ(*out, seconds) << text;
  }
  for (const char* bad : {R"("")", R"("m")", R"("5x")", R"("5 m")", "true", R"("1h-2m")"}) {
    std::optional<double> out;
    EXPECT_TRUE(ReadKeepAlive(OJson::parse(R"({"keep_alive": )" + std::string(bad) + "}"), &out)) << bad;
  }
}

TEST(OllamaRequest, MessagesThinkFormatAndTools) {
  InferenceRequest r;
  std::vector<std::string> ignored;
  ASSERT_FALSE(ParseOllamaChatRequest(OJson::parse(R"({"model": "m", "think": false, "format": {"type": "object"},
    "keep_alive": "2m",
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "messages": [{"role": "user", "content": "q"},
                 {"role": "assistant", "content": "", "thinking": "hmm",
                  "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
                 {"role": "tool", "tool_name": "f", "content": "42"}]})"),
                                      &r, &ignored));
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
  EXPECT_EQ(r.constraint.kind, ConstraintSpec::Kind::kJsonSchema);
  EXPECT_EQ(r.keep_alive_s, 120);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1]["reasoning_content"], "hmm");
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"], OJson::parse(R"({"a": 1})"));
  EXPECT_EQ(r.messages[2]["name"], "f");
  EXPECT_EQ(r.tools.size(), 1u);
  InferenceRequest effort;
  ASSERT_FALSE(Chat(R"(, "think": "low", "format": "json")", &effort));
  EXPECT_EQ(effort.chat_template_kwargs["enable_thinking"], true);
  EXPECT_EQ(effort.constraint.kind, ConstraintSpec::Kind::kJsonObject);
  InferenceRequest images;
  MaybeError e = ParseOllamaChatRequest(
      OJson::parse(R"({"model": "m", "messages": [{"role": "user", "content": "q", "images": ["aGk="]}]})"), &images,
      &ignored);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages[0].images");
}

TEST(OllamaRequest, GenerateTemplatedRawAndLoadOnly) {
  std::vector<std::string> ignored;
  InferenceRequest chat;
  ASSERT_FALSE(ParseOllamaGenerateRequest(OJson::parse(R"({"model": "m", "prompt": "p", "system": "s"})"), &chat, &ignored));
  EXPECT_EQ(chat.api, ApiKind::kOllamaGenerate);
  EXPECT_EQ(chat.prompt_kind, PromptKind::kChat);
  EXPECT_EQ(chat.messages, OJson::parse(R"([{"role": "system", "content": "s"}, {"role": "user", "content": "p"}])"));
  InferenceRequest raw;
  ASSERT_FALSE(ParseOllamaGenerateRequest(OJson::parse(R"({"model": "m", "prompt": "p", "raw": true})"), &raw, &ignored));
  EXPECT_EQ(raw.prompt_kind, PromptKind::kText);
  EXPECT_EQ(raw.prompt_text, "p");
  InferenceRequest load;
  ASSERT_FALSE(ParseOllamaGenerateRequest(OJson::parse(R"({"model": "m", "keep_alive": 0})"), &load, &ignored));
  EXPECT_TRUE(load.load_only);
  EXPECT_EQ(load.keep_alive_s, 0);
  InferenceRequest chat_load;
  ASSERT_FALSE(ParseOllamaChatRequest(OJson::parse(R"({"model": "m"})"), &chat_load, &ignored));
  EXPECT_TRUE(chat_load.load_only);
  EXPECT_EQ(chat_load.api, ApiKind::kOllamaChat);
  for (const char* field : {R"("suffix": "x")", R"("template": "{{ .Prompt }}")", R"("context": [1, 2])",
                            R"("images": ["aGk="])"}) {
    InferenceRequest bad;
    MaybeError e = ParseOllamaGenerateRequest(OJson::parse(R"({"model": "m", "prompt": "p", )" + std::string(field) + "}"),
                                              &bad, &ignored);
    EXPECT_TRUE(e) << field;
  }
  InferenceRequest no_model;
  EXPECT_TRUE(ParseOllamaGenerateRequest(OJson::parse(R"({"prompt": "p"})"), &no_model, &ignored));
}

std::vector<Json> Lines(const std::string& ndjson) {
  std::vector<Json> out;
  std::istringstream in(ndjson);
  for (std::string line; std::getline(in, line);) {
    EXPECT_FALSE(line.empty()) << "no blank lines in NDJSON";
    out.push_back(Json::parse(line));
  }
  EXPECT_TRUE(ndjson.empty() || ndjson.back() == '\n');
  return out;
}

TEST(OllamaFormat, ChatStreamsLinesThenTheTotals) {
  ResponseMeta meta;
  meta.model = "tiny";
  auto f = MakeOllamaFormatter(meta, /*stream=*/true, /*chat=*/true);
  EXPECT_STREQ(f->content_type(), "application/x-ndjson");
  EXPECT_EQ(f->KeepAlive(KeepAliveMode::kChunk), "");
  std::string out = f->Start(0, {10, 0, 0});
  out += f->Events(0, {{OutputEvent::Kind::kReasoning, 0, "think", "", ""}}, {});
  out += f->Delta(0, "Hi", {});
  out += f->Events(0, {{OutputEvent::Kind::kToolCallStart, 0, "", "c1", "get"},
                       {OutputEvent::Kind::kToolCallArguments, 0, R"({"a": )", "", ""},
                       {OutputEvent::Kind::kToolCallArguments, 0, "1}", "", ""},
                       {OutputEvent::Kind::kToolCallEnd, 0, "", "", ""}},
                   {});
  out += f->FinishChoice(0, FinishReason::kStop, "");
  out += f->End({10, 0, 4});
  std::vector<Json> lines = Lines(out);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["message"]["thinking"], "think");
  EXPECT_EQ(lines[1]["message"], Json::parse(R"({"role": "assistant", "content": "Hi"})"));
  EXPECT_EQ(lines[2]["message"]["tool_calls"], Json::parse(R"([{"function": {"name": "get", "arguments": {"a": 1}}}])"));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(lines[i]["done"], false);
    EXPECT_EQ(lines[i]["model"], "tiny");
  }
  EXPECT_EQ(lines[3]["done"], true);
  EXPECT_EQ(lines[3]["done_reason"], "stop");
  EXPECT_EQ(lines[3]["prompt_eval_count"], 10);
  EXPECT_EQ(lines[3]["eval_count"], 4);
  EXPECT_GE(lines[3]["total_duration"].get<int64_t>(), lines[3]["eval_duration"].get<int64_t>());
  EXPECT_EQ(Json::parse(f->StreamError(ErrorWithStatus(500, "boom"))), Json::parse(R"({"error": "boom"})"));
}

TEST(OllamaFormat, WholeGenerateAndChat) {
  ResponseMeta meta;
  meta.model = "tiny";
  auto g = MakeOllamaFormatter(meta, false, false);
  g->Delta(0, "ab", {});
  g->Delta(0, "c", {});
  g->FinishChoice(0, FinishReason::kLength, "");
  Json j = Json::parse(g->End({3, 1, 2}));
  EXPECT_EQ(j["response"], "abc");
  EXPECT_EQ(j["done_reason"], "length");
  EXPECT_EQ(j["done"], true);
  auto c = MakeOllamaFormatter(meta, false, true);
  c->Events(0, {{OutputEvent::Kind::kReasoning, 0, "r", "", ""}, {OutputEvent::Kind::kContent, 0, "x", "", ""}}, {});
  Json k = Json::parse(c->End({1, 0, 1}));
  EXPECT_EQ(k["message"], Json::parse(R"({"role": "assistant", "content": "x", "thinking": "r"})"));
  // Ollama's errors are a string, not an object.
  EXPECT_EQ(Json::parse(ErrorJson(ErrorWithStatus(404, "no model"), ApiFlavor::kOllama)),
            Json::parse(R"({"error": "no model"})"));
  EXPECT_EQ(FlavorForPath("/api/chat"), ApiFlavor::kOllama);
  EXPECT_EQ(FlavorForPath("/api/status"), ApiFlavor::kOpenAI);
}

}  // namespace
}  // namespace llmhost::server::ollama_test
