#include "cli/commands.h"

namespace llmhost::cli {

// Not yet written: registers no sub-commands.
void RegisterInspectCommands(CLI::App& app) {}

}  // namespace llmhost::cli
