// `format` for strings, as the content between the quotes. Each format is
// an ECMAScript regex over ASCII (no character needs a JSON escape), written
// from its RFC; where the RFC's language is not regular or is very large,
// a strict subset (noted beside it). Formats nobody checks the same way
// (iri, uri-template, ...) are refused; unknown names are annotations.
#include <map>
#include <set>

#include "grammar/json_schema_compiler.h"
#include "grammar/regex_compiler.h"

namespace llmhost::grammar {
namespace {

// RFC 3339 full-date: days per month, Feb 29 in leap years only, year 0001-9999.
constexpr char kDate[] =
    "(?:(?:[1-9]\\d{3}|0[1-9]\\d{2}|00[1-9]\\d|000[1-9])-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|"
    "(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))|"
    "(?:\\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29)";
// RFC 3339 full-time, upper-case Z, no leap second (subset).
constexpr char kTime[] = "(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)";
// RFC 3339 appendix A duration.
constexpr char kDuration[] =
    "P(?:(?:\\d+Y(?:\\d+M(?:\\d+D)?)?|\\d+M(?:\\d+D)?|\\d+D)(?:T(?:\\d+H(?:\\d+M(?:\\d+S)?)?|\\d+M(?:\\d+S)?|\\d+S))?|"
    "T(?:\\d+H(?:\\d+M(?:\\d+S)?)?|\\d+M(?:\\d+S)?|\\d+S)|\\d+W)";
constexpr char kUuid[] = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
constexpr char kIpv4[] = "(?:(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
// RFC 1123 labels; at most 4 labels so the name stays within 253 octets (subset).
constexpr char kLabel[] = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
constexpr char kLabel61[] = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,59}[A-Za-z0-9])?";

std::string Ipv6() {
  // RFC 3986 IPv6address.
  std::string h = "[0-9a-fA-F]{1,4}";
  std::string ls32 = "(?:" + h + ":" + h + "|" + kIpv4 + ")";
  auto reps = [&](int n) { return "(?:" + h + ":){" + std::to_string(n) + "}"; };
  auto upto = [&](int n) { return "(?:(?:" + h + ":){0," + std::to_string(n) + "}" + h + ")?"; };
  std::vector<std::string> forms = {
      reps(6) + ls32,
      "::" + reps(5) + ls32,
      "(?:" + h + ")?::" + reps(4) + ls32,
      upto(1) + "::" + reps(3) + ls32,
      upto(2) + "::" + reps(2) + ls32,
      upto(3) + "::" + h + ":" + ls32,
      upto(4) + "::" + ls32,
      upto(5) + "::" + h,
      upto(6) + "::",
  };
  std::string out = "(?:";
  for (size_t i = 0; i < forms.size(); ++i) out += (i ? "|" : "") + forms[i];
  return out + ")";
}

std::string Hostname() {
  std::string l = kLabel;
  return l + "(?:\\." + l + "){0,2}(?:\\." + kLabel61 + ")?";
}

// RFC 3986 URI (IP-literal without IPvFuture).
std::string Uri() {
  std::string unreserved = "A-Za-z0-9\\-._~", subdelims = "!$&'()*+,;=";
  std::string pct = "%[0-9a-fA-F]{2}";
  std::string pchar = "(?:[" + unreserved + subdelims + ":@]|" + pct + ")";
  std::string segment = pchar + "*", segment_nz = pchar + "+";
  std::string userinfo = "(?:[" + unreserved + subdelims + ":]|" + pct + ")*";
  std::string reg_name = "(?:[" + unreserved + subdelims + "]|" + pct + ")*";
  std::string host = "(?:\\[" + Ipv6() + "\\]|" + reg_name + ")";
  std::string authority = "(?:" + userinfo + "@)?" + host + "(?::\\d*)?";
  std::string hier = "(?://" + authority + "(?:/" + segment + ")*|/(?:" + segment_nz + "(?:/" + segment + ")*)?|" +
                     segment_nz + "(?:/" + segment + ")*|)";
  std::string query = "(?:" + pchar + "|[/?])*";
  return "[A-Za-z][A-Za-z0-9+.\\-]*:" + hier + "(?:\\?" + query + ")?(?:#" + query + ")?";
}

// RFC 5321 dot-atom local part at a hostname (subset: no quoted local parts,
// no address literals).
std::string Email() {
  std::string atom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-]+";
  return atom + "(?:\\." + atom + ")*@" + Hostname();
}

const std::map<std::string, std::string>& Formats() {
  static const std::map<std::string, std::string> kFormats = {
      {"date", kDate},         {"time", kTime},          {"date-time", std::string(kDate) + "T" + kTime},
      {"duration", kDuration}, {"uuid", kUuid},          {"ipv4", kIpv4},
      {"ipv6", Ipv6()},        {"hostname", Hostname()}, {"email", Email()},
      {"uri", Uri()},
  };
  return kFormats;
}

}  // namespace

Result<std::optional<NodeId>> SchemaCompiler::Format(const std::string& format, const std::string& path) {
  static const std::set<std::string> kRefused = {"idn-email",     "idn-hostname",          "iri",
                                                 "iri-reference", "uri-reference",         "uri-template",
                                                 "json-pointer",  "relative-json-pointer", "regex"};
  if (kRefused.count(format)) return UnsupportedKeyword("format' '" + format, path);
  auto it = Formats().find(format);
  if (it == Formats().end()) return std::optional<NodeId>();
  Result<NodeId> node = CompileRegex(g_, it->second, /*search=*/false, RegexText::kUtf8);
  if (!node.ok()) return Status::Internal("format '" + format + "': " + node.status().message());
  return std::optional<NodeId>(*node);
}

}  // namespace llmhost::grammar
