// Fuzzes tokenizer.json loading: arbitrary bytes -> JSON -> Tokenizer::FromJson;
// a tokenizer that loads must then encode and decode a fixed text without
// crashing, hanging or tripping the sanitizers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  auto tok = llmhost::Tokenizer::FromJson(doc);
  if (!tok.ok()) return 0;
  static const char* kInputs[] = {"Hello world! <s> 123 h\xC3\xA9llo \xF0\x9F\xA6\x99\n\t  x", "",
                                  "\xFF\xFE bad utf8 \xC3"};
  for (const char* in : kInputs) {
    for (bool special : {false, true}) {
      std::vector<llmhost::TokenId> ids = (*tok)->Encode(in, special);
      (*tok)->Decode(ids, false);
      (*tok)->Decode(ids, true);
    }
    (*tok)->EncodePair(in, "pair", true);
  }
  std::vector<llmhost::TokenId> odd = {-1, 0, 1, 2, 3, 255, 1 << 20, 0x7FFFFFFF};
  (*tok)->Decode(odd, false);
  (*tok)->VocabSize();
  (*tok)->IdToToken(0);
  (*tok)->TokenToId("a");
  (*tok)->SpecialPrefixIds();
  (*tok)->SpecialSuffixIds();
  return 0;
}
