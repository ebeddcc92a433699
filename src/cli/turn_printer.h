// How `llmhost run` shows an assistant turn on stdout, whether it comes from
// a server or from the model in this process: reasoning first (dimmed on a
// terminal, after "Thinking: " otherwise), a blank line, then the answer;
// flushed piece by piece.
#pragma once

#include <string>

namespace llmhost::cli {

class TurnPrinter {
 public:
  TurnPrinter();
  void Reasoning(const std::string& text);
  void Content(const std::string& text);  // also kept in reply()
  // Ends the turn's line (and the dimming).
  void Finish();
  const std::string& reply() const { return reply_; }

 private:
  bool tty_;
  bool in_reasoning_ = false;
  std::string reply_;
};

}  // namespace llmhost::cli
