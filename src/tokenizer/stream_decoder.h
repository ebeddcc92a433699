// StreamDecoder: turns generated ids into text one id at a time.
//
// Each Add() returns the text that became final with that id. Text is held
// back while it ends in an incomplete UTF-8 character (a byte-level or
// byte-fallback token can carry part of one), so the output never splits a
// character, and the concatenation of every Add() plus Finish() equals
// Tokenizer::Decode() of all the ids. One exception: when byte-fallback
// tokens complete a character and then start one that never completes, HF's
// decode replaces the whole run (the complete character too) with U+FFFDs;
// the stream has already emitted that character and keeps it.
//
// How: decode a short window [prefix, end) and subtract the decode of
// [prefix, read). Decoding with one token of left context makes
// position-dependent decoders (Metaspace's first-token space, Strip) agree
// with the full decode; the window is O(1) long, so each Add() is O(1).
//
// Not thread-safe: one StreamDecoder per generated sequence.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace llmhost {

class StreamDecoder {
 public:
  // `tokenizer` must outlive this object. With `skip_special`, special ids
  // in `keep_special` are decoded all the same: tool-call and think markup
  // that the output parser must see (`<tool_call>`, `<|tool_calls_begin|>`).
  StreamDecoder(const Tokenizer& tokenizer, bool skip_special, std::vector<TokenId> keep_special = {});

  // Appends one id; returns the newly finalized text (possibly empty).
  std::string Add(TokenId id);
  // Returns any text still held back (an incomplete character at the end of
  // the stream, decoded as the full decode would: with U+FFFD).
  std::string Finish();

  // All text emitted so far.
  const std::string& text() const { return text_; }

 private:
  std::string DecodeRange(size_t begin, size_t end) const;
  // The text of ids [read_, end) given the window decodes before/after them.
  std::string Delta(const std::string& prefix_text, const std::string& new_text) const;

  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<TokenId> keep_special_;  // sorted
  std::vector<TokenId> ids_;
  size_t prefix_ = 0;  // start of the left-context window
  size_t read_ = 0;    // ids before this index have been emitted
  std::string text_;
};

}  // namespace llmhost
