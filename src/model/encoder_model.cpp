#include "model/encoder_model.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>

#include "formats/hf_config.h"
#include "model/encoder_config.h"
#include "model/encoder_pooling.h"
#include "model/encoder_prompts.h"
#include "model/encoder_weights.h"
#include "model/pass_arena.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost {
namespace {

class Encoder final : public EncoderModel {
 public:
  Encoder(EncoderConfig cfg, EncoderPooling pooling, EncoderPrompts prompts, std::unique_ptr<EncoderWeights> w,
          std::unique_ptr<Tokenizer> tok, Backend* backend)
      : cfg_(std::move(cfg)),
        pooling_(pooling),
        prompts_(std::move(prompts)),
        w_(std::move(w)),
        tok_(std::move(tok)),
        backend_(backend),
        arena_(backend) {
    if (!pooling_.include_prompt) {  // [CLS] and the prompt's tokens, as sentence-transformers counts them
      query_prompt_rows_ = PromptRows(prompts_.query);
      document_prompt_rows_ = PromptRows(prompts_.document);
    }
  }

  EmbeddingKind kind() const override { return cfg_.kind; }
  int64_t dim() const override { return cfg_.kind == EmbeddingKind::kEmbedder ? cfg_.hidden : 0; }
  int64_t max_tokens() const override { return cfg_.max_tokens; }
  int64_t vocab() const override { return cfg_.vocab; }
  bool normalized() const override { return pooling_.normalize; }

  EmbeddingInput Tokenize(std::string_view text, bool query) const override {
    const std::string& prompt = query ? prompts_.query : prompts_.document;
    if (prompt.empty()) return {tok_->Encode(text, true), {}};
    EmbeddingInput in{tok_->Encode(prompt + std::string(text), true), {}};
    in.pool_from = query ? query_prompt_rows_ : document_prompt_rows_;
    return in;
  }

  EmbeddingInput TokenizePair(std::string_view query, std::string_view document) const override {
    EmbeddingInput in{tok_->EncodePair(query, document, true), {}};
    if (cfg_.type_vocab > 1) {  // segment 0: the query with its special tokens
      const size_t first = tok_->Encode(query, true).size();
      in.type_ids.assign(in.ids.size(), 1);
      std::fill(in.type_ids.begin(), in.type_ids.begin() + std::min(first, in.ids.size()), 0);
    }
    return in;
  }

  Result<std::vector<float>> HiddenStates(std::span<const EmbeddingInput> inputs) override {
    std::lock_guard<std::mutex> lock(pass_mu_);
    ASSIGN_OR_RETURN(float* x, Forward(inputs, /*head=*/false));
    const int64_t rows = TotalTokens(inputs);
    std::vector<float> out(static_cast<size_t>(rows * cfg_.hidden));
    RETURN_IF_ERROR(arena_.CopyOut(x, out));
    return out;
  }

  Result<std::vector<std::vector<float>>> Embed(std::span<const EmbeddingInput> inputs) override {
    if (cfg_.kind != EmbeddingKind::kEmbedder) {
      return Status::InvalidArgument("this model is a reranker: it scores pairs, it does not embed");
    }
    ASSIGN_OR_RETURN(std::vector<float> states, HiddenStates(inputs));
    std::vector<std::vector<float>> vectors;
    int64_t row = 0;
    for (const EmbeddingInput& in : inputs) {
      const auto len = static_cast<int64_t>(in.ids.size());
      vectors.push_back(PoolStates(std::span<const float>(states).subspan(row * cfg_.hidden, len * cfg_.hidden),
                                   len, cfg_.hidden, pooling_, in.pool_from));
      row += len;
    }
    return vectors;
  }

  Result<std::vector<float>> Score(std::span<const EmbeddingInput> inputs) override {
    if (cfg_.kind != EmbeddingKind::kReranker) {
      return Status::InvalidArgument("this model is an embedder: it embeds texts, it does not score pairs");
    }
    std::lock_guard<std::mutex> lock(pass_mu_);
    ASSIGN_OR_RETURN(float* x, Forward(inputs, /*head=*/true));
    // The head reads each input's first token (<s> / [CLS]).
    const auto n = static_cast<int64_t>(inputs.size());
    std::vector<int32_t> first_rows;
    int32_t row = 0;
    for (const EmbeddingInput& in : inputs) {
      first_rows.push_back(row);
      row += static_cast<int32_t>(in.ids.size());
    }
    const int64_t H = cfg_.hidden;
    ASSIGN_OR_RETURN(const int32_t* d_rows, arena_.Put(first_rows, "encoder head rows"));
    ASSIGN_OR_RETURN(float* cls, arena_.Alloc<float>(n * H, "encoder head"));
    ASSIGN_OR_RETURN(float* dense, arena_.Alloc<float>(n * H, "encoder head dense"));
    ASSIGN_OR_RETURN(float* logits, arena_.Alloc<float>(n, "encoder head logits"));
    backend_->GatherRows(x, H, d_rows, n, cls);
    backend_->MatMul(w_->cls_dense, cls, n, dense, RowKind::kPrompt);
    backend_->AddBias(dense, n, H, H, w_->cls_dense_bias);
    backend_->Tanh(dense, n * H);
    backend_->MatMul(w_->cls_out, dense, n, logits, RowKind::kPrompt);
    backend_->AddBias(logits, n, 1, 1, w_->cls_out_bias);
    std::vector<float> scores(static_cast<size_t>(n));
    RETURN_IF_ERROR(arena_.CopyOut(logits, scores));
    return scores;
  }

 private:
  int64_t PromptRows(const std::string& prompt) const {
    if (prompt.empty()) return 0;
    return std::max<int64_t>(static_cast<int64_t>(tok_->Encode(prompt, true).size()) - 1, 0);
  }

  static int64_t TotalTokens(std::span<const EmbeddingInput> inputs) {
    int64_t n = 0;
    for (const EmbeddingInput& in : inputs) n += static_cast<int64_t>(in.ids.size());
    return n;
  }

  Status Check(std::span<const EmbeddingInput> inputs) const {
    if (inputs.empty()) return Status::InvalidArgument("no inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      const EmbeddingInput& in = inputs[i];
      const std::string which = "input " + std::to_string(i);
      if (in.ids.empty()) return Status::InvalidArgument(which + " is empty");
      if (static_cast<int64_t>(in.ids.size()) > cfg_.max_tokens) {
        return Status::InvalidArgument(which + " has " + std::to_string(in.ids.size()) +
                                       " tokens, more than the model's " + std::to_string(cfg_.max_tokens));
      }
      if (!in.type_ids.empty() && in.type_ids.size() != in.ids.size()) {
        return Status::InvalidArgument(which + ": type_ids and ids differ in length");
      }
      for (int32_t id : in.ids) {
        if (id < 0 || id >= cfg_.vocab) {
          return Status::InvalidArgument(which + ": token id " + std::to_string(id) + " is outside the vocabulary of " +
                                         std::to_string(cfg_.vocab));
        }
      }
      for (int32_t t : in.type_ids) {
        if (t < 0 || t >= cfg_.type_vocab) {
          return Status::InvalidArgument(which + ": token type " + std::to_string(t) + " is outside [0, " +
                                         std::to_string(cfg_.type_vocab) + ")");
        }
      }
    }
    return Status::OK();
  }

  // Position ids as transformers numbers them: BERT 0, 1, ...; XLM-R
  // padding_idx + 1 + (non-padding tokens before), padding_idx for a padding token.
  void AppendPositions(const EmbeddingInput& in, std::vector<int32_t>* pos) const {
    int32_t next = 0;
    for (int32_t id : in.ids) {
      if (cfg_.padding_idx < 0) {
        pos->push_back(next++);
      } else if (id == cfg_.padding_idx) {
        pos->push_back(static_cast<int32_t>(cfg_.padding_idx));
      } else {
        pos->push_back(static_cast<int32_t>(cfg_.padding_idx + 1 + next++));
      }
    }
  }

  // What one pass carves from the arena: Forward's buffers, and the
  // classifier head's when `head`.
  size_t PassBytes(int64_t tokens, int64_t n, bool head) const {
    using A = PassArena;
    const int64_t H = cfg_.hidden;
    size_t bytes = 3 * A::Bytes<int32_t>(tokens) + A::Bytes<EncoderSeq>(n) + 6 * A::Bytes<float>(tokens * H) +
                   A::Bytes<float>(tokens * cfg_.inter);
    if (head) bytes += A::Bytes<int32_t>(n) + 2 * A::Bytes<float>(n * H) + A::Bytes<float>(n);
    return bytes;
  }

  // The last hidden state of the packed batch, rows [Σ len, hidden] in the
  // arena, which this pass starts over (pass_mu_ held).
  Result<float*> Forward(std::span<const EmbeddingInput> inputs, bool head) {
    RETURN_IF_ERROR(Check(inputs));
    RETURN_IF_ERROR(
        arena_.Begin(PassBytes(TotalTokens(inputs), static_cast<int64_t>(inputs.size()), head), "encoder pass"));
    std::vector<int32_t> ids, pos, types;
    std::vector<EncoderSeq> seqs;
    EncoderAttentionParams ap;
    for (const EmbeddingInput& in : inputs) {
      const auto len = static_cast<int64_t>(in.ids.size());
      seqs.push_back({ap.n_rows, len});
      ap.n_rows += len;
      ap.max_len = std::max(ap.max_len, len);
      ids.insert(ids.end(), in.ids.begin(), in.ids.end());
      AppendPositions(in, &pos);
      if (in.type_ids.empty()) {
        types.insert(types.end(), in.ids.size(), 0);
      } else {
        types.insert(types.end(), in.type_ids.begin(), in.type_ids.end());
      }
    }
    const int64_t T = ap.n_rows, H = cfg_.hidden, I = cfg_.inter;
    ap.n_heads = cfg_.heads;
    ap.head_dim = cfg_.head_dim;
    ap.qkv_stride = H;
    ap.out_stride = H;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(cfg_.head_dim));
    ap.max_distance = cfg_.max_positions;
    ap.relative_keys = cfg_.positions == EncoderPositions::kRelativeKeyQuery;
    ASSIGN_OR_RETURN(const int32_t* d_ids, arena_.Put(ids, "encoder ids"));
    ASSIGN_OR_RETURN(const int32_t* d_pos, arena_.Put(pos, "encoder positions"));
    ASSIGN_OR_RETURN(const int32_t* d_types, arena_.Put(types, "encoder token types"));
    ASSIGN_OR_RETURN(const EncoderSeq* d_seqs, arena_.Put(seqs, "encoder sequences"));
    ASSIGN_OR_RETURN(float* x, arena_.Alloc<float>(T * H, "encoder hidden"));
    ASSIGN_OR_RETURN(float* tmp, arena_.Alloc<float>(T * H, "encoder tmp"));
    ASSIGN_OR_RETURN(float* q, arena_.Alloc<float>(T * H, "encoder q"));
    ASSIGN_OR_RETURN(float* k, arena_.Alloc<float>(T * H, "encoder k"));
    ASSIGN_OR_RETURN(float* v, arena_.Alloc<float>(T * H, "encoder v"));
    ASSIGN_OR_RETURN(float* attn, arena_.Alloc<float>(T * H, "encoder attention"));
    ASSIGN_OR_RETURN(float* ff, arena_.Alloc<float>(T * I, "encoder ffn"));
    Backend& b = *backend_;
    b.Embedding(w_->word, d_ids, T, 1.0f, x);
    if (cfg_.positions == EncoderPositions::kAbsolute) {
      b.Embedding(w_->position, d_pos, T, 1.0f, tmp);
      b.Add(x, tmp, T * H, x);
    }
    b.Embedding(w_->token_type, d_types, T, 1.0f, tmp);
    b.Add(x, tmp, T * H, x);
    b.LayerNorm(x, T, H, H, w_->embed_norm_w, w_->embed_norm_b, cfg_.eps, x);
    for (const EncoderLayerWeights& l : w_->layers) {
      const Backend::MatMulJob qkv[] = {{&l.q, q}, {&l.k, k}, {&l.v, v}};
      b.MatMuls(qkv, x, T, RowKind::kPrompt);
      b.AddBias(q, T, H, H, l.q_bias);
      b.AddBias(k, T, H, H, l.k_bias);
      b.AddBias(v, T, H, H, l.v_bias);
      ap.relative = l.distance;
      b.EncoderAttention(q, k, v, d_seqs, static_cast<int64_t>(seqs.size()), ap, attn);
      b.MatMul(l.attn_out, attn, T, tmp, RowKind::kPrompt);
      b.AddBias(tmp, T, H, H, l.attn_out_bias);
      b.Add(tmp, x, T * H, tmp);
      b.LayerNorm(tmp, T, H, H, l.attn_norm_w, l.attn_norm_b, cfg_.eps, x);
      b.MatMul(l.up, x, T, ff, RowKind::kPrompt);
      b.AddBias(ff, T, I, I, l.up_bias);
      b.Gelu(ff, T * I);
      b.MatMul(l.down, ff, T, tmp, RowKind::kPrompt);
      b.AddBias(tmp, T, H, H, l.down_bias);
      b.Add(tmp, x, T * H, tmp);
      b.LayerNorm(tmp, T, H, H, l.out_norm_w, l.out_norm_b, cfg_.eps, x);
    }
    RETURN_IF_ERROR(b.Synchronize());  // the host vectors above are copied by now
    return x;
  }

  EncoderConfig cfg_;
  EncoderPooling pooling_;
  EncoderPrompts prompts_;
  // Rows a mean leaves out (include_prompt false), counted once at load.
  int64_t query_prompt_rows_ = 0, document_prompt_rows_ = 0;
  std::unique_ptr<EncoderWeights> w_;
  std::unique_ptr<Tokenizer> tok_;
  Backend* backend_;
  std::mutex pass_mu_;  // one pass at a time owns the arena
  PassArena arena_;
};

}  // namespace

Result<std::unique_ptr<EncoderModel>> LoadEncoder(const std::string& dir, Backend* backend) {
  ASSIGN_OR_RETURN(ModelConfig mc, LoadModelConfig(JoinPath(dir, "config.json")));
  ASSIGN_OR_RETURN(EncoderConfig cfg, ParseEncoderConfig(mc, dir));
  ASSIGN_OR_RETURN(EncoderPooling pooling, LoadEncoderPooling(dir));
  ASSIGN_OR_RETURN(EncoderPrompts prompts, LoadEncoderPrompts(dir));
  ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::FromPath(dir));
  ASSIGN_OR_RETURN(std::unique_ptr<WeightSource> src, OpenSafetensorsSource(dir, mc.mlx_quantization, mc.hf_quantization));
  ASSIGN_OR_RETURN(std::unique_ptr<EncoderWeights> w, EncoderWeights::Load(std::move(src), cfg, backend));
  return std::unique_ptr<EncoderModel>(
      std::make_unique<Encoder>(std::move(cfg), pooling, std::move(prompts), std::move(w), std::move(tok), backend));
}

Result<std::unique_ptr<EmbeddingModel>> LoadEncoderModel(const std::string& dir, Backend* backend) {
  ASSIGN_OR_RETURN(std::unique_ptr<EncoderModel> m, LoadEncoder(dir, backend));
  return std::unique_ptr<EmbeddingModel>(std::move(m));
}

bool IsEncoderModelDir(const std::string& dir) {
  auto mc = LoadModelConfig(JoinPath(dir, "config.json"));
  return mc.ok() && IsEncoderConfig(*mc);
}

}  // namespace llmhost
