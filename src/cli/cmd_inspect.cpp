// `llmhost inspect PATH`: a JSON summary of a model directory or GGUF file
// (format, architecture, key config fields, tensors, GGUF metadata).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "backend/device.h"
#include "formats/inspect.h"

namespace llmhost::cli {

namespace {

struct InspectCliOptions {
  std::string path;
  bool all_tensors = false;
  size_t max_tensors = 20;
};

int RunInspect(const InspectCliOptions& o) {
  InspectOptions opts;
  opts.all_tensors = o.all_tensors;
  opts.max_tensors = o.max_tensors;
  auto r = InspectModel(o.path, opts);
  if (!r.ok()) {
    std::fprintf(stderr, "llmhost: inspect: %s\n", r.status().ToString().c_str());
    return 1;
  }
  // What the GPU backend does with each GGUF tensor type.
  if (r->value("format", "") == "gguf" && r->contains("dtypes")) {
    nlohmann::ordered_json kept = nlohmann::ordered_json::array(), expanded = nlohmann::ordered_json::array();
    for (const auto& [name, count] : (*r)["dtypes"].items()) {
      for (uint32_t t = 0; t < 64; ++t) {
        auto info = GgmlTypeInfo(t);
        if (info && name == info->name) {
          (CudaReadsGgmlInPlace(static_cast<GgmlType>(t)) ? kept : expanded).push_back(name);
          break;
        }
      }
    }
    (*r)["cuda"] = {{"kept_as_stored", kept}, {"expanded_to_f32", expanded}};
  }
  std::string out = r->dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace

void RegisterInspectCommands(CLI::App& app) {
  auto opts = std::make_shared<InspectCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Summarize a model directory, .safetensors or .gguf file as JSON");
  cmd->add_option("path", opts->path, "model directory, .safetensors or .gguf file")->required();
  cmd->add_flag("--tensors", opts->all_tensors, "list every tensor (default: the first 20)");
  cmd->add_option("--max-tensors", opts->max_tensors, "how many tensors to list without --tensors");
  cmd->callback([opts] { ExitCode() = RunInspect(*opts); });
}

}  // namespace llmhost::cli
