// Hermes / Qwen2.5 / Qwen3: one call per block,
//   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
// and several blocks in a turn.
#include "chat/json_scan.h"
#include "chat/markup_scan.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

BlockParse ReadHermes(std::string_view block, const BlockContext& ctx) {
  size_t i = markup::SkipSpace(block, kOpen.size());
  if (i >= block.size()) return NeedMore();
  if (block[i] != '{') return MalformedThrough(block, i, kClose, ctx);
  json_scan::CallObject call = json_scan::ScanCallObject(block, i, {"name"}, {"arguments", "parameters"});
  if (call.state == json_scan::State::kError) return MalformedThrough(block, i, kClose, ctx);
  PartialCall partial{"", call.name_known ? call.name : "", call.arguments};
  if (call.state == json_scan::State::kIncomplete) return NeedMore({partial});
  size_t j = markup::SkipSpace(block, call.end);
  switch (markup::MatchAt(block, j, kClose)) {
    case markup::Match::kYes: return Done(j + kClose.size(), {partial});
    case markup::Match::kNeedMore: return NeedMore({partial});
    case markup::Match::kNo: break;
  }
  return MalformedThrough(block, j, kClose, ctx);
}

}  // namespace

FormatSpec HermesSpec() {
  FormatSpec spec;
  spec.content_markers = {{std::string(kOpen), Marker::Kind::kBlock, false}};
  spec.read_block = ReadHermes;
  for (std::string_view m : {kOpen, kClose}) spec.inner_markup.emplace_back(m);
  return spec;
}

}  // namespace llmhost
