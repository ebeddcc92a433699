// Loading: clear errors (unknown architecture, missing tensor, shape
// mismatch, unsupported dtype, GGUF hyperparameters), zero-copy weights
// (resident memory after load stays far below the weight bytes), and the
// GGUF / HF metadata that the model derives.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "formats/safetensors_model.h"
#include "formats/safetensors_writer.h"
#include "model/model.h"
#include "model/model_test_util.h"

namespace llmhost::load_test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using TempDir = testing::ScopedTempDir;

std::string Fixture(const std::string& name) { return testing::ModelsRoot() + "/" + name; }

// Writes `dir` as a copy of fixture `name` with its config edited by
// `edit_config` and its tensors by `edit` (name -> replacement bytes/dtype/shape,
// or dropped when `edit` returns false).
struct TensorCopy {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
void WriteVariant(const std::string& name, const std::string& dir,
                  const std::function<void(Json&)>& edit_config,
                  const std::function<bool(TensorCopy&)>& edit) {
  auto cfg = ReadFileToString(Fixture(name) + "/config.json");
  ASSERT_TRUE(cfg.ok());
  Json j = Json::parse(*cfg);
  edit_config(j);
  ASSERT_TRUE(WriteFileAtomic(dir + "/config.json", j.dump()).ok());
  auto st = SafetensorsModel::Open(Fixture(name));
  ASSERT_TRUE(st.ok());
  std::vector<TensorCopy> copies;
  for (const auto& [tname, e] : (*st)->entries()) {
    TensorView v = e.file->View(*e.info);
    TensorCopy c{tname, v.dtype, v.shape, std::string(reinterpret_cast<const char*>(v.data), v.n_bytes)};
    if (edit(c)) copies.push_back(std::move(c));
  }
  std::vector<SafetensorsWriteTensor> out;
  for (const TensorCopy& c : copies) out.push_back({c.name, c.dtype, c.shape, c.bytes});
  ASSERT_TRUE(WriteSafetensorsFile(dir + "/model.safetensors", out, {{"format", "pt"}}).ok());
}

Status LoadStatus(const std::string& path) {
  CpuBackend backend(nullptr);
  auto m = Model::Load(path, &backend);
  return m.ok() ? Status::OK() : m.status();
}

TEST(LoadErrorsTest, UnknownArchitectureIsNamed) {
  TempDir d;
  Json cfg = {{"model_type", "mamba9"}, {"hidden_size", 64}, {"num_hidden_layers", 2},
              {"num_attention_heads", 4}, {"vocab_size", 100}, {"intermediate_size", 128}};
  ASSERT_TRUE(WriteFileAtomic(d.path() + "/config.json", cfg.dump()).ok());
  Status st = LoadStatus(d.path());
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("'mamba9'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("qwen3_moe"), std::string::npos) << st.message();  // lists the supported
}

TEST(LoadErrorsTest, MissingTensorIsNamed) {
  if (!FileExists(Fixture("llama3-tiny"))) GTEST_SKIP();
  TempDir d;
  WriteVariant("llama3-tiny", d.path(), [](Json&) {},
               [](TensorCopy& t) { return t.name != "model.layers.1.self_attn.k_proj.weight"; });
  Status st = LoadStatus(d.path());
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
  EXPECT_NE(st.message().find("missing tensor 'model.layers.1.self_attn.k_proj.weight'"),
            std::string::npos) << st.message();
}

TEST(LoadErrorsTest, ShapeMismatchNamesExpectedAndFound) {
  if (!FileExists(Fixture("llama3-tiny"))) GTEST_SKIP();
  TempDir d;
  WriteVariant("llama3-tiny", d.path(), [](Json& j) { j["intermediate_size"] = 96; },
               [](TensorCopy&) { return true; });
  Status st = LoadStatus(d.path());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("'model.layers.0.mlp.gate_proj.weight': expected shape [96, 64], "
                              "found [128, 64]"),
            std::string::npos) << st.message();
}

TEST(LoadErrorsTest, UnsupportedDtypeIsNamed) {
  if (!FileExists(Fixture("llama3-tiny"))) GTEST_SKIP();
  TempDir d;
  WriteVariant("llama3-tiny", d.path(), [](Json&) {}, [](TensorCopy& t) {
    if (t.name == "model.layers.0.self_attn.o_proj.weight") t.dtype = DType::kI16;  // same size as BF16
    return true;
  });
  Status st = LoadStatus(d.path());
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.ToString();
  EXPECT_NE(st.message().find("'model.layers.0.self_attn.o_proj.weight': dtype I16"),
            std::string::npos) << st.message();
}

TEST(LoadErrorsTest, NotAModel) {
  TempDir d;
  ASSERT_TRUE(WriteFileAtomic(d.path() + "/x.bin", "hello").ok());
  EXPECT_EQ(LoadStatus(d.path() + "/x.bin").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadStatus(d.path() + "/absent").code(), StatusCode::kNotFound);
  EXPECT_FALSE(LoadStatus(d.path()).ok());  // a directory without config.json
}

// Weights are views of the mapped files: loading a model with a 32 MiB
// embedding must not make it resident (only headers, norms and biases are
// read), and the backend accounts for them as mapped, not device, bytes.
TEST(LoadMemoryTest, WeightsStayMappedNotCopied) {
  TempDir d;
  const int64_t vocab = 16384, hidden = 1024, layers = 1, inter = 256;
  Json cfg = {{"model_type", "llama"},       {"hidden_size", hidden},   {"num_hidden_layers", layers},
              {"num_attention_heads", 8},    {"num_key_value_heads", 8}, {"vocab_size", vocab},
              {"intermediate_size", inter},  {"tie_word_embeddings", true}};
  ASSERT_TRUE(WriteFileAtomic(d.path() + "/config.json", cfg.dump()).ok());
  std::mt19937 rng(1);
  auto bf16 = [&](int64_t n) {
    std::string s(static_cast<size_t>(n) * 2, '\0');
    for (size_t i = 0; i < s.size(); i += 2) {
      s[i] = static_cast<char>(rng());
      s[i + 1] = static_cast<char>(0x3c);  // small positive values
    }
    return s;
  };
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"model.embed_tokens.weight", {vocab, hidden}},
      {"model.norm.weight", {hidden}},
      {"model.layers.0.input_layernorm.weight", {hidden}},
      {"model.layers.0.post_attention_layernorm.weight", {hidden}},
      {"model.layers.0.self_attn.q_proj.weight", {hidden, hidden}},
      {"model.layers.0.self_attn.k_proj.weight", {hidden, hidden}},
      {"model.layers.0.self_attn.v_proj.weight", {hidden, hidden}},
      {"model.layers.0.self_attn.o_proj.weight", {hidden, hidden}},
      {"model.layers.0.mlp.gate_proj.weight", {inter, hidden}},
      {"model.layers.0.mlp.up_proj.weight", {inter, hidden}},
      {"model.layers.0.mlp.down_proj.weight", {hidden, inter}},
  };
  std::vector<std::string> data;
  std::vector<SafetensorsWriteTensor> ts;
  for (auto& [n, shape] : shapes) {
    int64_t count = 1;
    for (int64_t x : shape) count *= x;
    data.push_back(bf16(count));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    ts.push_back({shapes[i].first, DType::kBF16, shapes[i].second, data[i]});
  }
  ASSERT_TRUE(WriteSafetensorsFile(d.path() + "/model.safetensors", ts, {}).ok());
  data.clear();
  // Drop the file's pages from this process's view: a fresh map starts cold.
  CpuBackend backend(nullptr);
  const uint64_t before = ResidentBytes();
  auto m = Model::Load(d.path(), &backend);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const uint64_t after = ResidentBytes();
  const uint64_t weights = (*m)->weight_bytes();
  std::printf("  weights %.1f MiB, resident +%.2f MiB after load, device buffers %.2f MiB\n",
              weights / 1048576.0, (after - before) / 1048576.0,
              backend.memory_stats().bytes_in_use / 1048576.0);
  EXPECT_GT(weights, 40u << 20);
  EXPECT_LT(after - before, weights / 4);
  EXPECT_EQ(backend.memory_stats().mapped_weight_bytes, weights - 3 * hidden * 2);  // all but norms
  EXPECT_LT(backend.memory_stats().bytes_in_use, 1u << 20);  // norms (f32) and rope tables only
}

TEST(GgufLoadTest, HyperparametersAndInterleavedRope) {
  const std::string path = Fixture("llama-tiny-gguf/llama-tiny-q4_0.gguf");
  if (!FileExists(path)) GTEST_SKIP();
  CpuBackend backend(nullptr);
  auto m = Model::Load(path, &backend);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelSpec& s = (*m)->spec();
  EXPECT_EQ(s.arch, "llama");
  EXPECT_EQ(s.hidden, 256);
  EXPECT_EQ(s.n_layers, 2);
  EXPECT_EQ(s.n_heads, 4);
  EXPECT_EQ(s.n_kv_heads, 2);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.intermediate, 512);
  EXPECT_EQ(s.vocab, 907);
  EXPECT_FALSE(s.tie_embeddings);
  EXPECT_EQ(s.rope_pairing, RopePairing::kInterleaved);
  EXPECT_FLOAT_EQ(s.rms_eps, 1e-6f);
  EXPECT_TRUE((*m)->is_gguf());
  EXPECT_EQ((*m)->config().eos_token_ids, std::vector<int64_t>{904});
}

}  // namespace
}  // namespace llmhost::load_test
