#include "model/encoder_prompts.h"

#include <map>

#include "util/file.h"
#include "util/json.h"

namespace llmhost {

Result<EncoderPrompts> LoadEncoderPrompts(const std::string& dir) {
  const std::string path = JoinPath(dir, "config_sentence_transformers.json");
  EncoderPrompts out;
  if (!FileExists(path)) return out;
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path, size_t{1} << 20));
  if (!j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  std::map<std::string, std::string> prompts;
  if (auto it = j.find("prompts"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return Status::InvalidArgument(path + ": 'prompts' is not an object");
    for (auto p = it->begin(); p != it->end(); ++p) {
      if (!p->is_string()) return Status::InvalidArgument(path + ": prompt '" + p.key() + "' is not a string");
      prompts[p.key()] = p->get<std::string>();
    }
  }
  std::string fallback;
  if (auto it = j.find("default_prompt_name"); it != j.end() && !it->is_null()) {
    if (!it->is_string() || !prompts.count(it->get<std::string>())) {
      return Status::InvalidArgument(path + ": 'default_prompt_name' names no prompt of 'prompts'");
    }
    fallback = prompts[it->get<std::string>()];
  }
  auto first = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (auto p = prompts.find(n); p != prompts.end()) return p->second;
    }
    return fallback;
  };
  out.query = first({"query"});
  out.document = first({"document", "passage", "corpus"});
  return out;
}

}  // namespace llmhost
