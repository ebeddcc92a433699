// The fuzzers' generated seeds (tests/data/formats/make_fuzz_seeds.py) must
// stay valid files, or the fuzzers would start from rejected inputs only.
#include <gtest/gtest.h>

#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "test_util.h"

namespace llmhost::fuzz_seeds_test {
namespace {

std::string Corpus(const std::string& name) {
  return std::string(LLMHOST_SOURCE_DIR) + "/fuzz/corpus/" + name;
}

TEST(FuzzSeeds, GgufSeedsParse) {
  for (const char* f : {"v3_tensors.gguf", "v2_metadata_only.gguf", "align64.gguf"}) {
    auto r = GgufFile::Open(Corpus("gguf_fuzz/") + f);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  auto g = GgufFile::Open(Corpus("gguf_fuzz/v3_tensors.gguf"));
  EXPECT_EQ((*g)->tensors().size(), 2u);
  EXPECT_EQ((*g)->DescribeValue("nested"), "[2 arrays]");
  EXPECT_EQ(*(*g)->GetIntArray("tokenizer.ggml.token_type"), (std::vector<int64_t>{3, 1, 1}));
  auto a = GgufFile::Open(Corpus("gguf_fuzz/align64.gguf"));
  EXPECT_EQ((*a)->alignment(), 64u);
  EXPECT_EQ((*a)->tensors()[0].type, GgmlType::kQ4_K);
}

TEST(FuzzSeeds, SafetensorsSeedsParse) {
  for (const char* f : {"three_dtypes.safetensors", "empty.safetensors", "zero_sized.safetensors"}) {
    auto r = SafetensorsFile::Open(Corpus("safetensors_fuzz/") + f);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
}

}  // namespace
}  // namespace llmhost::fuzz_seeds_test
