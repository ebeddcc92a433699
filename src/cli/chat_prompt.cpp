#include "cli/chat_prompt.h"

#include "chat/chat_template.h"
#include "model/random_model.h"

namespace llmhost::cli {

Result<ChatPrompt> ChatPromptIds(const std::string& path, const Tokenizer& tok,
                                 const nlohmann::ordered_json& messages) {
  ASSIGN_OR_RETURN(ModelChatTemplates t, LoadModelChatTemplatesAt(path, tok));
  if (t.default_template.empty()) return Status::NotFound(path + ": the model has no chat template");
  ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::Parse(t.default_template));
  ChatTemplateInput in;
  in.messages = messages;
  in.add_generation_prompt = true;
  in.bos_token = t.bos_token;
  in.eos_token = t.eos_token;
  ASSIGN_OR_RETURN(std::string text, tmpl.Render(in));
  ChatPrompt out;
  out.ids = tok.Encode(text, /*add_special=*/false);
  out.template_source = std::move(t.default_template);
  return out;
}

}  // namespace llmhost::cli
