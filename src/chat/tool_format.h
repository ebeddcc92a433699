// What the output parser asks of each tool-call format: the markers that open
// a block of markup, and a function that reads one block.
//
// A block reader is a pure function of the block's text so far (from its
// opening marker) and whether the output has ended. It must be
// prefix-consistent: once it answers kDone or kMalformed for some text, it
// answers the same (same `consumed`, same calls) for any longer text, and
// while it answers kNeedMore the calls it reports only grow (names appear,
// arguments text is extended). That is what makes chunking irrelevant.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_args.h"

namespace llmhost {

enum class TextMode { kContent, kReasoning };

struct Marker {
  enum class Kind { kThinkOpen, kThinkClose, kBlock };
  std::string text;
  Kind kind = Kind::kBlock;
  bool start_only = false;  // only where the content begins
};

struct PartialCall {
  std::string id;         // "" : the parser numbers it
  std::string name;       // "" : not known yet
  std::string arguments;  // the arguments text so far
};

struct BlockParse {
  enum class State { kNeedMore, kDone, kMalformed };
  State state = State::kNeedMore;
  size_t consumed = 0;  // kDone / kMalformed: bytes of the block used
  std::vector<PartialCall> calls;
  TextMode next_mode = TextMode::kContent;  // kDone: the text that follows
};

struct BlockContext {
  const ToolSchemas* schemas = nullptr;
  bool final = false;  // the output has ended: nothing more will come
};

using BlockReader = BlockParse (*)(std::string_view block, const BlockContext& ctx);

struct FormatSpec {
  std::vector<Marker> content_markers;    // block markers, besides the think block's
  std::vector<Marker> reasoning_markers;  // block markers inside reasoning
  std::string think_open = "<think>", think_close = "</think>";
  BlockReader read_block = nullptr;
  // Every marker of the format's markup, the ones inside a block too: a
  // special token with this text must reach the parser (OutputFormatMarkers).
  std::vector<std::string> inner_markup;
};

// One per family (tool_format_*.cpp, harmony_parser.cpp).
FormatSpec HermesSpec();
FormatSpec Qwen3CoderSpec();
FormatSpec Llama3JsonSpec();
FormatSpec MistralSpec();
FormatSpec PythonicSpec();
FormatSpec DeepSeekV3Spec();
FormatSpec DeepSeekV31Spec();
FormatSpec KimiK2Spec();
FormatSpec Glm45Spec();
FormatSpec HarmonySpec();

// Shared endings of a block.
inline BlockParse NeedMore(std::vector<PartialCall> calls = {}) {
  BlockParse r;
  r.calls = std::move(calls);
  return r;
}
inline BlockParse Done(size_t consumed, std::vector<PartialCall> calls, TextMode next = TextMode::kContent) {
  BlockParse r;
  r.state = BlockParse::State::kDone;
  r.consumed = consumed;
  r.calls = std::move(calls);
  r.next_mode = next;
  return r;
}
inline BlockParse MalformedAt(size_t consumed) {
  BlockParse r;
  r.state = BlockParse::State::kMalformed;
  r.consumed = consumed;
  return r;
}
// Malformed markup that runs to `end_marker` (included) or, without one, to
// the end of the output: until then it is not known how much is content.
BlockParse MalformedThrough(std::string_view block, size_t from, std::string_view end_marker, const BlockContext& ctx);

}  // namespace llmhost
