#include "model/decoder_embedder.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace llmhost {

namespace {

constexpr int64_t kUnknownContext = 8192;

// Qwen3-Reranker's prompt around "<Instruct>: ...\n<Query>: ...\n<Document>: ...".
constexpr const char* kRerankPrefix =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
constexpr const char* kRerankSuffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

// The token of `word`, else the first token of its encoding; -1 when none.
int32_t WordToken(const Tokenizer& tok, const std::string& word) {
  if (auto id = tok.TokenToId(word)) return *id;
  std::vector<TokenId> ids = tok.Encode(word, false);
  return ids.empty() ? -1 : ids.front();
}

}  // namespace

Result<std::unique_ptr<DecoderEmbedder>> DecoderEmbedder::Create(Model* model, const Tokenizer* tokenizer,
                                                                  DecoderEmbedderOptions options) {
  if (!model || !tokenizer) return Status::InvalidArgument("decoder embedder: no model or tokenizer");
  const int64_t context = model->spec().max_position_embeddings > 0 ? model->spec().max_position_embeddings
                                                                    : kUnknownContext;
  options.max_tokens = options.max_tokens > 0 ? std::min(options.max_tokens, context) : context;
  options.step_tokens = std::max<int64_t>(1, options.step_tokens);
  if (options.kind == EmbeddingKind::kReranker && options.instruction.empty()) {
    options.instruction = kDefaultRerankInstruction;
  }
  std::unique_ptr<DecoderEmbedder> e(new DecoderEmbedder(model, tokenizer, std::move(options)));
  if (e->options_.kind == EmbeddingKind::kReranker) {
    e->yes_ = WordToken(*tokenizer, "yes");
    e->no_ = WordToken(*tokenizer, "no");
    if (e->yes_ < 0 || e->no_ < 0 || e->yes_ == e->no_ || e->yes_ >= model->vocab_size() ||
        e->no_ >= model->vocab_size()) {
      return Status::InvalidArgument("reranker: the vocabulary has no distinct tokens for \"yes\" and \"no\"");
    }
  }
  return e;
}

int64_t DecoderEmbedder::dim() const {
  return options_.kind == EmbeddingKind::kEmbedder ? model_->spec().hidden : 0;
}

EmbeddingInput DecoderEmbedder::Tokenize(std::string_view text, bool query) const {
  EmbeddingInput in;
  if (query && !options_.instruction.empty()) {
    const std::string prompt = "Instruct: " + options_.instruction + "\nQuery:" + std::string(text);
    in.ids = tokenizer_->Encode(prompt, true);
  } else {
    in.ids = tokenizer_->Encode(text, true);
  }
  return in;
}

EmbeddingInput DecoderEmbedder::TokenizePair(std::string_view query, std::string_view document) const {
  const std::string prompt = std::string(kRerankPrefix) + "<Instruct>: " + options_.instruction +
                             "\n<Query>: " + std::string(query) + "\n<Document>: " + std::string(document) +
                             kRerankSuffix;
  EmbeddingInput in;
  in.ids = tokenizer_->Encode(prompt, false);  // the prompt spells out its special tokens
  return in;
}

Status DecoderEmbedder::CheckInputs(std::span<const EmbeddingInput> inputs) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t n = static_cast<int64_t>(inputs[i].ids.size());
    if (n == 0) return Status::InvalidArgument("input " + std::to_string(i) + " is empty");
    if (n > options_.max_tokens) {
      return Status::InvalidArgument("input " + std::to_string(i) + " has " + std::to_string(n) +
                                     " tokens, more than the model's " + std::to_string(options_.max_tokens));
    }
  }
  return Status::OK();
}

Status DecoderEmbedder::EnsureCache(int64_t blocks) {
  if (cache_ && cache_->allocator().total_blocks() >= blocks) return Status::OK();
  cache_.reset();  // its memory back before the larger one is taken
  const DType dtype = options_.kv_dtype.value_or(model_->Native16BitType());
  ASSIGN_OR_RETURN(cache_, model_->CreateKvCache(blocks, kDecoderEmbedderKvBlock, dtype));
  return Status::OK();
}

Result<std::vector<std::vector<float>>> DecoderEmbedder::LastRows(std::span<const EmbeddingInput> inputs,
                                                                  bool hidden) {
  RETURN_IF_ERROR(CheckInputs(inputs));
  std::vector<std::vector<float>> rows(inputs.size());
  if (inputs.empty()) return rows;
  int64_t blocks = 0;
  for (const EmbeddingInput& in : inputs) {
    blocks += (static_cast<int64_t>(in.ids.size()) + kDecoderEmbedderKvBlock - 1) / kDecoderEmbedderKvBlock;
  }
  RETURN_IF_ERROR(EnsureCache(blocks));
  std::vector<KvSequence> seqs(inputs.size());
  std::vector<size_t> done(inputs.size(), 0);
  std::vector<ForwardItem> items;
  std::vector<size_t> owner;  // per item: its input
  ForwardOutput out;
  Status status = Status::OK();
  for (size_t next = 0; status.ok() && next < inputs.size();) {
    // One step: the inputs from `next` on, each as much as the step has room for.
    items.clear();
    owner.clear();
    int64_t room = options_.step_tokens;
    for (size_t i = next; i < inputs.size() && room > 0; ++i) {
      const std::vector<int32_t>& ids = inputs[i].ids;
      const size_t take = std::min(ids.size() - done[i], static_cast<size_t>(room));
      const bool last = done[i] + take == ids.size();
      items.push_back({&seqs[i], std::span<const int32_t>(ids.data() + done[i], take),
                       last ? LogitsRows::kLast : LogitsRows::kNone});
      owner.push_back(i);
      done[i] += take;
      room -= static_cast<int64_t>(take);
    }
    out.want_hidden = hidden;
    out.want_logits = !hidden;
    status = model_->Forward(items, *cache_, &out);
    if (!status.ok()) break;
    const size_t width = static_cast<size_t>(hidden ? out.hidden_size : out.vocab);
    for (size_t k = 0; k < items.size(); ++k) {
      if (out.n_rows[k] == 0) continue;
      const float* row = hidden ? (out.hidden.empty() ? nullptr : out.HiddenRow(k, 0)) : out.Row(k, 0);
      if (!row) {
        status = Status::NotSupported("this model does not expose its hidden states");
        break;
      }
      rows[owner[k]].assign(row, row + width);
    }
    while (next < inputs.size() && done[next] == inputs[next].ids.size()) ++next;
  }
  for (KvSequence& s : seqs) cache_->Release(&s);
  if (!status.ok()) return status;
  return rows;
}

Result<std::vector<std::vector<float>>> DecoderEmbedder::Embed(std::span<const EmbeddingInput> inputs) {
  if (options_.kind != EmbeddingKind::kEmbedder) return Status::NotSupported("a reranker does not embed");
  ASSIGN_OR_RETURN(std::vector<std::vector<float>> rows, LastRows(inputs, true));
  for (std::vector<float>& v : rows) L2Normalize(v);
  return rows;
}

Result<std::vector<float>> DecoderEmbedder::Score(std::span<const EmbeddingInput> inputs) {
  if (options_.kind != EmbeddingKind::kReranker) return Status::NotSupported("an embedder does not score");
  ASSIGN_OR_RETURN(std::vector<std::vector<float>> rows, LastRows(inputs, false));
  std::vector<float> scores;
  scores.reserve(rows.size());
  for (const std::vector<float>& logits : rows) {
    // softmax over (no, yes), taken at yes: 1 / (1 + e^(no - yes)).
    const double d = static_cast<double>(logits[static_cast<size_t>(no_)]) - logits[static_cast<size_t>(yes_)];
    scores.push_back(static_cast<float>(1.0 / (1.0 + std::exp(d))));
  }
  return scores;
}

}  // namespace llmhost
