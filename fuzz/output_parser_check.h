// The output parser's chunking invariant, shared by the fuzz target and the
// seed test: the first input byte picks the format and options, the second
// the piece size; the rest is the model output. Fed whole and in pieces, the
// results must be identical, and the streamed events must add up to them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "chat/output_parser.h"

namespace llmhost::fuzzcheck {

inline bool Same(const ParsedOutput& a, const ParsedOutput& b) {
  if (a.content != b.content || a.reasoning_content != b.reasoning_content) return false;
  if (a.tool_calls.size() != b.tool_calls.size()) return false;
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    if (a.tool_calls[i].id != b.tool_calls[i].id || a.tool_calls[i].name != b.tool_calls[i].name ||
        a.tool_calls[i].arguments != b.tool_calls[i].arguments) {
      return false;
    }
  }
  return true;
}

// What a streaming client builds from the events.
inline ParsedOutput Replay(const std::vector<OutputEvent>& events) {
  ParsedOutput out;
  std::map<size_t, ToolCall> open;
  for (const OutputEvent& e : events) {
    switch (e.kind) {
      case OutputEvent::Kind::kContent: out.content += e.text; break;
      case OutputEvent::Kind::kReasoning: out.reasoning_content += e.text; break;
      case OutputEvent::Kind::kToolCallStart: open[e.index] = ToolCall{e.id, e.name, ""}; break;
      case OutputEvent::Kind::kToolCallArguments: open[e.index].arguments += e.text; break;
      case OutputEvent::Kind::kToolCallEnd:
        out.tool_calls.push_back(open[e.index]);
        open.erase(e.index);
        break;
      case OutputEvent::Kind::kToolCallDiscarded: open.erase(e.index); break;
    }
  }
  return out;
}

inline ParsedOutput Feed(OutputFormat format, const ParseOptions& options, std::string_view text, size_t piece,
                         bool* events_match) {
  OutputParser p(format, options);
  std::vector<OutputEvent> events;
  for (size_t i = 0; i < text.size(); i += piece) {
    auto e = p.Feed(text.substr(i, piece));
    events.insert(events.end(), e.begin(), e.end());
  }
  auto e = p.Finish();
  events.insert(events.end(), e.begin(), e.end());
  *events_match = Same(Replay(events), p.Result());
  return p.Result();
}

// Returns "" when the invariant holds, else what broke.
inline std::string Check(const uint8_t* data, size_t size) {
  if (size < 2) return "";
  static const char* kTools = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "object"}}}}}])";
  const int kFormats = 11;
  OutputFormat format = static_cast<OutputFormat>(data[0] % kFormats);
  ParseOptions options;
  options.reasoning = (data[0] / kFormats) % 2 == 0;
  options.starts_in_reasoning = (data[0] / kFormats / 2) % 2 == 1;
  options.tools = nlohmann::json::parse(kTools);
  size_t piece = 1 + data[1] % 16;
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  bool whole_events = false, piece_events = false, byte_events = false;
  ParsedOutput whole = Feed(format, options, text, text.size() + 1, &whole_events);
  ParsedOutput pieces = Feed(format, options, text, piece, &piece_events);
  ParsedOutput bytes = Feed(format, options, text, 1, &byte_events);
  if (!whole_events || !piece_events || !byte_events) return "events do not add up to the result";
  if (!Same(whole, pieces)) return "whole != " + std::to_string(piece) + "-byte pieces";
  if (!Same(whole, bytes)) return "whole != 1-byte pieces";
  return "";
}

}  // namespace llmhost::fuzzcheck
