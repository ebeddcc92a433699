// llmhost's version, as `llmhost --version` and the APIs that report one
// (Ollama's /api/version) give it.
#pragma once

namespace llmhost {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace llmhost
