#include "grammar/json_string_chars.h"

#include <string>

namespace llmhost::grammar {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// A hex digit in either case, within [lo, hi] (values 0..15).
NodeId HexDigit(Grammar& g, int lo, int hi) {
  std::vector<ByteRange> ranges;
  for (int v = lo; v <= hi; ++v) {
    ranges.push_back({static_cast<uint8_t>(kHex[v]), static_cast<uint8_t>(kHex[v])});
    if (v >= 10)
      ranges.push_back({static_cast<uint8_t>(kHex[v] - 'a' + 'A'), static_cast<uint8_t>(kHex[v] - 'a' + 'A')});
  }
  return g.Bytes(std::move(ranges));
}

// The escape of a control character or of " and \: the short form where
// JSON has one, and \u00XX.
NodeId EscapeOf(Grammar& g, char32_t c) {
  std::vector<NodeId> alts;
  switch (c) {
    case '"':
      alts.push_back(g.Literal("\\\""));
      break;
    case '\\':
      alts.push_back(g.Literal("\\\\"));
      break;
    case '\b':
      alts.push_back(g.Literal("\\b"));
      break;
    case '\f':
      alts.push_back(g.Literal("\\f"));
      break;
    case '\n':
      alts.push_back(g.Literal("\\n"));
      break;
    case '\r':
      alts.push_back(g.Literal("\\r"));
      break;
    case '\t':
      alts.push_back(g.Literal("\\t"));
      break;
    default:
      break;
  }
  int v = static_cast<int>(c);
  alts.push_back(g.Seq({g.Literal("\\u00"), HexDigit(g, v >> 4, v >> 4), HexDigit(g, v & 15, v & 15)}));
  return g.Alt(std::move(alts));
}

}  // namespace

NodeId JsonStringChar(Grammar& g, const CodepointSet& set) {
  CodepointSet must_escape = CodepointSet::Of(0, 0x1F);
  must_escape.Add('"', '"');
  must_escape.Add('\\', '\\');
  if (set == CodepointSet::All()) return AnyJsonStringChar(g);
  std::vector<NodeId> alts;
  CodepointSet raw = set.Minus(must_escape);
  if (!raw.empty()) alts.push_back(g.Codepoints(raw.ranges()));
  if (set.Contains('/')) alts.push_back(g.Literal("\\/"));
  for (const auto& r : set.ranges()) {
    for (char32_t c = r.lo; c <= r.hi && c < 0x80; ++c) {
      if (must_escape.Contains(c)) alts.push_back(EscapeOf(g, c));
    }
  }
  return g.Alt(std::move(alts));
}

NodeId AnyJsonStringChar(Grammar& g) {
  CodepointSet raw = CodepointSet::All().Minus(CodepointSet::Of(0, 0x1F));
  raw = raw.Minus(CodepointSet::Of('"', '"')).Minus(CodepointSet::Of('\\', '\\'));
  NodeId hex = HexDigit(g, 0, 15);
  // \uXXXX outside the surrogates: 0-C, D0-D7, E-F as the first digits.
  NodeId bmp =
      g.Alt({g.Seq({HexDigit(g, 0, 12), hex, hex, hex}), g.Seq({HexDigit(g, 13, 13), HexDigit(g, 0, 7), hex, hex}),
             g.Seq({HexDigit(g, 14, 15), hex, hex, hex})});
  NodeId pair = g.Seq({HexDigit(g, 13, 13), HexDigit(g, 8, 11), hex, hex, g.Literal("\\u"), HexDigit(g, 13, 13),
                       HexDigit(g, 12, 15), hex, hex});
  NodeId escape = g.Seq(
      {g.Byte('\\'),
       g.Alt(
           {g.Bytes({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}}),
            g.Seq({g.Byte('u'), g.Alt({bmp, pair})})})});
  return g.Alt({g.Codepoints(raw.ranges()), escape});
}

}  // namespace llmhost::grammar
