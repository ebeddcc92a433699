// Llama 3.x JSON calls: the whole output is the call,
//   {"name": "f", "parameters": {...}}
// optionally after <|python_tag|> (3.1), several joined by ';', ending at the
// end of output or at <|eom_id|> / <|eot_id|> when those are kept in the text.
#include "chat/json_scan.h"
#include "chat/markup_scan.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

// Whether the object at s[i] starts with a key a call has.
markup::Match FirstKeyIsACallKey(std::string_view s, size_t i) {
  size_t k = markup::SkipSpace(s, i + 1);
  if (k >= s.size()) return markup::Match::kNeedMore;
  if (s[k] != '"') return markup::Match::kNo;
  json_scan::Span key = json_scan::ScanValue(s, k);
  if (key.state == json_scan::State::kIncomplete) return markup::Match::kNeedMore;
  if (key.state == json_scan::State::kError) return markup::Match::kNo;
  std::string_view k_text = s.substr(k, key.end - k);
  for (std::string_view ok : {"\"name\"", "\"parameters\"", "\"arguments\"", "\"type\""}) {
    if (k_text == ok) return markup::Match::kYes;
  }
  return markup::Match::kNo;
}

BlockParse ReadLlama3(std::string_view block, const BlockContext& ctx) {
  size_t i = 0;
  if (markup::MatchAt(block, 0, kPythonTag) == markup::Match::kYes) i = kPythonTag.size();
  std::vector<PartialCall> calls;
  for (;;) {
    i = markup::SkipSpace(block, i);
    if (i >= block.size()) return ctx.final && !calls.empty() ? Done(block.size(), calls) : NeedMore(calls);
    // Not a JSON call after all: what came so far is text.
    if (block[i] != '{') {
      if (calls.empty()) return MalformedAt(i);
      return ctx.final ? MalformedAt(block.size()) : NeedMore(calls);
    }
    if (calls.empty()) {
      // A JSON answer rather than a call: stream it as text from its first key.
      markup::Match m = FirstKeyIsACallKey(block, i);
      if (m == markup::Match::kNeedMore) return ctx.final ? MalformedAt(block.size()) : NeedMore();
      if (m == markup::Match::kNo) return MalformedAt(i + 1);
    }
    json_scan::CallObject call = json_scan::ScanCallObject(block, i, {"name"}, {"parameters", "arguments"});
    if (call.state == json_scan::State::kError) {
      json_scan::Span v = json_scan::ScanValue(block, i);
      if (v.state == json_scan::State::kIncomplete) return ctx.final ? MalformedAt(block.size()) : NeedMore();
      return MalformedAt(v.end);
    }
    calls.push_back({"", call.name_known ? call.name : "", call.arguments});
    if (call.state == json_scan::State::kIncomplete) return NeedMore(calls);
    size_t j = markup::SkipSpace(block, call.end);
    if (j >= block.size()) return ctx.final ? Done(block.size(), calls) : NeedMore(calls);
    if (block[j] == ';') {
      i = j + 1;
      continue;
    }
    for (std::string_view end : {"<|eom_id|>", "<|eot_id|>"}) {
      markup::Match m = markup::MatchAt(block, j, end);
      if (m == markup::Match::kYes) return Done(j + end.size(), calls);
      if (m == markup::Match::kNeedMore) return ctx.final ? MalformedAt(block.size()) : NeedMore(calls);
    }
    // Text after the object: the output is not a call, so it is all content.
    return ctx.final ? MalformedAt(block.size()) : NeedMore(calls);
  }
}

}  // namespace

FormatSpec Llama3JsonSpec() {
  FormatSpec spec;
  spec.content_markers = {{std::string(kPythonTag), Marker::Kind::kBlock, false},
                          {"{", Marker::Kind::kBlock, /*start_only=*/true}};
  spec.read_block = ReadLlama3;
  for (std::string_view m : {kPythonTag}) spec.inner_markup.emplace_back(m);
  return spec;
}

}  // namespace llmhost
