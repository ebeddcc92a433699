// Every case of tests/data/grammar/cases.jsonl (labels checked against
// python3-jsonschema by scripts/check_grammar_cases.py) through AddJsonSchema
// or AddRegex: each instance must be accepted exactly when it is valid, and
// cases that expect an error must fail to compile with that message.
// Runs well under a second: texts are short, the oracle is exact but slow.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "grammar/json_schema.h"
#include "grammar/regex.h"
#include "grammar_oracle.h"
#include "test_util.h"

namespace llmhost::grammar::grammar_cases_test {
namespace {

TEST(GrammarCasesTest, EveryInstanceGetsItsLabel) {
  std::ifstream in(llmhost::testing::TestDataDir() + "/grammar/cases.jsonl");
  ASSERT_TRUE(in) << "tests/data/grammar/cases.jsonl is missing";
  std::string line;
  int cases = 0, instances = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::ordered_json c = nlohmann::ordered_json::parse(line);
    std::string id = c["id"];
    SCOPED_TRACE(id);
    ++cases;
    Grammar g;
    Result<NodeId> start = Status::Internal("no schema or regex");
    if (c.contains("schema")) {
      // Whitespace runs are an option of generation, not of validity
      // (json_schema_test.cpp holds the bound); the suite's texts are pretty-printed.
      Result<RuleId> rule = AddJsonSchema(g, c["schema"], {.max_whitespace = -1});
      start = rule.ok() ? Result<NodeId>(g.rule(*rule).body) : Result<NodeId>(rule.status());
      if (rule.ok()) g.SetRoot(*rule);
    } else {
      start = AddRegex(g, c["regex"].get<std::string>());
      if (start.ok()) {
        RuleId root = g.AddRule("root");
        g.SetBody(root, *start);
        g.SetRoot(root);
      }
    }
    if (c.contains("error")) {
      ASSERT_FALSE(start.ok()) << id << " compiled but should fail with: " << c["error"];
      EXPECT_NE(start.status().message().find(c["error"].get<std::string>()), std::string::npos)
          << id << ": " << start.status().message();
      continue;
    }
    ASSERT_TRUE(start.ok()) << id << ": " << start.status().ToString();
    ASSERT_TRUE(g.Validate().ok()) << id << ": " << g.Validate().ToString();
    testing::GrammarOracle oracle(g);
    for (const auto& inst : c["instances"]) {
      ++instances;
      std::string text = inst["text"];
      EXPECT_EQ(oracle.Matches(*start, text), inst["valid"].get<bool>()) << id << ": " << text;
    }
  }
  EXPECT_GT(cases, 200);
  EXPECT_GT(instances, 800);
}

}  // namespace
}  // namespace llmhost::grammar::grammar_cases_test
