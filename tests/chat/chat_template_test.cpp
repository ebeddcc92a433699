// The public API: context variables as transformers passes them, the clock of
// strftime_now, model directories, speed on a large tools conversation.
#include "chat/chat_template.h"

#include <chrono>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "util/file.h"

namespace llmhost::chat_template_test {
namespace {

using nlohmann::ordered_json;

std::string MustRender(const std::string& src, const ChatTemplateInput& in) {
  auto t = ChatTemplate::Parse(src);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return "";
  auto r = t->Render(in);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

TEST(ChatTemplateApi, ContextVariables) {
  ChatTemplateInput in;
  in.messages = ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  in.kwargs = {{"enable_thinking", false}};
  // transformers passes tools=None and documents=None: defined, but none.
  EXPECT_EQ(MustRender("{{ tools is defined }}{{ tools is none }}{{ documents is none }}{{ add_generation_prompt }}"
                       "{{ bos_token }}{{ eos_token }}{{ enable_thinking }}{{ messages[0].content }}",
                       in),
            "TrueTrueTrueTrue<s></s>Falsehi");
  in.add_generation_prompt = false;
  in.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  EXPECT_EQ(MustRender("{{ add_generation_prompt }}|{{ tools|length }}|{{ tools[0]|tojson }}", in),
            "False|1|{\"type\": \"function\", \"function\": {\"name\": \"f\"}}");
}

TEST(ChatTemplateApi, KeyOrderOfInputIsKept) {
  ChatTemplateInput in;
  in.kwargs = ordered_json::parse(R"({"d": {"zeta": 1, "alpha": 2, "mid": 3}})");
  EXPECT_EQ(MustRender("{{ d|tojson }}|{{ d.keys()|list }}", in),
            "{\"zeta\": 1, \"alpha\": 2, \"mid\": 3}|['zeta', 'alpha', 'mid']");
}

TEST(ChatTemplateApi, StrftimeNowReadsTheInjectedClock) {
  ChatTemplateInput in;
  auto t = ParseIsoLocalTime("2024-07-26T12:00:00");
  ASSERT_TRUE(t.ok());
  in.now_local = *t;
  // Expected values: Python's datetime(2024, 7, 26, 12).strftime(...).
  EXPECT_EQ(MustRender("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d') }}|{{ strftime_now('%B %A %j') }}|"
                       "{{ strftime_now('%H:%M:%S %p %y %a %w') }}|{{ strftime_now('%f|%z|%Z|%%') }}",
                       in),
            "26 Jul 2024|2024-07-26|July Friday 208|12:00:00 PM 24 Fri 5|000000|||%");
  EXPECT_FALSE(ParseIsoLocalTime("2024-13-01").ok());
  EXPECT_FALSE(ParseIsoLocalTime("yesterday").ok());
  auto date_only = ParseIsoLocalTime("2025-01-02");
  ASSERT_TRUE(date_only.ok());
  EXPECT_EQ(date_only->tm_wday, 4);  // a Thursday
}

TEST(ChatTemplateApi, BadKwargsAreRejected) {
  auto t = ChatTemplate::Parse("x");
  ASSERT_TRUE(t.ok());
  ChatTemplateInput in;
  in.kwargs = ordered_json::array();
  EXPECT_FALSE(t->Render(in).ok());
}

// A Qwen3-style tools conversation of ~76 KB renders in milliseconds.
TEST(ChatTemplatePerf, LargeToolsConversationIsFast) {
  auto golden = ReadFileToString(testing::TestDataDir() + "/chat/templates/Qwen-Qwen3-0.6B.json");
  ASSERT_TRUE(golden.ok());
  ordered_json g = ordered_json::parse(*golden);
  auto t = ChatTemplate::Parse(g["template"].get<std::string>());
  ASSERT_TRUE(t.ok());
  ordered_json conv = g["cases"]["tool_roundtrip"]["conversation"];
  ChatTemplateInput in;
  in.messages = conv["messages"];
  ordered_json tools = ordered_json::array();
  for (int i = 0; i < 150; ++i) {
    ordered_json tool = conv["tools"][0];
    tool["function"]["name"] = "tool_" + std::to_string(i);
    tool["function"]["description"] = std::string(300, 'd');
    tools.push_back(tool);
  }
  in.tools = tools;
  ASSERT_GT(tools.dump().size(), 70000u);
  // Speed is measured by bench/, not asserted here: this checks that a large
  // tools conversation renders, and renders the same on every call.
  Result<std::string> out = t->Render(in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_GT(out->size(), 70000u);
  Result<std::string> again = t->Render(in);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *out);
}

// ---- model directories ----

void WriteFile(const std::string& path, const std::string& text) { ASSERT_TRUE(WriteFileAtomic(path, text).ok()); }

TEST(ModelChatTemplates, TokenizerConfigStringAndAddedTokens) {
  std::string dir = testing::MakeTempDir();
  WriteFile(dir + "/tokenizer_config.json",
            R"({"bos_token": {"content": "<B>", "lstrip": false}, "eos_token": "<E>", "chat_template": "{{ bos_token }}hi"})");
  auto m = LoadModelChatTemplates(dir);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->default_template, "{{ bos_token }}hi");
  EXPECT_EQ(m->bos_token, "<B>");
  EXPECT_EQ(m->eos_token, "<E>");
  EXPECT_TRUE(m->named.empty());
}

TEST(ModelChatTemplates, NamedTemplateList) {
  std::string dir = testing::MakeTempDir();
  WriteFile(dir + "/tokenizer_config.json",
            R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]})");
  auto m = LoadModelChatTemplates(dir);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->default_template, "D");
  ASSERT_EQ(m->named.count("tool_use"), 1u);
  EXPECT_EQ(m->named.at("tool_use"), "T");
  EXPECT_EQ(m->bos_token, "");
}

TEST(ModelChatTemplates, JinjaFileWinsAndBadConfigsFail) {
  std::string dir = testing::MakeTempDir();
  WriteFile(dir + "/tokenizer_config.json", R"({"chat_template": "old"})");
  WriteFile(dir + "/chat_template.jinja", "new");
  auto m = LoadModelChatTemplates(dir);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->default_template, "new");

  std::string bad = testing::MakeTempDir();
  WriteFile(bad + "/tokenizer_config.json", R"({"chat_template": 5})");
  EXPECT_FALSE(LoadModelChatTemplates(bad).ok());
  WriteFile(bad + "/tokenizer_config.json", "{not json");
  EXPECT_FALSE(LoadModelChatTemplates(bad).ok());
  EXPECT_FALSE(LoadModelChatTemplates(bad + "/missing").ok());
  std::string none = testing::MakeTempDir();
  auto empty = LoadModelChatTemplates(none);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->default_template, "");
}

// The fixtures' templates are real ones from the goldens: loading each model
// directory must give that template and render the golden case exactly.
TEST(ModelChatTemplates, ReferenceModelFixtures) {
  SKIP_IF_NO_SHARED();
  struct Fixture {
    const char* model;
    const char* golden;
    const char* bos;
    const char* eos;
  };
  const Fixture fixtures[] = {
      {"llama3-tiny", "meta-llama-Llama-3.1-8B-Instruct", "<|begin_of_text|>", "<|eot_id|>"},
      {"llama3-tiny-sharded", "meta-llama-Llama-3.2-3B-Instruct", "<|begin_of_text|>", "<|eot_id|>"},
      {"mistral-tiny-swa", "mistralai-Mistral-Nemo-Instruct-2407", "<s>", "</s>"},
      {"phi3-tiny", "microsoft-Phi-3.5-mini-instruct", "<s>", "<|end|>"},
      {"qwen2-tiny", "Qwen-Qwen2.5-7B-Instruct", "", "<|im_end|>"},
      {"qwen3-tiny", "Qwen-Qwen3-0.6B", "", "<|im_end|>"},
      {"gemma3-tiny", nullptr, "<bos>", "<end_of_turn>"},
  };
  for (const Fixture& f : fixtures) {
    SCOPED_TRACE(f.model);
    auto m = LoadModelChatTemplates(testing::SharedDir() + "/reference/models/" + f.model);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->bos_token, f.bos);
    EXPECT_EQ(m->eos_token, f.eos);
    ASSERT_FALSE(m->default_template.empty());
    auto t = ChatTemplate::Parse(m->default_template);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    if (!f.golden) continue;
    auto text = ReadFileToString(testing::TestDataDir() + "/chat/templates/" + f.golden + ".json");
    ASSERT_TRUE(text.ok());
    ordered_json g = ordered_json::parse(*text);
    EXPECT_EQ(m->default_template, g["template"].get<std::string>());
    ordered_json c = g["cases"]["system_user"];
    ChatTemplateInput in;
    in.messages = c["conversation"]["messages"];
    in.bos_token = g["bos_token"].get<std::string>();
    in.eos_token = g["eos_token"].get<std::string>();
    in.now_local = *ParseIsoLocalTime("2024-07-26T12:00:00");
    auto r = t->Render(in);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, c["rendered"].get<std::string>());
  }
}

}  // namespace
}  // namespace llmhost::chat_template_test
