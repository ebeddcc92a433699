// Fuzzes the output parser: random bytes as model output, with a format,
// options and piece size taken from the first two bytes. Must never crash,
// and feeding whole or in pieces must give the identical result
// (output_parser_check.h); aborts on any mismatch.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "output_parser_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // the invariant is about markup, not size (blocks are re-read per piece)
  std::string problem = llmhost::fuzzcheck::Check(data, size);
  if (!problem.empty()) {
    std::fprintf(stderr, "output parser: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
