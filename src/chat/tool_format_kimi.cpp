// Kimi-K2: a calls section whose calls carry their own ids,
//   <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
//   <|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>
#include "chat/json_scan.h"
#include "chat/markup_scan.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

constexpr std::string_view kSectionBegin = "<|tool_calls_section_begin|>";
constexpr std::string_view kSectionEnd = "<|tool_calls_section_end|>";
constexpr std::string_view kCallBegin = "<|tool_call_begin|>";
constexpr std::string_view kArgBegin = "<|tool_call_argument_begin|>";
constexpr std::string_view kCallEnd = "<|tool_call_end|>";
constexpr size_t kMaxId = 256;

// "functions.get_weather:0" -> "get_weather".
std::string NameFromId(std::string_view id) {
  if (id.substr(0, 10) == "functions.") id.remove_prefix(10);
  size_t colon = id.rfind(':');
  if (colon != std::string_view::npos) id = id.substr(0, colon);
  return std::string(id);
}

BlockParse ReadKimi(std::string_view block, const BlockContext& ctx) {
  std::vector<PartialCall> calls;
  auto bad = [&](size_t from) { return MalformedThrough(block, from, kSectionEnd, ctx); };
  size_t i = kSectionBegin.size();
  for (;;) {
    i = markup::SkipSpace(block, i);
    if (i >= block.size()) return NeedMore(calls);
    markup::Match end = markup::MatchAt(block, i, kSectionEnd);
    if (end == markup::Match::kYes) return calls.empty() ? bad(i) : Done(i + kSectionEnd.size(), calls);
    markup::Match begin = markup::MatchAt(block, i, kCallBegin);
    if (begin == markup::Match::kNeedMore || end == markup::Match::kNeedMore) return NeedMore(calls);
    if (begin == markup::Match::kNo) return bad(i);
    i += kCallBegin.size();
    size_t at = block.find(kArgBegin, i);
    if (at == std::string_view::npos) return block.size() - i > kMaxId ? bad(i) : NeedMore(calls);
    std::string_view id = block.substr(i, at - i);
    while (!id.empty() && markup::IsSpace(id.front())) id.remove_prefix(1);
    while (!id.empty() && markup::IsSpace(id.back())) id.remove_suffix(1);
    std::string name = NameFromId(id);
    if (id.size() > kMaxId || name.empty()) return bad(i);
    i = markup::SkipSpace(block, at + kArgBegin.size());
    calls.push_back({std::string(id), name, ""});
    if (i >= block.size()) return NeedMore(calls);
    json_scan::CallObject args = json_scan::ScanArgumentsObject(block, i);
    if (args.state == json_scan::State::kError) return bad(i);
    calls.back().arguments = args.arguments;
    if (args.state == json_scan::State::kIncomplete) return NeedMore(calls);
    i = markup::SkipSpace(block, args.end);
    if (i >= block.size()) return NeedMore(calls);
    markup::Match close = markup::MatchAt(block, i, kCallEnd);
    if (close == markup::Match::kNeedMore) return NeedMore(calls);
    if (close == markup::Match::kNo) return bad(i);
    i += kCallEnd.size();
  }
}

}  // namespace

FormatSpec KimiK2Spec() {
  FormatSpec spec;
  spec.content_markers = {{std::string(kSectionBegin), Marker::Kind::kBlock, false}};
  spec.read_block = ReadKimi;
  for (std::string_view m : {kSectionBegin, kSectionEnd, kCallBegin, kArgBegin, kCallEnd}) spec.inner_markup.emplace_back(m);
  return spec;
}

}  // namespace llmhost
