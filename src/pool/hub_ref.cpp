#include "pool/hub_ref.h"

#include <cctype>

namespace llmhost {

namespace {

bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

bool ValidName(std::string_view s) {
  if (s.empty() || s.size() > 96 || s.find("..") != std::string_view::npos || s.front() == '.' ||
      s.front() == '-') {
    return false;
  }
  for (char c : s) {
    if (!NameChar(c)) return false;
  }
  return true;
}

// Branch and tag names: name characters and '/', no "..", no empty segment.
bool ValidRevision(std::string_view s) {
  if (s.empty() || s.size() > 256 || s.find("..") != std::string_view::npos || s.front() == '/' ||
      s.back() == '/' || s.find("//") != std::string_view::npos) {
    return false;
  }
  for (char c : s) {
    if (!NameChar(c) && c != '/') return false;
  }
  return true;
}

}  // namespace

bool IsCommitHash(std::string_view s) {
  if (s.size() != 40) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

Result<HubRef> ParseHubRef(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(std::string("'").append(text) + "': " + why +
                                   " (expected ORG/NAME, ORG/NAME@REVISION or ORG/NAME:QUANT)");
  };
  HubRef ref;
  std::string_view rest = text;
  if (size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    ref.quant = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (!ValidName(ref.quant)) return bad("bad quantization '" + ref.quant + "'");
  }
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    ref.revision = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (!ValidRevision(ref.revision)) return bad("bad revision '" + ref.revision + "'");
  }
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return bad("no organization");
  std::string_view org = rest.substr(0, slash), name = rest.substr(slash + 1);
  if (!ValidName(org)) return bad("bad organization '" + std::string(org) + "'");
  if (!ValidName(name)) return bad("bad model name '" + std::string(name) + "'");
  ref.repo = std::string(rest);
  return ref;
}

}  // namespace llmhost
