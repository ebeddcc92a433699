#include "server/host_guard.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace llmhost::server {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

ApiError Forbidden(std::string message) { return ErrorWithStatus(403, std::move(message), "forbidden"); }

}  // namespace

std::string HostWithoutPort(std::string_view h) {
  while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.remove_prefix(1);
  while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.remove_suffix(1);
  if (h.empty()) return "";
  std::string_view host = h;
  if (h.front() == '[') {
    const size_t close = h.find(']');
    if (close == std::string_view::npos) return "";
    host = h.substr(1, close - 1);
    std::string_view rest = h.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return "";
  } else if (std::count(h.begin(), h.end(), ':') == 1) {
    host = h.substr(0, h.find(':'));
  }
  std::string out = Lower(host);
  if (!out.empty() && out.back() == '.') out.pop_back();  // "localhost." is localhost
  return out;
}

bool IsLoopbackName(const std::string& host) {
  if (host == "localhost" || EndsWith(host, ".localhost")) return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    static const uint8_t kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (std::memcmp(v6.s6_addr, kLoopback, 16) == 0) return true;
    static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(v6.s6_addr, kMapped, 12) == 0 && v6.s6_addr[12] == 127;
  }
  return false;
}

HostGuard::HostGuard(const std::string& listen_host, bool open, std::vector<std::string> allowed_hosts,
                     const CorsPolicy* cors)
    : cors_(cors) {
  for (const std::string& h : allowed_hosts) {
    std::string n = h == "*" ? h : HostWithoutPort(h);
    if (!n.empty()) allowed_hosts_.push_back(std::move(n));
  }
  const bool any_host = std::find(allowed_hosts_.begin(), allowed_hosts_.end(), "*") != allowed_hosts_.end();
  check_host_ = open && !any_host && IsLoopbackName(HostWithoutPort(listen_host));
  check_origin_ = open;
}

bool HostGuard::HostAllowed(std::string_view host_header) const {
  const std::string host = HostWithoutPort(host_header);
  if (host.empty()) return false;
  if (IsLoopbackName(host)) return true;
  return std::find(allowed_hosts_.begin(), allowed_hosts_.end(), host) != allowed_hosts_.end();
}

MaybeError HostGuard::Check(const HttpRequest& request) const {
  const std::string_view host = request.Header("host");
  if (check_host_ && !host.empty() && !HostAllowed(host)) {
    return Forbidden("Host '" + std::string(host) +
                     "' is not allowed: this server listens on a loopback address without an API key and "
                     "answers only localhost names and loopback addresses (add the name with --allowed-hosts, "
                     "or set --api-key)");
  }
  const std::string origin(request.Header("origin"));
  if (check_origin_ && !origin.empty() && !(cors_ && cors_->Allowed(origin))) {
    // Same origin: the page was served by this server (scheme://Host).
    const size_t scheme = origin.find("://");
    const bool same = scheme != std::string::npos && !host.empty() &&
                      Lower(origin.substr(scheme + 3)) == Lower(host);
    if (!same) {
      return Forbidden("cross-origin request from '" + origin +
                       "' refused: allow the origin with --cors-origins, or set --api-key");
    }
  }
  return std::nullopt;
}

}  // namespace llmhost::server
