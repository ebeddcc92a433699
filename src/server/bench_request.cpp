#include "server/bench_request.h"

#include <algorithm>

namespace llmhost::server {

MaybeError ParseBenchRequest(const OJson& body, BenchRequest* out) {
  static constexpr const char* kFields[] = {"model", "prompt_tokens", "max_tokens", "concurrency"};
  for (const auto& [key, value] : body.items()) {
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields)) {
      return BadRequest("unknown field '" + key + "' (expected model, prompt_tokens, max_tokens, concurrency)", key);
    }
  }
  std::optional<std::string> model;
  RETURN_IF_API_ERROR(ReadString(body, "model", "", &model));
  if (!model || model->empty()) return BadRequest("'model' is required: the id of a model to measure", "model");
  BenchRequest r;
  r.model = *model;
  std::optional<int64_t> prompt_tokens, max_tokens;
  RETURN_IF_API_ERROR(ReadInteger(body, "prompt_tokens", "", 8, kBenchMaxPromptTokens, &prompt_tokens));
  RETURN_IF_API_ERROR(ReadInteger(body, "max_tokens", "", 2, kBenchMaxDecodeTokens, &max_tokens));
  if (prompt_tokens) r.params.prompt_tokens = *prompt_tokens;
  if (max_tokens) r.params.decode_tokens = *max_tokens;
  auto it = body.find("concurrency");
  if (it != body.end() && !it->is_null()) {
    if (!it->is_array()) {
      return BadRequest("'concurrency' must be an array of stream counts, got " + JsonTypeName(*it), "concurrency");
    }
    if (it->empty() || it->size() > kBenchMaxLevels) {
      return BadRequest("'concurrency' must have 1 to " + std::to_string(kBenchMaxLevels) + " levels, got " +
                            std::to_string(it->size()),
                        "concurrency");
    }
    r.params.concurrency.clear();
    for (size_t i = 0; i < it->size(); ++i) {
      // Each item read as a one-field object, so that the message names it.
      const std::string field = IndexPath("concurrency", i);
      std::optional<int64_t> level;
      RETURN_IF_API_ERROR(ReadInteger(OJson{{field, (*it)[i]}}, field.c_str(), "", 1, kBenchMaxConcurrency, &level));
      if (!level) return BadRequest("'" + field + "' must be an integer, got null", field);
      r.params.concurrency.push_back(static_cast<int>(*level));
    }
  }
  *out = std::move(r);
  return std::nullopt;
}

OJson BenchParamsJson(const BenchParams& p) {
  return OJson{{"prompt_tokens", p.prompt_tokens}, {"max_tokens", p.decode_tokens}, {"concurrency", p.concurrency}};
}

}  // namespace llmhost::server
