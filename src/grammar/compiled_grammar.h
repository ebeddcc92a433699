// CompiledGrammar: every rule the root can reach, as DFAs over bytes,
// special tokens and calls (grammar/rule_automaton.h), renumbered into one
// table of states; plus the per-state mask cache (grammar/mask_cache.h).
//
// Every state is reachable from its rule's start and can reach an accepting
// state, and every rule can match some string, so any stack of frames built
// by the parse (grammar/parse_stacks.h) can still be completed: a text that
// keeps some stack alive is a prefix of the grammar's language.
//
// Immutable but for the mask cache, which fills lazily and is thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/repeat_lowering.h"
#include "grammar/token_vocab.h"

namespace llmhost::grammar {

class MaskCache;

class CompiledGrammar {
 public:
  struct State {
    int32_t rule = 0;        // index into the compiled rules
    int32_t byte_row = -1;   // offset of its row in byte_next_; -1: no byte edges
    int32_t token_begin = 0, token_end = 0;  // its edges in token_edges_
    int32_t call_begin = 0, call_end = 0;    // its edges in call_edges_
    bool accepting = false;
  };
  struct TokenEdge {
    int32_t token;
    int32_t next;
  };
  struct CallEdge {
    int32_t callee_start;  // the callee's start state
    int32_t next;          // where the caller resumes
  };

  // `repeats`: where long counted repeats are lowered (tests pass small
  // limits to cross blocks with short texts).
  static Result<std::shared_ptr<const CompiledGrammar>> Build(const Grammar& grammar,
                                                              std::shared_ptr<const TokenVocab> vocab,
                                                              const CompileOptions& options,
                                                              const RepeatLimits& repeats = {});
  ~CompiledGrammar();

  int32_t start() const { return 0; }  // the root rule's start state
  size_t state_count() const { return states_.size(); }
  const State& state(int32_t s) const { return states_[s]; }
  // The state after byte b, or -1.
  int32_t NextOnByte(int32_t s, uint8_t b) const {
    const State& st = states_[s];
    if (st.byte_row < 0) return -1;
    return byte_next_[st.byte_row + byte_class_[static_cast<size_t>(st.rule) * 256 + b]];
  }
  // The byte classes of a compiled rule: [byte] -> class; a state's byte
  // edges are per class, and each class is a range of bytes.
  std::span<const uint8_t> byte_classes(int32_t rule) const {
    return {byte_class_.data() + static_cast<size_t>(rule) * 256, 256};
  }
  // The state after any byte of class `cls` of s's rule, or -1.
  int32_t NextOnClass(int32_t s, uint8_t cls) const {
    const State& st = states_[s];
    return st.byte_row < 0 ? -1 : byte_next_[st.byte_row + cls];
  }
  // No calls and not accepting: stepping into s never changes the stack.
  bool IsPlain(int32_t s) const { return plain_[s] != 0; }
  bool HasEdges(int32_t s) const {
    const State& st = states_[s];
    return st.byte_row >= 0 || st.token_begin != st.token_end;
  }
  // Whether some byte edge leaves s on byte b (a 256-bit set per state).
  bool TakesByte(int32_t s, uint8_t b) const { return (byte_sets_[s][b >> 6] >> (b & 63)) & 1; }
  const std::array<uint64_t, 4>& byte_set(int32_t s) const { return byte_sets_[s]; }
  std::span<const TokenEdge> token_edges(int32_t s) const {
    const State& st = states_[s];
    return {token_edges_.data() + st.token_begin, static_cast<size_t>(st.token_end - st.token_begin)};
  }
  std::span<const CallEdge> call_edges(int32_t s) const {
    const State& st = states_[s];
    return {call_edges_.data() + st.call_begin, static_cast<size_t>(st.call_end - st.call_begin)};
  }

  const TokenVocab& vocab() const { return *vocab_; }
  const CompileOptions& options() const { return options_; }
  MaskCache& cache() const { return *cache_; }

 private:
  CompiledGrammar() = default;
  // InvalidArgument naming a rule that can reach itself before any byte.
  Status CheckLeftRecursion() const;

  std::shared_ptr<const TokenVocab> vocab_;
  CompileOptions options_;
  std::vector<State> states_;
  std::vector<uint8_t> byte_class_;  // [rule * 256 + byte]
  std::vector<int32_t> byte_next_;
  std::vector<std::array<uint64_t, 4>> byte_sets_;  // [state]
  std::vector<uint8_t> plain_;                       // [state]
  std::vector<TokenEdge> token_edges_;
  std::vector<CallEdge> call_edges_;
  std::vector<std::string> rule_names_;  // [compiled rule]
  std::unique_ptr<MaskCache> cache_;
};

}  // namespace llmhost::grammar
