// parse-output: runs the output parser over a saved model output and prints
// what the APIs would return, the command-line contract for output-parsing
// tests. --stream-chunks N feeds N bytes at a time (same result by design).
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "chat/output_format.h"
#include "chat/output_parser.h"
#include "cli/commands.h"
#include "formats/gguf.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost::cli {
namespace {

struct ParseOutputOptions {
  std::string model;
  std::string format;
  std::string text_file;
  std::string tools_file;
  size_t stream_chunks = 0;
  bool starts_in_reasoning = false;
};

int Fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "llmhost parse-output: %s\n", message.c_str());
  return code;
}

struct ModelTemplate {
  std::string source;
  std::string model_type;  // config.json's model_type, or GGUF's general.architecture
};

// The model's default chat template, from a Hugging Face directory or a GGUF file.
Result<ModelTemplate> LoadTemplate(const std::string& path) {
  ModelTemplate t;
  if (IsDirectory(path)) {
    ASSIGN_OR_RETURN(ModelChatTemplates templates, LoadModelChatTemplates(path));
    t.source = templates.default_template;
    std::string config = JoinPath(path, "config.json");
    if (FileExists(config)) {
      auto j = ReadJsonFile(config, kJsonSettingsMaxBytes);
      if (j.ok() && j->is_object() && j->contains("model_type") && (*j)["model_type"].is_string()) {
        t.model_type = (*j)["model_type"].get<std::string>();
      }
    }
  } else {
    ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(path));
    if (f->Has("tokenizer.chat_template")) {
      ASSIGN_OR_RETURN(t.source, f->GetString("tokenizer.chat_template"));
    }
    if (f->Has("general.architecture")) {
      auto arch = f->GetString("general.architecture");
      if (arch.ok()) t.model_type = *arch;
    }
  }
  return t;
}

int RunParseOutput(const ParseOutputOptions& opt) {
  if (opt.model.empty() == opt.format.empty()) return Fail("give exactly one of --model PATH or --format NAME", 2);
  OutputFormat format = OutputFormat::kNone;
  ParseOptions options;
  if (!opt.format.empty()) {
    auto f = ParseOutputFormat(opt.format);
    if (!f.ok()) return Fail("--format: " + f.status().message(), 2);
    format = *f;
  } else {
    auto t = LoadTemplate(opt.model);
    if (!t.ok()) return Fail(t.status().ToString());
    if (t->source.empty() && t->model_type.empty()) {
      return Fail(opt.model + ": the model has no chat template to choose the output format from (use --format)");
    }
    DetectedOutputFormat d = DetectOutputFormat(t->source, t->model_type);
    format = d.format;
    options.reasoning = d.reasoning;
    options.starts_in_reasoning = d.starts_in_reasoning;
  }
  if (opt.starts_in_reasoning) options.starts_in_reasoning = true;

  auto text = ReadFileToString(opt.text_file);
  if (!text.ok()) return Fail("--text-file: " + text.status().ToString());
  if (!opt.tools_file.empty()) {
    auto tools = ReadJsonFile(opt.tools_file, kJsonSettingsMaxBytes);
    if (!tools.ok()) return Fail("--tools: " + tools.status().ToString());
    nlohmann::json list = *tools;
    if (list.is_object() && list.contains("tools")) list = list["tools"];
    if (!list.is_array()) return Fail("--tools: " + opt.tools_file + ": expected a JSON array of tools");
    options.tools = std::move(list);
  }

  OutputParser parser(format, options);
  const size_t chunk = opt.stream_chunks > 0 ? opt.stream_chunks : text->size() + 1;
  for (size_t i = 0; i < text->size(); i += chunk) parser.Feed(std::string_view(*text).substr(i, chunk));
  parser.Finish();
  const ParsedOutput& r = parser.Result();

  nlohmann::ordered_json out;
  out["content"] = r.content;
  out["reasoning_content"] = r.reasoning_content;
  out["tool_calls"] = nlohmann::ordered_json::array();
  for (const ToolCall& c : r.tool_calls) out["tool_calls"].push_back({{"name", c.name}, {"arguments", c.arguments}});
  // Model output need not be valid UTF-8: replace rather than fail.
  std::string line = out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void RegisterParseOutputCommands(CLI::App& app) {
  auto opt = std::make_shared<ParseOutputOptions>();
  std::string formats;
  for (const std::string& n : OutputFormatNames()) formats += (formats.empty() ? "" : ", ") + n;
  CLI::App* cmd = app.add_subcommand(
      "parse-output", "Split a model's output into content, reasoning_content and tool_calls (one JSON line)");
  cmd->add_option("--model", opt->model, "Model directory or .gguf: choose the format from its chat template");
  cmd->add_option("--format", opt->format, "Output format: " + formats);
  cmd->add_option("--text-file", opt->text_file, "The model's generated text")->required();
  cmd->add_option("--tools", opt->tools_file, "JSON array of the request's tools (types XML-style values)");
  cmd->add_option("--stream-chunks", opt->stream_chunks, "Feed the text N bytes at a time (same result)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--starts-in-reasoning", opt->starts_in_reasoning,
                "The generation prompt already opened the think block");
  cmd->callback([opt]() { ExitCode() = RunParseOutput(*opt); });
}

}  // namespace llmhost::cli
