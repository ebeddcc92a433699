// Grammars for the decimal texts of numbers within bounds: integers of any
// size ("digit-range" construction) and decimals with a fraction part.
#pragma once

#include <optional>
#include <string>

#include "grammar/grammar.h"

namespace llmhost::grammar {

// A decimal number written out: sign, integer digits (no leading zeros,
// "0" for none) and fraction digits (no trailing zeros).
struct Decimal {
  bool negative = false;
  std::string int_digits = "0";
  std::string frac_digits;

  bool IsZero() const { return int_digits == "0" && frac_digits.empty(); }
  Decimal Negated() const;
};

// -1, 0, 1 as a <, ==, > b.
int Compare(const Decimal& a, const Decimal& b);
// Integer a + 1 and a - 1 (fractions are ignored: call on integers).
Decimal Increment(const Decimal& a);
Decimal Decrement(const Decimal& a);
// From "123", "-0.5", "1.25e-3" (as printf writes doubles); nullopt if not one.
std::optional<Decimal> ParseDecimal(const std::string& text);

// JSON integers n (as -?(0|[1-9][0-9]*)) with lo <= n <= hi; nullopt bounds are
// open. lo and hi must be integers. An empty range gives an Alt matching nothing.
NodeId IntegerRange(Grammar& g, const std::optional<Decimal>& lo, const std::optional<Decimal>& hi);
// JSON numbers with a fraction part and no exponent (-?I.F, F non-empty)
// whose value v has lo <= v <= hi.
NodeId FractionRange(Grammar& g, const std::optional<Decimal>& lo, const std::optional<Decimal>& hi);

}  // namespace llmhost::grammar
