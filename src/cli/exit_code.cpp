#include "cli/commands.h"

namespace llmhost::cli {

int& ExitCode() {
  static int code = 0;
  return code;
}

}  // namespace llmhost::cli
