// HostGuard: keeps web pages away from a server that trusts whoever can
// connect to it (no --api-key).
//
//  - DNS rebinding: a page on evil.example can have its name resolve to
//    127.0.0.1 and then read a loopback server's responses as same-origin.
//    Its requests still carry "Host: evil.example". A server listening on a
//    loopback address without API keys therefore answers only requests whose
//    Host is a loopback name or address (localhost, *.localhost, 127.0.0.0/8,
//    [::1]) or one of --allowed-hosts ("*": any). Requests without a Host
//    header (HTTP/1.0 tools) are not from a browser and pass.
//  - Cross-site requests: any page can send a "simple" POST (no preflight)
//    to http://127.0.0.1:8000/admin/api/models/x/unload. Without API keys, a
//    request whose Origin is neither the server's own (Origin's host = Host)
//    nor allowed by --cors-origins is refused before it does anything.
// Both answer 403 with a message that names the flag to change.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/cors.h"
#include "server/http_types.h"

namespace llmhost::server {

class HostGuard {
 public:
  // `listen_host`: the address the server listens on; `open`: no API keys.
  HostGuard(const std::string& listen_host, bool open, std::vector<std::string> allowed_hosts,
            const CorsPolicy* cors);
  MaybeError Check(const HttpRequest& request) const;

 private:
  bool HostAllowed(std::string_view host_header) const;
  bool check_host_ = false;
  bool check_origin_ = false;
  std::vector<std::string> allowed_hosts_;  // lower case, no port
  const CorsPolicy* cors_;
};

// "Example.COM:8000" → "example.com"; "[::1]:8000" → "::1"; "" when malformed.
std::string HostWithoutPort(std::string_view host_header);
// localhost, *.localhost, 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z).
bool IsLoopbackName(const std::string& host);

}  // namespace llmhost::server
