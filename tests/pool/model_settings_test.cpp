// Per-model settings: validation naming the field, unique aliases, one
// default, persistence in model_settings.json, null removing a field.
#include "pool/model_settings.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/file.h"

namespace llmhost::model_settings_test {
namespace {

using Json = nlohmann::json;

std::string TextOf(const std::string& path) {
  auto t = ReadFileToString(path);
  return t.ok() ? *t : "";
}

TEST(ModelSettings, AppliesAndValidatesFields) {
  auto s = ApplyModelSettingsJson(ModelSettings(), Json::parse(R"({
      "alias": "fast", "pinned": true, "default": true, "ttl_seconds": 600,
      "model_type_override": "qwen3", "hidden": true,
      "sampling": {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.05,
                   "repetition_penalty": 1.1, "presence_penalty": 0.5, "frequency_penalty": -0.5},
      "chat_template_kwargs": {"enable_thinking": false},
      "max_context_window": 32768, "max_tokens": 4096})"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s->alias, "fast");
  EXPECT_TRUE(s->pinned);
  EXPECT_TRUE(s->is_default);
  EXPECT_TRUE(s->hidden);
  EXPECT_EQ(*s->ttl_seconds, 600);
  EXPECT_EQ(*s->model_type_override, "qwen3");
  EXPECT_DOUBLE_EQ(*s->sampling.temperature, 0.7);
  EXPECT_EQ(*s->sampling.top_k, 20);
  EXPECT_EQ(s->chat_template_kwargs["enable_thinking"], false);
  EXPECT_EQ(*s->max_context_window, 32768);
  EXPECT_EQ(*s->max_tokens, 4096);
  // Round trip.
  auto again = ApplyModelSettingsJson(ModelSettings(), ModelSettingsToJson(*s));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *s);
  // null removes a field.
  auto cleared = ApplyModelSettingsJson(*s, Json::parse(R"({"alias": null, "ttl_seconds": null, "sampling": null})"));
  ASSERT_TRUE(cleared.ok());
  EXPECT_FALSE(cleared->alias);
  EXPECT_FALSE(cleared->ttl_seconds);
  EXPECT_FALSE(cleared->sampling.temperature);

  struct Bad {
    const char* json;
    const char* field;
  } bad[] = {
      {R"({"ttl_seconds": 0})", "ttl_seconds"},
      {R"({"ttl_seconds": "10"})", "ttl_seconds"},
      {R"({"pinned": "yes"})", "pinned"},
      {R"({"sampling": {"top_p": 0}})", "sampling.top_p"},
      {R"({"sampling": {"temperature": -1}})", "sampling.temperature"},
      {R"({"sampling": {"bogus": 1}})", "sampling.bogus"},
      {R"({"chat_template_kwargs": [1]})", "chat_template_kwargs"},
      {R"({"max_context_window": -5})", "max_context_window"},
      {R"({"max_tokens": 18446744073709551615})", "max_tokens"},
      {R"({"colour": "red"})", "colour"},
      {R"({"alias": ""})", "alias"},
      {R"({"alias": "   "})", "alias"},
      {R"({"alias": "a\u0007b"})", "alias"},
      {R"({"alias": "line\nbreak"})", "alias"},
      {R"({"alias": "org/name"})", "alias"},
      {R"({"alias": "..\\x"})", "alias"},
      {R"({"alias": " padded"})", "alias"},
      {R"({"chat_template_kwargs": {"a": [[[[[[[[1]]]]]]]]}})", "chat_template_kwargs.a"},
      {R"({"chat_template_kwargs": {"not a name": 1}})", "chat_template_kwargs"},
      {R"({"chat_template_kwargs": {"messages": []}})", "chat_template_kwargs.messages"},
  };
  for (const Bad& b : bad) {
    auto r = ApplyModelSettingsJson(ModelSettings(), Json::parse(b.json));
    ASSERT_FALSE(r.ok()) << b.json;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(b.field, 0), 0u) << r.status().message();
  }
  EXPECT_FALSE(ApplyModelSettingsJson(ModelSettings(), Json::array()).ok());
}

TEST(ModelSettings, StorePersistsAndEnforcesUniqueness) {
  const std::string path = testing::MakeTempDir() + "/model_settings.json";
  {
    auto store = ModelSettingsStore::Open(path);
    ASSERT_TRUE(store.ok());
    EXPECT_TRUE((*store)->All().empty());
    ASSERT_TRUE((*store)->Patch("a", Json::parse(R"({"alias":"x","default":true})"), {"a", "b"}).ok());
    // The same alias, a second default, an alias equal to another model's id.
    EXPECT_FALSE((*store)->Patch("b", Json::parse(R"({"alias":"x"})"), {"a", "b"}).ok());
    EXPECT_FALSE((*store)->Patch("b", Json::parse(R"({"default":true})"), {"a", "b"}).ok());
    EXPECT_FALSE((*store)->Patch("b", Json::parse(R"({"alias":"a"})"), {"a", "b"}).ok());
    EXPECT_FALSE((*store)->Get("b").alias);
    ASSERT_TRUE((*store)->Patch("b", Json::parse(R"({"pinned":true,"ttl_seconds":30})"), {"a", "b"}).ok());
  }
  auto reopened = ModelSettingsStore::Open(path);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->Get("a").alias, "x");
  EXPECT_TRUE((*reopened)->Get("a").is_default);
  EXPECT_TRUE((*reopened)->Get("b").pinned);
  EXPECT_EQ(*(*reopened)->Get("b").ttl_seconds, 30);
  EXPECT_FALSE((*reopened)->Get("unknown").pinned);
  auto text = ReadFileToString(path);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("\"models\""), std::string::npos);
}

TEST(ModelSettings, TemplateKwargsWithinTheLimitsAreKept) {
  // Seven levels below the kwargs object (8 in all), and 60 KiB of text.
  auto deep = ApplyModelSettingsJson(
      ModelSettings(), Json::parse(R"({"chat_template_kwargs": {"a": [[[[[[1]]]]]], "b": "x"}})"));
  ASSERT_TRUE(deep.ok()) << deep.status().ToString();
  EXPECT_EQ(deep->chat_template_kwargs["a"][0][0][0][0][0][0], 1);
  Json big = {{"chat_template_kwargs", {{"text", std::string(60 << 10, 'x')}}}};
  EXPECT_TRUE(ApplyModelSettingsJson(ModelSettings(), big).ok());
  big["chat_template_kwargs"]["text"] = std::string(70 << 10, 'x');
  auto r = ApplyModelSettingsJson(ModelSettings(), big);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("65536"), std::string::npos) << r.status().message();
}

// A file that cannot be used never stops the server: each problem is
// reported, what validates loads, the file is kept under another name and
// written anew with what loaded.
TEST(ModelSettings, UnreadableFilesAreSetAsideNeverFatal) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/a.json", "[1,2").ok());
  auto a = ModelSettingsStore::Open(dir + "/a.json");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ((*a)->problems().size(), 1u);
  EXPECT_NE((*a)->problems()[0].find("a.json"), std::string::npos);
  EXPECT_TRUE((*a)->All().empty());
  ASSERT_FALSE((*a)->set_aside_path().empty());
  EXPECT_EQ(TextOf((*a)->set_aside_path()), "[1,2") << "the original is kept";

  ASSERT_TRUE(WriteFileAtomic(dir + "/b.json", R"({"models":{"m":{"ttl_seconds":-1},"ok":{"pinned":true}}})").ok());
  auto b = ModelSettingsStore::Open(dir + "/b.json");
  ASSERT_TRUE(b.ok());
  ASSERT_EQ((*b)->problems().size(), 1u);
  EXPECT_NE((*b)->problems()[0].find("models.m: ttl_seconds"), std::string::npos) << (*b)->problems()[0];
  EXPECT_TRUE((*b)->Get("ok").pinned);
  auto rewritten = ModelSettingsStore::Open(dir + "/b.json");
  ASSERT_TRUE(rewritten.ok());
  EXPECT_TRUE((*rewritten)->problems().empty());
  EXPECT_TRUE((*rewritten)->Get("ok").pinned) << "what loaded was written back";
  EXPECT_NE(TextOf((*b)->set_aside_path()).find("ttl_seconds"), std::string::npos);

  ASSERT_TRUE(WriteFileAtomic(dir + "/c.json", R"({"models":{"m":{"alias":"z"},"n":{"alias":"z"}}})").ok());
  auto c = ModelSettingsStore::Open(dir + "/c.json");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->problems().size(), 1u);
  EXPECT_EQ(*(*c)->Get("m").alias, "z");

  // Deeper than the JSON limit, and larger than the settings cap.
  std::string deep = R"({"models":{"m":{"chat_template_kwargs":{"a":)" + std::string(3000, '[') +
                     std::string(3000, ']') + "}}}}";
  ASSERT_TRUE(WriteFileAtomic(dir + "/d.json", deep).ok());
  auto d = ModelSettingsStore::Open(dir + "/d.json");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ((*d)->problems().size(), 1u);
  EXPECT_NE((*d)->problems()[0].find("nests deeper"), std::string::npos) << (*d)->problems()[0];
  ASSERT_TRUE(WriteFileAtomic(dir + "/e.json", std::string(17 << 20, ' ')).ok());
  auto e = ModelSettingsStore::Open(dir + "/e.json");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->problems().size(), 1u);

  // In memory only.
  auto mem = ModelSettingsStore::Open("");
  ASSERT_TRUE(mem.ok());
  EXPECT_TRUE((*mem)->Patch("m", Json::parse(R"({"pinned":true})")).ok());
  EXPECT_TRUE((*mem)->Get("m").pinned);
}

TEST(ModelSettings, SavingCreatesAMissingHome) {
  const std::string path = testing::MakeTempDir() + "/not/yet/there/model_settings.json";
  auto store = ModelSettingsStore::Open(path);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Patch("m", Json::parse(R"({"alias":"fast"})")).ok());
  auto again = ModelSettingsStore::Open(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)->Get("m").alias, "fast");
}

TEST(ModelSettings, RuntimeKeyChangesOnlyWithReloadingSettings) {
  ModelSettings a;
  ModelSettings b = a;
  b.sampling.temperature = 0.2;
  b.alias.emplace(1, 'q');
  b.pinned = true;
  EXPECT_EQ(a.RuntimeKey(), b.RuntimeKey());
  b.max_context_window = 1024;
  EXPECT_NE(a.RuntimeKey(), b.RuntimeKey());
  ModelSettings c = a;
  c.device = "cuda:1";  // another device: the model is loaded anew there
  EXPECT_NE(a.RuntimeKey(), c.RuntimeKey());
}

TEST(ModelSettings, DeviceNamesTheCpuOrAGpu) {
  for (const char* ok : {"cpu", "cuda", "cuda:0", "cuda:3"}) {
    auto s = ApplyModelSettingsJson(ModelSettings(), Json{{"device", ok}});
    ASSERT_TRUE(s.ok()) << ok << ": " << s.status().ToString();
    EXPECT_EQ(*s->device, ok);
    EXPECT_EQ(ModelSettingsToJson(*s)["device"], ok);
  }
  ModelSettings on_gpu;
  on_gpu.device = "cuda:1";
  auto server = ApplyModelSettingsJson(on_gpu, Json{{"device", "auto"}});  // the server's choice
  ASSERT_TRUE(server.ok());
  EXPECT_FALSE(server->device.has_value());
  EXPECT_FALSE(ApplyModelSettingsJson(on_gpu, Json{{"device", nullptr}})->device.has_value());
  for (const Json& bad : {Json("gpu"), Json("cuda:"), Json("cuda:-1"), Json(1)}) {
    auto s = ApplyModelSettingsJson(ModelSettings(), Json{{"device", bad}});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("device"), std::string::npos) << s.status().message();
  }
}

TEST(ModelSettings, ToolParserNamesAnOutputFormat) {
  for (const char* ok : {"hermes", "qwen3_coder", "harmony", "none"}) {
    auto s = ApplyModelSettingsJson(ModelSettings(), Json{{"tool_parser", ok}});
    ASSERT_TRUE(s.ok()) << ok << ": " << s.status().ToString();
    EXPECT_EQ(*s->tool_parser, ok);
    EXPECT_EQ(ModelSettingsToJson(*s)["tool_parser"], ok);
    EXPECT_EQ(s->RuntimeKey(), ModelSettings().RuntimeKey()) << "applied per request: no reload";
  }
  ModelSettings set;
  set.tool_parser = "hermes";
  EXPECT_FALSE(ApplyModelSettingsJson(set, Json{{"tool_parser", "auto"}})->tool_parser.has_value());
  EXPECT_FALSE(ApplyModelSettingsJson(set, Json{{"tool_parser", nullptr}})->tool_parser.has_value());
  auto bad = ApplyModelSettingsJson(ModelSettings(), Json{{"tool_parser", "hermes2"}});
  ASSERT_FALSE(bad.ok());
  // The error names the field and lists the valid names.
  EXPECT_NE(bad.status().message().find("tool_parser"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("qwen3_coder"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ApplyModelSettingsJson(ModelSettings(), Json{{"tool_parser", 3}}).ok());
}

TEST(ModelSettings, KindAndInstructionMakeAnEmbeddingModel) {
  for (const char* kind : {"embedding", "rerank"}) {
    auto s = ApplyModelSettingsJson(ModelSettings(), Json{{"kind", kind}, {"instruction", "Find the passage"}});
    ASSERT_TRUE(s.ok()) << kind << ": " << s.status().ToString();
    EXPECT_STREQ(ModelKindName(s->kind), kind);
    EXPECT_EQ(*s->instruction, "Find the passage");
    EXPECT_EQ(ModelSettingsToJson(*s)["kind"], kind);
    EXPECT_EQ(ModelSettingsToJson(*s)["instruction"], "Find the passage");
    EXPECT_NE(s->RuntimeKey(), ModelSettings().RuntimeKey()) << "another kind loads anew";
  }
  ModelSettings embedder;
  embedder.kind = ModelKind::kEmbedding;
  embedder.instruction = "x";
  EXPECT_EQ(ApplyModelSettingsJson(embedder, Json{{"kind", "chat"}})->kind, ModelKind::kChat);
  EXPECT_EQ(ApplyModelSettingsJson(embedder, Json{{"kind", nullptr}})->kind, ModelKind::kChat);
  EXPECT_FALSE(ApplyModelSettingsJson(embedder, Json{{"instruction", nullptr}})->instruction.has_value());
  EXPECT_FALSE(ModelSettingsToJson(ModelSettings()).contains("kind")) << "chat is the default, left out";
  EXPECT_NE(ApplyModelSettingsJson(embedder, Json{{"instruction", "y"}})->RuntimeKey(), embedder.RuntimeKey());
  for (const Json& bad : {Json("embeddings"), Json("reranker"), Json(1)}) {
    auto s = ApplyModelSettingsJson(ModelSettings(), Json{{"kind", bad}});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("kind"), std::string::npos) << s.status().message();
  }
  auto s = ApplyModelSettingsJson(ModelSettings(), Json{{"kind", "reranker"}});
  EXPECT_NE(s.status().message().find("chat, embedding or rerank"), std::string::npos) << s.status().message();
  EXPECT_FALSE(ApplyModelSettingsJson(ModelSettings(), Json{{"instruction", 5}}).ok());
}

}  // namespace
}  // namespace llmhost::model_settings_test
