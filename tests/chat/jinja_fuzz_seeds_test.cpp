// The fuzz corpus (seed templates and kept crash inputs) runs through the
// engine under the fuzzer's limits in every test run, so a fixed crash stays
// fixed.
#include <dirent.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::jinja_fuzz_seeds_test {
namespace {

TEST(JinjaFuzzSeeds, CorpusParsesAndRendersWithoutCrashing) {
  std::string dir = std::string(LLMHOST_SOURCE_DIR) + "/fuzz/corpus/jinja_fuzz";
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') files.push_back(JoinPath(dir, e->d_name));
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 4u);
  ChatTemplateInput in;
  in.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  jinja::RenderLimits limits;
  limits.max_steps = 300'000;
  limits.max_output = 1u << 20;
  int rendered = 0;
  for (const std::string& f : files) {
    auto text = ReadFileToString(f);
    ASSERT_TRUE(text.ok()) << f;
    auto t = ChatTemplate::Parse(*text);
    if (!t.ok()) continue;
    auto r = t->Render(in, limits);
    rendered += r.ok();
  }
  EXPECT_GT(rendered, 0);  // the seed templates are valid and render
}

}  // namespace
}  // namespace llmhost::jinja_fuzz_seeds_test
