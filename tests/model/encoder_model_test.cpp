// The encoders (model/encoder_model.h) against the transformers goldens of
// the shared fixtures: bert-tiny-embed (token ids, last_hidden_state, CLS-
// and mean-pooled normalized vectors) and xlmr-tiny-rerank (pair token ids,
// classifier scores), batch independence, and the errors of bad inputs and
// configurations.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "backend/device.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "model/encoder_config.h"
#include "model/encoder_model.h"
#include "model/encoder_pooling.h"
#include "model/model_test_util.h"
#include "util/file.h"

namespace llmhost::encoder_model_test {
namespace {

using testing::GoldenRoot;
using testing::ModelsRoot;
using testing::RowRelError;

constexpr double kTol = 1e-4;

nlohmann::json ReadJsonFile(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json();
}

std::vector<float> GoldenFloats(const SafetensorsFile& st, const std::string& name) {
  auto t = st.Tensor(name);
  EXPECT_TRUE(t.ok() && t->dtype == DType::kF32) << name;
  if (!t.ok()) return {};
  std::vector<float> v(t->n_bytes / sizeof(float));
  std::memcpy(v.data(), t->data, t->n_bytes);
  return v;
}

std::unique_ptr<EncoderModel> Load(const std::string& fixture, Backend* backend) {
  auto m = LoadEncoder(ModelsRoot() + "/" + fixture, backend);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

// Every sentence of the bert golden through `backend`: ids, each row of the
// last hidden state, the CLS vector Embed returns and the mean-pooled one,
// each within `tol`.
void CheckBertGolden(Backend* backend, double tol = kTol) {
  const nlohmann::json j = ReadJsonFile(GoldenRoot() + "/bert-tiny-embed.json");
  auto st = SafetensorsFile::Open(GoldenRoot() + "/bert-tiny-embed.safetensors");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  std::unique_ptr<EncoderModel> m = Load("bert-tiny-embed", backend);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind(), EmbeddingKind::kEmbedder);
  EXPECT_EQ(m->dim(), 64);
  EXPECT_EQ(m->max_tokens(), 512);
  EXPECT_TRUE(m->normalized());
  const int64_t H = m->dim();
  for (size_t i = 0; i < j["sentences"].size(); ++i) {
    const nlohmann::json& s = j["sentences"][i];
    const std::string key = "s" + std::to_string(i);
    SCOPED_TRACE(key + ": " + s["text"].get<std::string>());
    const EmbeddingInput in = m->Tokenize(s["text"].get<std::string>(), false);
    ASSERT_EQ(in.ids, s["input_ids"].get<std::vector<int32_t>>());
    auto states = m->HiddenStates({&in, 1});
    ASSERT_TRUE(states.ok()) << states.status().ToString();
    const std::vector<float> want = GoldenFloats(**st, key + ".last_hidden_state");
    ASSERT_EQ(states->size(), want.size());
    for (size_t r = 0; r < in.ids.size(); ++r) {
      EXPECT_LE(RowRelError(&(*states)[r * H], &want[r * H], H), tol) << "row " << r;
    }
    auto cls = m->Embed({&in, 1});
    ASSERT_TRUE(cls.ok()) << cls.status().ToString();
    const std::vector<float> want_cls = GoldenFloats(**st, key + ".cls_normalized");
    EXPECT_LE(RowRelError((*cls)[0].data(), want_cls.data(), H), tol) << "cls";
    const std::vector<float> mean =
        PoolStates(*states, static_cast<int64_t>(in.ids.size()), H, {PoolingMode::kMean, true});
    const std::vector<float> want_mean = GoldenFloats(**st, key + ".mean_normalized");
    EXPECT_LE(RowRelError(mean.data(), want_mean.data(), H), tol) << "mean";
  }
}

TEST(EncoderModelTest, BertMatchesGolden) {
  SKIP_IF_NO_SHARED();
  CpuBackend cpu(nullptr, Precision::kReference);
  CheckBertGolden(&cpu);
}

// The CPU's fast kernels (AVX2 attention tiles, the polynomial GELU, f32
// matmuls) at the golden's tolerance; serve's `auto` (bf16 prompt matmuls
// where the CPU has them) within bf16's.
TEST(EncoderModelTest, BertAtTheFastPrecisionsMatchesGolden) {
  SKIP_IF_NO_SHARED();
  CpuBackend fast(&ThreadPool::Default(), Precision::kFast);
  CheckBertGolden(&fast);
  CpuBackend automatic(&ThreadPool::Default(), Precision::kAuto);
  CheckBertGolden(&automatic, 2e-2);
}

TEST(EncoderModelTest, BertOnCudaMatchesGolden) {
  SKIP_IF_NO_SHARED();
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no GPU";
  DeviceSpec d;
  d.kind = DeviceKind::kCuda;
  auto b = MakeBackend(d, Precision::kReference, nullptr);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  CheckBertGolden(b->get());
}

void CheckBatchInvariance(Precision precision) {
  CpuBackend cpu(&ThreadPool::Default(), precision);
  std::unique_ptr<EncoderModel> m = Load("bert-tiny-embed", &cpu);
  ASSERT_TRUE(m);
  std::vector<EmbeddingInput> batch;
  for (const char* t : {"A quick brown fox jumps over the lazy dog.", "The cat sits on the mat.", "",
                        "Memory is measured before a model loads, and again after it."}) {
    batch.push_back(m->Tokenize(t, false));
  }
  auto together = m->Embed(batch);
  ASSERT_TRUE(together.ok()) << together.status().ToString();
  for (size_t i = 0; i < batch.size(); ++i) {
    auto alone = m->Embed({&batch[i], 1});
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ((*alone)[0], (*together)[i]) << "input " << i;
  }
}

// A sentence's vector alone and among others (before, after, of other
// lengths) is the same bits: every op is per row or per sequence, at the
// fast precisions too (serve's auto included).
TEST(EncoderModelTest, VectorDoesNotDependOnBatch) {
  SKIP_IF_NO_SHARED();
  for (Precision p : {Precision::kFast, Precision::kAuto}) {
    SCOPED_TRACE(PrecisionName(p));
    CheckBatchInvariance(p);
  }
}

TEST(EncoderModelTest, XlmrRerankerMatchesGolden) {
  SKIP_IF_NO_SHARED();
  const nlohmann::json j = ReadJsonFile(GoldenRoot() + "/xlmr-tiny-rerank.json");
  CpuBackend cpu(nullptr, Precision::kReference);
  std::unique_ptr<EncoderModel> m = Load("xlmr-tiny-rerank", &cpu);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind(), EmbeddingKind::kReranker);
  EXPECT_EQ(m->dim(), 0);
  EXPECT_EQ(m->max_tokens(), 512);  // 514 positions from padding_idx + 1 = 2
  std::vector<EmbeddingInput> pairs;
  std::vector<float> want;
  for (const nlohmann::json& p : j["pairs"]) {
    pairs.push_back(m->TokenizePair(j["query"].get<std::string>(), p["document"].get<std::string>()));
    EXPECT_EQ(pairs.back().ids, p["input_ids"].get<std::vector<int32_t>>()) << p["document"];
    want.push_back(p["score"].get<float>());
  }
  auto scores = m->Score(pairs);
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  ASSERT_EQ(scores->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_LE(std::fabs((*scores)[i] - want[i]), kTol * std::fabs(want[i])) << "pair " << i;
    auto alone = m->Score({&pairs[i], 1});
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ((*alone)[0], (*scores)[i]) << "pair " << i << " alone";
  }
  EXPECT_EQ(m->Embed(pairs).status().code(), StatusCode::kInvalidArgument);  // a reranker does not embed
}

// BERT pairs: token type 0 up to the first [SEP], 1 after it.
TEST(EncoderModelTest, BertPairTokenTypes) {
  SKIP_IF_NO_SHARED();
  CpuBackend cpu(nullptr, Precision::kReference);
  std::unique_ptr<EncoderModel> m = Load("bert-tiny-embed", &cpu);
  ASSERT_TRUE(m);
  const EmbeddingInput q = m->Tokenize("the cat", false);
  const EmbeddingInput p = m->TokenizePair("the cat", "a dog");
  ASSERT_EQ(p.type_ids.size(), p.ids.size());
  ASSERT_GT(p.ids.size(), q.ids.size());
  for (size_t i = 0; i < p.ids.size(); ++i) EXPECT_EQ(p.type_ids[i], i < q.ids.size() ? 0 : 1) << i;
  EXPECT_TRUE(std::equal(q.ids.begin(), q.ids.end(), p.ids.begin()));
}

TEST(EncoderModelTest, BadInputsAreInvalidArgument) {
  SKIP_IF_NO_SHARED();
  CpuBackend cpu(nullptr, Precision::kReference);
  std::unique_ptr<EncoderModel> m = Load("bert-tiny-embed", &cpu);
  ASSERT_TRUE(m);
  const EmbeddingInput good = m->Tokenize("fine", false);
  EmbeddingInput too_long;
  too_long.ids.assign(static_cast<size_t>(m->max_tokens() + 1), 100);
  EmbeddingInput bad_id{{2, 5000, 3}, {}};
  EmbeddingInput bad_type{{2, 100, 3}, {0, 2, 0}};
  const std::vector<std::vector<EmbeddingInput>> cases = {
      {}, {EmbeddingInput{}}, {good, EmbeddingInput{}}, {good, too_long}, {bad_id}, {bad_type}};
  for (const std::vector<EmbeddingInput>& inputs : cases) {
    auto r = m->Embed(inputs);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  }
  EmbeddingInput at_limit;
  at_limit.ids.assign(static_cast<size_t>(m->max_tokens()), 100);
  EXPECT_TRUE(m->Embed({&at_limit, 1}).ok());
  EXPECT_EQ(m->Score({&good, 1}).status().code(), StatusCode::kInvalidArgument);  // an embedder does not score
}

Status ParseWith(const std::string& field, const nlohmann::json& value) {
  nlohmann::json c = ReadJsonFile(ModelsRoot() + "/bert-tiny-embed/config.json");
  c[field] = value;
  auto mc = ParseModelConfig(c.dump(), "test");
  if (!mc.ok()) return mc.status();
  return ParseEncoderConfig(*mc, "dir").status();
}

TEST(EncoderModelTest, UnsupportedConfigsNameWhatIsNotSupported) {
  SKIP_IF_NO_SHARED();
  const Status rel = ParseWith("position_embedding_type", "rotary");
  EXPECT_EQ(rel.code(), StatusCode::kNotSupported);
  EXPECT_NE(rel.message().find("rotary"), std::string::npos) << rel.ToString();
  for (const char* ok : {"absolute", "relative_key", "relative_key_query"}) {
    EXPECT_TRUE(ParseWith("position_embedding_type", ok).ok()) << ok;
  }
  const Status act = ParseWith("hidden_act", "relu");
  EXPECT_EQ(act.code(), StatusCode::kNotSupported);
  EXPECT_NE(act.message().find("relu"), std::string::npos);
  EXPECT_EQ(ParseWith("architectures", {"BertForSequenceClassification"}).code(), StatusCode::kNotSupported)
      << "two labels by default is not a reranker";
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// config_sentence_transformers.json's prompts go before a query or a
// document (left out of a mean when the Pooling module says include_prompt
// false); bad files are load errors naming them.
TEST(EncoderModelTest, SentenceTransformersPromptsPrefixQueriesAndDocuments) {
  SKIP_IF_NO_SHARED();
  const std::string dir = testing::MakeTempDir();
  ASSERT_FALSE(dir.empty());
  for (const auto& e : std::filesystem::directory_iterator(ModelsRoot() + "/bert-tiny-embed")) {
    std::filesystem::copy(e.path(), dir + "/" + e.path().filename().string());
  }
  CpuBackend cpu(nullptr, Precision::kReference);
  const std::unique_ptr<EncoderModel> plain = Load("bert-tiny-embed", &cpu);
  ASSERT_TRUE(plain);
  WriteFile(dir + "/config_sentence_transformers.json",
            R"({"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null})");
  auto m = LoadEncoder(dir, &cpu);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->Tokenize("the cat", true).ids, plain->Tokenize("query: the cat", false).ids);
  EXPECT_EQ((*m)->Tokenize("the cat", false).ids, plain->Tokenize("passage: the cat", false).ids);
  EXPECT_NE((*m)->Tokenize("the cat", true).ids, plain->Tokenize("the cat", false).ids);
  // Only a default: both roles get it.
  WriteFile(dir + "/config_sentence_transformers.json",
            R"({"prompts": {"retrieval": "Represent this: "}, "default_prompt_name": "retrieval"})");
  m = LoadEncoder(dir, &cpu);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->Tokenize("x", true).ids, plain->Tokenize("Represent this: x", false).ids);
  EXPECT_EQ((*m)->Tokenize("x", false).ids, plain->Tokenize("Represent this: x", false).ids);
  // A Pooling module with include_prompt false: the mean leaves [CLS] and the prompt out.
  WriteFile(dir + "/config_sentence_transformers.json", R"({"prompts": {"query": "query: "}})");
  WriteFile(dir + "/modules.json",
            R"([{"type": "sentence_transformers.models.Transformer", "path": ""},
                {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"},
                {"type": "sentence_transformers.models.Normalize", "path": "2_Normalize"}])");
  std::filesystem::create_directory(dir + "/1_Pooling");
  WriteFile(dir + "/1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true, "include_prompt": false})");
  m = LoadEncoder(dir, &cpu);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const EmbeddingInput q = (*m)->Tokenize("the cat sat", true);
  const auto prompt_rows = static_cast<int64_t>(plain->Tokenize("query: ", false).ids.size()) - 1;  // [CLS] + prompt
  EXPECT_EQ(q.pool_from, prompt_rows);
  EXPECT_EQ((*m)->Tokenize("the cat sat", false).pool_from, 0) << "a document has no prompt here";
  auto states = (*m)->HiddenStates({&q, 1});
  auto vec = (*m)->Embed({&q, 1});
  ASSERT_TRUE(states.ok() && vec.ok());
  const int64_t len = static_cast<int64_t>(q.ids.size()), H = (*m)->dim();
  std::vector<double> mean(static_cast<size_t>(H), 0.0);
  for (int64_t t = prompt_rows; t < len; ++t) {
    for (int64_t c = 0; c < H; ++c) mean[c] += (*states)[t * H + c] / static_cast<double>(len - prompt_rows);
  }
  double norm = 0;
  for (double x : mean) norm += x * x;
  for (int64_t c = 0; c < H; ++c) EXPECT_NEAR((*vec)[0][c], mean[c] / std::sqrt(norm), 1e-6) << c;
  WriteFile(dir + "/1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true, "include_prompt": "no"})");
  EXPECT_FALSE(LoadEncoder(dir, &cpu).ok());
  std::filesystem::remove(dir + "/modules.json");
  for (const char* bad : {R"({"prompts": {"query": 3}})", R"({"prompts": {}, "default_prompt_name": "query"})",
                          R"([1])"}) {
    WriteFile(dir + "/config_sentence_transformers.json", bad);
    auto r = LoadEncoder(dir, &cpu);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("config_sentence_transformers.json"), std::string::npos)
        << r.status().ToString();
  }
}

TEST(EncoderModelTest, IsEncoderModelDir) {
  SKIP_IF_NO_SHARED();
  EXPECT_TRUE(IsEncoderModelDir(ModelsRoot() + "/bert-tiny-embed"));
  EXPECT_TRUE(IsEncoderModelDir(ModelsRoot() + "/xlmr-tiny-rerank"));
  EXPECT_FALSE(IsEncoderModelDir(ModelsRoot() + "/qwen3-tiny"));
  EXPECT_FALSE(IsEncoderModelDir("/nonexistent"));
}

TEST(EncoderModelTest, SentenceTransformersPooling) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_FALSE(dir.empty());
  // No pooling files: mean, normalized.
  auto none = LoadEncoderPooling(dir);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->mode, PoolingMode::kMean);
  EXPECT_TRUE(none->normalize);
  // modules.json: Pooling (last token) without Normalize.
  ASSERT_EQ(::mkdir((dir + "/1_Pooling").c_str(), 0755), 0);
  WriteFile(dir + "/modules.json",
            R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
            R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])");
  WriteFile(dir + "/1_Pooling/config.json",
            R"({"word_embedding_dimension":4,"pooling_mode_cls_token":false,"pooling_mode_lasttoken":true})");
  auto last = LoadEncoderPooling(dir);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->mode, PoolingMode::kLastToken);
  EXPECT_FALSE(last->normalize);
  // With Normalize; then a mode this server does not run.
  WriteFile(dir + "/modules.json",
            R"([{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"},)"
            R"({"path":"2_Normalize","type":"sentence_transformers.models.Normalize"}])");
  auto normed = LoadEncoderPooling(dir);
  ASSERT_TRUE(normed.ok());
  EXPECT_TRUE(normed->normalize);
  WriteFile(dir + "/1_Pooling/config.json", R"({"pooling_mode_max_tokens":true})");
  auto max = LoadEncoderPooling(dir);
  EXPECT_EQ(max.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(max.status().message().find("pooling_mode_max_tokens"), std::string::npos);
  WriteFile(dir + "/modules.json", R"([{"path":"2_Dense","type":"sentence_transformers.models.Dense"}])");
  auto dense = LoadEncoderPooling(dir);
  EXPECT_EQ(dense.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(dense.status().message().find("Dense"), std::string::npos);
  // Pooling itself: two tokens of 2 values.
  const std::vector<float> states = {3, 4, 1, 0};
  EXPECT_EQ(PoolStates(states, 2, 2, {PoolingMode::kCls, false}), (std::vector<float>{3, 4}));
  EXPECT_EQ(PoolStates(states, 2, 2, {PoolingMode::kLastToken, false}), (std::vector<float>{1, 0}));
  EXPECT_EQ(PoolStates(states, 2, 2, {PoolingMode::kMean, false}), (std::vector<float>{2, 2}));
  const std::vector<float> unit = PoolStates(states, 2, 2, {PoolingMode::kCls, true});
  EXPECT_NEAR(unit[0], 0.6f, 1e-7);
  EXPECT_NEAR(unit[1], 0.8f, 1e-7);
}

}  // namespace
}  // namespace llmhost::encoder_model_test
