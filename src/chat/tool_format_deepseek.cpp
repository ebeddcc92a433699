// DeepSeek's calls section, several calls in one:
//   V3 / R1:  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//             ```json\n{...}\n```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
//   V3.1:     <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}
//             <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
#include "chat/json_scan.h"
#include "chat/markup_scan.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";
constexpr size_t kMaxName = 256;

enum class Step { kOk, kNeedMore, kBad };

// Expects `lit` at s[*i] (after space when `space`), advancing past it.
Step Expect(std::string_view s, size_t* i, std::string_view lit, bool space = true) {
  size_t j = space ? markup::SkipSpace(s, *i) : *i;
  if (j >= s.size()) return Step::kNeedMore;
  switch (markup::MatchAt(s, j, lit)) {
    case markup::Match::kYes: *i = j + lit.size(); return Step::kOk;
    case markup::Match::kNeedMore: return Step::kNeedMore;
    case markup::Match::kNo: return Step::kBad;
  }
  return Step::kBad;
}

// Text up to `stop` (not included), trimmed; kBad past kMaxName bytes.
Step TextUntil(std::string_view s, size_t* i, std::string_view stop, std::string* out) {
  size_t at = s.find(stop, *i);
  if (at == std::string_view::npos) return s.size() - *i > kMaxName ? Step::kBad : Step::kNeedMore;
  if (at - *i > kMaxName) return Step::kBad;
  std::string_view t = s.substr(*i, at - *i);
  while (!t.empty() && markup::IsSpace(t.front())) t.remove_prefix(1);
  while (!t.empty() && markup::IsSpace(t.back())) t.remove_suffix(1);
  *out = std::string(t);
  *i = at + stop.size();
  return out->empty() ? Step::kBad : Step::kOk;
}

BlockParse ReadDeepSeek(std::string_view block, const BlockContext& ctx, bool v31) {
  std::vector<PartialCall> calls;
  auto bad = [&](size_t from) { return MalformedThrough(block, from, kCallsEnd, ctx); };
  size_t i = kCallsBegin.size();
  for (;;) {
    size_t j = i;
    Step end = Expect(block, &j, kCallsEnd);
    if (end == Step::kOk) return calls.empty() ? bad(i) : Done(j, calls);
    if (end == Step::kNeedMore) return NeedMore(calls);
    Step s = Expect(block, &i, kCallBegin);
    if (s != Step::kOk) return s == Step::kNeedMore ? NeedMore(calls) : bad(i);
    std::string name;
    if (v31) {
      s = TextUntil(block, &i, kSep, &name);
    } else {
      std::string type;
      s = TextUntil(block, &i, kSep, &type);
      if (s == Step::kOk) {
        size_t nl = block.find('\n', i);
        if (nl == std::string_view::npos) {
          s = block.size() - i > kMaxName ? Step::kBad : Step::kNeedMore;
        } else {
          s = TextUntil(block, &i, "\n", &name);
        }
      }
    }
    if (s != Step::kOk) return s == Step::kNeedMore ? NeedMore(calls) : bad(i);
    if (!v31) {
      s = Expect(block, &i, "```");
      if (s != Step::kOk) return s == Step::kNeedMore ? NeedMore(calls) : bad(i);
      if (markup::MatchAt(block, i, "json") == markup::Match::kYes) i += 4;
      else if (markup::MatchAt(block, i, "json") == markup::Match::kNeedMore) return NeedMore(calls);
    }
    i = markup::SkipSpace(block, i);
    calls.push_back({"", name, ""});
    if (i >= block.size()) return NeedMore(calls);
    json_scan::CallObject args = json_scan::ScanArgumentsObject(block, i);
    if (args.state == json_scan::State::kError) return bad(i);
    calls.back().arguments = args.arguments;
    if (args.state == json_scan::State::kIncomplete) return NeedMore(calls);
    i = args.end;
    if (!v31) {
      s = Expect(block, &i, "```");
      if (s != Step::kOk) return s == Step::kNeedMore ? NeedMore(calls) : bad(i);
    }
    s = Expect(block, &i, kCallEnd);
    if (s != Step::kOk) return s == Step::kNeedMore ? NeedMore(calls) : bad(i);
  }
}

BlockParse ReadV3(std::string_view block, const BlockContext& ctx) { return ReadDeepSeek(block, ctx, false); }
BlockParse ReadV31(std::string_view block, const BlockContext& ctx) { return ReadDeepSeek(block, ctx, true); }

}  // namespace

FormatSpec DeepSeekV3Spec() {
  FormatSpec spec;
  spec.content_markers = {{std::string(kCallsBegin), Marker::Kind::kBlock, false}};
  spec.read_block = ReadV3;
  for (std::string_view m : {kCallsBegin, kCallsEnd, kCallBegin, kCallEnd, kSep}) spec.inner_markup.emplace_back(m);
  return spec;
}

FormatSpec DeepSeekV31Spec() {
  FormatSpec spec;
  spec.content_markers = {{std::string(kCallsBegin), Marker::Kind::kBlock, false}};
  spec.read_block = ReadV31;
  for (std::string_view m : {kCallsBegin, kCallsEnd, kCallBegin, kCallEnd, kSep}) spec.inner_markup.emplace_back(m);
  return spec;
}

}  // namespace llmhost
