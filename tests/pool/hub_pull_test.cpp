// The pieces of `llmhost pull` that need no network: references, the Hub's
// model info, file choice, and the cache layout that model discovery reads.
#include <gtest/gtest.h>

#include <filesystem>

#include "pool/hub_cache.h"
#include "pool/hub_file_select.h"
#include "pool/hub_model_info.h"
#include "pool/hub_ref.h"
#include "pool/model_discovery.h"
#include "test_util.h"

namespace llmhost::hub_pull_test {
namespace {

namespace fs = std::filesystem;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

TEST(HubRefTest, ParsesRepoRevisionAndQuant) {
  auto a = ParseHubRef("Qwen/Qwen3-0.6B");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->repo, "Qwen/Qwen3-0.6B");
  EXPECT_EQ(a->revision, "main");
  EXPECT_EQ(a->quant, "");
  auto b = ParseHubRef("unsloth/Qwen3-8B-GGUF@refs/pr/3:Q4_K_M");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->repo, "unsloth/Qwen3-8B-GGUF");
  EXPECT_EQ(b->revision, "refs/pr/3");
  EXPECT_EQ(b->quant, "Q4_K_M");
  for (const char* bad : {"noorg", "a/b/c", "../x/y", "org/..", "org/na me", "org/name@", "org/name@a//b",
                          "org/name@../../etc", "org/name:", "org/name:a/b", "/name", "org/"}) {
    auto r = ParseHubRef(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_TRUE(IsCommitHash(kCommit));
  EXPECT_FALSE(IsCommitHash("main"));
  EXPECT_FALSE(IsCommitHash("0123456789ABCDEF0123456789abcdef01234567"));
}

TEST(HubModelInfoTest, ReadsFilesSizesAndHashes) {
  const std::string sha(64, 'a');
  auto info = ParseHubModelInfo(R"({"id":"o/m","sha":")" + kCommit + R"(","siblings":[
      {"rfilename":"config.json","size":12,"blobId":"1111111111111111111111111111111111111111"},
      {"rfilename":"model.safetensors","size":999,"lfs":{"sha256":")" + sha + R"(","size":1000}},
      {"rfilename":"sub/dir/tokenizer.model"}]})");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->commit, kCommit);
  ASSERT_EQ(info->files.size(), 3u);
  EXPECT_EQ(info->files[0].blob_id, "1111111111111111111111111111111111111111");
  EXPECT_EQ(info->files[0].size, 12u);
  EXPECT_EQ(info->files[1].sha256, sha);
  EXPECT_EQ(info->files[1].size, 1000u);  // the LFS size wins
  EXPECT_FALSE(info->files[2].has_size);
}

TEST(HubModelInfoTest, RejectsUnsafeOrMalformedEntries) {
  auto with_file = [](const std::string& name) {
    return R"({"sha":")" + kCommit + R"(","siblings":[{"rfilename":")" + name + R"("}]})";
  };
  for (const char* name : {"../evil", "/etc/passwd", "a//b", "a/./b", "a/../../b", "a\\\\b", "", "x/"}) {
    auto r = ParseHubModelInfo(with_file(name));
    EXPECT_FALSE(r.ok()) << name;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << name;
    }
  }
  EXPECT_FALSE(ParseHubModelInfo(R"({"sha":"main","siblings":[]})").ok());
  EXPECT_FALSE(ParseHubModelInfo(R"({"sha":")" + kCommit + R"("})").ok());
  EXPECT_FALSE(ParseHubModelInfo(R"({"sha":")" + kCommit +
                                 R"(","siblings":[{"rfilename":"w.gguf","lfs":{"sha256":"xyz"}}]})")
                   .ok());
  EXPECT_FALSE(ParseHubModelInfo("[1,2]").ok());
}

TEST(HubFileSelectTest, GlobMatching) {
  EXPECT_TRUE(GlobMatch("*.safetensors", "model-00001-of-00002.safetensors"));
  EXPECT_TRUE(GlobMatch("*.json", "sub/config.json"));  // '*' crosses '/'
  EXPECT_TRUE(GlobMatch("original/", "original/params.json"));
  EXPECT_TRUE(GlobMatch("model-0000[12]-*", "model-00002-of-00002.safetensors"));
  EXPECT_TRUE(GlobMatch("tok?nizer.json", "tokenizer.json"));
  EXPECT_FALSE(GlobMatch("*.gguf", "model.safetensors"));
  EXPECT_FALSE(GlobMatch("tokenizer.*", "sub/tokenizer.json"));
  EXPECT_FALSE(GlobMatch("model-0000[!12]-*", "model-00002-of-00002.safetensors"));
}

std::vector<HubFile> Files(std::initializer_list<const char*> paths) {
  std::vector<HubFile> out;
  for (const char* p : paths) out.push_back(HubFile{p, 1, true, "", ""});
  return out;
}

std::vector<std::string> Paths(const std::vector<HubFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.path);
  return out;
}

TEST(HubFileSelectTest, DefaultsTakeWeightsConfigsTokenizerAndTemplates) {
  auto files = Files({"README.md", ".gitattributes", "config.json", "model-00001-of-00002.safetensors",
                      "model-00002-of-00002.safetensors", "model.safetensors.index.json", "consolidated.safetensors",
                      "tokenizer.json", "tokenizer.model", "tekken.tiktoken", "chat_template.jinja",
                      "pytorch_model.bin", "original/params.json", "images/logo.png"});
  auto r = SelectHubFiles(files, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Paths(*r), (std::vector<std::string>{"config.json", "model-00001-of-00002.safetensors",
                                                 "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                                 "tokenizer.json", "tokenizer.model", "tekken.tiktoken",
                                                 "chat_template.jinja", "original/params.json"}));
  // Patterns of one's own replace the defaults; excludes apply after them.
  HubFileFilter f;
  f.include = {"*.md", "consolidated*"};
  f.exclude = {"README*"};
  auto own = SelectHubFiles(files, f);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(Paths(*own), std::vector<std::string>{"consolidated.safetensors"});
  // Only a consolidated checkpoint: kept.
  auto only = SelectHubFiles(Files({"config.json", "consolidated.safetensors"}), {});
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->size(), 2u);
  // Nothing left is an error that lists the repository.
  f.include = {"*.onnx"};
  auto none = SelectHubFiles(files, f);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("README.md"), std::string::npos);
}

TEST(HubFileSelectTest, GgufNeedsAChoiceAmongSeveral) {
  auto files = Files({"README.md", "Qwen3-8B-Q4_K_M.gguf", "Qwen3-8B-Q8_0.gguf", "Qwen3-8B-Q4_K_S.gguf"});
  auto ambiguous = SelectHubFiles(files, {});
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ambiguous.status().message().find("Qwen3-8B-Q8_0.gguf"), std::string::npos);
  HubFileFilter f;
  f.quant = "q4_k_m";
  auto picked = SelectHubFiles(files, f);
  ASSERT_TRUE(picked.ok()) << picked.status().ToString();
  EXPECT_EQ(Paths(*picked), std::vector<std::string>{"Qwen3-8B-Q4_K_M.gguf"});
  f.quant = "Q4_K";  // in two names
  EXPECT_FALSE(SelectHubFiles(files, f).ok());
  f.quant = "Q2_K";  // in none
  auto missing = SelectHubFiles(files, f);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("Q2_K"), std::string::npos);
  auto single = SelectHubFiles(Files({"m-Q4_0.gguf"}), {});
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->size(), 1u);
}

// A split GGUF model is one choice: all its parts, and only when all are there.
TEST(HubFileSelectTest, SplitGgufIsOneModel) {
  auto files = Files({"Q4_K_M/m-Q4_K_M-00001-of-00002.gguf", "Q4_K_M/m-Q4_K_M-00002-of-00002.gguf",
                      "m-Q8_0.gguf", "config.json"});
  HubFileFilter f;
  f.quant = "Q4_K_M";
  auto picked = SelectHubFiles(files, f);
  ASSERT_TRUE(picked.ok()) << picked.status().ToString();
  EXPECT_EQ(Paths(*picked), (std::vector<std::string>{"Q4_K_M/m-Q4_K_M-00001-of-00002.gguf",
                                                      "Q4_K_M/m-Q4_K_M-00002-of-00002.gguf", "config.json"}));
  f.quant = "Q8_0";
  auto q8 = SelectHubFiles(files, f);
  ASSERT_TRUE(q8.ok());
  EXPECT_EQ(Paths(*q8), (std::vector<std::string>{"m-Q8_0.gguf", "config.json"}));
  // Only the split: no choice needed.
  auto only = SelectHubFiles(Files({"m-00001-of-00002.gguf", "m-00002-of-00002.gguf"}), {});
  ASSERT_TRUE(only.ok()) << only.status().ToString();
  EXPECT_EQ(only->size(), 2u);
  // Still two models without a quantization.
  EXPECT_FALSE(SelectHubFiles(files, {}).ok());
  // A part missing from the repository (or excluded).
  f.quant = "Q4_0";
  auto gap = SelectHubFiles(Files({"m-Q4_0-00001-of-00003.gguf", "m-Q4_0-00003-of-00003.gguf"}), f);
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("lacks part m-Q4_0-00002-of-00003.gguf"), std::string::npos)
      << gap.status().ToString();
}

TEST(HubCacheTest, LayoutMatchesHuggingFaceHub) {
  EXPECT_EQ(HubRepoFolder("/m", "Qwen/Qwen3-0.6B"), "/m/models--Qwen--Qwen3-0.6B");
  EXPECT_EQ(HubBlobPath("/m/models--a--b", "abc"), "/m/models--a--b/blobs/abc");
  EXPECT_EQ(HubSnapshotDir("/m/models--a--b", kCommit), "/m/models--a--b/snapshots/" + kCommit);
  EXPECT_EQ(HubSnapshotLinkTarget("config.json", "e1"), "../../blobs/e1");
  EXPECT_EQ(HubSnapshotLinkTarget("a/b/tokenizer.model", "e2"), "../../../../blobs/e2");
}

TEST(HubCacheTest, LinksAndRefsAreWhatDiscoveryServes) {
  const std::string dir = testing::MakeTempDir();
  const std::string folder = HubRepoFolder(dir, "test-org/tiny");
  const std::string model = testing::TestDataDir() + "/models/qwen3-tiny";
  fs::create_directories(folder + "/blobs");
  int n = 0;
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json"}) {
    const std::string etag = "blob" + std::to_string(n++);
    fs::copy_file(model + "/" + name, HubBlobPath(folder, etag));
    ASSERT_TRUE(LinkHubSnapshotFile(folder, kCommit, name, etag).ok());
  }
  ASSERT_TRUE(LinkHubSnapshotFile(folder, kCommit, "sub/extra.json", "blob0").ok());
  // Linking again replaces the link.
  ASSERT_TRUE(LinkHubSnapshotFile(folder, kCommit, "config.json", "blob0").ok());
  const std::string snap = HubSnapshotDir(folder, kCommit);
  EXPECT_EQ(fs::read_symlink(snap + "/config.json").string(), "../../blobs/blob0");
  EXPECT_EQ(fs::read_symlink(snap + "/sub/extra.json").string(), "../../../blobs/blob0");
  EXPECT_TRUE(fs::exists(snap + "/sub/extra.json"));  // the relative link resolves

  ASSERT_TRUE(WriteHubRef(folder, "main", kCommit).ok());
  ASSERT_TRUE(WriteHubRef(folder, "refs/pr/1", kCommit).ok());
  ASSERT_TRUE(WriteHubRef(folder, kCommit, kCommit).ok());  // a commit as revision: no ref
  EXPECT_EQ(*ReadFileToString(folder + "/refs/main"), kCommit);
  EXPECT_EQ(*ReadFileToString(folder + "/refs/refs/pr/1"), kCommit);
  EXPECT_FALSE(fs::exists(folder + "/refs/" + kCommit));

  EXPECT_EQ(HfCacheSnapshot(folder), snap);
  auto models = DiscoverModels({dir});
  ASSERT_EQ(models.size(), 2u);  // main, and the PR ref under its own id
  EXPECT_EQ(models[0].id, "test-org/tiny");
  EXPECT_EQ(models[0].path, snap);
  EXPECT_GT(models[0].weight_bytes, 0u);
  EXPECT_EQ(models[1].id, "test-org/tiny@refs/pr/1");
  EXPECT_EQ(models[1].path, snap);
}

TEST(HubCacheTest, ASnapshotWithOneGgufIsServedAsIt) {
  const std::string dir = testing::MakeTempDir();
  const std::string folder = HubRepoFolder(dir, "test-org/tiny-gguf");
  fs::create_directories(folder + "/blobs");
  fs::copy_file(testing::TestDataDir() + "/models/llama-tiny-gguf/llama-tiny-q4_0.gguf", HubBlobPath(folder, "g"));
  ASSERT_TRUE(LinkHubSnapshotFile(folder, kCommit, "tiny-Q4_0.gguf", "g").ok());
  ASSERT_TRUE(WriteHubRef(folder, "main", kCommit).ok());
  auto models = DiscoverModels({dir});
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].id, "test-org/tiny-gguf");
  EXPECT_TRUE(models[0].gguf());
  EXPECT_EQ(models[0].path, HubSnapshotDir(folder, kCommit) + "/tiny-Q4_0.gguf");
}

// A split GGUF snapshot is one model, by its first part, sized by all parts.
TEST(HubCacheTest, ASnapshotWithASplitGgufIsServedOnce) {
  const std::string dir = testing::MakeTempDir();
  const std::string folder = HubRepoFolder(dir, "test-org/split");
  fs::create_directories(folder + "/blobs");
  ASSERT_TRUE(WriteFileAtomic(HubBlobPath(folder, "p1"), std::string(100, 'a')).ok());
  ASSERT_TRUE(WriteFileAtomic(HubBlobPath(folder, "p2"), std::string(50, 'b')).ok());
  ASSERT_TRUE(LinkHubSnapshotFile(folder, kCommit, "s-Q4_0-00001-of-00002.gguf", "p1").ok());
  ASSERT_TRUE(LinkHubSnapshotFile(folder, kCommit, "s-Q4_0-00002-of-00002.gguf", "p2").ok());
  ASSERT_TRUE(WriteHubRef(folder, "main", kCommit).ok());
  auto models = DiscoverModels({dir});
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].id, "test-org/split");
  EXPECT_EQ(models[0].path, HubSnapshotDir(folder, kCommit) + "/s-Q4_0-00001-of-00002.gguf");
  EXPECT_EQ(models[0].weight_bytes, 150u);
}

}  // namespace
}  // namespace llmhost::hub_pull_test
