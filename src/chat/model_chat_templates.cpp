// Chat templates of a model wherever they live: a Hugging Face directory's
// files (chat_template.cpp) or a GGUF file's metadata.
#include <memory>

#include "chat/chat_template.h"
#include "formats/gguf.h"
#include "util/file.h"

namespace llmhost {

Result<ModelChatTemplates> LoadChatTemplatesAt(const std::string& path, const Tokenizer& tok) {
  if (IsDirectory(path)) return LoadModelChatTemplates(path);
  ModelChatTemplates t;
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(path));
  if (f->Has("tokenizer.chat_template")) {
    ASSIGN_OR_RETURN(t.default_template, f->GetString("tokenizer.chat_template"));
  }
  // bos/eos as token strings (what templates print), from their ids.
  auto token = [&](const char* key) -> std::string {
    if (!f->Has(key)) return "";
    auto id = f->GetInt(key);
    if (!id.ok()) return "";
    return tok.IdToToken(static_cast<TokenId>(*id)).value_or("");
  };
  t.bos_token = token("tokenizer.ggml.bos_token_id");
  t.eos_token = token("tokenizer.ggml.eos_token_id");
  return t;
}

}  // namespace llmhost
