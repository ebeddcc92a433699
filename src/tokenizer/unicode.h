// Unicode helpers for the tokenizer, mirroring the character predicates that
// Hugging Face tokenizers (Rust) uses: char::is_whitespace, is_alphanumeric,
// the general categories of the unicode_categories crate, full lowercase
// mapping per character, and the four normalization forms (through ICU).
#pragma once

#include <string>
#include <string_view>

namespace llmhost::tok {

// Replaces every invalid UTF-8 byte with U+FFFD (one per byte, as
// utf8::DecodeOne does). Valid input is returned unchanged.
std::string SanitizeUtf8(std::string_view s);

// Decodes the code point at s[*pos] (s must be valid UTF-8) and advances.
char32_t NextCodePoint(std::string_view s, size_t* pos);

bool IsWhitespace(char32_t c);      // White_Space (Rust char::is_whitespace)
bool IsAlphabetic(char32_t c);      // Alphabetic
bool IsNumeric(char32_t c);         // general category N*
bool IsAlphanumeric(char32_t c);    // Rust char::is_alphanumeric
bool IsPunctuation(char32_t c);     // general category P*
bool IsOther(char32_t c);           // general category Cc Cf Co Cs (not Cn)
bool IsMarkNonspacing(char32_t c);  // Mn
bool IsMark(char32_t c);            // M* (Mn Mc Me)
bool IsCjk(char32_t c);             // the CJK ideograph blocks BERT pads

// Appends the full lowercase mapping of c (e.g. U+0130 -> "i\u0307").
void AppendLowercase(char32_t c, std::string* out);
std::string Lowercase(std::string_view s);

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };
// Applies a normalization form to valid UTF-8 text.
std::string NormalizeForm(std::string_view s, NormalForm form);

}  // namespace llmhost::tok
