// EncoderWeights: an encoder's tensors bound from a WeightSource and prepared
// on a Backend (matrices as the backend's views; norms and biases as f32
// device vectors). Names: BERT / XLM-RoBERTa as transformers saves them,
// with or without the `bert.` / `roberta.` prefix.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/encoder_config.h"
#include "model/weight_source.h"
#include "util/status.h"

namespace llmhost {

struct EncoderLayerWeights {
  WeightMatrix q, k, v, attn_out, up, down;  // up: intermediate.dense, down: output.dense
  const float *q_bias, *k_bias, *v_bias, *attn_out_bias, *up_bias, *down_bias;
  const float *attn_norm_w, *attn_norm_b, *out_norm_w, *out_norm_b;
  // Relative positions only: attention.self.distance_embedding
  // [2 · max_positions - 1, head_dim]; nullptr for absolute positions.
  const float* distance = nullptr;
};

class EncoderWeights {
 public:
  // Binds every tensor `cfg` needs (the classifier head for a reranker);
  // NotFound / InvalidArgument from the source name the tensor. `source`
  // stays owned here (CPU matrices are views of its mapped files).
  static Result<std::unique_ptr<EncoderWeights>> Load(std::unique_ptr<WeightSource> source,
                                                      const EncoderConfig& cfg, Backend* backend);
  ~EncoderWeights();
  EncoderWeights(const EncoderWeights&) = delete;
  EncoderWeights& operator=(const EncoderWeights&) = delete;

  // [vocab | positions | types, hidden]; `position` is empty (rows 0) for
  // relative positions, which never read it.
  WeightMatrix word, position, token_type;
  const float *embed_norm_w = nullptr, *embed_norm_b = nullptr;
  std::vector<EncoderLayerWeights> layers;
  // Rerankers: classifier.dense [hidden, hidden], classifier.out_proj [1, hidden].
  WeightMatrix cls_dense, cls_out;
  const float *cls_dense_bias = nullptr, *cls_out_bias = nullptr;

 private:
  explicit EncoderWeights(Backend* backend) : backend_(backend) {}
  Result<WeightMatrix> Matrix(const std::string& name, int64_t rows, int64_t cols);
  Result<const float*> Vector(const std::string& name, int64_t n);

  Backend* backend_;
  std::unique_ptr<WeightSource> source_;
  std::vector<WeightMatrix> prepared_;
  std::vector<DeviceBuffer> vectors_;
};

}  // namespace llmhost
