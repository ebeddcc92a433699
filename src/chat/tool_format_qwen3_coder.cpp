// Qwen3-Coder: XML-like calls whose parameter values are bare text, typed by
// the tool's JSON schema:
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n
//   </function>\n</tool_call>
// A value's first and last newline belong to the markup.
#include <algorithm>

#include "chat/json_scan.h"
#include "chat/markup_scan.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParam = "<parameter=";
constexpr std::string_view kParamEnd = "</parameter>";
constexpr size_t kMaxName = 256;

bool IsPlainName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c == '<' || c == '>' || c == '\n') return false;
  }
  return true;
}

BlockParse ReadQwen3Coder(std::string_view block, const BlockContext& ctx) {
  auto bad = [&](size_t from) { return MalformedThrough(block, from, kClose, ctx); };
  size_t i = markup::SkipSpace(block, kOpen.size());
  if (i >= block.size()) return NeedMore();
  markup::Match m = markup::MatchAt(block, i, kFunction);
  if (m != markup::Match::kYes) return m == markup::Match::kNeedMore ? NeedMore() : bad(i);
  i += kFunction.size();
  size_t at = 0;
  markup::Find f = markup::FindWithin(block, i, ">", kMaxName, &at);
  if (f != markup::Find::kFound) return f == markup::Find::kNeedMore ? NeedMore() : bad(i);
  std::string name(markup::TrimSpace(block.substr(i, at - i)));
  if (!IsPlainName(name)) return bad(i);
  i = at + 1;
  ArgumentsBuilder args;
  PartialCall call{"", name, ""};
  auto more = [&](std::string partial) {
    call.arguments = std::move(partial);
    return NeedMore({call});
  };
  for (;;) {
    i = markup::SkipSpace(block, i);
    if (i >= block.size()) return more(args.Text());
    markup::Match end = markup::MatchAt(block, i, kFunctionEnd);
    if (end == markup::Match::kYes) {
      size_t j = markup::SkipSpace(block, i + kFunctionEnd.size());
      call.arguments = args.Finished();
      if (j >= block.size()) return NeedMore({call});
      markup::Match close = markup::MatchAt(block, j, kClose);
      if (close == markup::Match::kYes) return Done(j + kClose.size(), {call});
      return close == markup::Match::kNeedMore ? NeedMore({call}) : bad(j);
    }
    markup::Match param = markup::MatchAt(block, i, kParam);
    if (param == markup::Match::kNeedMore || end == markup::Match::kNeedMore) return more(args.Text());
    if (param == markup::Match::kNo) return bad(i);
    i += kParam.size();
    f = markup::FindWithin(block, i, ">", kMaxName, &at);
    if (f != markup::Find::kFound) return f == markup::Find::kNeedMore ? more(args.Text()) : bad(i);
    std::string key(markup::TrimSpace(block.substr(i, at - i)));
    if (!IsPlainName(key)) return bad(i);
    size_t value = at + 1;
    if (value >= block.size()) return more(args.Text());
    if (block[value] == '\n') ++value;
    std::string type = ctx.schemas->TypeOf(name, key);
    size_t value_end = block.find(kParamEnd, value);
    if (value_end == std::string_view::npos) {
      if (!IsStringType(type)) return more(args.Text());
      std::string_view so_far = block.substr(value);
      // Hold what may be the closing tag (with its newline) coming.
      so_far.remove_suffix(std::max(markup::PartialSuffix(so_far, "\n</parameter>"),
                                    markup::PartialSuffix(so_far, kParamEnd)));
      return more(args.Partial(key, so_far));
    }
    std::string_view raw = block.substr(value, value_end - value);
    if (!raw.empty() && raw.back() == '\n') raw.remove_suffix(1);
    args.Add(key, TypedArgumentJson(raw, type));
    i = value_end + kParamEnd.size();
  }
}

}  // namespace

FormatSpec Qwen3CoderSpec() {
  FormatSpec spec;
  spec.content_markers = {{std::string(kOpen), Marker::Kind::kBlock, false}};
  spec.read_block = ReadQwen3Coder;
  for (std::string_view m : {kOpen, kClose, kFunction, kFunctionEnd, kParam, kParamEnd}) spec.inner_markup.emplace_back(m);
  return spec;
}

}  // namespace llmhost
