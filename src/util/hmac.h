// HMAC-SHA-256 (RFC 2104 over util/sha256.h) and a comparison whose time
// does not depend on where two strings first differ.
#pragma once

#include <string_view>

#include "util/sha256.h"

namespace llmhost {

Sha256Digest HmacSha256(std::string_view key, std::string_view message);

// True when `a` == `b`. The time depends on the lengths only, never on the
// contents: for secrets compared against guesses (MACs, tokens).
bool ConstantTimeEqual(std::string_view a, std::string_view b);

}  // namespace llmhost
