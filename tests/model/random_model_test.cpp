// Random-weights models ("random:ARCH:DTYPE:CONFIG[:SEED]"): the model
// generated in memory is the one synth-model writes with the same options
// (the same logits, bit for bit, on every architecture and dtype), and so
// are its tokenizer, chat template and stop ids; the spec's fields parse
// with clear errors; a released tensor is generated again identically.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/vec_math.h"
#include "backend/device.h"
#include "chat/chat_template.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/synth_model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost::random_model_test {
namespace {

using OJson = nlohmann::ordered_json;

OJson TinyConfig(const std::string& arch) {
  OJson c = {{"hidden_size", 64},       {"num_hidden_layers", 2}, {"num_attention_heads", 4},
             {"num_key_value_heads", 2}, {"intermediate_size", 128}, {"vocab_size", 300}};
  if (arch == "qwen3_moe") {
    c["num_experts"] = 4;
    c["num_experts_per_tok"] = 2;
    c["moe_intermediate_size"] = 64;
  }
  if (arch == "mistral" || arch == "gemma3_text") c["sliding_window"] = 4;
  return c;
}

using TempDir = testing::ScopedTempDir;

// Writes `config` as <dir>/<stem>.json and returns its path.
std::string WriteConfig(const TempDir& dir, const std::string& stem, const OJson& config) {
  const std::string path = dir.Sub(stem + ".json");
  EXPECT_TRUE(WriteFileAtomic(path, config.dump()).ok());
  return path;
}

// Logits of every position of `tokens` at the reference precision.
std::vector<float> Logits(const std::string& path, const std::vector<int32_t>& tokens, uint64_t* weight_bytes,
                          const std::string& device = "cpu") {
  auto spec = ParseDevice(device);
  EXPECT_TRUE(spec.ok());
  auto backend = MakeBackend(*spec, Precision::kReference, &ThreadPool::Default());
  EXPECT_TRUE(backend.ok()) << backend.status().ToString();
  if (!backend.ok()) return {};
  auto model = Model::Load(path, backend->get());
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return {};
  *weight_bytes = (*model)->weight_bytes();
  auto cache = (*model)->CreateKvCache(1, 16);
  EXPECT_TRUE(cache.ok());
  KvSequence seq;
  ForwardItem item{&seq, tokens, LogitsRows::kAll};
  ForwardOutput out;
  EXPECT_TRUE((*model)->Forward({&item, 1}, **cache, &out).ok());
  return std::vector<float>(out.logits);
}

struct Case {
  std::string arch, dtype;
};

class RandomModelArchTest : public ::testing::TestWithParam<Case> {};

TEST_P(RandomModelArchTest, GivesTheLogitsOfTheSynthesizedDirectory) {
  const Case& c = GetParam();
  TempDir dir;
  const std::string config = WriteConfig(dir, "tiny", TinyConfig(c.arch));
  SynthOptions o;
  o.arch = c.arch;
  o.config = TinyConfig(c.arch);
  o.dtype = *ParseSynthDType(c.dtype);
  o.group_size = 32;
  o.seed = 5;
  o.out_dir = dir.Sub("model");
  auto summary = SynthesizeModel(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();

  const std::vector<int32_t> tokens = {1, 72, 101, 108, 108, 111, 256, 290};
  uint64_t file_bytes = 0, random_bytes = 0;
  const std::vector<float> from_files = Logits(o.out_dir, tokens, &file_bytes);
  const std::string spec = RandomModelSpecString(c.arch, c.dtype, 32, config, 5);
  const std::vector<float> generated = Logits(spec, tokens, &random_bytes);
  ASSERT_EQ(generated.size(), tokens.size() * 300);
  ASSERT_EQ(generated.size(), from_files.size());
  EXPECT_EQ(std::memcmp(generated.data(), from_files.data(), generated.size() * sizeof(float)), 0);
  EXPECT_EQ(random_bytes, summary->weight_bytes);
  EXPECT_EQ(file_bytes, random_bytes);

  // Another seed: other weights.
  const std::vector<float> other = Logits(RandomModelSpecString(c.arch, c.dtype, 32, config, 6), tokens, &random_bytes);
  ASSERT_EQ(other.size(), generated.size());
  EXPECT_NE(std::memcmp(other.data(), generated.data(), generated.size() * sizeof(float)), 0);
}

std::vector<Case> AllCases() {
  std::vector<Case> v;
  for (const std::string& a : SynthArchitectures()) {
    for (const char* d : {"bf16", "mlx4", "mlx8"}) v.push_back({a, d});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(All, RandomModelArchTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.arch + "_" + i.param.dtype; });

TEST(RandomModelTest, CompanionsAreSynthModelsFiles) {
  TempDir dir;
  const std::string config = WriteConfig(dir, "tiny", TinyConfig("llama"));
  SynthOptions o;
  o.arch = "llama";
  o.config = TinyConfig("llama");
  o.out_dir = dir.Sub("model");
  ASSERT_TRUE(SynthesizeModel(o).ok());
  const std::string spec = "random:llama:bf16:" + config;

  auto tok = LoadModelTokenizer(spec);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  auto file_tok = Tokenizer::FromPath(o.out_dir);
  ASSERT_TRUE(file_tok.ok());
  EXPECT_EQ((*tok)->VocabSize(), 300u);
  const std::string text = "<|im_start|>user\nthe rain in spain stays mainly<|im_end|>";
  EXPECT_EQ((*tok)->Encode(text, true), (*file_tok)->Encode(text, true));

  auto t = LoadModelChatTemplatesAt(spec, **tok);
  auto file_t = LoadModelChatTemplates(o.out_dir);
  ASSERT_TRUE(t.ok() && file_t.ok());
  EXPECT_EQ(t->default_template, file_t->default_template);
  EXPECT_EQ(t->bos_token, file_t->bos_token);
  EXPECT_EQ(t->eos_token, file_t->eos_token);
  EXPECT_EQ(t->eos_token, "<|im_end|>");

  auto gen = LoadModelGenerationConfig(spec);
  ASSERT_TRUE(gen.ok()) << gen.status().ToString();
  EXPECT_EQ(gen->eos_token_ids, (std::vector<int64_t>{299, 297}));

  CpuBackend backend(&ThreadPool::Default(), Precision::kReference);
  auto model = Model::Load(spec, &backend);
  auto file_model = Model::Load(o.out_dir, &backend);
  ASSERT_TRUE(model.ok() && file_model.ok());
  EXPECT_EQ((*model)->path(), spec);
  EXPECT_EQ(EosTokenIds(**model, tok->get()), EosTokenIds(**file_model, file_tok->get()));
  EXPECT_EQ((*model)->config().mlx_quantization.has_value(), false);
}

TEST(RandomModelTest, ParsesTheSpecFields) {
  TempDir dir;
  const std::string config = WriteConfig(dir, "llama8b", TinyConfig("llama"));
  auto r = ParseRandomModelSpec("random:llama:mlx4-g32:" + config + ":42");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.arch, "llama");
  EXPECT_EQ(r->options.dtype, SynthDType::kMlx4);
  EXPECT_EQ(r->options.group_size, 32);
  EXPECT_EQ(r->options.seed, 42u);
  EXPECT_EQ(r->options.config["hidden_size"], 64);
  EXPECT_EQ(r->name, "llama8b");

  r = ParseRandomModelSpec("random:qwen3:mlx8:" + config);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.dtype, SynthDType::kMlx8);
  EXPECT_EQ(r->options.group_size, 64);
  EXPECT_EQ(r->options.seed, 0u);
  EXPECT_EQ(RandomModelSpecString("llama", "mlx4", 32, config, 42), "random:llama:mlx4-g32:" + config + ":42");
  EXPECT_EQ(RandomModelSpecString("llama", "bf16", 32, config, 1), "random:llama:bf16:" + config + ":1");
  EXPECT_TRUE(IsRandomModelSpec("random:x"));
  EXPECT_FALSE(IsRandomModelSpec("models/random:x"));
}

TEST(RandomModelTest, BadSpecsSayWhatToFix) {
  TempDir dir;
  const std::string config = WriteConfig(dir, "tiny", TinyConfig("llama"));
  auto message = [](const std::string& spec) {
    auto r = ParseRandomModelSpec(spec);
    EXPECT_FALSE(r.ok()) << spec;
    return r.ok() ? std::string() : r.status().ToString();
  };
  EXPECT_NE(message("random:llama:bf16").find("too few fields"), std::string::npos);
  EXPECT_NE(message("random:llama:fp4:" + config).find("DTYPE 'fp4'"), std::string::npos);
  EXPECT_NE(message("random:llama:mlx4-gx:" + config).find("group size"), std::string::npos);
  EXPECT_NE(message("random:llama:bf16-g32:" + config).find("bf16 takes no group size"), std::string::npos);
  EXPECT_NE(message("random:llama:bf16:" + dir.Sub("absent.json")).find("absent.json"), std::string::npos);
  const std::string list = WriteConfig(dir, "list", OJson::array({1, 2}));
  EXPECT_NE(message("random:llama:bf16:" + list).find("expected a JSON object"), std::string::npos);

  // The config's own errors come at load, naming the spec.
  CpuBackend backend(&ThreadPool::Default(), Precision::kReference);
  auto bad_arch = Model::Load("random:gpt9:bf16:" + config, &backend);
  ASSERT_FALSE(bad_arch.ok());
  EXPECT_NE(bad_arch.status().ToString().find("gpt9"), std::string::npos);
  auto bad_group = Model::Load("random:llama:mlx4-g128:" + config, &backend);
  ASSERT_FALSE(bad_group.ok());
  EXPECT_NE(bad_group.status().ToString().find("group size"), std::string::npos);
}

TEST(RandomModelTest, AReleasedMatrixIsGeneratedAgainIdentically) {
  TempDir dir;
  const std::string config = WriteConfig(dir, "tiny", TinyConfig("llama"));
  for (const char* dtype : {"bf16", "mlx4"}) {
    SCOPED_TRACE(dtype);
    auto parts = OpenRandomModel(RandomModelSpecString("llama", dtype, 32, config, 3), &ThreadPool::Default());
    ASSERT_TRUE(parts.ok()) << parts.status().ToString();
    WeightSource& src = *parts->weights;
    const std::string m = "model.layers.1.mlp.down_proj";
    auto a = src.Matrix(m, 64, 128);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    const size_t bytes = static_cast<size_t>(a->rows) * (a->format == WeightFormat::kBF16 ? 2 * 128 : 128 * 4 / 8);
    const std::vector<char> first(static_cast<const char*>(a->data), static_cast<const char*>(a->data) + bytes);
    src.ReleaseMatrix(m);
    auto b = src.Matrix(m, 64, 128);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(std::memcmp(first.data(), b->data, bytes), 0);
    EXPECT_EQ(b->format, std::string(dtype) == "bf16" ? WeightFormat::kBF16 : WeightFormat::kMlxAffine);
    // Shapes are checked as for files.
    auto wrong = src.Matrix(m, 128, 64);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.status().ToString().find("expected shape"), std::string::npos);
  }
}

// A step asked to pick its rows' tokens (ForwardOutput::picks) returns each
// row's token in `picked`, on the CPU and on a GPU: greedy rows their
// argmax, sampled rows with top_k 1 their argmax too, and draws at u = 0 and
// just below 1 the first and the last id (no weight of a tiny model's row
// underflows). A row without a pick comes back as -1 with the logits of the
// step; a step whose rows all have one brings back no logits. Every position
// of one sequence, and the last rows of two.
TEST(RandomModelTest, StepsPickTheirRowsTokensWhereTheLogitsAre) {
  TempDir dir;
  const std::string spec = RandomModelSpecString("llama", "bf16", 32, WriteConfig(dir, "tiny", TinyConfig("llama")), 5);
  const std::vector<int32_t> a = {1, 72, 101, 108, 256, 290}, b = {3, 9, 27, 81};
  std::vector<std::string> devices = {"cpu"};
  if (CudaDeviceCount() > 0) devices.push_back("cuda");
  for (const std::string& device : devices) {
    SCOPED_TRACE(device);
    auto dev = ParseDevice(device);
    ASSERT_TRUE(dev.ok());
    auto backend = MakeBackend(*dev, Precision::kAuto, &ThreadPool::Default());
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    auto model = Model::Load(spec, backend->get());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const int64_t vocab = (*model)->vocab_size();
    auto run = [&](std::vector<std::optional<RowPick>> picks, LogitsRows rows, ForwardOutput* out) {
      auto cache = (*model)->CreateKvCache(2, 16);
      ASSERT_TRUE(cache.ok());
      KvSequence sa, sb;
      const ForwardItem items[] = {{&sa, a, rows}, {&sb, b, rows}};
      out->picks = std::move(picks);
      ASSERT_TRUE((*model)->Forward(items, **cache, out).ok());
    };
    auto pick_of = [](size_t r, bool all) -> std::optional<RowPick> {
      RowPick p;
      switch (r % 5) {
        case 0: if (!all) return std::nullopt; break;  // greedy where every row has a pick
        case 1: break;                                  // greedy
        case 2: p.temperature = 1.0, p.top_k = 1; break;
        case 3: p.temperature = 0.7, p.u = 0; break;
        case 4: p.temperature = 1.3, p.top_p = 1, p.u = 1 - 0x1.0p-53; break;
      }
      return p;
    };
    for (LogitsRows rows : {LogitsRows::kAll, LogitsRows::kLast}) {
      const size_t n = rows == LogitsRows::kAll ? a.size() + b.size() : 2u;
      ForwardOutput logits;
      run({}, rows, &logits);
      EXPECT_TRUE(logits.picked.empty());
      ASSERT_EQ(logits.logits.size(), n * static_cast<size_t>(vocab));
      for (bool all : {false, true}) {
        std::vector<std::optional<RowPick>> picks;
        for (size_t r = 0; r < n; ++r) picks.push_back(pick_of(r, all));
        ForwardOutput ids;
        run(picks, rows, &ids);
        ASSERT_EQ(ids.picked.size(), n);
        EXPECT_EQ(ids.logits.empty(), all);
        for (size_t r = 0; r < n; ++r) {
          const float* row = logits.logits.data() + r * vocab;
          const int32_t argmax = static_cast<int32_t>(cpu::FiniteArgMax(row, vocab));
          const int32_t expect[] = {all ? argmax : -1, argmax, argmax, 0, static_cast<int32_t>(vocab - 1)};
          EXPECT_EQ(ids.picked[r], expect[r % 5]) << "row " << r;
          if (!all && r % 5 == 0) {
            EXPECT_TRUE(std::equal(row, row + vocab, ids.logits.data() + r * vocab)) << "row " << r;
          }
        }
      }
    }
  }
}

// On a GPU the loader frees each generated tensor once uploaded: the model
// computes what the CPU does from the same spec (stacked MLX experts too).
TEST(RandomModelTest, CudaLoadMatchesTheCpu) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
  TempDir dir;
  const std::vector<int32_t> tokens = {1, 72, 101, 108, 256, 290};
  for (const Case& c : std::vector<Case>{{"llama", "bf16"}, {"llama", "mlx4"}, {"qwen3_moe", "mlx8"}}) {
    SCOPED_TRACE(c.arch + " " + c.dtype);
    const std::string spec =
        RandomModelSpecString(c.arch, c.dtype, 32, WriteConfig(dir, c.arch, TinyConfig(c.arch)), 9);
    uint64_t cpu_bytes = 0, gpu_bytes = 0;
    const std::vector<float> cpu = Logits(spec, tokens, &cpu_bytes);
    const std::vector<float> gpu = Logits(spec, tokens, &gpu_bytes, "cuda");
    ASSERT_EQ(gpu.size(), cpu.size());
    EXPECT_EQ(gpu_bytes, cpu_bytes);
    double worst = 0;
    for (size_t i = 0; i < cpu.size(); ++i) worst = std::max(worst, std::fabs(double{gpu[i]} - cpu[i]));
    EXPECT_LT(worst, 1e-3);
  }
}

}  // namespace
}  // namespace llmhost::random_model_test
