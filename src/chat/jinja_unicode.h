// Unicode helpers with Python's str semantics: code point indexing, Python's
// whitespace set, full case mappings (ICU), character classes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace llmhost::jinja {

// Decodes one code point at s[*pos] (U+FFFD for invalid bytes) and advances.
char32_t DecodeCodePoint(std::string_view s, size_t* pos);
void AppendCodePoint(std::string* out, char32_t cp);
bool IsAsciiStr(std::string_view s);
size_t CodePointLen(std::string_view s);
// Byte offset of code point `index` (<= CodePointLen); fast for ASCII.
size_t ByteOffsetOf(std::string_view s, size_t index);

// Python str.isspace() for one character (also what `\s` matches).
bool IsPySpace(char32_t cp);
// Python str.isprintable() for one character.
bool IsPrintable(char32_t cp);
bool IsAlphaCp(char32_t cp);
bool IsDecimalCp(char32_t cp);
bool IsDigitCp(char32_t cp);
bool IsNumericCp(char32_t cp);
bool IsAlnumCp(char32_t cp);
bool IsCasedCp(char32_t cp);
bool IsLowerCp(char32_t cp);
bool IsUpperCp(char32_t cp);
bool IsTitleCp(char32_t cp);
// Python regex `\w` for str patterns.
bool IsWordCp(char32_t cp);

// Python str methods that map case (full mappings, final sigma).
std::string PyUpper(std::string_view s);
std::string PyLower(std::string_view s);
std::string PyCasefold(std::string_view s);
std::string PyTitle(std::string_view s);
std::string PyCapitalize(std::string_view s);
std::string PySwapcase(std::string_view s);

// Python str.strip/lstrip/rstrip: `chars` null -> whitespace.
std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right);

}  // namespace llmhost::jinja
