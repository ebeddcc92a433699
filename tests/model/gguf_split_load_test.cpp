// A split GGUF model (formats/gguf_split.h) loads as one: the tiny Llama
// fixture cut into parts scores a prompt exactly as the whole file does.
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "formats/gguf_split.h"
#include "formats/gguf_split_writer.h"
#include "model/model.h"
#include "model/model_test_util.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::gguf_split_load_test {
namespace {

// Logits of every row of `prompt`.
std::vector<float> PromptLogits(const std::string& path, const std::vector<int32_t>& prompt) {
  CpuBackend backend(nullptr);
  auto m = Model::Load(path, &backend);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return {};
  auto cache = (*m)->CreateKvCache(4, 16);
  EXPECT_TRUE(cache.ok());
  if (!cache.ok()) return {};
  KvSequence seq;
  ForwardItem item{&seq, prompt, LogitsRows::kAll};
  ForwardOutput out;
  Status st = (*m)->Forward({&item, 1}, **cache, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return std::vector<float>(out.logits);
}

TEST(GgufSplitLoad, PartsGiveTheSameLogitsAsTheWholeFile) {
  const std::string whole = testing::ModelsRoot() + "/llama-tiny-gguf/llama-tiny-q4_0.gguf";
  auto image = ReadFileToString(whole);
  if (!image.ok()) GTEST_SKIP();
  auto parsed = GgufFile::Parse(reinterpret_cast<const uint8_t*>(image->data()), image->size(), "whole");
  ASSERT_TRUE(parsed.ok());
  const size_t n = (*parsed)->tensors().size();
  // Three parts: the embeddings apart from layer 0, the output in the last.
  const std::vector<std::string> parts = testing::SplitGguf(*image, {1, n / 2, n - 1 - n / 2});
  const std::string dir = testing::MakeTempDir();
  for (size_t i = 0; i < parts.size(); ++i) {
    ASSERT_TRUE(WriteFileAtomic(GgufSplitPartPath(dir + "/tiny", static_cast<int>(i + 1), 3), parts[i]).ok());
  }
  const std::vector<int32_t> prompt = {1, 17, 300, 42, 905, 3};
  const std::vector<float> expected = PromptLogits(whole, prompt);
  ASSERT_EQ(expected.size(), prompt.size() * 907);
  EXPECT_EQ(PromptLogits(GgufSplitPartPath(dir + "/tiny", 1, 3), prompt), expected);

  // A missing part fails the load, naming it.
  std::filesystem::remove(GgufSplitPartPath(dir + "/tiny", 2, 3));
  CpuBackend backend(nullptr);
  auto m = Model::Load(GgufSplitPartPath(dir + "/tiny", 1, 3), &backend);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("tiny-00002-of-00003.gguf: part 2 of 3"), std::string::npos)
      << m.status().ToString();
}

}  // namespace
}  // namespace llmhost::gguf_split_load_test
