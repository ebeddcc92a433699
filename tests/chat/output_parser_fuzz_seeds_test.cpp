// The output parser's fuzz corpus (seeds and kept crash inputs) and a few
// thousand generated outputs, built from pieces of every format's markup,
// through the fuzz target's check: whole and chunked feeding agree.
#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../../fuzz/output_parser_check.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::output_parser_fuzz_seeds_test {
namespace {

std::string CheckText(uint8_t format_byte, uint8_t piece_byte, const std::string& text) {
  std::string input;
  input.push_back(static_cast<char>(format_byte));
  input.push_back(static_cast<char>(piece_byte));
  input += text;
  return fuzzcheck::Check(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

TEST(OutputParserFuzzSeeds, CorpusKeepsTheChunkingInvariant) {
  std::string dir = std::string(LLMHOST_SOURCE_DIR) + "/fuzz/corpus/output_parser_fuzz";
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') files.push_back(JoinPath(dir, e->d_name));
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 4u);
  for (const std::string& f : files) {
    auto text = ReadFileToString(f);
    ASSERT_TRUE(text.ok()) << f;
    EXPECT_EQ(fuzzcheck::Check(reinterpret_cast<const uint8_t*>(text->data()), text->size()), "") << f;
  }
}

// Outputs stitched from markup fragments of every format (whole markers,
// halves of markers, JSON and Python pieces, text, space).
TEST(OutputParserFuzzSeeds, GeneratedOutputsKeepTheChunkingInvariant) {
  const std::vector<std::string> pieces = {
      "<tool_call>", "</tool_call>", "<tool_", "</tool", "<think>", "</think>", "<thi", "[THINK]", "[/THINK]",
      "{\"name\": \"f\", \"arguments\": {\"a\": 1}}", "{\"name\": \"f\"", ", \"arguments\": ", "{\"a\": ", "\"b\"}",
      "}", "{", "[", "]", "\"", "\\", "<function=f>", "</function>", "<parameter=a>", "</parameter>", "<parameter=b>",
      "<|python_tag|>", "{\"name\": \"g\", \"parameters\": {}}", ";", "<|eom_id|>", "[TOOL_CALLS]", "[ARGS]",
      "[CALL_ID]", "[{\"name\": \"f\", \"arguments\": {}}]", "f(a=1)", "[f(a=1, b='x')]", "<|tool_call_start|>",
      "<|tool_call_end|>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "function", "<｜tool▁sep｜>",
      "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "```json\n", "```", "\xef\xbd\x9c", "<|tool_calls_section_begin|>",
      "<|tool_call_begin|>", "functions.f:0", "<|tool_call_argument_begin|>", "<|tool_call_end|>",
      "<|tool_calls_section_end|>", "<arg_key>", "a", "</arg_key>", "<arg_value>", "</arg_value>", "<|channel|>",
      "analysis", "final", "commentary to=functions.f", " <|constrain|>json", "<|message|>", "<|end|>", "<|start|>",
      "assistant", "<|call|>", "<|return|>", "hello", " ", "\n", "42", "true", "\xc3\xa9", "<", "|", "x"};
  // LLMHOST_OUTPUT_FUZZ_ROUNDS / _SEED search further by hand.
  const char* rounds_env = std::getenv("LLMHOST_OUTPUT_FUZZ_ROUNDS");
  const char* seed_env = std::getenv("LLMHOST_OUTPUT_FUZZ_SEED");
  const int rounds = rounds_env ? std::atoi(rounds_env) : 3000;
  std::mt19937 rng(seed_env ? static_cast<unsigned>(std::atoi(seed_env)) : 15u);
  int checked = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string text;
    int n = 1 + static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) text += pieces[rng() % pieces.size()];
    uint8_t format_byte = static_cast<uint8_t>(rng() % 44), piece_byte = static_cast<uint8_t>(rng());
    std::string problem = CheckText(format_byte, piece_byte, text);
    EXPECT_EQ(problem, "") << "format byte " << int(format_byte) << ", piece byte " << int(piece_byte) << ", text:\n"
                           << text;
    if (!problem.empty()) return;
    ++checked;
  }
  EXPECT_EQ(checked, rounds);
}

}  // namespace
}  // namespace llmhost::output_parser_fuzz_seeds_test
