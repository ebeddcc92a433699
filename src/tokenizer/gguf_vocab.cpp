// Temporary stub so the layer links until the GGUF vocabulary is implemented
// (that work replaces this file).
#include "tokenizer/gguf_vocab.h"

namespace llmhost {

Result<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const std::string& path) {
  return Status::NotSupported(path + ": GGUF vocabularies not yet supported");
}

}  // namespace llmhost
