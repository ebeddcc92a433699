// gpt-oss Harmony: the output is messages, each a header then a body,
//   <|channel|>analysis<|message|>...<|end|>
//   <|start|>assistant<|channel|>final<|message|>...<|return|>
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>
// (the recipient may also follow the role). The analysis channel is
// reasoning, final and plain commentary are content, a message to a
// recipient is a tool call whose body is its JSON arguments. A header is
// a block; the body of a text message is streamed by the driver as text
// until the next marker.
#include "chat/json_scan.h"
#include "chat/markup_scan.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kEnd = "<|end|>";
constexpr std::string_view kReturn = "<|return|>";
constexpr std::string_view kCall = "<|call|>";
constexpr size_t kMaxHeader = 512;

// The word after `key` in the header ("analysis", "functions.get_weather").
std::string WordAfter(std::string_view header, std::string_view key) {
  size_t at = header.find(key);
  if (at == std::string_view::npos) return "";
  size_t b = at + key.size(), e = b;
  while (e < header.size() && !markup::IsSpace(header[e]) && header[e] != '<') ++e;
  return std::string(header.substr(b, e - b));
}

BlockParse ReadHarmony(std::string_view block, const BlockContext& ctx) {
  for (std::string_view end : {kEnd, kReturn, kCall}) {
    if (markup::MatchAt(block, 0, end) == markup::Match::kYes) return Done(end.size(), {});
  }
  size_t at = 0;
  markup::Find f = markup::FindWithin(block, 0, kMessage, kMaxHeader, &at);
  if (f == markup::Find::kNeedMore) return NeedMore();
  if (f == markup::Find::kTooFar) return MalformedAt(markup::MatchAt(block, 0, kStart) == markup::Match::kYes ? kStart.size() : kChannel.size());
  std::string_view header = block.substr(0, at);
  // A header holds no other message's markers.
  for (std::string_view m : {kEnd, kReturn, kCall}) {
    if (header.find(m) != std::string_view::npos) return MalformedAt(header.find(m));
  }
  if (header.find(kStart, 1) != std::string_view::npos) return MalformedAt(header.find(kStart, 1));
  std::string channel = WordAfter(header, kChannel);
  std::string recipient = WordAfter(header, " to=");
  if (recipient.empty() && header.substr(0, 3) == "to=") recipient = WordAfter(header, "to=");
  size_t body = at + kMessage.size();
  if (recipient.empty()) {
    return Done(body, {}, channel == "analysis" ? TextMode::kReasoning : TextMode::kContent);
  }
  std::string name = recipient.substr(0, 10) == "functions." ? recipient.substr(10) : recipient;
  if (name.empty()) return MalformedAt(body);
  std::vector<PartialCall> calls = {{"", name, ""}};
  size_t i = markup::SkipSpace(block, body);
  if (i >= block.size()) return NeedMore(calls);
  json_scan::CallObject args = json_scan::ScanArgumentsObject(block, i);
  if (args.state == json_scan::State::kError) return MalformedThrough(block, i, kCall, ctx);
  calls[0].arguments = args.arguments;
  if (args.state == json_scan::State::kIncomplete) return NeedMore(calls);
  size_t j = markup::SkipSpace(block, args.end);
  // <|call|> is a stop token: often the text simply ends.
  if (j >= block.size()) return ctx.final ? Done(block.size(), calls) : NeedMore(calls);
  for (std::string_view end : {kCall, kEnd}) {
    markup::Match m = markup::MatchAt(block, j, end);
    if (m == markup::Match::kYes) return Done(j + end.size(), calls);
    if (m == markup::Match::kNeedMore) return ctx.final ? MalformedAt(block.size()) : NeedMore(calls);
  }
  // The next message may follow at once.
  if (markup::MatchAt(block, j, kStart) != markup::Match::kNo || markup::MatchAt(block, j, kChannel) != markup::Match::kNo) {
    if (markup::MatchAt(block, j, kStart) == markup::Match::kYes || markup::MatchAt(block, j, kChannel) == markup::Match::kYes) return Done(j, calls);
    return ctx.final ? MalformedAt(block.size()) : NeedMore(calls);
  }
  return MalformedThrough(block, j, kCall, ctx);
}

}  // namespace

FormatSpec HarmonySpec() {
  FormatSpec spec;
  for (std::string_view m : {kStart, kChannel, kEnd, kReturn, kCall}) {
    spec.content_markers.push_back({std::string(m), Marker::Kind::kBlock, false});
  }
  spec.reasoning_markers = spec.content_markers;
  spec.read_block = ReadHarmony;
  for (std::string_view m : {kStart, kChannel, kMessage, kEnd, kReturn, kCall, std::string_view("<|constrain|>")}) {
    spec.inner_markup.emplace_back(m);
  }
  return spec;
}

}  // namespace llmhost
