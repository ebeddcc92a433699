#include "util/url.h"

#include <cctype>
#include <vector>

namespace llmhost {

namespace {

int DefaultPort(std::string_view scheme) { return scheme == "https" ? 443 : 80; }

bool HasForbiddenChar(std::string_view s) {
  for (unsigned char c : s) {
    if (c <= 0x20 || c == 0x7f) return true;
  }
  return false;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Removes "." and ".." segments from an absolute path (RFC 3986 5.2.4).
std::string RemoveDotSegments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 1;  // past the leading '/'
  bool trailing_slash = false;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view seg = path.substr(i, j - i);
    trailing_slash = false;
    if (seg == ".") {
      trailing_slash = true;
    } else if (seg == "..") {
      if (!out.empty()) out.pop_back();
      trailing_slash = true;
    } else {
      out.push_back(seg);
    }
    i = j + 1;
  }
  std::string result;
  for (std::string_view seg : out) {
    result += '/';
    result += seg;
  }
  if (result.empty() || trailing_slash) result += '/';
  return result;
}

// Splits "path?query" so that dot segments are removed from the path only.
std::string NormalizeTarget(std::string_view target) {
  size_t q = target.find('?');
  std::string path = RemoveDotSegments(target.substr(0, q));
  if (q != std::string_view::npos) path += target.substr(q);
  return path;
}

}  // namespace

std::string Url::Authority() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port != DefaultPort(scheme)) h.append(":").append(std::to_string(port));
  return h;
}

std::string Url::ToString() const { return scheme + "://" + Authority() + target; }

Result<Url> ParseUrl(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("URL '" + std::string(text) + "': " + why);
  };
  if (HasForbiddenChar(text)) return bad("contains a space or a control character");
  size_t sep = text.find("://");
  if (sep == std::string_view::npos) return bad("not an absolute http:// or https:// URL");
  Url url;
  url.scheme = Lower(text.substr(0, sep));
  if (url.scheme != "http" && url.scheme != "https") return bad("scheme '" + url.scheme + "' is not http or https");
  std::string_view rest = text.substr(sep + 3);
  rest = rest.substr(0, rest.find('#'));
  size_t path_at = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, path_at);
  std::string_view target = path_at == std::string_view::npos ? std::string_view() : rest.substr(path_at);
  if (authority.find('@') != std::string_view::npos) return bad("user info in URLs is not supported");
  std::string_view port_text;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 address");
    url.host = Lower(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("junk after the IPv6 address");
      port_text = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    url.host = Lower(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (url.host.empty()) return bad("no host");
  for (char c : url.host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' && c != ':') {
      return bad("bad character in the host");
    }
  }
  url.port = DefaultPort(url.scheme);
  if (!port_text.empty()) {
    if (port_text.size() > 5) return bad("bad port");
    int port = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return bad("bad port");
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) return bad("port out of range");
    url.port = port;
  }
  url.target = target.empty() || target[0] == '?' ? std::string("/").append(target) : std::string(target);
  url.target = NormalizeTarget(url.target);
  return url;
}

Result<Url> ResolveUrl(const Url& base, std::string_view location) {
  if (HasForbiddenChar(location)) {
    return Status::InvalidArgument("redirect location '" + std::string(location) + "': contains a space or a control character");
  }
  location = location.substr(0, location.find('#'));
  // A scheme ("http:") before any '/', '?': an absolute URL.
  size_t colon = location.find(':');
  if (colon != std::string_view::npos && location.find_first_of("/?") > colon) return ParseUrl(location);
  if (location.substr(0, 2) == "//") return ParseUrl(base.scheme + ":" + std::string(location));
  Url url = base;
  if (location.empty()) return url;
  if (location[0] == '/') {
    url.target = NormalizeTarget(location);
  } else if (location[0] == '?') {
    url.target = base.target.substr(0, base.target.find('?')) + std::string(location);
  } else {
    std::string path = base.target.substr(0, base.target.find('?'));
    path = path.substr(0, path.rfind('/') + 1);  // the base's directory
    url.target = NormalizeTarget(path + std::string(location));
  }
  return url;
}

std::string PercentEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace llmhost
