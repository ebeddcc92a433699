// Choosing the output format from real chat templates (tests/data/chat/
// templates, copied from ../shared/reference), and format names.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "chat/output_format.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::output_format_test {
namespace {

std::string Template(const std::string& name) {
  auto text = ReadFileToString(testing::TestDataDir() + "/chat/templates/" + name + ".json");
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? nlohmann::json::parse(*text).at("template").get<std::string>() : std::string();
}

struct Case {
  const char* template_name;
  OutputFormat format;
  bool reasoning;
  bool starts_in_reasoning;
};

class DetectFromTemplate : public ::testing::TestWithParam<Case> {};

TEST_P(DetectFromTemplate, MatchesTheFamily) {
  const Case& c = GetParam();
  DetectedOutputFormat d = DetectOutputFormat(Template(c.template_name), "");
  EXPECT_EQ(OutputFormatName(d.format), std::string(OutputFormatName(c.format))) << c.template_name;
  EXPECT_EQ(d.reasoning, c.reasoning) << c.template_name;
  EXPECT_EQ(d.starts_in_reasoning, c.starts_in_reasoning) << c.template_name;
}

INSTANTIATE_TEST_SUITE_P(
    RealTemplates, DetectFromTemplate,
    ::testing::Values(Case{"Qwen-Qwen2.5-7B-Instruct", OutputFormat::kHermes, false, false},
                      Case{"Qwen-Qwen3-0.6B", OutputFormat::kHermes, true, false},
                      Case{"Qwen-QwQ-32B", OutputFormat::kHermes, true, false}  /* closes it unless enable_thinking */,
                      Case{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", OutputFormat::kHermes, false, false},
                      Case{"Qwen3-Coder", OutputFormat::kQwen3Coder, false, false},
                      Case{"stepfun-ai-Step-3.5-Flash", OutputFormat::kQwen3Coder, true, true},
                      Case{"meta-llama-Llama-3.1-8B-Instruct", OutputFormat::kLlama3Json, false, false},
                      Case{"meta-llama-Llama-3.2-3B-Instruct", OutputFormat::kLlama3Json, false, false},
                      Case{"mistralai-Mistral-Nemo-Instruct-2407", OutputFormat::kMistral, false, false},
                      Case{"unsloth-mistral-Devstral-Small-2507", OutputFormat::kMistral, false, false},
                      Case{"mistralai-Ministral-3-14B-Reasoning-2512", OutputFormat::kMistral, true, false},
                      Case{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", OutputFormat::kDeepSeekV3, true, false},
                      Case{"llama-cpp-deepseek-r1", OutputFormat::kDeepSeekV3, true, true},
                      Case{"deepseek-ai-DeepSeek-V3.1", OutputFormat::kDeepSeekV31, true, false},
                      Case{"moonshotai-Kimi-K2", OutputFormat::kKimiK2, false, false},
                      Case{"Kimi-K2-Instruct", OutputFormat::kKimiK2, false, false},
                      Case{"GLM-4.7-Flash", OutputFormat::kGlm45, true, true},
                      Case{"openai-gpt-oss-120b", OutputFormat::kHarmony, true, false},
                      Case{"LFM2.5-8B-A1B", OutputFormat::kPythonic, true, false},
                      Case{"google-gemma-2-2b-it", OutputFormat::kNone, false, false},
                      Case{"microsoft-Phi-3.5-mini-instruct", OutputFormat::kNone, false, false}));

TEST(DetectOutputFormat, ThinkingKwargsOpenTheThinkBlock) {
  nlohmann::ordered_json on = {{"enable_thinking", true}};
  EXPECT_TRUE(DetectOutputFormat(Template("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"), "", on).starts_in_reasoning);
  EXPECT_TRUE(DetectOutputFormat(Template("Qwen-QwQ-32B"), "", on).starts_in_reasoning);
  EXPECT_TRUE(DetectOutputFormat(Template("deepseek-ai-DeepSeek-V3.1"), "", {{"thinking", true}}).starts_in_reasoning);
  nlohmann::ordered_json off = {{"enable_thinking", false}};
  EXPECT_FALSE(DetectOutputFormat(Template("GLM-4.7-Flash"), "", off).starts_in_reasoning);
  EXPECT_FALSE(DetectOutputFormat(Template("Qwen-Qwen3-0.6B"), "", off).starts_in_reasoning);
}

TEST(DetectOutputFormat, ModelTypeWhenTheTemplateSaysNothing) {
  EXPECT_EQ(DetectOutputFormat("", "gpt_oss").format, OutputFormat::kHarmony);
  EXPECT_EQ(DetectOutputFormat("{{ messages }}", "qwen3").format, OutputFormat::kHermes);
  EXPECT_EQ(DetectOutputFormat("{{ messages }}", "gemma3").format, OutputFormat::kNone);
  // The template's markers win over the hint.
  EXPECT_EQ(DetectOutputFormat("<tool_call>{{ x }}</tool_call>", "llama").format, OutputFormat::kHermes);
}

TEST(ParseOutputFormat, NamesRoundTripAndUnknownNamesListTheValidOnes) {
  for (const std::string& name : OutputFormatNames()) {
    auto f = ParseOutputFormat(name);
    ASSERT_TRUE(f.ok()) << name;
    EXPECT_EQ(OutputFormatName(*f), name);
  }
  EXPECT_EQ(OutputFormatNames().size(), 11u);
  auto bad = ParseOutputFormat("qwen");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown output format 'qwen'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("hermes"), std::string::npos);
  EXPECT_NE(bad.status().message().find("harmony"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::output_format_test
