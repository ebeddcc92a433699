// SafetensorsModel: single file, index + shards, fallback; errors for broken
// indexes and shards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "formats/safetensors_model.h"
#include "formats/safetensors_writer.h"
#include "test_util.h"

namespace llmhost::safetensors_model_test {
namespace {

using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir() : path_(testing::MakeTempDir()) {}
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A file holding U8 tensors of 2 bytes each, named as given.
void WriteShard(const std::string& path, std::vector<std::string> names) {
  static const std::string kData = "xy";
  std::vector<SafetensorsWriteTensor> tensors;
  for (const std::string& n : names) tensors.push_back({n, DType::kU8, {2}, kData});
  ASSERT_TRUE(WriteSafetensorsFile(path, tensors, {}).ok());
}

void WriteText(const std::string& path, const std::string& text) {
  ASSERT_TRUE(WriteFileAtomic(path, text).ok());
}

TEST(SafetensorsModelReal, SingleFile) {
  SKIP_IF_NO_SHARED();
  auto m = SafetensorsModel::Open(testing::SharedDir() + "/reference/models/llama3-tiny");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->layout(), SafetensorsModel::Layout::kSingleFile);
  EXPECT_EQ((*m)->files().size(), 1u);
  EXPECT_EQ((*m)->tensor_count(), 21u);
  EXPECT_EQ((*m)->total_file_bytes(), 382456u);
  EXPECT_EQ((*m)->total_tensor_bytes(), 380288u);  // 190144 bf16 parameters
  auto t = (*m)->Tensor("model.layers.1.mlp.down_proj.weight");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->shape, (std::vector<int64_t>{64, 128}));
}

TEST(SafetensorsModelReal, Sharded) {
  SKIP_IF_NO_SHARED();
  auto m = SafetensorsModel::Open(testing::SharedDir() + "/reference/models/llama3-tiny-sharded");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->layout(), SafetensorsModel::Layout::kIndexed);
  EXPECT_EQ((*m)->files().size(), 5u);
  EXPECT_EQ((*m)->tensor_count(), 21u);
  EXPECT_EQ((*m)->total_tensor_bytes(), 380288u);  // index metadata total_size
  const SafetensorsModel::Entry* lm = (*m)->Find("lm_head.weight");
  ASSERT_NE(lm, nullptr);
  EXPECT_EQ(BaseName(lm->file->path()), "model-00004-of-00005.safetensors");
  const SafetensorsModel::Entry* norm = (*m)->Find("model.norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(BaseName(norm->file->path()), "model-00005-of-00005.safetensors");
  auto v = (*m)->Tensor("lm_head.weight");
  ASSERT_TRUE(v.ok());
  const uint8_t kFirst[] = {0x98, 0xbd, 0x91, 0xbd};  // read with Python
  EXPECT_EQ(std::memcmp(v->data, kFirst, 4), 0);
  EXPECT_EQ((*m)->Tensor("nope").status().code(), StatusCode::kNotFound);
}

TEST(SafetensorsModel, SingleFilePathAndPreference) {
  TempDir d;
  WriteShard(d / "model.safetensors", {"a", "b"});
  WriteShard(d / "other.safetensors", {"c"});
  WriteText(d / "model.safetensors.index.json", R"({"weight_map": {"c": "other.safetensors"}})");
  auto m = SafetensorsModel::Open(d.path());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->layout(), SafetensorsModel::Layout::kSingleFile);  // as transformers
  EXPECT_EQ((*m)->tensor_count(), 2u);
  auto f = SafetensorsModel::Open(d / "other.safetensors");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->tensor_count(), 1u);
  EXPECT_NE((*f)->Find("c"), nullptr);
}

TEST(SafetensorsModel, IndexErrors) {
  TempDir d;
  WriteShard(d / "s1.safetensors", {"a", "b"});
  WriteText(d / "model.safetensors.index.json",
            R"({"weight_map": {"a": "s1.safetensors", "z": "s2.safetensors"}})");
  auto missing = SafetensorsModel::Open(d.path());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("shard 's2.safetensors' does not exist"));
  EXPECT_THAT(missing.status().message(), HasSubstr("model.safetensors.index.json"));

  WriteText(d / "model.safetensors.index.json",
            R"({"weight_map": {"a": "s1.safetensors", "z": "s1.safetensors"}})");
  auto absent = SafetensorsModel::Open(d.path());
  EXPECT_EQ(absent.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(absent.status().message(), HasSubstr("tensor 'z' is not in its shard 's1.safetensors'"));

  WriteText(d / "model.safetensors.index.json", R"({"weight_map": {"a": "../s1.safetensors"}})");
  EXPECT_THAT(SafetensorsModel::Open(d.path()).status().message(), HasSubstr("not a relative path"));
  WriteText(d / "model.safetensors.index.json", R"({"weight_map": {"a": 3}})");
  EXPECT_THAT(SafetensorsModel::Open(d.path()).status().message(), HasSubstr("is not a string"));
  WriteText(d / "model.safetensors.index.json", R"({"metadata": {}})");
  EXPECT_THAT(SafetensorsModel::Open(d.path()).status().message(), HasSubstr("weight_map"));
  WriteText(d / "model.safetensors.index.json", "{not json");
  EXPECT_EQ(SafetensorsModel::Open(d.path()).status().code(), StatusCode::kCorruption);

  // A valid index: only its weight_map's tensors are listed.
  WriteText(d / "model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors"}})");
  auto ok = SafetensorsModel::Open(d.path());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)->tensor_count(), 1u);
}

TEST(SafetensorsModel, BrokenShardNamesTheFile) {
  TempDir d;
  WriteText(d / "s1.safetensors", std::string("\x08\0\0\0\0\0\0\0{\"a\":1}", 15));
  WriteText(d / "model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors"}})");
  auto r = SafetensorsModel::Open(d.path());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(r.status().message(), HasSubstr("s1.safetensors"));
}

TEST(SafetensorsModel, FallbackToAllFiles) {
  TempDir d;
  WriteShard(d / "b.safetensors", {"y"});
  WriteShard(d / "a.safetensors", {"x"});
  WriteText(d / "notes.txt", "not weights");
  auto m = SafetensorsModel::Open(d.path());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->layout(), SafetensorsModel::Layout::kAllFiles);
  ASSERT_EQ((*m)->files().size(), 2u);
  EXPECT_EQ(BaseName((*m)->files()[0]->path()), "a.safetensors");
  EXPECT_EQ((*m)->tensor_count(), 2u);

  WriteShard(d / "c.safetensors", {"x"});
  auto dup = SafetensorsModel::Open(d.path());
  EXPECT_EQ(dup.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(dup.status().message(), HasSubstr("tensor 'x' appears in both"));
}

TEST(SafetensorsModel, NothingToOpen) {
  TempDir d;
  auto empty = SafetensorsModel::Open(d.path());
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(empty.status().message(), HasSubstr("*.safetensors"));
  EXPECT_EQ(SafetensorsModel::Open(d / "nope").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace llmhost::safetensors_model_test
