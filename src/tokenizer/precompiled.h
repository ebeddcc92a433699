// SentencePiece "precompiled_charsmap" normalizer (T5, XLM-R, ALBERT...).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/normalizer.h"

namespace llmhost::tok {

// `charsmap_b64` is the base64 blob of tokenizer.json; empty means identity.
Result<std::unique_ptr<Normalizer>> MakePrecompiledNormalizer(const std::string& charsmap_b64,
                                                              const std::string& ctx);

}  // namespace llmhost::tok
