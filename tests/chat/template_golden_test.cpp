// Every golden template case (tests/data/chat/templates, copied from
// ../shared/reference/templates: real chat templates rendered by transformers)
// and every Jinja2 reference snippet (tests/data/chat/jinja_cases.json) must
// render byte for byte, or fail where the reference failed.
#include <dirent.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::template_golden_test {
namespace {

using nlohmann::ordered_json;

std::vector<std::string> ListJson(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) out.push_back(JoinPath(dir, name));
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ordered_json LoadJson(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? ordered_json::parse(*text) : ordered_json();
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out.push_back(c);
  }
  return out;
}

// Where two strings first differ, with context: the diff hint for failures.
std::string DiffHint(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i > 40 ? i - 40 : 0;
  return "first difference at byte " + std::to_string(i) + "\n  want: ..." + Escape(want.substr(from, 100)) +
         "\n  got:  ..." + Escape(got.substr(from, 100));
}

ChatTemplateInput InputFrom(const ordered_json& conv, const std::string& bos, const std::string& eos) {
  ChatTemplateInput in;
  in.messages = conv.at("messages");
  if (conv.contains("tools")) in.tools = conv["tools"];
  if (conv.contains("add_generation_prompt")) in.add_generation_prompt = conv["add_generation_prompt"].get<bool>();
  if (conv.contains("kwargs")) in.kwargs = conv["kwargs"];
  in.bos_token = bos;
  in.eos_token = eos;
  std::tm t{};
  t.tm_year = 2024 - 1900;
  t.tm_mon = 6;
  t.tm_mday = 26;
  t.tm_hour = 12;
  in.now_local = t;
  return in;
}

// Renders one case; returns "" when it matches the reference, else a report.
std::string CheckCase(const std::string& source, const ChatTemplateInput& in, const ordered_json& expect) {
  auto tmpl = ChatTemplate::Parse(source);
  Result<std::string> out = tmpl.ok() ? tmpl->Render(in) : Result<std::string>(tmpl.status());
  if (expect.contains("error")) {
    if (out.ok()) return "expected an error (" + expect["error"].get<std::string>() + "), got: " + Escape(*out);
    return "";
  }
  std::string want = expect.at("rendered").get<std::string>();
  if (!out.ok()) return "unexpected error: " + out.status().ToString();
  if (*out != want) return DiffHint(want, *out);
  return "";
}

TEST(TemplateGoldenTest, AllTemplatesAllCases) {
  std::vector<std::string> files = ListJson(testing::TestDataDir() + "/chat/templates");
  ASSERT_EQ(files.size(), 40u) << "golden template files missing from tests/data/chat/templates";
  int total = 0, passed = 0;
  for (const std::string& path : files) {
    ordered_json golden = LoadJson(path);
    std::string source = golden.at("template").get<std::string>();
    std::string bos = golden.at("bos_token").get<std::string>();
    std::string eos = golden.at("eos_token").get<std::string>();
    for (auto it = golden.at("cases").begin(); it != golden.at("cases").end(); ++it) {
      ++total;
      std::string report = CheckCase(source, InputFrom(it.value().at("conversation"), bos, eos), it.value());
      if (report.empty()) {
        ++passed;
      } else {
        ADD_FAILURE() << BaseName(path) << " / " << it.key() << ": " << report;
      }
    }
  }
  EXPECT_EQ(total, 400);
  EXPECT_EQ(passed, total);
}

// The copies in tests/data must stay identical to ../shared's goldens.
TEST(TemplateGoldenTest, CopiesMatchShared) {
  SKIP_IF_NO_SHARED();
  for (const std::string& path : ListJson(testing::SharedDir() + "/reference/templates")) {
    auto shared = ReadFileToString(path);
    auto copy = ReadFileToString(testing::TestDataDir() + "/chat/templates/" + BaseName(path));
    ASSERT_TRUE(shared.ok() && copy.ok()) << BaseName(path);
    EXPECT_TRUE(*shared == *copy) << BaseName(path) << " differs from ../shared";
  }
}

TEST(TemplateGoldenTest, Jinja2ReferenceSnippets) {
  ordered_json ref = LoadJson(testing::TestDataDir() + "/chat/jinja_cases.json");
  ChatTemplateInput in = InputFrom(ref.at("conversation"), ref.at("bos_token"), ref.at("eos_token"));
  in.tools = nullptr;
  const auto& cases = ref.at("cases");
  ASSERT_GT(cases.size(), 200u);
  int passed = 0;
  for (const auto& c : cases) {
    std::string report = CheckCase(c.at("template").get<std::string>(), in, c);
    if (report.empty()) {
      ++passed;
    } else {
      ADD_FAILURE() << "template: " << Escape(c.at("template").get<std::string>()) << "\n" << report;
    }
  }
  EXPECT_EQ(passed, static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace llmhost::template_golden_test
