#include "cli/commands.h"

namespace llmhost::cli {

// Not yet written: registers no sub-commands.
void RegisterTemplateCommands(CLI::App& app) {}

}  // namespace llmhost::cli
