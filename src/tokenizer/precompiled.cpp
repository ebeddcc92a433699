#include "tokenizer/precompiled.h"

namespace llmhost::tok {

Result<std::unique_ptr<Normalizer>> MakePrecompiledNormalizer(const std::string& charsmap_b64,
                                                              const std::string& ctx) {
  return Status::NotSupported(ctx + ": Precompiled normalizer is not supported yet");
}

}  // namespace llmhost::tok
