// Model discovery (spec rules 1–3): model directories, org folders, Hugging
// Face cache folders, GGUF files, hidden entries and adapters, weight sizes
// and their fallbacks, duplicates, a root that is itself a model.
#include "pool/model_discovery.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "util/file.h"

namespace llmhost::model_discovery_test {
namespace {

namespace fs = std::filesystem;

void Touch(const std::string& path, const std::string& text = "{}") {
  fs::create_directories(fs::path(path).parent_path());
  ASSERT_TRUE(WriteFileAtomic(path, text).ok());
}

void Model(const std::string& dir, size_t weight_bytes = 100) {
  Touch(dir + "/config.json", R"({"model_type":"qwen3","max_position_embeddings":40960})");
  Touch(dir + "/model.safetensors", std::string(weight_bytes, 'w'));
}

std::vector<std::string> Ids(const std::vector<DiscoveredModel>& v) {
  std::vector<std::string> out;
  for (const auto& m : v) out.push_back(m.id);
  return out;
}

const DiscoveredModel* Find(const std::vector<DiscoveredModel>& v, const std::string& id) {
  for (const auto& m : v) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

// GPTQ / AWQ weights take more memory than their files once repacked (f32
// scales and biases per group): the estimate says so; FP8's do not grow.
TEST(ModelDiscovery, QuantizedCheckpointsEstimateTheirRepackedSize) {
  const std::string root = testing::MakeTempDir();
  const std::string shape = R"("model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
      "num_attention_heads": 4, "vocab_size": 300)";
  Touch(root + "/gptq/config.json", "{" + shape + R"(, "quantization_config": {"quant_method": "gptq",
      "bits": 4, "group_size": 32}})");
  Touch(root + "/gptq/model.safetensors", std::string(1000, 'w'));
  Touch(root + "/row/config.json", "{" + shape + R"(, "quantization_config": {"quant_method": "gptq",
      "bits": 4, "group_size": -1}})");
  Touch(root + "/row/model.safetensors", std::string(1000, 'w'));
  Touch(root + "/fp8/config.json", "{" + shape + R"(, "quantization_config": {"quant_method": "fp8"}})");
  Touch(root + "/fp8/model.safetensors", std::string(1000, 'w'));
  Touch(root + "/fp8-blocks/config.json", "{" + shape + R"(, "quantization_config": {"quant_method": "fp8",
      "weight_block_size": [128, 128]}})");
  Touch(root + "/fp8-blocks/model.safetensors", std::string(1000, 'w'));
  auto found = DiscoverModels({root});
  const DiscoveredModel* g = Find(found, "gptq");
  const DiscoveredModel* r = Find(found, "row");
  const DiscoveredModel* f = Find(found, "fp8");
  const DiscoveredModel* b = Find(found, "fp8-blocks");
  ASSERT_TRUE(g != nullptr && r != nullptr && f != nullptr && b != nullptr);
  // 4-bit codes + f16 scales and 4-bit zeros per 32 (0.578 bytes a weight)
  // become codes + two f32 per 32 (0.75): x 1.297 on top of the 1.05.
  EXPECT_NEAR(static_cast<double>(g->estimated_bytes), 1050 * 0.75 / (0.5 + 2.5 / 32), 1.0);
  // One group per row is held as groups of 128: 0.5 -> 0.5625.
  EXPECT_NEAR(static_cast<double>(r->estimated_bytes), 1050 * 0.5625 / 0.5, 1.0);
  // A per-tensor FP8 scale stays one value a row; a 128x128 block's becomes
  // one per row of the block: 1 + 4/16384 -> 1 + 4/128 bytes a weight.
  EXPECT_EQ(f->estimated_bytes, 1050u);
  EXPECT_NEAR(static_cast<double>(b->estimated_bytes), 1050 * (1 + 4.0 / 128) / (1 + 4.0 / 16384), 1.0);
}

TEST(ModelDiscovery, DirectoriesOrgFoldersGgufHiddenAndAdapters) {
  const std::string root = testing::MakeTempDir();
  Model(root + "/Qwen3-8B", 1000);
  Model(root + "/mlx-community/Qwen3-8B-4bit");
  Touch(root + "/mlx-community/tiny-q4.gguf", std::string(50, 'g'));
  Touch(root + "/tiny.gguf", std::string(20, 'g'));
  Model(root + "/.cache/hidden-model");
  Model(root + "/org/.hidden");
  Model(root + "/lora");
  Touch(root + "/lora/adapter_config.json");
  Touch(root + "/no-weights/config.json");
  Model(root + "/a/b/too-deep");  // org folders are one level deep
  Touch(root + "/notes.txt", "x");
  auto found = DiscoverModels({root});
  EXPECT_EQ(Ids(found), (std::vector<std::string>{"Qwen3-8B", "mlx-community/Qwen3-8B-4bit",
                                                  "mlx-community/tiny-q4", "tiny"}));
  const DiscoveredModel* q = Find(found, "Qwen3-8B");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->path, root + "/Qwen3-8B");
  EXPECT_EQ(q->root, root);
  EXPECT_EQ(q->source, ModelSource::kDirectory);
  EXPECT_EQ(q->weight_bytes, 1000u);
  EXPECT_EQ(q->estimated_bytes, 1050u);  // × 1.05
  EXPECT_EQ(q->model_type, "qwen3");
  EXPECT_EQ(q->context_length, 40960);
  const DiscoveredModel* g = Find(found, "mlx-community/tiny-q4");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->gguf());
  EXPECT_EQ(g->weight_bytes, 50u);
  EXPECT_EQ(g->model_type, "gguf");
}

TEST(ModelDiscovery, HuggingFaceCacheFoldersResolveThroughRefsMain) {
  const std::string root = testing::MakeTempDir();
  const std::string hf = root + "/models--Qwen--Qwen3-0.6B";
  Touch(hf + "/refs/main", "abc123\n");
  Model(hf + "/snapshots/abc123", 300);
  Model(hf + "/snapshots/0ld0ld", 7);  // an older snapshot
  // Without refs/main, the only snapshot.
  Model(root + "/models--meta-llama--Llama-3.2-1B/snapshots/fff", 10);
  // refs/main pointing outside snapshots/ is ignored (two snapshots: none chosen).
  const std::string bad = root + "/models--x--y";
  Touch(bad + "/refs/main", "../../../etc");
  Model(bad + "/snapshots/a1");
  Model(bad + "/snapshots/a2");
  Model(root + "/datasets--x--data/snapshots/aa");
  auto found = DiscoverModels({root});
  EXPECT_EQ(Ids(found), (std::vector<std::string>{"Qwen/Qwen3-0.6B", "meta-llama/Llama-3.2-1B"}));
  const DiscoveredModel* q = Find(found, "Qwen/Qwen3-0.6B");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->source, ModelSource::kHfCache);
  EXPECT_EQ(q->path, hf + "/snapshots/abc123");
  EXPECT_EQ(q->weight_bytes, 300u);
  EXPECT_EQ(HfCacheModelId("models--Org--Name"), "Org/Name");
  EXPECT_EQ(HfCacheModelId("models--gpt2"), "gpt2");
  EXPECT_EQ(HfCacheModelId("model--x"), "");
}

// Every ref of a cache folder is a model: main as "Org/Name", the others as
// "Org/Name@REV" (nested refs included); a ref on main's commit is its own
// id for the same snapshot; refs naming no snapshot are skipped.
TEST(ModelDiscovery, HuggingFaceCacheRefsAreModelsEach) {
  const std::string root = testing::MakeTempDir();
  const std::string hf = root + "/models--Org--M";
  Touch(hf + "/refs/main", "aaaa");
  Touch(hf + "/refs/v2", "bbbb\n");
  Touch(hf + "/refs/same-as-main", "aaaa");
  Touch(hf + "/refs/pr/1", "cccc");
  Touch(hf + "/refs/gone", "dddd");         // no snapshot
  Touch(hf + "/refs/escape", "../../x");    // not a commit
  Model(hf + "/snapshots/aaaa", 11);
  Model(hf + "/snapshots/bbbb", 22);
  Touch(hf + "/snapshots/cccc/m-Q4_K_M.gguf", std::string(33, 'g'));
  auto found = DiscoverModels({root});
  EXPECT_EQ(Ids(found), (std::vector<std::string>{"Org/M", "Org/M@pr/1", "Org/M@same-as-main", "Org/M@v2"}));
  EXPECT_EQ(Find(found, "Org/M")->weight_bytes, 11u);
  EXPECT_EQ(Find(found, "Org/M@v2")->path, hf + "/snapshots/bbbb");
  EXPECT_EQ(Find(found, "Org/M@v2")->weight_bytes, 22u);
  EXPECT_EQ(Find(found, "Org/M@same-as-main")->path, hf + "/snapshots/aaaa");
  EXPECT_EQ(Find(found, "Org/M@same-as-main")->model_type, "qwen3");
  const DiscoveredModel* pr = Find(found, "Org/M@pr/1");
  ASSERT_NE(pr, nullptr);
  EXPECT_TRUE(pr->gguf());
  EXPECT_EQ(pr->path, hf + "/snapshots/cccc/m-Q4_K_M.gguf");
}

// Without refs/main but with another ref, the only snapshot is still main.
TEST(ModelDiscovery, HuggingFaceCacheWithoutMainRef) {
  const std::string root = testing::MakeTempDir();
  const std::string hf = root + "/models--Org--N";
  Touch(hf + "/refs/v1", "abab");
  Model(hf + "/snapshots/abab");
  EXPECT_EQ(Ids(DiscoverModels({root})), (std::vector<std::string>{"Org/N", "Org/N@v1"}));
}

// A split GGUF model is listed once, by its first part, named without the
// part suffix and sized by every part.
TEST(ModelDiscovery, SplitGgufListedOnce) {
  const std::string root = testing::MakeTempDir();
  Touch(root + "/big-00001-of-00003.gguf", std::string(10, 'g'));
  Touch(root + "/big-00002-of-00003.gguf", std::string(20, 'g'));
  Touch(root + "/big-00003-of-00003.gguf", std::string(30, 'g'));
  Touch(root + "/org/one-00001-of-00001.gguf", std::string(5, 'g'));
  auto found = DiscoverModels({root});
  EXPECT_EQ(Ids(found), (std::vector<std::string>{"big", "org/one-00001-of-00001"}));
  EXPECT_EQ(Find(found, "big")->path, root + "/big-00001-of-00003.gguf");
  EXPECT_EQ(Find(found, "big")->weight_bytes, 60u);
}

TEST(ModelDiscovery, WeightSizeFallbacks) {
  const std::string root = testing::MakeTempDir();
  // *.bin when there is no safetensors, without optimizer / training states.
  Touch(root + "/bin/config.json");
  Touch(root + "/bin/pytorch_model.bin", std::string(40, 'b'));
  Touch(root + "/bin/optimizer.bin", std::string(1000, 'o'));
  Touch(root + "/bin/training_args.bin", std::string(1000, 't'));
  // Safetensors in a sub-folder: the recursive search.
  Touch(root + "/nested/config.json");
  Touch(root + "/nested/weights/part1.safetensors", std::string(30, 'n'));
  Touch(root + "/nested/weights/part2.safetensors", std::string(12, 'n'));
  // Sharded safetensors add up.
  Touch(root + "/sharded/config.json");
  Touch(root + "/sharded/model-00001-of-00002.safetensors", std::string(10, 's'));
  Touch(root + "/sharded/model-00002-of-00002.safetensors", std::string(5, 's'));
  auto found = DiscoverModels({root});
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(Find(found, "bin")->weight_bytes, 40u);
  EXPECT_EQ(Find(found, "nested")->weight_bytes, 42u);
  EXPECT_EQ(Find(found, "sharded")->weight_bytes, 15u);
}

TEST(ModelDiscovery, SeveralRootsFirstWinsMissingSkippedRootAsModel) {
  const std::string a = testing::MakeTempDir(), b = testing::MakeTempDir();
  Model(a + "/same", 10);
  Model(b + "/same", 99);
  Model(b + "/other");
  auto found = DiscoverModels({a, b, a + "/missing"});
  EXPECT_EQ(Ids(found), (std::vector<std::string>{"other", "same"}));
  EXPECT_EQ(Find(found, "same")->weight_bytes, 10u);
  // A root that is itself a model, and holds no models, is registered.
  const std::string solo = testing::MakeTempDir() + "/Solo-1B";
  Model(solo);
  EXPECT_EQ(Ids(DiscoverModels({solo})), std::vector<std::string>{"Solo-1B"});
  EXPECT_EQ(Ids(DiscoverModels({solo + "/"})), std::vector<std::string>{"Solo-1B"});
}

// A folder linking to itself (or to a parent) would list every model again
// under its name; a second link to a model would list it twice. Discovery
// follows no link twice: the first path to reach something wins.
TEST(ModelDiscovery, LinksAreFollowedOnce) {
  const std::string root = testing::MakeTempDir();
  Model(root + "/A");
  Model(root + "/org/B");
  fs::create_directory_symlink(root, root + "/selfloop");
  fs::create_directory_symlink(root + "/org", root + "/org/again");
  fs::create_directory_symlink(root + "/A", root + "/A-link");
  fs::create_directory_symlink(root + "/org", root + "/zz-org");
  Touch(root + "/m.gguf", "GGUF");
  fs::create_symlink(root + "/m.gguf", root + "/n.gguf");
  auto found = DiscoverModels({root, root + "/org"});
  EXPECT_EQ(Ids(found), (std::vector<std::string>{"A", "m", "org/B"}));
}

TEST(ModelDiscovery, TheRepositoryTestModels) {
  auto found = DiscoverModels({testing::TestDataDir() + "/models"});
  auto ids = Ids(found);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "qwen3-tiny"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "llama-tiny-gguf/llama-tiny-q4_0"), ids.end());
  const DiscoveredModel* g = Find(found, "llama-tiny-gguf/llama-tiny-q4_0");
  ASSERT_NE(g, nullptr);
  EXPECT_GT(g->context_length, 0);  // from the GGUF metadata
}

}  // namespace
}  // namespace llmhost::model_discovery_test
