// Test helper for the output parser: checks a model output against the
// expected content, reasoning and calls, fed whole, split at every byte
// boundary, one byte and a few bytes at a time; and that the streamed events
// add up to the result (so no markup reached a content delta).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chat/output_parser.h"

namespace llmhost::testing {

struct ExpectedCall {
  std::string name;
  std::string arguments;
};

struct ExpectedOutput {
  std::string content;
  std::string reasoning;
  std::vector<ExpectedCall> calls;
};

inline std::string Show(const ParsedOutput& p) {
  std::string s = "content=[" + p.content + "] reasoning=[" + p.reasoning_content + "]";
  for (const ToolCall& c : p.tool_calls) s += " call{" + c.id + " " + c.name + " " + c.arguments + "}";
  return s;
}

inline bool SameOutput(const ParsedOutput& a, const ParsedOutput& b) {
  if (a.content != b.content || a.reasoning_content != b.reasoning_content) return false;
  if (a.tool_calls.size() != b.tool_calls.size()) return false;
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    const ToolCall &x = a.tool_calls[i], &y = b.tool_calls[i];
    if (x.id != y.id || x.name != y.name || x.arguments != y.arguments) return false;
  }
  return true;
}

// Replays events into an output: what a streaming client would end up with.
// Sets `*problem` when the event order is wrong.
inline ParsedOutput Replay(const std::vector<OutputEvent>& events, bool* discarded, std::string* problem) {
  ParsedOutput out;
  std::map<size_t, ToolCall> open;
  for (const OutputEvent& e : events) {
    switch (e.kind) {
      case OutputEvent::Kind::kContent: out.content += e.text; break;
      case OutputEvent::Kind::kReasoning: out.reasoning_content += e.text; break;
      case OutputEvent::Kind::kToolCallStart:
        if (open.count(e.index) || e.index != out.tool_calls.size() + open.size()) *problem = "bad start index";
        open[e.index] = ToolCall{e.id, e.name, ""};
        break;
      case OutputEvent::Kind::kToolCallArguments:
        if (!open.count(e.index)) *problem = "arguments before start";
        open[e.index].arguments += e.text;
        break;
      case OutputEvent::Kind::kToolCallEnd:
        if (!open.count(e.index) || e.index != out.tool_calls.size()) *problem = "end of a call not open";
        out.tool_calls.push_back(open[e.index]);
        open.erase(e.index);
        break;
      case OutputEvent::Kind::kToolCallDiscarded:
        *discarded = true;
        open.erase(e.index);
        break;
    }
  }
  if (!open.empty()) *problem = "a call left open";
  return out;
}

// Feeds `text` in the given pieces; checks the events against the result.
inline ParsedOutput FeedPieces(OutputFormat format, const ParseOptions& options, const std::vector<std::string>& pieces,
                               bool well_formed, const std::string& label) {
  OutputParser p(format, options);
  std::vector<OutputEvent> events;
  for (const std::string& piece : pieces) {
    auto e = p.Feed(piece);
    events.insert(events.end(), e.begin(), e.end());
  }
  auto e = p.Finish();
  events.insert(events.end(), e.begin(), e.end());
  bool discarded = false;
  std::string problem;
  ParsedOutput replayed = Replay(events, &discarded, &problem);
  EXPECT_EQ(problem, "") << label;
  EXPECT_TRUE(SameOutput(replayed, p.Result())) << label << "\n events: " << Show(replayed)
                                                << "\n result: " << Show(p.Result());
  if (well_formed) EXPECT_FALSE(discarded) << label << ": a call was started, then discarded";
  return p.Result();
}

inline std::vector<std::string> Chunks(const std::string& text, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size(); i += n) out.push_back(text.substr(i, n));
  return out;
}

// The whole check. `well_formed`: the markup is valid, so no call may be
// started and then discarded however the text is split.
inline void CheckOutput(OutputFormat format, const ParseOptions& options, const std::string& text,
                        const ExpectedOutput& want, bool well_formed = true) {
  ParsedOutput whole = FeedPieces(format, options, {text}, well_formed, "whole");
  EXPECT_EQ(whole.content, want.content) << "content of\n" << text;
  EXPECT_EQ(whole.reasoning_content, want.reasoning) << "reasoning of\n" << text;
  EXPECT_EQ(whole.tool_calls.size(), want.calls.size()) << Show(whole);
  for (size_t i = 0; i < want.calls.size() && i < whole.tool_calls.size(); ++i) {
    EXPECT_EQ(whole.tool_calls[i].name, want.calls[i].name) << "call " << i;
    EXPECT_EQ(whole.tool_calls[i].arguments, want.calls[i].arguments) << "call " << i;
    EXPECT_FALSE(whole.tool_calls[i].id.empty());
  }
  for (size_t i = 0; i <= text.size(); ++i) {
    ParsedOutput split = FeedPieces(format, options, {text.substr(0, i), text.substr(i)}, well_formed,
                                    "split at " + std::to_string(i));
    EXPECT_TRUE(SameOutput(split, whole)) << "split at " << i << ": " << Show(split) << "\n whole: " << Show(whole);
    if (!SameOutput(split, whole)) return;
  }
  for (size_t n : {1, 2, 3, 7}) {
    ParsedOutput chunked = FeedPieces(format, options, Chunks(text, n), well_formed, std::to_string(n) + "-byte pieces");
    EXPECT_TRUE(SameOutput(chunked, whole)) << n << "-byte pieces: " << Show(chunked) << "\n whole: " << Show(whole);
  }
}

}  // namespace llmhost::testing
