// Hugging Face `generation_config.json`: default sampling settings and stop
// tokens a model ships with. Every field is optional.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;  // int or list in the file
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<bool> do_sample;
  std::optional<int64_t> max_new_tokens;
  std::optional<int64_t> max_length;
  nlohmann::json raw;
};

// InvalidArgument naming `name` for malformed JSON or a field of the wrong type.
Result<GenerationConfig> ParseGenerationConfig(std::string_view json_text, const std::string& name);
// Reads `path`, or `path`/generation_config.json when `path` is a directory.
// NotFound when the file does not exist (many MLX repositories have none).
Result<GenerationConfig> LoadGenerationConfig(const std::string& path);

}  // namespace llmhost
