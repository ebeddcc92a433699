// render-template: renders a chat template with a conversation, byte for byte
// as transformers' apply_chat_template(tokenize=False) does.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "cli/commands.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost::cli {
namespace {

struct RenderTemplateOptions {
  std::string template_path;
  std::string model_dir;
  std::string template_name;
  std::string conversation_path;
  std::string bos;
  std::string eos;
  std::string now;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost render-template: %s\n", message.c_str());
  return 1;
}

int RunRenderTemplate(const RenderTemplateOptions& opt, bool bos_given, bool eos_given) {
  if (opt.template_path.empty() == opt.model_dir.empty()) {
    std::fprintf(stderr, "llmhost render-template: give exactly one of --template FILE or --model DIR\n");
    return 2;
  }
  ChatTemplateInput input;
  std::string source;
  if (!opt.template_path.empty()) {
    auto text = ReadFileToString(opt.template_path);
    if (!text.ok()) return Fail(text.status().ToString());
    source = std::move(*text);
  } else {
    auto model = LoadModelChatTemplates(opt.model_dir);
    if (!model.ok()) return Fail(model.status().ToString());
    if (opt.template_name.empty() || opt.template_name == "default") {
      source = model->default_template;
    } else {
      auto it = model->named.find(opt.template_name);
      if (it == model->named.end()) return Fail(opt.model_dir + ": no chat template named '" + opt.template_name + "'");
      source = it->second;
    }
    if (source.empty()) return Fail(opt.model_dir + ": the model has no chat template");
    input.bos_token = model->bos_token;
    input.eos_token = model->eos_token;
  }
  if (bos_given) input.bos_token = opt.bos;
  if (eos_given) input.eos_token = opt.eos;

  auto conv_or = ReadOrderedJsonFile(opt.conversation_path, kJsonSettingsMaxBytes);
  if (!conv_or.ok()) return Fail(conv_or.status().ToString());
  nlohmann::ordered_json conv = std::move(*conv_or);
  if (!conv.is_object()) return Fail(opt.conversation_path + ": expected a JSON object with 'messages'");
  if (!conv.contains("messages") || !conv["messages"].is_array()) {
    return Fail(opt.conversation_path + ": field 'messages' must be an array");
  }
  input.messages = conv["messages"];
  if (conv.contains("tools")) input.tools = conv["tools"];
  if (conv.contains("add_generation_prompt")) {
    if (!conv["add_generation_prompt"].is_boolean()) {
      return Fail(opt.conversation_path + ": field 'add_generation_prompt' must be true or false");
    }
    input.add_generation_prompt = conv["add_generation_prompt"].get<bool>();
  }
  if (conv.contains("kwargs") && !conv["kwargs"].is_null()) {
    if (!conv["kwargs"].is_object()) return Fail(opt.conversation_path + ": field 'kwargs' must be an object");
    input.kwargs = conv["kwargs"];
  }
  if (!opt.now.empty()) {
    auto t = ParseIsoLocalTime(opt.now);
    if (!t.ok()) {
      std::fprintf(stderr, "llmhost render-template: --now: %s\n", t.status().message().c_str());
      return 2;
    }
    input.now_local = *t;
  }

  auto tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) return Fail("template: " + tmpl.status().message());
  auto rendered = tmpl->Render(input);
  if (!rendered.ok()) return Fail("template: " + rendered.status().message());
  std::fwrite(rendered->data(), 1, rendered->size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void RegisterTemplateCommands(CLI::App& app) {
  auto opt = std::make_shared<RenderTemplateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "render-template", "Render a chat template with a conversation, exactly as transformers does");
  cmd->add_option("--template", opt->template_path, "Jinja chat template file");
  cmd->add_option("--model", opt->model_dir, "Model directory: use its chat template and bos/eos tokens");
  cmd->add_option("--template-name", opt->template_name, "Named template of the model (e.g. tool_use)");
  cmd->add_option("--conversation", opt->conversation_path,
                  "JSON file: {messages, tools?, add_generation_prompt? (default true), kwargs?}")
      ->required();
  CLI::Option* bos = cmd->add_option("--bos", opt->bos, "bos_token value");
  CLI::Option* eos = cmd->add_option("--eos", opt->eos, "eos_token value");
  cmd->add_option("--now", opt->now, "Clock for strftime_now, local time YYYY-MM-DDTHH:MM:SS (default: now)");
  cmd->callback([opt, bos, eos]() { ExitCode() = RunRenderTemplate(*opt, bos->count() > 0, eos->count() > 0); });
}

}  // namespace llmhost::cli
