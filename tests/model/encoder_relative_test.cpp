// BERT with relative positions (position_embedding_type relative_key and
// relative_key_query): a small random-weight model written as transformers
// saves one, its last hidden state against a plain double-precision forward
// pass written from transformers' BertSelfAttention (distance embeddings
// indexed by i - j + max_positions - 1; q·R, and k·R for relative_key_query,
// added to q·k before the 1/sqrt(head_dim) scale; no absolute position
// embeddings added to the input). On the CPU, and on a GPU where there is one.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend/device.h"
#include "formats/safetensors_writer.h"
#include "model/encoder_model.h"
#include "model/model_test_util.h"
#include "util/file.h"

namespace llmhost::encoder_relative_test {
namespace {

constexpr int64_t kHidden = 16, kHeads = 2, kHeadDim = 8, kLayers = 2, kInter = 24, kVocab = 40, kPositions = 12;

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

class RandomRelativeBert {
 public:
  explicit RandomRelativeBert(bool key_query) : key_query_(key_query) {
    std::mt19937 rng(key_query ? 11 : 12);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    auto add = [&](const std::string& name, std::vector<int64_t> shape, float shift = 0) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      Tensor t{std::move(shape), std::vector<float>(static_cast<size_t>(n))};
      for (float& x : t.data) x = shift + u(rng);
      t_[name] = std::move(t);
    };
    add("embeddings.word_embeddings.weight", {kVocab, kHidden});
    add("embeddings.position_embeddings.weight", {kPositions, kHidden});  // present in files, never read
    add("embeddings.token_type_embeddings.weight", {2, kHidden});
    add("embeddings.LayerNorm.weight", {kHidden}, 1);
    add("embeddings.LayerNorm.bias", {kHidden});
    for (int64_t l = 0; l < kLayers; ++l) {
      const std::string b = "encoder.layer." + std::to_string(l) + ".";
      for (const char* m : {"attention.self.query", "attention.self.key", "attention.self.value",
                            "attention.output.dense"}) {
        add(b + m + ".weight", {kHidden, kHidden});
        add(b + m + ".bias", {kHidden});
      }
      add(b + "attention.self.distance_embedding.weight", {2 * kPositions - 1, kHeadDim});
      add(b + "attention.output.LayerNorm.weight", {kHidden}, 1);
      add(b + "attention.output.LayerNorm.bias", {kHidden});
      add(b + "intermediate.dense.weight", {kInter, kHidden});
      add(b + "intermediate.dense.bias", {kInter});
      add(b + "output.dense.weight", {kHidden, kInter});
      add(b + "output.dense.bias", {kHidden});
      add(b + "output.LayerNorm.weight", {kHidden}, 1);
      add(b + "output.LayerNorm.bias", {kHidden});
    }
  }

  Status Write(const std::string& dir) const {
    const std::string config = std::string(R"({"architectures": ["BertModel"], "model_type": "bert",
        "hidden_act": "gelu", "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 24, "vocab_size": 40, "max_position_embeddings": 12, "type_vocab_size": 2,
        "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": ")") +
                               (key_query_ ? "relative_key_query" : "relative_key") + "\"}";
    RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "config.json"), config));
    ASSIGN_OR_RETURN(std::string tok, ReadFileToString(testing::ModelsRoot() + "/bert-tiny-embed/tokenizer.json"));
    RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "tokenizer.json"), tok));
    std::vector<SafetensorsWriteTensor> w;
    for (const auto& [name, t] : t_) {
      w.push_back({name, DType::kF32, t.shape,
                   std::string_view(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float))});
    }
    return WriteSafetensorsFile(JoinPath(dir, "model.safetensors"), w, {});
  }

  // The last hidden state [len, hidden] of one input, in doubles.
  std::vector<double> Forward(const std::vector<int32_t>& ids) const {
    const auto n = static_cast<int64_t>(ids.size());
    std::vector<double> x(static_cast<size_t>(n * kHidden));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < kHidden; ++c) {
        x[i * kHidden + c] = W("embeddings.word_embeddings.weight")[ids[i] * kHidden + c] +
                             W("embeddings.token_type_embeddings.weight")[c];
      }
    }
    Norm(&x, "embeddings.LayerNorm");
    for (int64_t l = 0; l < kLayers; ++l) {
      const std::string b = "encoder.layer." + std::to_string(l) + ".";
      const auto q = Linear(x, b + "attention.self.query", kHidden), k = Linear(x, b + "attention.self.key", kHidden),
                 v = Linear(x, b + "attention.self.value", kHidden);
      const float* dist = W(b + "attention.self.distance_embedding.weight");
      std::vector<double> attn(x.size(), 0.0);
      for (int64_t h = 0; h < kHeads; ++h) {
        for (int64_t i = 0; i < n; ++i) {
          std::vector<double> s(static_cast<size_t>(n));
          double max = -1e300, sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            const float* r = dist + (i - j + kPositions - 1) * kHeadDim;
            double dot = 0;
            for (int64_t c = 0; c < kHeadDim; ++c) {
              const double qc = q[i * kHidden + h * kHeadDim + c], kc = k[j * kHidden + h * kHeadDim + c];
              dot += qc * kc + qc * r[c] + (key_query_ ? kc * r[c] : 0.0);
            }
            s[j] = dot / std::sqrt(static_cast<double>(kHeadDim));
            max = std::max(max, s[j]);
          }
          for (double& e : s) sum += (e = std::exp(e - max));
          for (int64_t j = 0; j < n; ++j) {
            for (int64_t c = 0; c < kHeadDim; ++c) {
              attn[i * kHidden + h * kHeadDim + c] += s[j] / sum * v[j * kHidden + h * kHeadDim + c];
            }
          }
        }
      }
      std::vector<double> o = Linear(attn, b + "attention.output.dense", kHidden);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      Norm(&x, b + "attention.output.LayerNorm");
      std::vector<double> f = Linear(x, b + "intermediate.dense", kInter);
      for (double& e : f) e = 0.5 * e * (1 + std::erf(e / std::sqrt(2.0)));
      std::vector<double> y = Linear(f, b + "output.dense", kHidden);
      for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
      Norm(&x, b + "output.LayerNorm");
    }
    return x;
  }

 private:
  const float* W(const std::string& name) const { return t_.at(name).data.data(); }

  std::vector<double> Linear(const std::vector<double>& in, const std::string& m, int64_t out_dim) const {
    const int64_t in_dim = t_.at(m + ".weight").shape[1], rows = static_cast<int64_t>(in.size()) / in_dim;
    const float *w = W(m + ".weight"), *bias = W(m + ".bias");
    std::vector<double> out(static_cast<size_t>(rows * out_dim));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < out_dim; ++o) {
        double acc = bias[o];
        for (int64_t c = 0; c < in_dim; ++c) acc += in[r * in_dim + c] * w[o * in_dim + c];
        out[r * out_dim + o] = acc;
      }
    }
    return out;
  }

  void Norm(std::vector<double>* x, const std::string& m) const {
    const float *w = W(m + ".weight"), *bias = W(m + ".bias");
    for (size_t r = 0; r < x->size() / kHidden; ++r) {
      double* row = x->data() + r * kHidden;
      double mean = 0, var = 0;
      for (int64_t c = 0; c < kHidden; ++c) mean += row[c] / kHidden;
      for (int64_t c = 0; c < kHidden; ++c) var += (row[c] - mean) * (row[c] - mean) / kHidden;
      for (int64_t c = 0; c < kHidden; ++c) row[c] = (row[c] - mean) / std::sqrt(var + 1e-12) * w[c] + bias[c];
    }
  }

  bool key_query_;
  std::map<std::string, Tensor> t_;
};

class EncoderRelativeTest : public ::testing::TestWithParam<DeviceKind> {};

TEST_P(EncoderRelativeTest, HiddenStatesMatchThePlainForwardPass) {
  SKIP_IF_NO_SHARED();
  if (GetParam() == DeviceKind::kCuda && CudaDeviceCount() == 0) GTEST_SKIP() << "no GPU";
  auto backend = MakeBackend(DeviceSpec{GetParam(), 0}, Precision::kReference, nullptr);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  for (bool key_query : {false, true}) {
    SCOPED_TRACE(key_query ? "relative_key_query" : "relative_key");
    const RandomRelativeBert bert(key_query);
    const std::string dir = testing::MakeTempDir();
    ASSERT_FALSE(dir.empty());
    ASSERT_TRUE(bert.Write(dir).ok());
    auto model = LoadEncoder(dir, backend->get());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_EQ((*model)->max_tokens(), kPositions);
    // Two inputs in one batch (the longest at the table's limit), and one
    // that is another's tokens reversed: relative positions must tell them apart.
    const std::vector<std::vector<int32_t>> inputs = {{1, 7, 9, 30, 2}, {1, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 2},
                                                      {2, 30, 9, 7, 1}};
    std::vector<EmbeddingInput> batch;
    for (const auto& ids : inputs) batch.push_back({ids, {}});
    auto states = (*model)->HiddenStates(batch);
    ASSERT_TRUE(states.ok()) << states.status().ToString();
    size_t row = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<double> ref = bert.Forward(inputs[i]);
      for (size_t t = 0; t < inputs[i].size(); ++t, ++row) {
        std::vector<float> want(ref.begin() + t * kHidden, ref.begin() + (t + 1) * kHidden);
        EXPECT_LE(testing::RowRelError(states->data() + row * kHidden, want.data(), kHidden), 1e-4)
            << "input " << i << " token " << t;
      }
    }
    // The reversed input's first token (row 17, id 2) differs from the first input's last (row 4, id 2 too).
    EXPECT_GT(testing::RowRelError(states->data() + 17 * kHidden, states->data() + 4 * kHidden, kHidden), 1e-3);
    EmbeddingInput too_long{std::vector<int32_t>(kPositions + 1, 5), {}};
    EXPECT_EQ((*model)->HiddenStates({&too_long, 1}).status().code(), StatusCode::kInvalidArgument);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, EncoderRelativeTest, ::testing::Values(DeviceKind::kCpu, DeviceKind::kCuda),
                         [](const ::testing::TestParamInfo<DeviceKind>& i) {
                           return i.param == DeviceKind::kCuda ? std::string("Cuda") : std::string("Cpu");
                         });

}  // namespace
}  // namespace llmhost::encoder_relative_test
