// GLM-4.5 / 4.6 / 4.7: the name, then key/value pairs whose values are bare
// text (the template writes non-strings as JSON), typed by the tool's schema:
//   <tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>
#include "chat/json_scan.h"
#include "chat/markup_scan.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kKey = "<arg_key>";
constexpr std::string_view kKeyEnd = "</arg_key>";
constexpr std::string_view kValue = "<arg_value>";
constexpr std::string_view kValueEnd = "</arg_value>";
constexpr size_t kMaxName = 256;

bool IsPlainName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c == '<' || c == '>' || c == '\n') return false;
  }
  return true;
}

BlockParse ReadGlm45(std::string_view block, const BlockContext& ctx) {
  auto bad = [&](size_t from) { return MalformedThrough(block, from, kClose, ctx); };
  size_t i = kOpen.size();
  // The name ends at the line end or at the first tag.
  size_t name_end = i;
  while (name_end < block.size() && block[name_end] != '\n' && block[name_end] != '<') ++name_end;
  if (name_end >= block.size()) return name_end - i > kMaxName ? bad(i) : NeedMore();
  if (name_end - i > kMaxName) return bad(i);
  std::string name(markup::TrimSpace(block.substr(i, name_end - i)));
  if (!IsPlainName(name)) return bad(i);
  i = name_end;
  ArgumentsBuilder args;
  PartialCall call{"", name, ""};
  auto more = [&](std::string partial) {
    call.arguments = std::move(partial);
    return NeedMore({call});
  };
  for (;;) {
    i = markup::SkipSpace(block, i);
    if (i >= block.size()) return more(args.Text());
    markup::Match close = markup::MatchAt(block, i, kClose);
    if (close == markup::Match::kYes) {
      call.arguments = args.Finished();
      return Done(i + kClose.size(), {call});
    }
    markup::Match key_open = markup::MatchAt(block, i, kKey);
    if (key_open == markup::Match::kNeedMore || close == markup::Match::kNeedMore) return more(args.Text());
    if (key_open == markup::Match::kNo) return bad(i);
    i += kKey.size();
    size_t at = 0;
    markup::Find f = markup::FindWithin(block, i, kKeyEnd, kMaxName, &at);
    if (f != markup::Find::kFound) return f == markup::Find::kNeedMore ? more(args.Text()) : bad(i);
    std::string key(markup::TrimSpace(block.substr(i, at - i)));
    if (!IsPlainName(key)) return bad(i);
    i = markup::SkipSpace(block, at + kKeyEnd.size());
    if (i >= block.size()) return more(args.Text());
    markup::Match value_open = markup::MatchAt(block, i, kValue);
    if (value_open != markup::Match::kYes) return value_open == markup::Match::kNeedMore ? more(args.Text()) : bad(i);
    size_t value = i + kValue.size();
    std::string type = ctx.schemas->TypeOf(name, key);
    size_t value_end = block.find(kValueEnd, value);
    if (value_end == std::string_view::npos) {
      if (!IsStringType(type)) return more(args.Text());
      std::string_view so_far = block.substr(value);
      so_far.remove_suffix(markup::PartialSuffix(so_far, kValueEnd));
      return more(args.Partial(key, so_far));
    }
    args.Add(key, TypedArgumentJson(block.substr(value, value_end - value), type));
    i = value_end + kValueEnd.size();
  }
}

}  // namespace

FormatSpec Glm45Spec() {
  FormatSpec spec;
  spec.content_markers = {{std::string(kOpen), Marker::Kind::kBlock, false}};
  spec.read_block = ReadGlm45;
  for (std::string_view m : {kOpen, kClose, kKey, kKeyEnd, kValue, kValueEnd}) spec.inner_markup.emplace_back(m);
  return spec;
}

}  // namespace llmhost
