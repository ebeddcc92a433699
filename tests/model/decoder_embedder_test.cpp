// The decoder embedder / reranker on qwen3-tiny against the transformers
// golden: the hidden rows Forward exposes, times the model's output head,
// are the golden logits (so the pooled state is the one transformers
// computes); batching and step size do not change a vector; a reranker's
// score is the softmax of its "yes"/"no" logits computed the normal way.
// Each test runs on the CPU and, where there is one, on a GPU (f32 reference
// path on both; the GPU sums in other orders, hence its looser tolerance for
// a vector computed in another batch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/device.h"
#include "model/decoder_embedder.h"
#include "model/model.h"
#include "model/model_test_util.h"
#include "model/random_model.h"
#include "util/thread_pool.h"

namespace llmhost::decoder_embedder_test {
namespace {

constexpr const char* kFixture = "qwen3-tiny";

class DecoderEmbedderTest : public ::testing::TestWithParam<DeviceKind> {
 protected:
  void SetUp() override {
    SKIP_IF_NO_SHARED();
    if (GetParam() == DeviceKind::kCuda && CudaDeviceCount() == 0) {
      GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
    }
    ASSERT_TRUE(testing::LoadGolden(kFixture, &golden_));
    auto backend = MakeBackend(DeviceSpec{GetParam(), 0}, Precision::kReference, &ThreadPool::Default());
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    backend_ = std::move(*backend);
    auto model = Model::Load(golden_.model_path, backend_.get());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = std::move(*model);
    auto tok = LoadModelTokenizer(golden_.model_path);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tokenizer_ = std::move(*tok);
  }

  std::unique_ptr<DecoderEmbedder> Make(EmbeddingKind kind, int64_t step_tokens = 2048) {
    DecoderEmbedderOptions o;
    o.kind = kind;
    o.step_tokens = step_tokens;
    o.kv_dtype = DType::kF32;
    o.instruction = kind == EmbeddingKind::kEmbedder ? "Find the answer" : "";
    auto e = DecoderEmbedder::Create(model_.get(), tokenizer_.get(), o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(*e) : nullptr;
  }

  // The output head [vocab, hidden] as f32, from the model's file.
  std::vector<float> HeadWeights(int64_t* vocab, int64_t* hidden) {
    auto st = SafetensorsFile::Open(golden_.model_path + "/model.safetensors");
    EXPECT_TRUE(st.ok());
    if (!st.ok()) return {};
    auto t = (*st)->Tensor("lm_head.weight");
    EXPECT_TRUE(t.ok());
    if (!t.ok()) return {};
    *vocab = t->shape[0];
    *hidden = t->shape[1];
    std::vector<float> w(static_cast<size_t>(*vocab * *hidden));
    EXPECT_EQ(t->dtype, DType::kBF16);
    for (size_t i = 0; i < w.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, t->data + 2 * i, sizeof bits);
      const uint32_t f = static_cast<uint32_t>(bits) << 16;  // bf16: the high half of an f32
      std::memcpy(&w[i], &f, sizeof(float));
    }
    return w;
  }

  // How far one vector may move between batches or step sizes.
  double BatchTolerance() const { return GetParam() == DeviceKind::kCuda ? 1e-4 : 1e-5; }

  testing::Golden golden_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_P(DecoderEmbedderTest, HiddenRowTimesHeadIsTheGoldenLastLogits) {
  int64_t vocab = 0, hidden = 0;
  const std::vector<float> head = HeadWeights(&vocab, &hidden);
  ASSERT_EQ(hidden, model_->spec().hidden);
  for (const testing::GoldenPrompt& p : golden_.prompts) {
    auto cache = model_->CreateKvCache(static_cast<int64_t>(p.input_ids.size()) / 16 + 2, 16);
    ASSERT_TRUE(cache.ok());
    KvSequence seq;
    ForwardItem item{&seq, p.input_ids, LogitsRows::kLast};
    ForwardOutput out;
    out.want_hidden = true;
    out.want_logits = false;
    ASSERT_TRUE(model_->Forward({&item, 1}, **cache, &out).ok());
    EXPECT_TRUE(out.logits.empty()) << "the head was skipped";
    ASSERT_EQ(out.hidden.size(), static_cast<size_t>(hidden));
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (int64_t v = 0; v < vocab; ++v) {
      double sum = 0;
      for (int64_t j = 0; j < hidden; ++j) sum += static_cast<double>(head[v * hidden + j]) * out.HiddenRow(0, 0)[j];
      logits[static_cast<size_t>(v)] = static_cast<float>(sum);
    }
    const int64_t rows = static_cast<int64_t>(p.logits.size()) / p.vocab;
    const float* ref = p.logits.data() + (rows - 1) * p.vocab;
    EXPECT_LE(testing::RowRelError(logits.data(), ref, vocab), 1e-4) << p.name;
  }
}

TEST_P(DecoderEmbedderTest, HiddenRowsComeWithTheLogitsWhenBothAreAsked) {
  const testing::GoldenPrompt& p = golden_.prompts.front();
  auto cache = model_->CreateKvCache(static_cast<int64_t>(p.input_ids.size()) / 16 + 2, 16);
  ASSERT_TRUE(cache.ok());
  KvSequence seq;
  ForwardItem item{&seq, p.input_ids, LogitsRows::kAll};
  ForwardOutput out;
  out.want_hidden = true;
  ASSERT_TRUE(model_->Forward({&item, 1}, **cache, &out).ok());
  EXPECT_EQ(out.hidden.size(), p.input_ids.size() * static_cast<size_t>(model_->spec().hidden));
  EXPECT_EQ(out.logits.size(), p.input_ids.size() * static_cast<size_t>(out.vocab));
}

TEST_P(DecoderEmbedderTest, EmbeddingIsTheNormalizedLastHiddenRowAloneOrBatched) {
  auto embedder = Make(EmbeddingKind::kEmbedder);
  ASSERT_TRUE(embedder);
  EXPECT_EQ(embedder->dim(), model_->spec().hidden);
  EXPECT_EQ(embedder->max_tokens(), 4096);
  const EmbeddingInput a = embedder->Tokenize("The capital of France is Paris.", false);
  const EmbeddingInput b = embedder->Tokenize("What is the capital of France?", true);
  const EmbeddingInput c = embedder->Tokenize("def add(a, b):\n    return a + b", false);
  EXPECT_GT(b.ids.size(), embedder->Tokenize("What is the capital of France?", false).ids.size())
      << "a query carries the instruction";

  auto alone = embedder->Embed({&a, 1});
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  // The reference: the normed last hidden row of a plain forward pass.
  auto cache = model_->CreateKvCache(4, 64);
  ASSERT_TRUE(cache.ok());
  KvSequence seq;
  ForwardItem item{&seq, a.ids, LogitsRows::kLast};
  ForwardOutput out;
  out.want_hidden = true;
  ASSERT_TRUE(model_->Forward({&item, 1}, **cache, &out).ok());
  std::vector<float> ref(out.hidden.begin(), out.hidden.end());
  L2Normalize(ref);
  ASSERT_EQ((*alone)[0].size(), ref.size());
  double norm = 0;
  for (size_t j = 0; j < ref.size(); ++j) {
    EXPECT_NEAR((*alone)[0][j], ref[j], BatchTolerance() / 10);
    norm += static_cast<double>((*alone)[0][j]) * (*alone)[0][j];
  }
  EXPECT_NEAR(norm, 1.0, 1e-5);

  // In a batch, and in small steps (inputs split across forward passes).
  const EmbeddingInput batch[] = {b, a, c};
  for (int64_t step : {int64_t{2048}, int64_t{5}}) {
    auto e = Make(EmbeddingKind::kEmbedder, step);
    ASSERT_TRUE(e);
    auto got = e->Embed(batch);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), 3u);
    for (size_t j = 0; j < ref.size(); ++j) EXPECT_NEAR((*got)[1][j], ref[j], BatchTolerance()) << "step " << step;
    EXPECT_NE((*got)[0], (*got)[1]);
  }
}

TEST_P(DecoderEmbedderTest, RejectsEmptyAndOverlongInputsByIndex) {
  auto embedder = Make(EmbeddingKind::kEmbedder);
  ASSERT_TRUE(embedder);
  const EmbeddingInput ok = embedder->Tokenize("hello", false);
  EmbeddingInput empty;
  EmbeddingInput longer;
  longer.ids.assign(4097, 5);
  const EmbeddingInput with_empty[] = {ok, empty};
  auto r = embedder->Embed(with_empty);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("input 1"), std::string::npos) << r.status().message();
  const EmbeddingInput with_long[] = {longer};
  r = embedder->Embed(with_long);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 0"), std::string::npos) << r.status().message();
  EXPECT_FALSE(embedder->Score({&ok, 1}).ok()) << "an embedder does not score";
}

TEST_P(DecoderEmbedderTest, RerankScoreIsTheSoftmaxOfYesAndNo) {
  auto reranker = Make(EmbeddingKind::kReranker);
  ASSERT_TRUE(reranker);
  EXPECT_EQ(reranker->dim(), 0);
  EXPECT_EQ(reranker->no_token(), *tokenizer_->TokenToId("no"));
  EXPECT_NE(reranker->yes_token(), reranker->no_token());
  const EmbeddingInput pairs[] = {reranker->TokenizePair("capital of France?", "Paris is the capital of France."),
                                  reranker->TokenizePair("capital of France?", "Bananas are yellow.")};
  auto scores = reranker->Score(pairs);
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  ASSERT_EQ(scores->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    auto cache = model_->CreateKvCache(8, 64);
    ASSERT_TRUE(cache.ok());
    KvSequence seq;
    ForwardItem item{&seq, pairs[i].ids, LogitsRows::kLast};
    ForwardOutput out;
    ASSERT_TRUE(model_->Forward({&item, 1}, **cache, &out).ok());
    const double yes = out.Row(0, 0)[reranker->yes_token()], no = out.Row(0, 0)[reranker->no_token()];
    const double p_yes = std::exp(yes) / (std::exp(yes) + std::exp(no));
    EXPECT_GT((*scores)[i], 0.0f);
    EXPECT_LT((*scores)[i], 1.0f);
    EXPECT_NEAR((*scores)[i], p_yes, BatchTolerance() / 10) << "pair " << i;
  }
  EXPECT_FALSE(reranker->Embed({pairs, 1}).ok()) << "a reranker does not embed";
}

INSTANTIATE_TEST_SUITE_P(Devices, DecoderEmbedderTest, ::testing::Values(DeviceKind::kCpu, DeviceKind::kCuda),
                         [](const ::testing::TestParamInfo<DeviceKind>& i) {
                           return i.param == DeviceKind::kCuda ? std::string("Cuda") : std::string("Cpu");
                         });

}  // namespace
}  // namespace llmhost::decoder_embedder_test
