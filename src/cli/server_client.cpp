#include "cli/server_client.h"

#include "util/http_client.h"

namespace llmhost::cli {

Result<HttpReply> HttpCall(const std::string& base, const std::string& method, const std::string& path,
                           const std::string& body, const std::string& bearer_token,
                           const std::function<bool(std::string_view)>& on_body) {
  const bool scheme = base.rfind("http://", 0) == 0 || base.rfind("https://", 0) == 0;
  const size_t host_at = base.find("://") + 3;
  std::string server = base;
  while (!server.empty() && server.back() == '/') server.pop_back();
  if (!scheme || server.size() <= host_at || server.find('/', host_at) != std::string::npos) {
    return Status::InvalidArgument("'" + base + "': give the server as http://HOST[:PORT] (or https://)");
  }
  HttpGetOptions o;
  o.method = method;
  o.body = body;
  if (!body.empty()) o.headers.emplace_back("Content-Type", "application/json");
  if (!bearer_token.empty()) o.credentials.emplace_back("Authorization", "Bearer " + bearer_token);
  o.timeouts.connect_ms = 5000;
  o.timeouts.io_ms = 600000;  // a long prompt's prefill may take minutes before the first byte
  HttpReply reply;
  bool stopped = false;
  Result<HttpGetResult> r = HttpGet(server + path, o, [&](std::string_view piece) -> Status {
    if (!on_body) {
      reply.body.append(piece);
      return Status::OK();
    }
    if (on_body(piece)) return Status::OK();
    stopped = true;
    return Status::ResourceExhausted("stopped by the caller");
  });
  if (!r.ok()) {
    if (stopped) {
      reply.status = 200;
      return reply;
    }
    return r.status();
  }
  reply.status = r->head.status;
  if (reply.status < 200 || reply.status >= 300) reply.body = r->error_body;
  return reply;
}

bool NoServerListening(const Status& status) {
  return status.code() == StatusCode::kIOError && status.message().find("Connection refused") != std::string::npos;
}

}  // namespace llmhost::cli
