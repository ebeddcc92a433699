// Pythonic calls (Llama 3.2 / 4 pythonic templates, LFM2): a Python list of
// calls as the whole output, [f(a=1, b="x"), g()], or wrapped anywhere in
// <|tool_call_start|>...<|tool_call_end|>. Python literals are not streamed:
// a call's arguments arrive when the list is closed.
#include "chat/markup_scan.h"
#include "chat/python_literal.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

constexpr std::string_view kWrapOpen = "<|tool_call_start|>";
constexpr std::string_view kWrapClose = "<|tool_call_end|>";

BlockParse ReadPythonic(std::string_view block, const BlockContext& ctx) {
  bool wrapped = markup::MatchAt(block, 0, kWrapOpen) == markup::Match::kYes;
  auto bad = [&](size_t from) {
    return wrapped ? MalformedThrough(block, from, kWrapClose, ctx) : MalformedAt(from);
  };
  size_t i = wrapped ? markup::SkipSpace(block, kWrapOpen.size()) : 0;
  if (i >= block.size()) return NeedMore();
  if (block[i] != '[') return bad(i);
  // "[1] see ..." is text: a call list starts with a name.
  size_t first = markup::SkipSpace(block, i + 1);
  if (first >= block.size()) return NeedMore();
  char c = block[first];
  bool name_start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  if (!name_start) return bad(wrapped ? i : first);
  json_scan::Span list = ScanPythonBrackets(block, i);
  if (list.state == json_scan::State::kIncomplete) return NeedMore();
  if (list.state == json_scan::State::kError) return bad(list.end + 1);
  auto calls = ParsePythonCalls(block.substr(i, list.end - i));
  if (!calls || calls->empty()) return bad(list.end);
  std::vector<PartialCall> out;
  for (PythonCall& c : *calls) out.push_back({"", std::move(c.name), std::move(c.arguments)});
  if (!wrapped) return Done(list.end, out);
  size_t j = markup::SkipSpace(block, list.end);
  if (j >= block.size()) return NeedMore();
  markup::Match close = markup::MatchAt(block, j, kWrapClose);
  if (close == markup::Match::kYes) return Done(j + kWrapClose.size(), out);
  return close == markup::Match::kNeedMore ? NeedMore() : bad(j);
}

}  // namespace

FormatSpec PythonicSpec() {
  FormatSpec spec;
  spec.content_markers = {{std::string(kWrapOpen), Marker::Kind::kBlock, false},
                          {"[", Marker::Kind::kBlock, /*start_only=*/true}};
  spec.read_block = ReadPythonic;
  for (std::string_view m : {kWrapOpen, kWrapClose}) spec.inner_markup.emplace_back(m);
  return spec;
}

}  // namespace llmhost
