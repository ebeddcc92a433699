#include "model/encoder_weights.h"

namespace llmhost {
namespace {

// "", "bert." or "roberta.": whichever names the word embeddings.
std::string NamePrefix(const WeightSource& src) {
  for (const char* p : {"bert.", "roberta."}) {
    if (src.HasMatrix(std::string(p) + "embeddings.word_embeddings")) return p;
  }
  return "";
}

}  // namespace

EncoderWeights::~EncoderWeights() {
  for (const WeightMatrix& w : prepared_) backend_->ReleaseWeight(w);
  for (DeviceBuffer& b : vectors_) backend_->Free(b);
}

Result<WeightMatrix> EncoderWeights::Matrix(const std::string& name, int64_t rows, int64_t cols) {
  ASSIGN_OR_RETURN(WeightMatrix host, source_->Matrix(name, rows, cols));
  RETURN_IF_ERROR(backend_->CheckWeight(host));
  ASSIGN_OR_RETURN(WeightMatrix w, backend_->PrepareWeight(host));
  prepared_.push_back(w);
  return w;
}

Result<const float*> EncoderWeights::Vector(const std::string& name, int64_t n) {
  ASSIGN_OR_RETURN(std::vector<float> host, source_->Vector(name, n));
  ASSIGN_OR_RETURN(DeviceBuffer buf, backend_->Allocate(host.size() * sizeof(float), name));
  vectors_.push_back(buf);
  backend_->CopyToDevice(buf, 0, host.data(), host.size() * sizeof(float));
  RETURN_IF_ERROR(backend_->Synchronize());  // `host` goes out of scope
  return buf.as<float>();
}

Result<std::unique_ptr<EncoderWeights>> EncoderWeights::Load(std::unique_ptr<WeightSource> source,
                                                             const EncoderConfig& cfg, Backend* backend) {
  std::unique_ptr<EncoderWeights> w(new EncoderWeights(backend));
  w->source_ = std::move(source);
  const std::string p = NamePrefix(*w->source_);
  const int64_t H = cfg.hidden, I = cfg.inter;
  ASSIGN_OR_RETURN(w->word, w->Matrix(p + "embeddings.word_embeddings", cfg.vocab, H));
  const bool relative = cfg.positions != EncoderPositions::kAbsolute;
  if (!relative) {
    ASSIGN_OR_RETURN(w->position, w->Matrix(p + "embeddings.position_embeddings", cfg.max_positions, H));
  }
  ASSIGN_OR_RETURN(w->token_type, w->Matrix(p + "embeddings.token_type_embeddings", cfg.type_vocab, H));
  ASSIGN_OR_RETURN(w->embed_norm_w, w->Vector(p + "embeddings.LayerNorm.weight", H));
  ASSIGN_OR_RETURN(w->embed_norm_b, w->Vector(p + "embeddings.LayerNorm.bias", H));
  for (int64_t l = 0; l < cfg.layers; ++l) {
    const std::string b = p + "encoder.layer." + std::to_string(l) + ".";
    EncoderLayerWeights lw;
    ASSIGN_OR_RETURN(lw.q, w->Matrix(b + "attention.self.query", H, H));
    ASSIGN_OR_RETURN(lw.k, w->Matrix(b + "attention.self.key", H, H));
    ASSIGN_OR_RETURN(lw.v, w->Matrix(b + "attention.self.value", H, H));
    ASSIGN_OR_RETURN(lw.attn_out, w->Matrix(b + "attention.output.dense", H, H));
    ASSIGN_OR_RETURN(lw.up, w->Matrix(b + "intermediate.dense", I, H));
    ASSIGN_OR_RETURN(lw.down, w->Matrix(b + "output.dense", H, I));
    ASSIGN_OR_RETURN(lw.q_bias, w->Vector(b + "attention.self.query.bias", H));
    ASSIGN_OR_RETURN(lw.k_bias, w->Vector(b + "attention.self.key.bias", H));
    ASSIGN_OR_RETURN(lw.v_bias, w->Vector(b + "attention.self.value.bias", H));
    ASSIGN_OR_RETURN(lw.attn_out_bias, w->Vector(b + "attention.output.dense.bias", H));
    ASSIGN_OR_RETURN(lw.attn_norm_w, w->Vector(b + "attention.output.LayerNorm.weight", H));
    ASSIGN_OR_RETURN(lw.attn_norm_b, w->Vector(b + "attention.output.LayerNorm.bias", H));
    ASSIGN_OR_RETURN(lw.up_bias, w->Vector(b + "intermediate.dense.bias", I));
    ASSIGN_OR_RETURN(lw.down_bias, w->Vector(b + "output.dense.bias", H));
    ASSIGN_OR_RETURN(lw.out_norm_w, w->Vector(b + "output.LayerNorm.weight", H));
    ASSIGN_OR_RETURN(lw.out_norm_b, w->Vector(b + "output.LayerNorm.bias", H));
    if (relative) {
      ASSIGN_OR_RETURN(lw.distance, w->Vector(b + "attention.self.distance_embedding.weight",
                                              (2 * cfg.max_positions - 1) * cfg.head_dim));
    }
    w->layers.push_back(lw);
  }
  if (cfg.kind == EmbeddingKind::kReranker) {
    ASSIGN_OR_RETURN(w->cls_dense, w->Matrix("classifier.dense", H, H));
    ASSIGN_OR_RETURN(w->cls_out, w->Matrix("classifier.out_proj", 1, H));
    ASSIGN_OR_RETURN(w->cls_dense_bias, w->Vector("classifier.dense.bias", H));
    ASSIGN_OR_RETURN(w->cls_out_bias, w->Vector("classifier.out_proj.bias", 1));
  }
  return w;
}

}  // namespace llmhost
