// StopStringMatcher: finds stop strings in streamed text that arrives in
// arbitrary pieces (token boundaries fall anywhere inside a stop string).
//
// Add() returns only text that can no longer be part of a stop string: the
// longest tail that is a prefix of some stop string is held back until the
// next piece decides it. When a stop string appears, the text before it is
// returned, the stop string and everything after it are dropped, and
// stopped() turns true. Flush() releases the held tail at the end of the
// stream. The earliest occurrence wins; at one position, the stop string
// listed first.
//
// Holding back starts at a byte that equals a stop string's first byte, so
// with valid UTF-8 stop strings it never splits a character.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llmhost {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  std::string Add(std::string_view text);
  std::string Flush();

  bool stopped() const { return stopped_; }
  // The stop string that ended the text ("" until stopped()).
  const std::string& matched() const { return matched_; }
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace llmhost
