// Parse stacks: the state of a parse is a set of stacks of frames, each
// frame a DFA state of one rule (grammar/compiled_grammar.h); the frame
// below a top is where its caller resumes. Stacks share their lower frames:
// a frame names its parent, and frames are interned by (state, parent), so
// equal stacks are one index and sets of stacks deduplicate by index.
//
// A set is kept closed: its tops are the frames that can take a byte or a
// token next; calls have been entered and finished rules left (which may
// reach the bottom: the text can end here).
//
// StackArena grows by appending; walks over the token trie take a mark and
// truncate back to it, so a walk allocates nothing that outlives it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "util/status.h"

namespace llmhost::grammar {

// Parents below the outermost frame: the real bottom (finishing it means the
// text can end) or an unknown context (mask cache walks: finishing it
// "escapes" into whatever called the rule).
inline constexpr int32_t kBottom = -1;
inline constexpr int32_t kOutside = -2;
inline constexpr size_t kMaxFrames = 1 << 22;

class StackArena {
 public:
  struct Frame {
    int32_t state;
    int32_t parent;  // a frame index, kBottom or kOutside
  };

  StackArena() { Clear(); }

  // The index of the frame (state, parent), appended when new.
  int32_t Intern(int32_t state, int32_t parent);
  const Frame& frame(int32_t i) const { return frames_[i]; }
  size_t size() const { return frames_.size(); }
  // Forgets the frames appended since size() was `mark`.
  void Truncate(size_t mark);
  void Clear();

 private:
  static uint64_t Hash(int32_t state, int32_t parent);
  void Rehash(size_t capacity);

  std::vector<Frame> frames_;
  std::vector<int32_t> table_;  // open addressing, linear probing; -1: empty
  size_t mask_ = 0;
};

// What closing a set of stacks found besides its tops.
struct CloseResult {
  bool can_end = false;  // some stack finished at kBottom
  bool escaped = false;  // some stack finished at kOutside
};

// Steps sets of stacks. Holds scratch space; one per thread of work.
class StackStepper {
 public:
  StackStepper(const CompiledGrammar& g, StackArena* arena) : g_(g), arena_(*arena) {}

  // Closes the frames `raw`, appending the tops to *tops (deduplicated).
  // ResourceExhausted past CompileOptions::max_stacks or kMaxFrames.
  Status Close(std::span<const int32_t> raw, std::vector<int32_t>* tops, CloseResult* result);
  // The frames after byte b from `tops` (not closed; appended to *raw).
  void StepByte(std::span<const int32_t> tops, uint8_t b, std::vector<int32_t>* raw);
  // The frames after the special token `token` from `tops`.
  void StepToken(std::span<const int32_t> tops, int32_t token, std::vector<int32_t>* raw);

 private:
  bool Seen(int32_t f);

  const CompiledGrammar& g_;
  StackArena& arena_;
  std::vector<int32_t> work_;
  std::vector<uint32_t> seen_;  // [frame] == stamp_: visited in this Close
  uint32_t stamp_ = 0;
};

}  // namespace llmhost::grammar
