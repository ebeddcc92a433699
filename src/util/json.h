// Every JSON document llmhost reads goes through these functions: one
// nesting limit for all of them, and a size cap chosen per entry point.
//
// nlohmann's parser itself is iterative, but copying, dumping, comparing and
// converting values recurse: a document nested 100,000 deep would overflow
// the stack later, far from where it was read. The depth is therefore
// checked on the text, before parsing, by a scan that stops as soon as the
// limit is passed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

// The deepest nesting of arrays and objects any document may have.
inline constexpr int kJsonMaxDepth = 128;

// Size caps, by entry point.
inline constexpr size_t kJsonModelFileMaxBytes = size_t{16} << 20;   // config.json, generation_config.json,
                                                                      // tokenizer_config.json, chat_template.json,
                                                                      // *.safetensors.index.json
inline constexpr size_t kJsonTokenizerMaxBytes = size_t{256} << 20;  // tokenizer.json (real ones reach ~33 MB)
inline constexpr size_t kJsonSettingsMaxBytes = size_t{16} << 20;    // settings.json, model_settings.json

// The deepest nesting of arrays/objects in `text` (strings skipped), or the
// first depth above `limit` once one is reached.
int JsonNestingDepth(std::string_view text, int limit = kJsonMaxDepth);

// Parses one JSON document of at most `max_bytes` bytes and kJsonMaxDepth
// levels. InvalidArgument prefixed with `what` ("PUT body", a file name):
// "...: not valid JSON: parse error at line 1, column 9: ...", "...: nests
// deeper than 128 levels", "...: 20000000 bytes, more than the 16777216 allowed".
Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what, size_t max_bytes);
Result<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, std::string_view what, size_t max_bytes);

// Reads and parses a file (reading stops past `max_bytes`). NotFound /
// IOError when it cannot be read; Corruption naming the file when it is not
// a document within the limits.
Result<nlohmann::json> ReadJsonFile(const std::string& path, size_t max_bytes);
Result<nlohmann::ordered_json> ReadOrderedJsonFile(const std::string& path, size_t max_bytes);

}  // namespace llmhost
