#include "model/generate.h"

#include <algorithm>
#include <cmath>

#include "chat/chat_template.h"
#include "formats/generation_config.h"
#include "model/random_model.h"
#include "util/file.h"

namespace llmhost {

int32_t SampleToken(const float* logits, int64_t vocab, double temperature, std::mt19937_64& rng) {
  if (!(temperature > 0)) {
    return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
  }
  const float mx = *std::max_element(logits, logits + vocab);
  std::vector<double> p(static_cast<size_t>(vocab));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    p[i] = std::exp((static_cast<double>(logits[i]) - mx) / temperature);
    sum += p[i];
  }
  double u = std::uniform_real_distribution<double>(0.0, sum)(rng);
  for (int64_t i = 0; i < vocab; ++i) {
    u -= p[i];
    if (u < 0) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(vocab - 1);
}

Result<std::vector<int32_t>> Generate(Model& model, std::span<const int32_t> prompt,
                                      const GenerateOptions& options,
                                      const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) return Status::InvalidArgument("generate: the prompt has no tokens");
  const int64_t total = static_cast<int64_t>(prompt.size()) + std::max<int64_t>(options.max_tokens, 0);
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache,
                   model.CreateKvCache((total + kDefaultKvBlockSize - 1) / kDefaultKvBlockSize,
                                       kDefaultKvBlockSize, options.kv_dtype));
  std::mt19937_64 rng(options.seed);
  KvSequence seq;
  std::vector<int32_t> out;
  ForwardOutput logits;
  ForwardItem item{&seq, prompt, LogitsRows::kLast, static_cast<int64_t>(prompt.size())};
  while (static_cast<int64_t>(out.size()) < options.max_tokens) {
    RETURN_IF_ERROR(model.Forward({&item, 1}, *cache, &logits));
    const int32_t id = SampleToken(logits.Row(0, 0), logits.vocab, options.temperature, rng);
    out.push_back(id);
    const bool more = on_token ? on_token(id) : true;
    if (!more || std::find(options.stop_ids.begin(), options.stop_ids.end(), id) !=
                     options.stop_ids.end()) {
      break;
    }
    item.tokens = {&out.back(), 1};
  }
  cache->Release(&seq);
  return out;
}

std::vector<int32_t> EosTokenIds(const Model& model, const Tokenizer* tokenizer) {
  std::vector<int32_t> ids;
  auto add = [&](int64_t id) {
    if (id >= 0 && id <= INT32_MAX &&
        std::find(ids.begin(), ids.end(), static_cast<int32_t>(id)) == ids.end()) {
      ids.push_back(static_cast<int32_t>(id));
    }
  };
  if (auto gen = LoadModelGenerationConfig(model.path()); gen.ok()) {  // none for GGUF
    for (int64_t id : gen->eos_token_ids) add(id);
  }
  for (int64_t id : model.config().eos_token_ids) add(id);
  if (ids.empty() && tokenizer && (IsDirectory(model.path()) || IsRandomModelSpec(model.path()))) {
    auto t = LoadModelChatTemplatesAt(model.path(), *tokenizer);
    if (t.ok() && !t->eos_token.empty()) {
      if (auto id = tokenizer->TokenToId(t->eos_token)) add(*id);
    }
  }
  return ids;
}

}  // namespace llmhost
