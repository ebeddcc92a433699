// synth-model's generator: a tiny model of every architecture and dtype
// loads with Model::Load and runs; its weights have the promised spread
// (dequantized by hand from the file, as MLX defines affine quantization);
// the tokenizer round-trips text and has exactly vocab_size ids; the ChatML
// template renders the standard ChatML text; the bytes depend only on the
// seed; bad options give clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul.h"
#include "chat/chat_template.h"
#include "formats/safetensors.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/synth_model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost::synth_model_test {
namespace {

using OJson = nlohmann::ordered_json;

constexpr int64_t kVocab = 300;

OJson TinyConfig(const std::string& arch) {
  OJson c = {{"hidden_size", 64},       {"num_hidden_layers", 2}, {"num_attention_heads", 4},
             {"num_key_value_heads", 2}, {"intermediate_size", 128}, {"vocab_size", kVocab}};
  if (arch == "qwen3_moe") {
    c["num_experts"] = 4;
    c["num_experts_per_tok"] = 2;
    c["moe_intermediate_size"] = 64;
  }
  if (arch == "mistral" || arch == "gemma3_text") c["sliding_window"] = 4;
  return c;
}

using TempDir = testing::ScopedTempDir;

SynthOptions Options(const std::string& arch, SynthDType dtype, const std::string& out) {
  SynthOptions o;
  o.arch = arch;
  o.config = TinyConfig(arch);
  o.dtype = dtype;
  o.group_size = 32;
  o.seed = 7;
  o.out_dir = out;
  return o;
}

const char* DTypeLabel(SynthDType d) {
  return d == SynthDType::kBF16 ? "bf16" : d == SynthDType::kMlx4 ? "mlx4" : "mlx8";
}

struct Case {
  std::string arch;
  SynthDType dtype;
};

class SynthArchTest : public ::testing::TestWithParam<Case> {};

TEST_P(SynthArchTest, LoadsAndRunsWithFiniteVaryingLogits) {
  const Case& c = GetParam();
  TempDir dir;
  const std::string out = dir.Sub("model");
  auto summary = SynthesizeModel(Options(c.arch, c.dtype, out));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();

  for (Precision p : {Precision::kReference, Precision::kFast}) {
    CpuBackend backend(&ThreadPool::Default(), p);
    auto model = Model::Load(out, &backend);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_EQ((*model)->spec().arch, c.arch);
    EXPECT_EQ((*model)->vocab_size(), kVocab);
    EXPECT_EQ((*model)->weight_bytes(), summary->weight_bytes);

    auto cache = (*model)->CreateKvCache(1, 16);
    ASSERT_TRUE(cache.ok());
    KvSequence seq;
    const std::vector<int32_t> tokens = {1, 72, 101, 108, 108, 111, 256, 290};
    ForwardItem item{&seq, tokens, LogitsRows::kAll};
    ForwardOutput fo;
    ASSERT_TRUE((*model)->Forward({&item, 1}, **cache, &fo).ok());
    ASSERT_EQ(fo.n_rows[0], static_cast<int64_t>(tokens.size()));
    for (int64_t j = 0; j < fo.n_rows[0]; ++j) {
      const float* row = fo.Row(0, j);
      double sum = 0, sq = 0;
      for (int64_t v = 0; v < kVocab; ++v) {
        ASSERT_TRUE(std::isfinite(row[v])) << "position " << j << " id " << v;
        sum += row[v];
        sq += static_cast<double>(row[v]) * row[v];
      }
      const double mean = sum / kVocab, var = sq / kVocab - mean * mean;
      EXPECT_GT(std::sqrt(std::max(var, 0.0)), 1e-3) << "position " << j << ": constant logits";
    }
    // Different positions see different contexts: different rows.
    EXPECT_NE(std::memcmp(fo.Row(0, 0), fo.Row(0, 7), kVocab * sizeof(float)), 0);
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> v;
  for (const std::string& a : SynthArchitectures()) {
    for (SynthDType d : {SynthDType::kBF16, SynthDType::kMlx4, SynthDType::kMlx8}) v.push_back({a, d});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(All, SynthArchTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return i.param.arch + "_" + DTypeLabel(i.param.dtype);
                         });

TEST(SynthModelTest, WritesEveryRequiredArchitecture) {
  for (const char* a : {"llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "phi3", "gemma3_text"}) {
    EXPECT_NE(std::find(SynthArchitectures().begin(), SynthArchitectures().end(), a),
              SynthArchitectures().end())
        << a;
  }
}

// Values of one matrix as the file stores them, dequantized by MLX's
// definition (w = scale * q + bias, q the bits of element j at bit j * bits
// of the little-endian U32 row).
std::vector<float> MatrixValues(const SafetensorsFile& f, const std::string& module, int bits) {
  std::vector<float> out;
  auto w = f.Tensor(module + ".weight");
  if (!w.ok()) return out;
  if (w->dtype == DType::kBF16) {
    for (int64_t i = 0; i < w->NumElements(); ++i) {
      uint16_t h;
      std::memcpy(&h, w->data + 2 * i, 2);
      out.push_back(Bf16ToF32(h));
    }
    return out;
  }
  auto sc = f.Tensor(module + ".scales");
  auto bi = f.Tensor(module + ".biases");
  if (!sc.ok() || !bi.ok()) return out;
  const int64_t rows = w->shape[0], cols = w->shape[1] * 32 / bits, groups = sc->shape[1];
  const int64_t group = cols / groups;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t word;
      std::memcpy(&word, w->data + 4 * (r * w->shape[1] + c * bits / 32), 4);
      const uint32_t q = (word >> ((c * bits) % 32)) & ((1u << bits) - 1);
      uint16_t s, b;
      std::memcpy(&s, sc->data + 2 * (r * groups + c / group), 2);
      std::memcpy(&b, bi->data + 2 * (r * groups + c / group), 2);
      out.push_back(Bf16ToF32(s) * static_cast<float>(q) + Bf16ToF32(b));
    }
  }
  return out;
}

TEST(SynthModelTest, WeightsHaveTheDocumentedSpreadAndNormsAreOne) {
  for (SynthDType d : {SynthDType::kBF16, SynthDType::kMlx4, SynthDType::kMlx8}) {
    SCOPED_TRACE(DTypeLabel(d));
    TempDir dir;
    ASSERT_TRUE(SynthesizeModel(Options("llama", d, dir.path())).ok());
    auto f = SafetensorsFile::Open(dir.Sub("model.safetensors"));
    ASSERT_TRUE(f.ok());
    const int bits = d == SynthDType::kMlx4 ? 4 : 8;
    for (const char* m : {"model.layers.1.mlp.down_proj", "model.embed_tokens", "lm_head"}) {
      SCOPED_TRACE(m);
      const std::vector<float> v = MatrixValues(**f, m, bits);
      ASSERT_GT(v.size(), 1000u);
      double sum = 0, sq = 0;
      int64_t zeros = 0;
      for (float x : v) {
        sum += x;
        sq += static_cast<double>(x) * x;
        zeros += x == 0;
      }
      const double n = static_cast<double>(v.size());
      EXPECT_LT(std::fabs(sum / n), 0.002);
      EXPECT_NEAR(std::sqrt(sq / n), 0.02, 0.004);
      EXPECT_LT(zeros, static_cast<int64_t>(v.size() / 10));
    }
    auto norm = (*f)->Tensor("model.layers.0.input_layernorm.weight");
    ASSERT_TRUE(norm.ok());
    ASSERT_EQ(norm->dtype, DType::kBF16);
    uint16_t h;
    std::memcpy(&h, norm->data, 2);
    EXPECT_EQ(Bf16ToF32(h), 1.0f);
  }
}

TEST(SynthModelTest, MlxLayoutAndConfig) {
  TempDir dir;
  ASSERT_TRUE(SynthesizeModel(Options("qwen3_moe", SynthDType::kMlx4, dir.path())).ok());
  auto f = SafetensorsFile::Open(dir.Sub("model.safetensors"));
  ASSERT_TRUE(f.ok());
  auto w = (*f)->Tensor("model.layers.0.mlp.switch_mlp.gate_proj.weight");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->dtype, DType::kU32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{4, 64, 64 * 4 / 32}));
  auto s = (*f)->Tensor("model.layers.0.mlp.switch_mlp.gate_proj.scales");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->dtype, DType::kBF16);
  EXPECT_EQ(s->shape, (std::vector<int64_t>{4, 64, 2}));
  auto text = ReadFileToString(dir.Sub("config.json"));
  ASSERT_TRUE(text.ok());
  const nlohmann::json c = nlohmann::json::parse(*text);
  EXPECT_EQ(c["quantization"]["bits"], 4);
  EXPECT_EQ(c["quantization"]["group_size"], 32);
  EXPECT_EQ(c["model_type"], "qwen3_moe");
  EXPECT_EQ(c["architectures"][0], "Qwen3MoeForCausalLM");
  EXPECT_EQ(c["eos_token_id"], kVocab - 1);
  EXPECT_TRUE(c.contains("rms_norm_eps") && c.contains("rope_theta") &&
              c.contains("max_position_embeddings") && c.contains("torch_dtype"));
}

TEST(SynthModelTest, TokenizerRoundTripsAndFillsTheVocabulary) {
  TempDir dir;
  SynthOptions o = Options("qwen3", SynthDType::kBF16, dir.path());
  o.config["vocab_size"] = 4000;
  ASSERT_TRUE(SynthesizeModel(o).ok());
  auto tok = Tokenizer::FromPath(dir.path());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->VocabSize(), 4000u);
  for (int64_t id = 0; id < 4000; ++id) {
    ASSERT_TRUE((*tok)->IdToToken(static_cast<TokenId>(id)).has_value()) << id;
  }
  const std::string text =
      "Hello world, the quick brown fox jumps over the lazy dog!\n\tTabs  and 123 numbers; "
      "accents: café, naïve; CJK 漢字; emoji 🙂; control \x01 bytes.";
  const std::vector<TokenId> ids = (*tok)->Encode(text, /*add_special=*/true);
  EXPECT_EQ((*tok)->Decode(ids, /*skip_special=*/false), text);
  EXPECT_LT(ids.size(), text.size() * 3 / 4);  // merges apply
  EXPECT_TRUE(std::any_of(ids.begin(), ids.end(), [](TokenId id) { return id >= 256; }));
  // Special tokens are the last three ids and are matched in text.
  const std::vector<TokenId> sp = (*tok)->Encode("<|im_start|>user<|im_end|><|endoftext|>", false);
  ASSERT_GE(sp.size(), 3u);
  EXPECT_EQ(sp.front(), 3998);
  EXPECT_EQ(sp[sp.size() - 2], 3999);
  EXPECT_EQ(sp.back(), 3997);
  EXPECT_TRUE((*tok)->IsSpecial(3999));
}

TEST(SynthModelTest, ChatTemplateRendersChatMl) {
  TempDir dir;
  ASSERT_TRUE(SynthesizeModel(Options("llama", SynthDType::kBF16, dir.path())).ok());
  auto t = LoadModelChatTemplates(dir.path());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->eos_token, "<|im_end|>");
  auto tmpl = ChatTemplate::Parse(t->default_template);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  ChatTemplateInput in;
  in.messages = OJson::array({{{"role", "system"}, {"content", "Be brief."}},
                              {{"role", "user"}, {"content", "Hi"}},
                              {{"role", "assistant"}, {"content", "Hello."}},
                              {{"role", "user"}, {"content", "Bye"}}});
  in.add_generation_prompt = true;
  auto text = tmpl->Render(in);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
  // Generation stops at <|im_end|> (and <|endoftext|>).
  CpuBackend backend;
  auto model = Model::Load(dir.path(), &backend);
  ASSERT_TRUE(model.ok());
  auto tok = Tokenizer::FromPath(dir.path());
  ASSERT_TRUE(tok.ok());
  const std::vector<int32_t> eos = EosTokenIds(**model, tok->get());
  EXPECT_NE(std::find(eos.begin(), eos.end(), kVocab - 1), eos.end());
  EXPECT_NE(std::find(eos.begin(), eos.end(), kVocab - 3), eos.end());
}

std::string FileBytes(const std::string& path) {
  auto s = ReadFileToString(path);
  return s.ok() ? *s : std::string();
}

TEST(SynthModelTest, SameSeedSameBytesWhateverTheThreads) {
  TempDir dir;
  ThreadPool pool(3);
  SynthOptions a = Options("qwen2", SynthDType::kBF16, dir.Sub("a"));
  // Large enough for several random-stream blocks and write chunks.
  a.config["vocab_size"] = 70000;
  SynthOptions b = a, c = a;
  b.out_dir = dir.Sub("b");
  b.pool = &pool;
  c.out_dir = dir.Sub("c");
  c.seed = 8;
  ASSERT_TRUE(SynthesizeModel(a).ok());
  ASSERT_TRUE(SynthesizeModel(b).ok());
  ASSERT_TRUE(SynthesizeModel(c).ok());
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                        "generation_config.json"}) {
    const std::string x = FileBytes(JoinPath(a.out_dir, f));
    EXPECT_FALSE(x.empty()) << f;
    EXPECT_EQ(x, FileBytes(JoinPath(b.out_dir, f))) << f;
  }
  EXPECT_NE(FileBytes(JoinPath(a.out_dir, "model.safetensors")),
            FileBytes(JoinPath(c.out_dir, "model.safetensors")));
  EXPECT_EQ(FileBytes(JoinPath(a.out_dir, "config.json")), FileBytes(JoinPath(c.out_dir, "config.json")));
}

TEST(SynthModelTest, GivenConfigKeysWin) {
  TempDir dir;
  SynthOptions o = Options("llama", SynthDType::kBF16, dir.path());
  o.config["rope_theta"] = 10000.0;
  o.config["tie_word_embeddings"] = true;
  o.config["max_position_embeddings"] = 1024;
  ASSERT_TRUE(SynthesizeModel(o).ok());
  CpuBackend backend;
  auto model = Model::Load(dir.path(), &backend);
  ASSERT_TRUE(model.ok());
  EXPECT_TRUE((*model)->spec().tie_embeddings);
  EXPECT_EQ((*model)->spec().max_position_embeddings, 1024);
  EXPECT_EQ((*model)->spec().ropes[0].theta, 10000.0);
  auto f = SafetensorsFile::Open(dir.Sub("model.safetensors"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->Find("lm_head.weight"), nullptr);
}

void ExpectError(SynthOptions o, const std::string& needle) {
  auto r = SynthesizeModel(o);
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_NE(r.status().ToString().find(needle), std::string::npos) << r.status().ToString();
}

TEST(SynthModelTest, BadInputsGiveClearErrors) {
  TempDir dir;
  const std::string out = dir.Sub("m");
  SynthOptions o = Options("llama", SynthDType::kMlx4, out);
  {
    SynthOptions x = o;
    x.arch = "gpt9";
    ExpectError(x, "unknown architecture 'gpt9'");
  }
  {
    SynthOptions x = o;
    x.config = OJson::array({1, 2});
    ExpectError(x, "expected a JSON object");
  }
  {
    SynthOptions x = o;
    x.config.erase("hidden_size");
    ExpectError(x, "'hidden_size' is missing");
  }
  {
    SynthOptions x = o;
    x.config["hidden_size"] = "big";
    ExpectError(x, "hidden_size");
  }
  {
    SynthOptions x = o;
    x.config["vocab_size"] = 100;
    ExpectError(x, "vocab_size 100 is too small");
  }
  {
    SynthOptions x = o;
    x.config["intermediate_size"] = 100;
    ExpectError(x, "intermediate_size 100 is not a multiple of the group size 32");
  }
  {
    SynthOptions x = o;
    x.config.erase("intermediate_size");
    ExpectError(x, "'intermediate_size' is missing");
  }
  {
    SynthOptions x = o;
    x.group_size = 48;
    ExpectError(x, "--group-size: 48");
  }
  {
    SynthOptions x = o;
    x.config["model_type"] = "qwen3";
    ExpectError(x, "differs from --arch 'llama'");
  }
  {
    SynthOptions x = o;
    x.config["num_key_value_heads"] = 3;
    ExpectError(x, "num_key_value_heads");
  }
  {
    SynthOptions x = o;
    x.config["num_hidden_layers"] = 1000000;
    ExpectError(x, "exceeds synth-model's limit");
  }
  {
    SynthOptions x = Options("qwen3_moe", SynthDType::kBF16, out);
    x.config.erase("num_experts");
    ExpectError(x, "num_experts");
  }
  EXPECT_FALSE(FileExists(out));  // nothing written on a bad config
  auto d = ParseSynthDType("fp4");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().ToString().find("expected bf16, mlx4, mlx8, fp8, gptq4, awq4 or w4a16"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::synth_model_test
