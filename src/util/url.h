// URLs for the HTTP client: parsing http(s) URLs, resolving a redirect's
// Location against the URL that answered, and percent-encoding path parts.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace llmhost {

struct Url {
  std::string scheme;  // "http" or "https" (lower case)
  std::string host;    // a name, an IPv4 address, or an IPv6 address without brackets
  int port = 0;        // as given, else the scheme's default (80, 443)
  std::string target;  // path and query, always starting with '/'; no fragment

  bool tls() const { return scheme == "https"; }
  // "host" or "host:port" (port only when not the default), IPv6 in brackets:
  // the value of a Host header.
  std::string Authority() const;
  // scheme://authority/target
  std::string ToString() const;
};

// Parses an absolute http:// or https:// URL. InvalidArgument naming the URL
// for another scheme, a missing or malformed host, a bad port, user info, or
// control characters and spaces anywhere.
Result<Url> ParseUrl(std::string_view text);

// The URL a redirect's Location points at, read against `base` (RFC 3986
// reference resolution: absolute URLs, "//host/path", "/path", "?query" and
// relative paths, with "." and ".." segments removed).
Result<Url> ResolveUrl(const Url& base, std::string_view location);

// Percent-encodes every byte outside RFC 3986's unreserved set; '/' too
// unless `keep_slash` (for file paths inside a repository).
std::string PercentEncode(std::string_view s, bool keep_slash);

}  // namespace llmhost
