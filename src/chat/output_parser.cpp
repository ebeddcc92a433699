// The output parser's driver: text is scanned for the format's markers and
// streamed as content or reasoning (holding back only what could still
// become a marker); a marker opens a block that the format's reader parses,
// re-read from its start as text arrives, its calls streamed as they grow.
#include "chat/output_parser.h"

#include <utility>

#include "chat/markup_scan.h"
#include "chat/tool_format.h"

namespace llmhost {
namespace {

FormatSpec SpecFor(OutputFormat format) {
  switch (format) {
    case OutputFormat::kNone: return FormatSpec{};
    case OutputFormat::kHermes: return HermesSpec();
    case OutputFormat::kQwen3Coder: return Qwen3CoderSpec();
    case OutputFormat::kLlama3Json: return Llama3JsonSpec();
    case OutputFormat::kMistral: return MistralSpec();
    case OutputFormat::kPythonic: return PythonicSpec();
    case OutputFormat::kDeepSeekV3: return DeepSeekV3Spec();
    case OutputFormat::kDeepSeekV31: return DeepSeekV31Spec();
    case OutputFormat::kKimiK2: return KimiK2Spec();
    case OutputFormat::kGlm45: return Glm45Spec();
    case OutputFormat::kHarmony: return HarmonySpec();
  }
  return FormatSpec{};
}

}  // namespace

BlockParse MalformedThrough(std::string_view block, size_t from, std::string_view end_marker, const BlockContext& ctx) {
  if (!end_marker.empty()) {
    size_t at = block.find(end_marker, from);
    if (at != std::string_view::npos) return MalformedAt(at + end_marker.size());
  }
  return ctx.final ? MalformedAt(block.size()) : NeedMore();
}

struct OutputParser::State {
  FormatSpec spec;
  ToolSchemas schemas;
  ParseOptions options;
  std::vector<Marker> content_markers, reasoning_markers;

  std::string pending;  // text not yet emitted, or the open block from its marker
  TextMode mode = TextMode::kContent;
  bool in_block = false;
  Marker::Kind block_kind = Marker::Kind::kBlock;
  std::string space_before_block;  // dropped unless the block is malformed
  bool skip_space = true;          // after a marker, the next text's leading space is markup
  bool content_begun = false;      // start-only markers no longer apply
  bool finished = false;

  // Calls of the open block already announced, and their arguments so far.
  std::vector<std::string> started_args;
  ParsedOutput result;

  void EmitText(TextMode m, std::string_view text, std::vector<OutputEvent>& out) {
    if (text.empty()) return;
    OutputEvent e;
    e.kind = m == TextMode::kContent ? OutputEvent::Kind::kContent : OutputEvent::Kind::kReasoning;
    e.text = std::string(text);
    (m == TextMode::kContent ? result.content : result.reasoning_content) += text;
    if (m == TextMode::kContent) content_begun = true;
    out.push_back(std::move(e));
  }

  std::string CallId(size_t index, const PartialCall& c) const {
    return c.id.empty() ? options.call_id_prefix + std::to_string(index) : c.id;
  }

  // Announces new calls and extends arguments to what the reader sees now.
  void EmitCallProgress(const std::vector<PartialCall>& calls, std::vector<OutputEvent>& out) {
    for (size_t i = 0; i < calls.size(); ++i) {
      const PartialCall& c = calls[i];
      size_t index = result.tool_calls.size() + i;
      if (i >= started_args.size()) {
        if (c.name.empty()) return;
        OutputEvent e;
        e.kind = OutputEvent::Kind::kToolCallStart;
        e.index = index;
        e.id = CallId(index, c);
        e.name = c.name;
        out.push_back(std::move(e));
        started_args.emplace_back();
      }
      std::string& sent = started_args[i];
      // Readers only extend arguments; anything else is held until the end.
      if (c.arguments.size() > sent.size() && c.arguments.compare(0, sent.size(), sent) == 0) {
        OutputEvent e;
        e.kind = OutputEvent::Kind::kToolCallArguments;
        e.index = index;
        e.text = c.arguments.substr(sent.size());
        out.push_back(std::move(e));
        sent = c.arguments;
      }
    }
  }

  // Scans text for the next marker. True when a block was opened.
  bool StepText(bool final, std::vector<OutputEvent>& out) {
    if (skip_space) {
      size_t n = markup::SkipSpace(pending, 0);
      pending.erase(0, n);
      if (pending.empty()) return false;
      skip_space = false;
    }
    const std::vector<Marker>& markers = mode == TextMode::kContent ? content_markers : reasoning_markers;
    size_t best = std::string::npos;
    const Marker* found = nullptr;
    size_t hold = pending.size();
    for (const Marker& m : markers) {
      if (m.start_only) {
        if (content_begun) continue;
        if (pending.compare(0, m.text.size(), m.text) == 0 && pending.size() >= m.text.size()) {
          if (best != 0 || m.text.size() > found->text.size()) best = 0, found = &m;
        } else if (pending.size() < m.text.size() && m.text.compare(0, pending.size(), pending) == 0) {
          hold = 0;
        }
        continue;
      }
      size_t at = pending.find(m.text);
      if (at != std::string::npos && (at < best || (at == best && m.text.size() > found->text.size()))) {
        best = at;
        found = &m;
      }
      size_t partial = markup::PartialSuffix(pending, m.text);
      if (partial > 0) hold = std::min(hold, pending.size() - partial);
    }
    if (found) {
      size_t text_end = best;
      while (text_end > 0 && markup::IsSpace(pending[text_end - 1])) --text_end;
      EmitText(mode, std::string_view(pending).substr(0, text_end), out);
      space_before_block = pending.substr(text_end, best - text_end);
      pending.erase(0, best);
      in_block = true;
      block_kind = found->kind;
      started_args.clear();
      return true;
    }
    if (final) {
      EmitText(mode, pending, out);
      pending.clear();
      return false;
    }
    // Space just before a marker is markup too: hold it with the marker's start.
    while (hold > 0 && markup::IsSpace(pending[hold - 1])) --hold;
    EmitText(mode, std::string_view(pending).substr(0, hold), out);
    pending.erase(0, hold);
    return false;
  }

  void CloseBlock(size_t consumed, TextMode next) {
    pending.erase(0, consumed);
    in_block = false;
    mode = next;
    skip_space = true;
    space_before_block.clear();
    started_args.clear();
  }

  // Reads the open block. True when it ended.
  bool StepBlock(bool final, std::vector<OutputEvent>& out) {
    if (block_kind == Marker::Kind::kThinkOpen) {
      CloseBlock(spec.think_open.size(), TextMode::kReasoning);
      return true;
    }
    if (block_kind == Marker::Kind::kThinkClose) {
      CloseBlock(spec.think_close.size(), TextMode::kContent);
      return true;
    }
    BlockContext ctx{&schemas, final};
    BlockParse r = spec.read_block(pending, ctx);
    if (r.state == BlockParse::State::kNeedMore && final) r = MalformedAt(pending.size());
    if (r.state == BlockParse::State::kNeedMore) {
      EmitCallProgress(r.calls, out);
      return false;
    }
    if (r.state == BlockParse::State::kDone) {
      bool named = true;
      for (const PartialCall& c : r.calls) named = named && !c.name.empty();
      if (!named || r.consumed == 0 || r.consumed > pending.size()) r = MalformedAt(pending.size());
    }
    if (r.state == BlockParse::State::kMalformed) {
      for (size_t i = 0; i < started_args.size(); ++i) {
        OutputEvent e;
        e.kind = OutputEvent::Kind::kToolCallDiscarded;
        e.index = result.tool_calls.size() + i;
        out.push_back(std::move(e));
      }
      size_t n = std::min(std::max<size_t>(r.consumed, 1), pending.size());
      std::string raw = space_before_block + pending.substr(0, n);
      EmitText(mode, raw, out);
      TextMode keep = mode;
      CloseBlock(n, keep);
      skip_space = false;
      content_begun = true;
      return true;
    }
    EmitCallProgress(r.calls, out);
    for (size_t i = 0; i < r.calls.size(); ++i) {
      size_t index = result.tool_calls.size();
      OutputEvent e;
      e.kind = OutputEvent::Kind::kToolCallEnd;
      e.index = index;
      out.push_back(std::move(e));
      result.tool_calls.push_back({CallId(index, r.calls[i]), r.calls[i].name, r.calls[i].arguments});
    }
    if (!r.calls.empty()) content_begun = true;
    CloseBlock(r.consumed, r.next_mode);
    return true;
  }

  std::vector<OutputEvent> Run(bool final) {
    std::vector<OutputEvent> out;
    for (int guard = 0; guard < 1 << 30; ++guard) {
      bool progressed = in_block ? StepBlock(final, out) : StepText(final, out);
      if (!progressed) break;
    }
    return out;
  }
};

OutputParser::OutputParser(OutputFormat format, ParseOptions options) : s_(std::make_unique<State>()) {
  s_->spec = SpecFor(format);
  s_->schemas = ToolSchemas(options.tools);
  s_->options = std::move(options);
  s_->content_markers = s_->spec.content_markers;
  s_->reasoning_markers = s_->spec.reasoning_markers;
  bool think = format != OutputFormat::kHarmony && (s_->options.reasoning || s_->options.starts_in_reasoning);
  if (think) {
    s_->content_markers.push_back({s_->spec.think_open, Marker::Kind::kThinkOpen, /*start_only=*/true});
    s_->reasoning_markers.push_back({s_->spec.think_close, Marker::Kind::kThinkClose, false});
  }
  if (s_->options.starts_in_reasoning && think) s_->mode = TextMode::kReasoning;
}

OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;
OutputParser& OutputParser::operator=(OutputParser&&) noexcept = default;

std::vector<OutputEvent> OutputParser::Feed(std::string_view piece) {
  if (s_->finished) return {};
  s_->pending.append(piece);
  return s_->Run(false);
}

std::vector<OutputEvent> OutputParser::Finish() {
  if (s_->finished) return {};
  std::vector<OutputEvent> out = s_->Run(true);
  s_->finished = true;
  return out;
}

const ParsedOutput& OutputParser::Result() const { return s_->result; }

FormatMarkers OutputFormatMarkers(OutputFormat format) {
  const FormatSpec spec = SpecFor(format);
  FormatMarkers m;
  for (const Marker& x : spec.content_markers) m.all.push_back(x.text);
  for (const Marker& x : spec.reasoning_markers) m.all.push_back(x.text);
  for (const std::string& x : spec.inner_markup) m.all.push_back(x);
  if (format == OutputFormat::kHarmony) {
    // The analysis channel is its reasoning.
    m.think_open = "<|channel|>analysis<|message|>";
    m.think_close = "<|end|>";
    m.forced_close = "<|end|><|start|>assistant<|channel|>final<|message|>";
  } else {
    m.think_open = spec.think_open;
    m.think_close = spec.think_close;
    // As chat templates write a finished think block before the answer.
    m.forced_close = "\n" + spec.think_close + "\n\n";
  }
  m.all.push_back(m.think_open);
  m.all.push_back(m.think_close);
  return m;
}

ParsedOutput ParseOutput(OutputFormat format, const ParseOptions& options, std::string_view text) {
  OutputParser p(format, options);
  p.Feed(text);
  p.Finish();
  return p.Result();
}

}  // namespace llmhost
