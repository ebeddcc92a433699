#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace llmhost::tok {
namespace {

struct Tables {
  std::array<char32_t, 256> byte_to_char{};
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, 512> char_to_byte{};  // all alphabet chars are < U+0200
  Tables() {
    char_to_byte.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      byte_to_char[b] = c;
      byte_to_utf8[b] = utf8::Encode(c);
      char_to_byte[c] = static_cast<int16_t>(b);
    }
  }
};

const Tables& GetTables() {
  static const Tables t;
  return t;
}

}  // namespace

std::string ByteLevelEncode(std::string_view bytes) {
  const Tables& t = GetTables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) out += t.byte_to_utf8[static_cast<uint8_t>(ch)];
  return out;
}

std::optional<uint8_t> ByteLevelCharToByte(char32_t c) {
  if (c >= 512) return std::nullopt;
  int16_t b = GetTables().char_to_byte[c];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

bool ByteLevelDecode(std::string_view token, std::string* out) {
  size_t pos = 0;
  while (pos < token.size()) {
    std::optional<uint8_t> b = ByteLevelCharToByte(NextCodePoint(token, &pos));
    if (!b) return false;
    out->push_back(static_cast<char>(*b));
  }
  return true;
}

}  // namespace llmhost::tok
