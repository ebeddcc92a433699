// Deleting a model's files (pool/model_removal.h) and the pool's DeleteModel:
// folders and GGUF files, Hugging Face cache snapshots with shared blobs,
// links that would lead outside the model directory, a missing model, and
// the refusals (pinned, serving) and unload of a loaded idle model.
#include "pool/model_removal.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "fake_engine.h"
#include "pool/engine_pool.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::model_removal_test {
namespace {

namespace fs = std::filesystem;

void Touch(const std::string& path, const std::string& text = "{}") {
  fs::create_directories(fs::path(path).parent_path());
  ASSERT_TRUE(WriteFileAtomic(path, text).ok());
}

void Model(const std::string& dir) {
  Touch(dir + "/config.json", R"({"model_type":"qwen3"})");
  Touch(dir + "/model.safetensors", std::string(100, 'w'));
}

bool Exists(const std::string& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

const DiscoveredModel* Find(const std::vector<DiscoveredModel>& v, const std::string& id) {
  return FindModelByName(v, id);
}

// A Hugging Face cache repo: snapshots/<commit>/<file> → ../../blobs/<blob>.
void HubFile(const std::string& repo, const std::string& commit, const std::string& file, const std::string& blob,
             const std::string& text) {
  Touch(repo + "/blobs/" + blob, text);
  fs::create_directories(repo + "/snapshots/" + commit);
  fs::create_symlink("../../blobs/" + blob, repo + "/snapshots/" + commit + "/" + file);
}

TEST(ModelRemoval, FolderAndGgufFileGoAndNothingElse) {
  const std::string root = testing::MakeTempDir();
  Model(root + "/Qwen3-8B");
  Model(root + "/org/Other");
  Touch(root + "/org/tiny.gguf", std::string(20, 'g'));
  Touch(root + "/keep.gguf", std::string(20, 'g'));
  const auto found = DiscoverModels({root});

  auto folder = RemoveModelFiles(*Find(found, "Qwen3-8B"));
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  EXPECT_EQ(folder->removed, std::vector<std::string>{root + "/Qwen3-8B"});
  EXPECT_EQ(folder->bytes, 100u + 22u);  // weights and config.json
  auto gguf = RemoveModelFiles(*Find(found, "org/tiny"));
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  EXPECT_EQ(gguf->bytes, 20u);

  EXPECT_FALSE(Exists(root + "/Qwen3-8B"));
  EXPECT_FALSE(Exists(root + "/org/tiny.gguf"));
  EXPECT_TRUE(Exists(root + "/org/Other/model.safetensors"));
  EXPECT_TRUE(Exists(root + "/keep.gguf"));
  std::vector<std::string> left;
  for (const auto& m : DiscoverModels({root})) left.push_back(m.id);
  EXPECT_EQ(left, (std::vector<std::string>{"keep", "org/Other"}));
}

// A split GGUF model goes with all its parts; another split's stay.
TEST(ModelRemoval, SplitGgufGoesWithEveryPart) {
  const std::string root = testing::MakeTempDir();
  Touch(root + "/big-00001-of-00002.gguf", std::string(10, 'g'));
  Touch(root + "/big-00002-of-00002.gguf", std::string(20, 'g'));
  Touch(root + "/other-00001-of-00002.gguf", std::string(10, 'g'));
  Touch(root + "/other-00002-of-00002.gguf", std::string(20, 'g'));
  const auto found = DiscoverModels({root});
  auto r = RemoveModelFiles(*Find(found, "big"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->removed, (std::vector<std::string>{root + "/big-00001-of-00002.gguf", root + "/big-00002-of-00002.gguf"}));
  EXPECT_EQ(r->bytes, 30u);
  EXPECT_TRUE(Exists(root + "/other-00002-of-00002.gguf"));
}

TEST(ModelRemoval, HubSnapshotKeepsBlobsAnotherSnapshotSharesThenTheRepoGoesWithTheLast) {
  const std::string root = testing::MakeTempDir();
  const std::string repo = root + "/models--org--Model";
  HubFile(repo, "aaa111", "config.json", "cfg", R"({"model_type":"qwen3"})");
  HubFile(repo, "aaa111", "model.safetensors", "weights-old", std::string(100, 'o'));
  HubFile(repo, "bbb222", "config.json", "cfg", R"({"model_type":"qwen3"})");  // shared with aaa111
  HubFile(repo, "bbb222", "model.safetensors", "weights-new", std::string(200, 'n'));
  Touch(repo + "/refs/main", "bbb222");
  Touch(repo + "/refs/v1", "aaa111");
  Touch(root + "/.locks/models--org--Model/cfg.lock", "");
  auto found = DiscoverModels({root});
  const DiscoveredModel* m = Find(found, "org/Model");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->path, repo + "/snapshots/bbb222");  // refs/main

  auto r = RemoveModelFiles(*m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(Exists(repo + "/snapshots/bbb222"));
  EXPECT_FALSE(Exists(repo + "/refs/main"));
  EXPECT_FALSE(Exists(repo + "/blobs/weights-new"));
  EXPECT_EQ(r->bytes, 200u + 6u);  // the blob and refs/main; links count nothing; the shared blob stays
  EXPECT_TRUE(Exists(repo + "/blobs/cfg"));
  EXPECT_TRUE(Exists(repo + "/blobs/weights-old"));
  EXPECT_TRUE(Exists(repo + "/refs/v1"));
  EXPECT_TRUE(Exists(root + "/.locks/models--org--Model"));

  // The other revision, now the only snapshot, is served; deleting it takes the repo.
  found = DiscoverModels({root});
  m = Find(found, "org/Model");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, repo + "/snapshots/aaa111");
  r = RemoveModelFiles(*m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(Exists(repo));
  EXPECT_FALSE(Exists(root + "/.locks/models--org--Model"));
  EXPECT_TRUE(Exists(root + "/.locks"));
  EXPECT_TRUE(DiscoverModels({root}).empty());
}

TEST(ModelRemoval, HubGgufSnapshotGoesWithItsBlob) {
  const std::string root = testing::MakeTempDir();
  const std::string repo = root + "/models--org--Tiny-GGUF";
  HubFile(repo, "ccc333", "tiny-Q4_K_M.gguf", "gguf-blob", std::string(64, 'g'));
  Touch(repo + "/refs/main", "ccc333");
  const auto found = DiscoverModels({root});
  const DiscoveredModel* m = Find(found, "org/Tiny-GGUF");
  ASSERT_NE(m, nullptr);
  auto r = RemoveModelFiles(*m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->bytes, 64u + 6u);  // the blob and refs/main
  EXPECT_FALSE(Exists(repo));
}

TEST(ModelRemoval, LinksAreRemovedNeverFollowed) {
  const std::string root = testing::MakeTempDir();
  const std::string outside = testing::MakeTempDir();
  Model(outside + "/Real");
  Touch(outside + "/real.gguf", std::string(20, 'g'));
  Model(outside + "/org/Inner");
  fs::create_directory_symlink(outside + "/Real", root + "/Linked");
  fs::create_symlink(outside + "/real.gguf", root + "/linked.gguf");
  fs::create_directory_symlink(outside + "/org", root + "/org");

  // A model folder or file that is a link: the link goes, its target stays.
  auto found = DiscoverModels({root});
  ASSERT_NE(Find(found, "Linked"), nullptr);
  ASSERT_TRUE(RemoveModelFiles(*Find(found, "Linked")).ok());
  ASSERT_TRUE(RemoveModelFiles(*Find(found, "linked")).ok());
  EXPECT_FALSE(Exists(root + "/Linked"));
  EXPECT_FALSE(Exists(root + "/linked.gguf"));
  EXPECT_TRUE(Exists(outside + "/Real/model.safetensors"));
  EXPECT_TRUE(Exists(outside + "/real.gguf"));

  // Reached through a linked org folder: refused, nothing touched.
  const DiscoveredModel* inner = Find(found, "org/Inner");
  ASSERT_NE(inner, nullptr);
  auto r = RemoveModelFiles(*inner);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("is a link"), std::string::npos) << r.status().message();
  EXPECT_TRUE(Exists(outside + "/org/Inner/model.safetensors"));
}

TEST(ModelRemoval, HubLinksOutOfTheRepoAndPathsOutsideTheRootAreNotFollowed) {
  const std::string root = testing::MakeTempDir();
  const std::string outside = testing::MakeTempDir();
  Touch(outside + "/precious", "keep me");
  const std::string repo = root + "/models--org--Evil";
  HubFile(repo, "ddd444", "config.json", "cfg", R"({"model_type":"qwen3"})");
  HubFile(repo, "ddd444", "model.safetensors", "w", std::string(10, 'w'));
  // Links that climb out of blobs/: only the links go.
  fs::create_symlink("../../blobs/../../../" + fs::path(outside).filename().string() + "/precious",
                     repo + "/snapshots/ddd444/escape1");
  fs::create_symlink(outside + "/precious", repo + "/snapshots/ddd444/escape2");
  Touch(repo + "/refs/main", "ddd444");
  HubFile(repo, "eee555", "other.txt", "other", "x");  // a second snapshot: blobs are weighed one by one
  auto found = DiscoverModels({root});
  const DiscoveredModel* m = Find(found, "org/Evil");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RemoveModelFiles(*m).ok());
  EXPECT_TRUE(Exists(outside + "/precious"));
  EXPECT_FALSE(Exists(repo + "/blobs/w"));
  EXPECT_TRUE(Exists(repo + "/blobs/other"));

  // Paths that are not under the root, or are the root itself.
  DiscoveredModel fake;
  fake.id = "x";
  fake.root = root;
  fake.path = root + "/../" + fs::path(outside).filename().string() + "/precious";
  EXPECT_EQ(RemoveModelFiles(fake).status().code(), StatusCode::kInvalidArgument);
  fake.path = root;
  EXPECT_EQ(RemoveModelFiles(fake).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Exists(outside + "/precious"));
  EXPECT_TRUE(IsDirectory(root));
}

TEST(ModelRemoval, AMissingModelIsNotFound) {
  const std::string root = testing::MakeTempDir();
  Model(root + "/Gone");
  const auto found = DiscoverModels({root});
  fs::remove_all(root + "/Gone");
  EXPECT_EQ(RemoveModelFiles(*Find(found, "Gone")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FindModelByName(found, "nope"), nullptr);
}

TEST(ModelRemoval, NamesResolveByIdCaseOrUniqueLastComponent) {
  const std::string root = testing::MakeTempDir();
  Model(root + "/org/Qwen3-8B");
  Model(root + "/a/Same");
  Model(root + "/b/Same");
  const auto found = DiscoverModels({root});
  ASSERT_NE(FindModelByName(found, "ORG/qwen3-8b"), nullptr);
  EXPECT_EQ(FindModelByName(found, "qwen3-8b")->id, "org/Qwen3-8B");
  EXPECT_EQ(FindModelByName(found, "Same"), nullptr);  // two models end so
  EXPECT_EQ(FindModelByName(found, "a/Same")->id, "a/Same");
}

// ---- the pool ------------------------------------------------------------------

using testing::PoolFixture;

TEST(PoolDelete, UnloadsAnIdleModelThenForgetsIt) {
  PoolFixture f;
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  DeleteResult d = f.pool->DeleteModel("A");  // resolved as requests are
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.id, "a");
  EXPECT_TRUE(f.factory->Last("a")->stopped);
  EXPECT_FALSE(Exists(f.root + "/a"));
  ASSERT_EQ(f.pool->Models().size(), 1u);
  EXPECT_EQ(f.pool->Models()[0].id, "b");
  EXPECT_EQ(f.pool->Acquire("a").error.code, PoolErrorCode::kNotFound);
  EXPECT_EQ(f.pool->DeleteModel("a").error.code, PoolErrorCode::kNotFound);
}

TEST(PoolDelete, RefusesAPinnedModelAndOneServingRequests) {
  PoolFixture f;
  f.Start({"a", "b"});
  ASSERT_TRUE(f.pool->SetPinned("a", true).ok());
  DeleteResult pinned = f.pool->DeleteModel("a");
  EXPECT_EQ(pinned.error.code, PoolErrorCode::kBusy);
  EXPECT_NE(pinned.error.message.find("pinned"), std::string::npos) << pinned.error.message;

  AcquireResult lease = f.pool->Acquire("b");
  ASSERT_TRUE(lease.ok());
  DeleteResult busy = f.pool->DeleteModel("b");
  EXPECT_EQ(busy.error.code, PoolErrorCode::kBusy);
  EXPECT_NE(busy.error.message.find("serving"), std::string::npos) << busy.error.message;
  EXPECT_TRUE(f.Loaded("b"));
  EXPECT_TRUE(Exists(f.root + "/a/model.safetensors"));
  EXPECT_TRUE(Exists(f.root + "/b/model.safetensors"));
  lease.lease.reset();
  EXPECT_TRUE(f.pool->DeleteModel("b").ok());
  EXPECT_FALSE(Exists(f.root + "/b"));
}

// A delete sent as the last request's lease is being let go (the client has
// its answer a moment before) waits for it instead of calling the model busy.
TEST(PoolDelete, AModelWhoseLastLeaseEndsDuringTheGraceIsDeleted) {
  PoolFixture f;
  f.Start({"b"});
  AcquireResult lease = f.pool->Acquire("b");
  ASSERT_TRUE(lease.ok());
  std::thread release([&lease] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    lease.lease.reset();
  });
  const DeleteResult d = f.pool->DeleteModel("b");
  release.join();
  EXPECT_TRUE(d.ok()) << d.error.message;
  EXPECT_FALSE(Exists(f.root + "/b"));
}

}  // namespace
}  // namespace llmhost::model_removal_test
