// integer and number schemas: minimum / maximum / exclusive* enforced
// exactly, as validators compare (Python's jsonschema: an integer text is
// compared exactly, a text with a fraction as the double it rounds to).
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "grammar/decimal_ranges.h"
#include "grammar/json_schema_compiler.h"

namespace llmhost::grammar {
namespace {

constexpr double kTwo64 = 18446744073709551616.0;

// The exact decimal value of d (glibc prints doubles exactly).
Decimal Exact(double d) {
  std::string buf(1200, '\0');
  int n = std::snprintf(buf.data(), buf.size(), "%.1100f", d);
  buf.resize(static_cast<size_t>(n));
  return *ParseDecimal(buf);
}

// The shortest decimal that reads back as d and lies at or above d's exact
// value (`up`) or at or below it: a bound whose texts past it all round past
// it too, and which refuses as few texts that round onto d as a short text
// can. glibc's printf rounds in the current rounding mode; past 17 digits a
// text still may not read back (directed rounding errs up to a whole unit of
// the last digit), so the search goes on to the exact value.
Decimal ShortestToward(double d, bool up) {
  constexpr int kMaxDigits = 40;
  char texts[kMaxDigits][64];
  const int saved = std::fegetround();
  std::fesetround(up ? FE_UPWARD : FE_DOWNWARD);
  for (int digits = 1; digits <= kMaxDigits; ++digits)
    std::snprintf(texts[digits - 1], sizeof texts[0], "%.*e", digits - 1, d);
  std::fesetround(saved);
  for (const char* text : texts)
    if (std::strtod(text, nullptr) == d) return *ParseDecimal(text);
  return Exact(d);
}

struct Bound {
  std::string keyword;
  double value = 0;
  std::optional<Decimal> exact_integer;  // the bound's own value when it is a JSON integer
};

// The bounds tightest first are combined by the caller; each becomes an
// inclusive bound on integer texts and on fraction texts.
struct Bounds {
  std::optional<Decimal> int_lo, int_hi, frac_lo, frac_hi;
  std::string inexact;  // a bound fraction texts cannot be held to exactly
};

void TightenLower(std::optional<Decimal>* at, const Decimal& d) {
  if (!*at || Compare(d, **at) > 0) *at = d;
}
void TightenUpper(std::optional<Decimal>* at, const Decimal& d) {
  if (!*at || Compare(d, **at) < 0) *at = d;
}

Result<Bounds> ReadBounds(const Json& schema, const std::string& path) {
  Bounds b;
  for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
    auto it = schema.find(key);
    if (it == schema.end()) continue;
    std::string k = key;
    double d = it->get<double>();
    if (!std::isfinite(d)) return BadSchema(path, "'" + k + "' is not finite");
    std::optional<Decimal> integer;
    if (it->is_number_integer()) {
      integer = ParseDecimal(it->is_number_unsigned() ? std::to_string(it->get<uint64_t>())
                                                      : std::to_string(it->get<int64_t>()));
      // Past 2^53 fraction texts, compared as doubles, cannot be held to it.
      if (Compare(Exact(d), *integer) != 0) b.inexact = k + "' of " + it->dump();
    } else if (std::fabs(d) >= kTwo64) {
      return UnsupportedKeyword(k + "' beyond 2^64 (its exact value is lost in parsing)", path);
    }
    bool lower = k == "minimum" || k == "exclusiveMinimum";
    bool exclusive = k.starts_with("exclusive");
    // Integer texts compare exactly with the double.
    if (lower) {
      Decimal first = integer ? (exclusive ? Increment(*integer) : *integer)
                              : (exclusive ? Increment(Exact(std::floor(d))) : Exact(std::ceil(d)));
      TightenLower(&b.int_lo, first);
    } else {
      Decimal last = integer ? (exclusive ? Decrement(*integer) : *integer)
                             : (exclusive ? Decrement(Exact(std::ceil(d))) : Exact(std::floor(d)));
      TightenUpper(&b.int_hi, last);
    }
    // Fraction texts compare as the double they round to; rounding is
    // monotonic, so x >= a text that reads back as d gives round(x) >= d,
    // and x >= one that reads back as the next double up gives round(x) > d.
    // (The next double's exact value could have ~750 digits: 0's next is 2^-1074.)
    if (lower) {
      TightenLower(&b.frac_lo, ShortestToward(exclusive ? std::nextafter(d, INFINITY) : d, false));
    } else {
      TightenUpper(&b.frac_hi, ShortestToward(exclusive ? std::nextafter(d, -INFINITY) : d, true));
    }
  }
  return b;
}

}  // namespace

Result<NodeId> SchemaCompiler::Number(const Json& schema, const std::string& path, bool integer) {
  ASSIGN_OR_RETURN(Bounds b, ReadBounds(schema, path));
  bool bounded = b.int_lo || b.int_hi;
  if (!bounded) return integer ? AnyInteger() : AnyNumber();
  if (!integer && !b.inexact.empty())
    return UnsupportedKeyword(b.inexact + " (not exactly a double) on a number", path);
  bool ints_fit = !(b.int_lo && b.int_hi && Compare(*b.int_lo, *b.int_hi) > 0);
  bool fracs_fit = !(b.frac_lo && b.frac_hi && Compare(*b.frac_lo, *b.frac_hi) > 0);
  std::vector<NodeId> alts;
  if (ints_fit) alts.push_back(IntegerRange(g_, b.int_lo, b.int_hi));
  if (!integer && fracs_fit) alts.push_back(FractionRange(g_, b.frac_lo, b.frac_hi));
  if (alts.empty())
    return BadSchema(path, std::string("no ") + (integer ? "integer" : "number") + " lies within the bounds");
  return g_.Alt(std::move(alts));
}

}  // namespace llmhost::grammar
