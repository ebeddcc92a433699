#include "cli/commands.h"

namespace llmhost::cli {

// Not yet written: registers no sub-commands.
void RegisterTokenizerCommands(CLI::App& app) {}

}  // namespace llmhost::cli
