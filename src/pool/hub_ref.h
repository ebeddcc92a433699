// What `llmhost pull` is asked for: "ORG/NAME", "ORG/NAME@REVISION",
// "ORG/NAME:QUANT" (one GGUF file by its quantization, as Ollama and
// llama.cpp's -hf take it) or "ORG/NAME@REVISION:QUANT".
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace llmhost {

struct HubRef {
  std::string repo;               // "ORG/NAME"
  std::string revision = "main";  // a branch, tag or commit hash
  std::string quant;              // "Q4_K_M"; "" for none
};

// InvalidArgument naming the text when the repository is not ORG/NAME of
// letters, digits, '-', '_', '.' (no "..", at most 96 characters each), or
// the revision or quantization holds characters other than those and '/'.
Result<HubRef> ParseHubRef(std::string_view text);

// True for a full 40-hex-digit commit hash.
bool IsCommitHash(std::string_view s);

}  // namespace llmhost
