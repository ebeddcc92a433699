// Long counted repeats as counts of a shared block rule.
//
// The rule automata (grammar/rule_automaton.h) unroll a counted repeat into
// one copy of its child per count: x{0,524288} of a JSON string character
// (~57 states) would need ~30 million states. Before the automata are built,
// each repeat whose unrolled size would pass RepeatLimits is rewritten in
// place over a rule P = x{B}, the block, where B copies of x fill about
// RepeatLimits::block states (x a call of the child when the child alone is
// larger than half of that):
//
//   x{n}      P{n / B} x{n % B}
//   x{0,m}    P{0,q-1} x{0,B-1} | P{q} x{0,r}     (m = qB + r; P{0,q} x{0,B-1}
//                                                   when r = B-1; x{0,m} when q = 0)
//   x{n,m}    x{n} x{0,m-n};   x{n,} is x{n} x*
//
// and a count of P that is long itself is lowered the same way (its child is
// a call: one state), so sizes stay bounded for any count up to kMaxRepeat.
// Exact: every count in range splits one way into blocks and a run, and no
// other count does. Where x's strings split one way (a JSON string's
// characters), a text has one parse in the run and one in a block per level
// of blocks, so the live parse stacks (grammar/parse_stacks.h) stay a few
// whatever the count. P is made once per child and shared by every repeat of
// it, so its DFA states and mask-cache entries repeat for every block; the
// runs of fewer than B stay inline, so that what follows the repeat (a
// string's closing quote) is in the same automaton.
//
// Done here, where Repeat nodes become automata, rather than where a source
// writes counts, so that JSON Schema, regular expressions and GBNF all get it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "grammar/grammar.h"

namespace llmhost::grammar {

// Sizes in estimated automaton states. A repeat past `unroll` is lowered
// when no string of its child begins another (a prefix code, such as a JSON
// string's characters: a block ends at one place, one parse); of another
// child only past `unroll_any`, about what one DFA could hold before (a
// block may end at several places, a parse stack each: `(a|aa)` splits
// "aaaa" many ways); of a child that matches "" never (its blocks could end
// anywhere; the automaton limits report it).
struct RepeatLimits {
  int64_t unroll = 16384;
  int64_t unroll_any = 65536;
  int64_t block = 8192;  // a block, about (at most `unroll`)
};

// `g` with every long repeat rewritten as above (new rules appended, with
// their flags appended to `inlined` as 0: [rule] != 0 means expanded in
// place), or nullopt when `g` has none. The result may pass kMaxNodes:
// validate it. Limits other than the defaults are for tests (small blocks).
std::optional<Grammar> LowerLongRepeats(const Grammar& g, std::vector<uint8_t>* inlined, RepeatLimits limits = {});

}  // namespace llmhost::grammar
