// GGUF-embedded vocabularies (tokenizer.ggml.*). Implemented by the GGUF
// vocabulary work; Tokenizer::FromPath calls it for .gguf files and for model
// directories that hold a single .gguf and no tokenizer.json.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost {

// Loads the tokenizer stored in the GGUF file at `path`.
Result<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const std::string& path);

}  // namespace llmhost
