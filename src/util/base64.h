// Standard base64 (RFC 4648, with padding).
#pragma once

#include <string>
#include <string_view>

namespace llmhost {

std::string Base64Encode(std::string_view bytes);

}  // namespace llmhost
