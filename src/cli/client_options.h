// The options of the commands that talk to a running server: --url
// (LLMHOST_URL, default http://127.0.0.1:8000; https:// too) and --api-key
// (LLMHOST_API_KEY: the first of a comma-separated list).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace llmhost::cli {

struct ClientOptions {
  std::string url;
  std::string api_key;
};

void AddClientOptions(CLI::App* cmd, ClientOptions* o);

// The server's error text from a reply body (OpenAI's, Anthropic's or Ollama's shape).
std::string ErrorText(const std::string& body);

}  // namespace llmhost::cli
