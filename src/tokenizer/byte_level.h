// GPT-2's byte-level alphabet: each byte maps to one printable code point
// ('!'..'~', '¡'..'¬', '®'..'ÿ' map to themselves, the other 68 bytes to
// U+0100.. in order), so that any byte string becomes a printable token text.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace llmhost::tok {

// Maps every byte of `bytes` to its alphabet character (UTF-8 encoded).
std::string ByteLevelEncode(std::string_view bytes);
// The byte for an alphabet character, or nullopt when c is not in it.
std::optional<uint8_t> ByteLevelCharToByte(char32_t c);
// Maps a token text back to bytes; false when some character is outside the
// alphabet (then *out is unspecified).
bool ByteLevelDecode(std::string_view token, std::string* out);

}  // namespace llmhost::tok
