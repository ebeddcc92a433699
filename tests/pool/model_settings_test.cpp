// Per-model settings: validation naming the field, unique aliases, one
// default, persistence in model_settings.json, null removing a field.
#include "pool/model_settings.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/file.h"

namespace llmhost {
namespace {

using Json = nlohmann::json;

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

TEST(ModelSettings, MalformedFilesNameTheProblem) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/a.json", "[1,2").ok());
  auto a = ModelSettingsStore::Open(dir + "/a.json");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("a.json"), std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(dir + "/b.json", R"({"models":{"m":{"ttl_seconds":-1}}})").ok());
  auto b = ModelSettingsStore::Open(dir + "/b.json");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("models.m: ttl_seconds"), std::string::npos) << b.status().message();
  ASSERT_TRUE(WriteFileAtomic(dir + "/c.json", R"({"models":{"m":{"alias":"z"},"n":{"alias":"z"}}})").ok());
  EXPECT_FALSE(ModelSettingsStore::Open(dir + "/c.json").ok());
  // In memory only.
  auto mem = ModelSettingsStore::Open("");
  ASSERT_TRUE(mem.ok());
  EXPECT_TRUE((*mem)->Patch("m", Json::parse(R"({"pinned":true})")).ok());
  EXPECT_TRUE((*mem)->Get("m").pinned);
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
}

}  // namespace
}  // namespace llmhost
