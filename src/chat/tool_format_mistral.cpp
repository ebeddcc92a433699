// Mistral: a JSON array after [TOOL_CALLS] (Mistral 7B v0.3, Nemo),
//   [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
// or, from the v11 tokenizer on (Devstral, Magistral, Ministral 3), one call
// per marker: [TOOL_CALLS]f[ARGS]{...} (with [CALL_ID]id before [ARGS] in
// some). Reasoning is [THINK]...[/THINK].
#include <algorithm>

#include "chat/json_scan.h"
#include "chat/markup_scan.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

constexpr std::string_view kToolCalls = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";

bool IsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

BlockParse ReadArray(std::string_view block, size_t i, const BlockContext& ctx) {
  std::vector<PartialCall> calls;
  auto malformed = [&] { return ctx.final ? MalformedAt(block.size()) : NeedMore(); };
  for (++i;;) {
    i = markup::SkipSpace(block, i);
    if (i >= block.size()) return NeedMore(calls);
    if (block[i] != '{') return malformed();
    json_scan::CallObject call = json_scan::ScanCallObject(block, i, {"name"}, {"arguments", "parameters"});
    if (call.state == json_scan::State::kError) return malformed();
    calls.push_back({"", call.name_known ? call.name : "", call.arguments});
    if (call.state == json_scan::State::kIncomplete) return NeedMore(calls);
    i = markup::SkipSpace(block, call.end);
    if (i >= block.size()) return NeedMore(calls);
    if (block[i] == ']') return Done(i + 1, calls);
    if (block[i] != ',') return malformed();
    ++i;
  }
}

BlockParse ReadNamed(std::string_view block, size_t i, const BlockContext& ctx) {
  size_t name_begin = i;
  while (i < block.size() && IsNameByte(block[i])) ++i;
  std::string name(block.substr(name_begin, i - name_begin));
  if (name.empty() && i < block.size()) return MalformedAt(name_begin);
  markup::Match id = markup::MatchAt(block, i, kCallId);
  if (id == markup::Match::kNeedMore && i < block.size()) return NeedMore();
  if (id == markup::Match::kYes) {  // an id we do not keep
    i += kCallId.size();
    while (i < block.size() && IsNameByte(block[i])) ++i;
  }
  switch (markup::MatchAt(block, i, kArgs)) {
    case markup::Match::kNeedMore: return NeedMore();
    case markup::Match::kNo: return MalformedAt(i);
    case markup::Match::kYes: break;
  }
  if (name.empty()) return MalformedAt(i);
  i = markup::SkipSpace(block, i + kArgs.size());
  json_scan::CallObject args = json_scan::ScanArgumentsObject(block, i);
  if (args.state == json_scan::State::kError) {
    json_scan::Span v = json_scan::ScanValue(block, i);
    if (v.state == json_scan::State::kIncomplete) return ctx.final ? MalformedAt(block.size()) : NeedMore({{"", name, ""}});
    return MalformedAt(std::max(v.end, i));
  }
  PartialCall call{"", name, args.arguments};
  if (args.state == json_scan::State::kIncomplete) return NeedMore({call});
  return Done(args.end, {call});
}

BlockParse ReadMistral(std::string_view block, const BlockContext& ctx) {
  size_t i = markup::SkipSpace(block, kToolCalls.size());
  if (i >= block.size()) return NeedMore();
  if (block[i] == '[') return ReadArray(block, i, ctx);
  return ReadNamed(block, i, ctx);
}

}  // namespace

FormatSpec MistralSpec() {
  FormatSpec spec;
  spec.content_markers = {{std::string(kToolCalls), Marker::Kind::kBlock, false}};
  spec.think_open = "[THINK]";
  spec.think_close = "[/THINK]";
  spec.read_block = ReadMistral;
  for (std::string_view m : {kToolCalls, kArgs, kCallId}) spec.inner_markup.emplace_back(m);
  return spec;
}

}  // namespace llmhost
