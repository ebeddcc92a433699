#include "cli/client_options.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

namespace llmhost::cli {

void AddClientOptions(CLI::App* cmd, ClientOptions* o) {
  const char* env_url = std::getenv("LLMHOST_URL");
  o->url = env_url && *env_url ? env_url : "http://127.0.0.1:8000";
  const char* env_key = std::getenv("LLMHOST_API_KEY");
  // LLMHOST_API_KEY may list several keys (serve's form): the first is ours.
  if (env_key && *env_key) o->api_key = std::string(env_key).substr(0, std::string(env_key).find(','));
  cmd->add_option("--url", o->url, "The server (LLMHOST_URL)")->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "Its API key (LLMHOST_API_KEY)");
}

std::string ErrorText(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const nlohmann::json& e = j["error"];
    if (e.is_string()) return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
  }
  return body;
}

}  // namespace llmhost::cli
