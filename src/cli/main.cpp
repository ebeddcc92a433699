// llmhost: one binary, sub-commands for serving and for debugging models.
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "util/version.h"

int main(int argc, char** argv) {
  CLI::App app{"llmhost: an LLM inference server for Linux (CPU and NVIDIA GPUs).\n"
               "Serves a folder of models behind OpenAI- and Anthropic-compatible APIs."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("llmhost ") + llmhost::kVersion);
  llmhost::cli::RegisterTokenizerCommands(app);
  llmhost::cli::RegisterTemplateCommands(app);
  llmhost::cli::RegisterInspectCommands(app);
  llmhost::cli::RegisterScoreCommands(app);
  llmhost::cli::RegisterGenerateCommands(app);
  llmhost::cli::RegisterServeCommands(app);
  llmhost::cli::RegisterSynthCommands(app);
  llmhost::cli::RegisterParseOutputCommands(app);
  llmhost::cli::RegisterGrammarCheckCommands(app);
  llmhost::cli::RegisterPullCommands(app);
  llmhost::cli::RegisterClientCommands(app);
  llmhost::cli::RegisterBenchCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llmhost: %s\n", e.what());
    return 1;
  }
  return llmhost::cli::ExitCode();
}
