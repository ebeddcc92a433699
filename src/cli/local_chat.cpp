#include "cli/local_chat.h"

#include <algorithm>
#include <random>

#include "chat/output_format.h"
#include "chat/output_parser.h"
#include "cli/chat_prompt.h"
#include "model/generate.h"
#include "server/output_plan.h"
#include "tokenizer/stream_decoder.h"

namespace llmhost::cli {

Result<std::unique_ptr<LocalChat>> LocalChat::Load(const std::string& path, const std::string& device) {
  std::unique_ptr<LocalChat> chat(new LocalChat());
  ASSIGN_OR_RETURN(chat->lm_, LoadModelForCli(path, Precision::kFast, device, /*verbose=*/false));
  ASSIGN_OR_RETURN(chat->tok_, Tokenizer::FromPath(path));
  chat->stop_ids_ = EosTokenIds(*chat->lm_.model, chat->tok_.get());
  return chat;
}

Status LocalChat::Reply(const nlohmann::ordered_json& messages, const LocalTurnOptions& o, TurnPrinter* printer) {
  Model& model = *lm_.model;
  ASSIGN_OR_RETURN(ChatPrompt prompt, ChatPromptIds(model.path(), *tok_, messages));
  if (prompt.ids.empty()) return Status::InvalidArgument("the conversation encodes to no tokens");
  const DetectedOutputFormat format = DetectOutputFormat(prompt.template_source, model.spec().arch);
  ParseOptions po;
  po.reasoning = format.reasoning;
  po.starts_in_reasoning = format.starts_in_reasoning;
  OutputParser parser(format.format, po);
  StreamDecoder decoder(*tok_, /*skip_special=*/true,
                        server::MarkupSpecialIds(*tok_, OutputFormatMarkers(format.format)));
  auto show = [&](const std::vector<OutputEvent>& events) {
    for (const OutputEvent& e : events) {
      if (e.kind == OutputEvent::Kind::kReasoning) printer->Reasoning(e.text);
      if (e.kind == OutputEvent::Kind::kContent) printer->Content(e.text);
    }
  };
  GenerateOptions g;
  g.max_tokens = o.max_tokens;
  g.temperature = o.temperature;
  g.seed = std::random_device{}();
  g.stop_ids = stop_ids_;
  g.kv_dtype = model.Native16BitType();
  auto on_token = [&](int32_t id) {
    if (std::find(stop_ids_.begin(), stop_ids_.end(), id) == stop_ids_.end()) show(parser.Feed(decoder.Add(id)));
    return true;
  };
  Result<std::vector<int32_t>> generated = Generate(model, prompt.ids, g, on_token);
  show(parser.Feed(decoder.Finish()));
  show(parser.Finish());
  return generated.ok() ? Status::OK() : generated.status();
}

}  // namespace llmhost::cli
