// ModelRegistry: discovery ids (directories with config.json, .gguf files,
// nested folders, hidden entries, duplicates across roots), name resolution,
// and loading once under concurrent first requests.
#include "pool/model_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "test_util.h"
#include "util/file.h"

namespace llmhost {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Ids(const std::vector<ModelEntry>& entries) {
  std::vector<std::string> ids;
  for (const auto& e : entries) ids.push_back(e.id);
  return ids;
}

void Touch(const std::string& path, const std::string& text = "{}") {
  fs::create_directories(fs::path(path).parent_path());
  ASSERT_TRUE(WriteFileAtomic(path, text).ok());
}

TEST(ModelRegistry, DiscoversDirectoriesAndGgufFiles) {
  const std::string root = testing::MakeTempDir();
  Touch(root + "/plain/config.json");
  Touch(root + "/plain/model.safetensors", "12345678");
  Touch(root + "/org/Nested-Model/config.json");
  Touch(root + "/org/Nested-Model/sub/config.json");  // inside a model: not searched
  Touch(root + "/ggufs/tiny-q4.gguf", "GGUF");
  Touch(root + "/.hidden/config.json");
  Touch(root + "/lora/config.json");
  Touch(root + "/lora/adapter_config.json");
  Touch(root + "/notes/readme.txt");
  const std::string other = testing::MakeTempDir();
  Touch(other + "/plain/config.json");  // duplicate id: the first root wins
  Touch(other + "/extra/config.json");
  auto entries = ModelRegistry::Discover({root, other, root + "/missing"});
  EXPECT_EQ(Ids(entries), (std::vector<std::string>{"extra", "ggufs/tiny-q4", "org/Nested-Model", "plain"}));
  for (const auto& e : entries) {
    if (e.id == "plain") {
      EXPECT_EQ(e.path, root + "/plain");
      EXPECT_EQ(e.size_bytes, 8u);
      EXPECT_FALSE(e.gguf);
    }
    if (e.id == "ggufs/tiny-q4") {
      EXPECT_TRUE(e.gguf);
    }
  }
  // A root that is itself a model directory is registered under its name.
  EXPECT_EQ(Ids(ModelRegistry::Discover({root + "/plain"})), std::vector<std::string>{"plain"});
}

TEST(ModelRegistry, ResolvesLoadsOnceAndListsOnMiss) {
  ModelRegistryOptions o;
  o.model_dirs = {testing::TestDataDir() + "/models"};
  auto reg = ModelRegistry::Create(o);
  auto ids = Ids(reg->List());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "qwen3-tiny"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "llama-tiny-gguf/llama-tiny-q4_0"), ids.end());
  auto missing = reg->Get("gpt-5");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("qwen3-tiny"), std::string::npos);
  EXPECT_TRUE(reg->Loaded().empty());
  std::vector<std::shared_ptr<LoadedModel>> got(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto m = reg->Get(i % 2 ? "qwen3-tiny" : "QWEN3-TINY");  // case-insensitive
      if (m.ok()) got[i] = *m;
    });
  }
  for (auto& t : threads) t.join();
  for (auto& m : got) {
    ASSERT_TRUE(m);
    EXPECT_EQ(m.get(), got[0].get());  // one load, shared
  }
  EXPECT_TRUE(got[0]->chat_template.has_value());
  EXPECT_GT(got[0]->engine->context_length(), 0);
  EXPECT_EQ(reg->Loaded().size(), 1u);
  auto gguf = reg->Get("llama-tiny-gguf/llama-tiny-q4_0");
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  EXPECT_TRUE((*gguf)->entry.gguf);
  reg->Shutdown();
  EXPECT_FALSE(reg->Get("qwen3-tiny").ok());
}

}  // namespace
}  // namespace llmhost
