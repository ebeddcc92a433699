#include "formats/generation_config.h"

#include "formats/hf_config_fields.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost {

namespace {

Status FirstInt(const JsonFields& f, const char* key, std::optional<int64_t>* out) {
  std::vector<int64_t> ids;
  RETURN_IF_ERROR(f.IntOrList(key, &ids));
  if (!ids.empty()) *out = ids.front();
  return Status::OK();
}

}  // namespace

Result<GenerationConfig> ParseGenerationConfig(std::string_view json_text,
                                               const std::string& name) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json_text, name, kJsonModelFileMaxBytes));
  if (!j.is_object()) return Status::InvalidArgument(name + ": not a JSON object");
  JsonFields f(j, name);
  GenerationConfig g;
  RETURN_IF_ERROR(f.IntOrList("eos_token_id", &g.eos_token_ids));
  RETURN_IF_ERROR(FirstInt(f, "bos_token_id", &g.bos_token_id));
  RETURN_IF_ERROR(FirstInt(f, "pad_token_id", &g.pad_token_id));
  RETURN_IF_ERROR(f.OptDouble("temperature", &g.temperature));
  RETURN_IF_ERROR(f.OptDouble("top_p", &g.top_p));
  RETURN_IF_ERROR(f.OptInt("top_k", &g.top_k));
  RETURN_IF_ERROR(f.OptDouble("min_p", &g.min_p));
  RETURN_IF_ERROR(f.OptDouble("repetition_penalty", &g.repetition_penalty));
  RETURN_IF_ERROR(f.OptBool("do_sample", &g.do_sample));
  RETURN_IF_ERROR(f.OptInt("max_new_tokens", &g.max_new_tokens));
  RETURN_IF_ERROR(f.OptInt("max_length", &g.max_length));
  g.raw = std::move(j);
  return g;
}

Result<GenerationConfig> LoadGenerationConfig(const std::string& path) {
  std::string file = IsDirectory(path) ? JoinPath(path, "generation_config.json") : path;
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(file, kJsonModelFileMaxBytes));
  return ParseGenerationConfig(text, file);
}

}  // namespace llmhost
