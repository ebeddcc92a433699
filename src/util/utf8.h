// UTF-8 encoding and decoding. Invalid sequences decode as U+FFFD one byte at a
// time, as Python's `errors="replace"` does for most inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmhost::utf8 {

constexpr char32_t kReplacement = 0xFFFD;

// Decodes one code point at s[*pos] and advances *pos past it (at least 1 byte).
char32_t DecodeOne(std::string_view s, size_t* pos);
// Appends the UTF-8 encoding of cp (surrogates and > 0x10FFFF become U+FFFD).
void Append(std::string* out, char32_t cp);
std::string Encode(char32_t cp);
std::u32string Decode(std::string_view s);
std::string Encode(std::u32string_view s);
// True when s is well-formed UTF-8 (no overlongs, no surrogates).
bool IsValid(std::string_view s);
// Length in bytes of a UTF-8 sequence from its lead byte (1 for invalid leads).
size_t SequenceLength(uint8_t lead);
// Number of bytes at the end of s that form an incomplete (but so far valid)
// multi-byte sequence: 0 when s ends on a character boundary.
size_t IncompleteTailLength(std::string_view s);
// Number of code points (invalid bytes count one each).
size_t CodePointCount(std::string_view s);

}  // namespace llmhost::utf8
