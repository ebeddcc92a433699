// The models of this machine's model directories, for the commands that work
// without a server (`rm`, `run` and `bench` when none answers): the
// directories as `llmhost serve` resolves them (--model-dir, --home,
// LLMHOST_* environment, settings.json; default <home>/models).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "pool/model_discovery.h"
#include "util/status.h"

namespace llmhost::cli {

struct LocalModelOptions {
  std::string home;
  std::vector<std::string> model_dirs;
};

void AddLocalModelOptions(CLI::App* cmd, LocalModelOptions* o);

// The model directories, and what discovery finds in them.
Result<std::vector<std::string>> LocalModelDirs(const LocalModelOptions& o);
Result<std::vector<DiscoveredModel>> LocalModels(const LocalModelOptions& o);

// `name` as a discovered model's name (pool/model_removal.h's FindModelByName),
// else as a path to a model folder or .gguf file. NotFound listing the models.
Result<std::string> LocalModelPath(const LocalModelOptions& o, const std::string& name);

}  // namespace llmhost::cli
