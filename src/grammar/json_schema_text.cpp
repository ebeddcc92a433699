// Pieces of JSON text shared by the schema compiler: whitespace, any value,
// literals of given values, and strings that avoid a set of names.
#include <map>

#include "grammar/codepoint_set.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/json_string_chars.h"
#include "util/utf8.h"

namespace llmhost::grammar {

NodeId SchemaCompiler::Ws() {
  if (!ws_) ws_ = g_.Repeat(g_.Bytes({{' ', ' '}, {'\t', '\n'}, {'\r', '\r'}}), 0, options_.max_whitespace);
  return *ws_;
}

// One node for every string of the schema: bounded ones (maxLength) then
// share the block rule that Compile makes for long counts of it.
NodeId SchemaCompiler::AnyStringChar() {
  if (!any_string_char_) any_string_char_ = AnyJsonStringChar(g_);
  return *any_string_char_;
}

// A rule of its own, which the compiler calls rather than inlines (it
// loops): every string of the schema shares one set of DFA states, and so
// their mask-cache entries, which other schemas share too
// (grammar/shared_mask_cache.h).
NodeId SchemaCompiler::AnyString() {
  if (!any_string_) {
    RuleId rule = g_.AddRule("json_string");
    g_.SetBody(rule, g_.Seq({g_.Byte('"'), g_.Repeat(AnyStringChar(), 0, -1), g_.Byte('"')}));
    any_string_ = g_.Ref(rule);
  }
  return *any_string_;
}

NodeId SchemaCompiler::AnyInteger() {
  if (!any_integer_) {
    NodeId digits = g_.Alt({g_.Byte('0'), g_.Seq({g_.Bytes({{'1', '9'}}), g_.Repeat(g_.Bytes({{'0', '9'}}), 0, -1)})});
    any_integer_ = g_.Seq({g_.Optional(g_.Byte('-')), digits});
  }
  return *any_integer_;
}

NodeId SchemaCompiler::AnyNumber() {
  if (!any_number_) {
    NodeId digits = g_.Repeat(g_.Bytes({{'0', '9'}}), 1, -1);
    NodeId fraction = g_.Optional(g_.Seq({g_.Byte('.'), digits}));
    NodeId exponent = g_.Optional(
        g_.Seq({g_.Bytes({{'E', 'E'}, {'e', 'e'}}), g_.Optional(g_.Bytes({{'+', '+'}, {'-', '-'}})), digits}));
    any_number_ = g_.Seq({AnyInteger(), fraction, exponent});
  }
  return *any_number_;
}

// value := object | array | string | number | true | false | null, where
// every token but the last of a container is followed by whitespace.
NodeId SchemaCompiler::AnyValue() {
  if (!any_value_) {
    RuleId rule = g_.AddRule("json_value");
    any_value_ = rule;
    NodeId value = g_.Ref(rule);
    NodeId ws = Ws();
    NodeId comma = g_.Seq({g_.Byte(','), ws});
    NodeId member = g_.Seq({AnyString(), ws, g_.Byte(':'), ws, value, ws});
    NodeId members = g_.Seq({member, g_.Repeat(g_.Seq({comma, member}), 0, -1)});
    NodeId object = g_.Seq({g_.Byte('{'), ws, g_.Optional(members), g_.Byte('}')});
    NodeId item = g_.Seq({value, ws});
    NodeId items = g_.Seq({item, g_.Repeat(g_.Seq({comma, item}), 0, -1)});
    NodeId array = g_.Seq({g_.Byte('['), ws, g_.Optional(items), g_.Byte(']')});
    g_.SetBody(rule, g_.Alt({object, array, AnyString(), AnyNumber(), g_.Literal("true"), g_.Literal("false"),
                             g_.Literal("null")}));
  }
  return g_.Ref(*any_value_);
}

NodeId SchemaCompiler::AnyObject() {
  NodeId ws = Ws();
  NodeId member = g_.Seq({AnyString(), ws, g_.Byte(':'), ws, AnyValue(), ws});
  NodeId members = g_.Seq({member, g_.Repeat(g_.Seq({g_.Byte(','), ws, member}), 0, -1)});
  return g_.Seq({g_.Byte('{'), ws, g_.Optional(members), g_.Byte('}')});
}

NodeId SchemaCompiler::StringLiteral(std::string_view value) {
  std::vector<NodeId> parts{g_.Byte('"')};
  for (size_t pos = 0; pos < value.size();) {
    char32_t cp = utf8::DecodeOne(value, &pos);
    parts.push_back(JsonStringChar(g_, CodepointSet::Of(cp, cp)));
  }
  parts.push_back(g_.Byte('"'));
  return g_.Seq(std::move(parts));
}

NodeId SchemaCompiler::ValueLiteral(const Json& value) {
  NodeId ws = Ws();
  if (value.is_string()) return StringLiteral(value.get_ref<const std::string&>());
  if (value.is_array() || value.is_object()) {
    bool object = value.is_object();
    std::vector<NodeId> parts{g_.Byte(object ? '{' : '['), ws};
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first) parts.insert(parts.end(), {g_.Byte(','), ws});
      first = false;
      if (object) parts.insert(parts.end(), {StringLiteral(it.key()), ws, g_.Byte(':'), ws});
      parts.insert(parts.end(), {ValueLiteral(*it), ws});
    }
    parts.push_back(g_.Byte(object ? '}' : ']'));
    return g_.Seq(std::move(parts));
  }
  return g_.Literal(value.dump());
}

// A trie of the names over code points; each trie node's language is: the
// end (unless a name ends there), a child's character then that child's
// language, or any other character then anything. Built leaves first, so
// long names need no recursion.
NodeId SchemaCompiler::StringExcept(const std::vector<std::string>& names) {
  struct TrieNode {
    bool terminal = false;
    std::map<char32_t, size_t> children;
  };
  std::vector<TrieNode> trie(1);
  for (const std::string& name : names) {
    size_t at = 0;
    for (size_t pos = 0; pos < name.size();) {
      char32_t cp = utf8::DecodeOne(name, &pos);
      auto it = trie[at].children.find(cp);
      if (it == trie[at].children.end()) {
        trie.push_back({});
        it = trie[at].children.emplace(cp, trie.size() - 1).first;
      }
      at = it->second;
    }
    trie[at].terminal = true;
  }
  NodeId rest = g_.Repeat(AnyStringChar(), 0, -1);
  // The escapes JSON requires, shared by every trie node whose children
  // need none (names are rarely made of controls, quotes or backslashes).
  CodepointSet must_escape = CodepointSet::Of(0, 0x1F);
  must_escape.Add('"', '"');
  must_escape.Add('\\', '\\');
  NodeId escapes = JsonStringChar(g_, must_escape);
  std::vector<NodeId> lang(trie.size());
  for (size_t i = trie.size(); i-- > 0;) {
    std::vector<NodeId> alts;
    if (!trie[i].terminal) alts.push_back(g_.Empty());
    CodepointSet others = CodepointSet::All();
    bool plain_children = true;
    for (const auto& [cp, child] : trie[i].children) {
      alts.push_back(g_.Seq({JsonStringChar(g_, CodepointSet::Of(cp, cp)), lang[child]}));
      others = others.Minus(CodepointSet::Of(cp, cp));
      if (must_escape.Contains(cp) || cp == '/') plain_children = false;
    }
    NodeId other = plain_children
                       ? g_.Alt({g_.Codepoints(others.Minus(must_escape).ranges()), escapes, g_.Literal("\\/")})
                       : JsonStringChar(g_, others);
    alts.push_back(g_.Seq({other, rest}));
    lang[i] = g_.Alt(std::move(alts));
  }
  return g_.Seq({g_.Byte('"'), lang[0], g_.Byte('"')});
}

// One Repeat node whatever the count: Compile lowers long ones into block
// rules (grammar/repeat_lowering.h), where a chain of repeats here would parse
// ambiguously ({0,n}{0,n}... splits a count many ways).
Result<NodeId> SchemaCompiler::RepeatCount(NodeId child, uint64_t min, int64_t max, const std::string& path) {
  constexpr uint64_t kMaxCount = kMaxRepeat;
  if (min > kMaxCount || (max >= 0 && static_cast<uint64_t>(max) > kMaxCount))
    return BadSchema(path, "a count above " + std::to_string(kMaxCount) + " cannot be enforced");
  if (max >= 0 && static_cast<uint64_t>(max) < min) return BadSchema(path, "a minimum count above the maximum");
  return g_.Repeat(child, static_cast<int32_t>(min), static_cast<int32_t>(max));
}

}  // namespace llmhost::grammar
