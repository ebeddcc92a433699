// Sub-command registration. Each Register* function adds one group of
// sub-commands to the app; the callback of each sub-command runs it and exits
// with its status (0 success, 1 failure with a message on stderr, 2 usage).
#pragma once

#include <CLI/CLI.hpp>

namespace llmhost::cli {

void RegisterTokenizerCommands(CLI::App& app);  // tokenize, detokenize
void RegisterTemplateCommands(CLI::App& app);   // render-template
void RegisterInspectCommands(CLI::App& app);    // inspect
void RegisterScoreCommands(CLI::App& app);      // score
void RegisterGenerateCommands(CLI::App& app);   // generate
void RegisterServeCommands(CLI::App& app);      // serve
void RegisterSynthCommands(CLI::App& app);      // synth-model
void RegisterParseOutputCommands(CLI::App& app);  // parse-output
void RegisterGrammarCheckCommands(CLI::App& app);  // grammar-check
void RegisterPullCommands(CLI::App& app);         // pull
void RegisterClientCommands(CLI::App& app);        // ls, ps, show, run, rm (a running server; run, rm without)
void RegisterBenchCommands(CLI::App& app);         // bench (against a running server)

// Sub-commands set this from their callbacks; main() returns it.
int& ExitCode();

}  // namespace llmhost::cli
