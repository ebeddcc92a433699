// Output parsing: splits a model's generated text into content, reasoning and
// tool calls, incrementally, as the engine streams decoded pieces. Sits
// between the engine's decoded tokens and the API formatters.
//
// Guarantees, whatever the chunking of the input:
//  - markup never reaches content (bytes that could start a marker are held
//    back until they are known not to; text before a call streams at once);
//  - a call's arguments stream as generated where the format allows;
//  - malformed markup (unterminated at Finish, invalid JSON) becomes content
//    verbatim, never dropped;
//  - feeding the whole text at once or N bytes at a time gives the same Result.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/output_format.h"

namespace llmhost {

struct ParseOptions {
  // OpenAI-style tools ([{type: function, function: {name, parameters}}]);
  // their parameter schemas type the values of XML formats. null: none.
  nlohmann::json tools;
  bool reasoning = true;             // recognise the format's think block at the start of output
  bool starts_in_reasoning = false;  // the generation prompt already opened the think block
  std::string call_id_prefix = "call_";  // ids are prefix + index (Kimi-K2 writes its own)
};

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object as text
};

struct ParsedOutput {
  std::string content;
  std::string reasoning_content;
  std::vector<ToolCall> tool_calls;
};

struct OutputEvent {
  enum class Kind {
    kContent,            // text: a content delta
    kReasoning,          // text: a reasoning delta
    kToolCallStart,      // index, id, name
    kToolCallArguments,  // index, text: an arguments delta
    kToolCallEnd,        // index: the call is complete
    kToolCallDiscarded,  // index: the started call was malformed; its markup follows as content
  };
  Kind kind = Kind::kContent;
  size_t index = 0;
  std::string text;
  std::string id;
  std::string name;
};

class OutputParser {
 public:
  OutputParser(OutputFormat format, ParseOptions options);
  ~OutputParser();
  OutputParser(OutputParser&&) noexcept;
  OutputParser& operator=(OutputParser&&) noexcept;

  // Feeds the next decoded piece; returns the events it completes.
  std::vector<OutputEvent> Feed(std::string_view piece);
  // Ends the output: held-back text is released, open markup becomes content.
  std::vector<OutputEvent> Finish();
  // Everything parsed so far (complete after Finish).
  const ParsedOutput& Result() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The text markers of a format, for what runs before the parser: the
// detokenizer must keep special tokens whose text is part of one (`all`),
// and a think block's budget closes the block with `forced_close`.
struct FormatMarkers {
  std::vector<std::string> all;          // every marker the parser looks for
  std::string think_open, think_close;   // the reasoning block's markers
  std::string forced_close;              // what ends a reasoning block early
};
FormatMarkers OutputFormatMarkers(OutputFormat format);

// Parses a whole output at once.
ParsedOutput ParseOutput(OutputFormat format, const ParseOptions& options, std::string_view text);

}  // namespace llmhost
