#include "cli/turn_printer.h"

#include <unistd.h>

#include <cstdio>

namespace llmhost::cli {

TurnPrinter::TurnPrinter() : tty_(isatty(fileno(stdout)) == 1) {}

void TurnPrinter::Reasoning(const std::string& text) {
  if (text.empty()) return;
  if (!in_reasoning_) std::printf("%s", tty_ ? "\x1b[2m" : "Thinking: ");
  in_reasoning_ = true;
  std::printf("%s", text.c_str());
  std::fflush(stdout);
}

void TurnPrinter::Content(const std::string& text) {
  if (text.empty()) return;
  if (in_reasoning_) std::printf("%s", tty_ ? "\x1b[0m\n\n" : "\n\n");
  in_reasoning_ = false;
  reply_ += text;
  std::printf("%s", text.c_str());
  std::fflush(stdout);
}

void TurnPrinter::Finish() {
  if (in_reasoning_ && tty_) std::printf("\x1b[0m");
  in_reasoning_ = false;
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace llmhost::cli
