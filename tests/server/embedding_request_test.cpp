// The bodies of /v1/embeddings, /api/embed, /api/embeddings and /v1/rerank: every accepted
// shape, and a 400 naming the field for every bad one.
#include "server/embedding_request.h"

#include <gtest/gtest.h>

#include <string>

namespace llmhost::server::embedding_request_test {
namespace {

OJson J(const char* text) { return OJson::parse(text); }

template <typename Request, typename Parse>
ApiError ErrorOf(Parse parse, const char* body) {
  Request r;
  MaybeError e = parse(J(body), &r);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

ApiError EmbeddingsError(const char* body) { return ErrorOf<EmbeddingsRequest>(ParseEmbeddingsRequest, body); }
ApiError OllamaError(const char* body) { return ErrorOf<EmbeddingsRequest>(ParseOllamaEmbedRequest, body); }
ApiError RerankError(const char* body) { return ErrorOf<RerankRequest>(ParseRerankRequest, body); }

TEST(EmbeddingsRequest, EveryInputShape) {
  EmbeddingsRequest a;
  ASSERT_FALSE(ParseEmbeddingsRequest(J(R"({"model":"m","input":"hello"})"), &a));
  EXPECT_EQ(a.model, "m");
  EXPECT_EQ(a.texts, std::vector<std::string>{"hello"});
  EXPECT_FALSE(a.base64);
  EXPECT_FALSE(a.query);
  EXPECT_FALSE(a.truncate) << "OpenAI refuses long inputs";

  EmbeddingsRequest b;
  ASSERT_FALSE(ParseEmbeddingsRequest(
      J(R"({"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":8,"input_type":"query","user":"u"})"),
      &b));
  EXPECT_EQ(b.texts, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(b.base64);
  EXPECT_EQ(b.dimensions, 8);
  EXPECT_TRUE(b.query);
  EXPECT_EQ(b.size(), 2u);

  EmbeddingsRequest c;
  ASSERT_FALSE(ParseEmbeddingsRequest(J(R"({"model":"m","input":[1,2,3],"encoding_format":"float"})"), &c));
  EXPECT_TRUE(c.texts.empty());
  EXPECT_EQ(c.token_lists, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));

  EmbeddingsRequest d;
  ASSERT_FALSE(ParseEmbeddingsRequest(J(R"({"model":"m","input":[[1],[2,3]]})"), &d));
  EXPECT_EQ(d.token_lists, (std::vector<std::vector<int32_t>>{{1}, {2, 3}}));
  EXPECT_EQ(d.size(), 2u);
}

TEST(EmbeddingsRequest, BadFieldsAreNamed) {
  struct Case {
    const char* body;
    const char* param;
  } cases[] = {
      {R"({"input":"x"})", "model"},
      {R"({"model":"m"})", "input"},
      {R"({"model":"m","input":""})", "input"},
      {R"({"model":"m","input":[]})", "input"},
      {R"({"model":"m","input":5})", "input"},
      {R"({"model":"m","input":{"text":"x"}})", "input"},
      {R"({"model":"m","input":["a",""]})", "input[1]"},
      {R"({"model":"m","input":["a",3]})", "input[1]"},
      {R"({"model":"m","input":[1,-2]})", "input[1]"},
      {R"({"model":"m","input":[1,"a"]})", "input[1]"},
      {R"({"model":"m","input":[1,2.5]})", "input[1]"},
      {R"({"model":"m","input":[[1],[]]})", "input[1]"},
      {R"({"model":"m","input":[[1],2]})", "input[1]"},
      {R"({"model":"m","input":[[1],[4294967296]]})", "input[1][0]"},
      {R"({"model":"m","input":"x","encoding_format":"int8"})", "encoding_format"},
      {R"({"model":"m","input":"x","encoding_format":1})", "encoding_format"},
      {R"({"model":"m","input":"x","dimensions":0})", "dimensions"},
      {R"({"model":"m","input":"x","dimensions":"8"})", "dimensions"},
      {R"({"model":"m","input":"x","input_type":"passage"})", "input_type"},
  };
  for (const Case& c : cases) {
    const ApiError e = EmbeddingsError(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_NE(e.message.find(c.param), std::string::npos) << c.body << ": " << e.message;
  }
}

TEST(EmbeddingsRequest, TooManyInputs) {
  OJson body = {{"model", "m"}, {"input", OJson::array()}};
  for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) body["input"].push_back("x");
  EmbeddingsRequest r;
  MaybeError e = ParseEmbeddingsRequest(body, &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "input");
}

TEST(OllamaEmbedRequest, InputsTruncateAndKeepAlive) {
  EmbeddingsRequest a;
  ASSERT_FALSE(ParseOllamaEmbedRequest(J(R"({"model":"m","input":"hi"})"), &a));
  EXPECT_EQ(a.texts, std::vector<std::string>{"hi"});
  EXPECT_TRUE(a.truncate) << "Ollama's default";
  EmbeddingsRequest b;
  ASSERT_FALSE(ParseOllamaEmbedRequest(
      J(R"({"model":"m","input":["a","b"],"truncate":false,"dimensions":4,"keep_alive":"5m","options":{}})"), &b));
  EXPECT_EQ(b.texts.size(), 2u);
  EXPECT_FALSE(b.truncate);
  EXPECT_EQ(b.dimensions, 4);
  EXPECT_EQ(b.keep_alive_s, 300.0);

  struct Case {
    const char* body;
    const char* param;
  } cases[] = {
      {R"({"input":"x"})", "model"},
      {R"({"model":"m"})", "input"},
      {R"({"model":"m","input":[1,2]})", "input[0]"},
      {R"({"model":"m","input":["a",""]})", "input[1]"},
      {R"({"model":"m","input":[]})", "input"},
      {R"({"model":"m","input":7})", "input"},
      {R"({"model":"m","input":"x","truncate":"yes"})", "truncate"},
      {R"({"model":"m","input":"x","dimensions":-1})", "dimensions"},
      {R"({"model":"m","input":"x","keep_alive":"soon"})", "keep_alive"},
      {R"({"model":"m","input":"x","options":{"temprature":0.5}})", "options.temprature"},
      {R"({"model":"m","input":"x","options":3})", "options"},
  };
  EmbeddingsRequest c;
  EXPECT_FALSE(ParseOllamaEmbedRequest(
      J(R"({"model":"m","input":"x","options":{"num_ctx":8192,"temperature":0.2,"top_k":null}})"), &c))
      << "Ollama's known options are accepted (none applies to embeddings); nulls are absent";
  EXPECT_EQ(c.unused_options, (std::vector<std::string>{"num_ctx", "temperature"}));
  for (const Case& c : cases) {
    const ApiError e = OllamaError(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
  }
}

// Ollama's older /api/embeddings: one prompt; an empty one only loads.
TEST(OllamaEmbeddingsRequest, OnePromptEmptyLoadsOnly) {
  EmbeddingsRequest a;
  ASSERT_FALSE(ParseOllamaEmbeddingsRequest(J(R"({"model":"m","prompt":"hi","keep_alive":10,"options":{"num_thread":4}})"), &a));
  EXPECT_EQ(a.texts, std::vector<std::string>{"hi"});
  EXPECT_TRUE(a.truncate);
  EXPECT_EQ(a.keep_alive_s, 10.0);
  for (const char* body : {R"({"model":"m","prompt":""})", R"({"model":"m"})", R"({"model":"m","prompt":null})"}) {
    EmbeddingsRequest b;
    ASSERT_FALSE(ParseOllamaEmbeddingsRequest(J(body), &b)) << body << ": as Ollama, an empty prompt only loads";
    EXPECT_EQ(b.texts, std::vector<std::string>{""}) << body;
  }
  EXPECT_EQ(ErrorOf<EmbeddingsRequest>(ParseOllamaEmbeddingsRequest, R"({"model":"m","prompt":["a"]})").param, "prompt");
  EXPECT_EQ(ErrorOf<EmbeddingsRequest>(ParseOllamaEmbeddingsRequest, R"({"prompt":"a"})").param, "model");
  EXPECT_EQ(
      ErrorOf<EmbeddingsRequest>(ParseOllamaEmbeddingsRequest, R"({"model":"m","prompt":"x","options":{"sed":1}})").param,
      "options.sed");
}

TEST(RerankRequest, DocumentsAsStringsOrObjects) {
  RerankRequest r;
  ASSERT_FALSE(ParseRerankRequest(
      J(R"({"model":"m","query":"q","documents":["a",{"text":"b"}],"top_n":1,"return_documents":true})"), &r));
  EXPECT_EQ(r.query, "q");
  EXPECT_EQ(r.documents, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.top_n, 1);
  EXPECT_TRUE(r.return_documents);
  RerankRequest d;
  ASSERT_FALSE(ParseRerankRequest(J(R"({"model":"m","query":"q","documents":["a"]})"), &d));
  EXPECT_FALSE(d.top_n.has_value());
  EXPECT_FALSE(d.return_documents);
}

TEST(RerankRequest, BadFieldsAreNamed) {
  struct Case {
    const char* body;
    const char* param;
  } cases[] = {
      {R"({"query":"q","documents":["a"]})", "model"},
      {R"({"model":"m","documents":["a"]})", "query"},
      {R"({"model":"m","query":"","documents":["a"]})", "query"},
      {R"({"model":"m","query":3,"documents":["a"]})", "query"},
      {R"({"model":"m","query":"q"})", "documents"},
      {R"({"model":"m","query":"q","documents":"a"})", "documents"},
      {R"({"model":"m","query":"q","documents":[]})", "documents"},
      {R"({"model":"m","query":"q","documents":["a",5]})", "documents[1]"},
      {R"({"model":"m","query":"q","documents":["a",{"content":"b"}]})", "documents[1]"},
      {R"({"model":"m","query":"q","documents":["a",""]})", "documents[1]"},
      {R"({"model":"m","query":"q","documents":["a"],"top_n":0})", "top_n"},
      {R"({"model":"m","query":"q","documents":["a"],"top_n":"2"})", "top_n"},
      {R"({"model":"m","query":"q","documents":["a"],"return_documents":"yes"})", "return_documents"},
  };
  for (const Case& c : cases) {
    const ApiError e = RerankError(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
  }
}

}  // namespace
}  // namespace llmhost::server::embedding_request_test
