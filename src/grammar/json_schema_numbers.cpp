// integer and number schemas: minimum / maximum / exclusive* enforced
// exactly, as validators compare (Python's jsonschema: an integer text is
// compared exactly, a text with a fraction as the double it rounds to).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "grammar/decimal_ranges.h"
#include "grammar/json_schema_compiler.h"

namespace llmhost::grammar {
namespace {

constexpr double kTwo64 = 18446744073709551616.0;

// The shortest decimal that reads back as d.
Decimal Shortest(double d) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return *ParseDecimal(buf);
}

// The exact decimal value of d (glibc prints doubles exactly).
Decimal Exact(double d) {
  std::string buf(1200, '\0');
  int n = std::snprintf(buf.data(), buf.size(), "%.1100f", d);
  buf.resize(static_cast<size_t>(n));
  return *ParseDecimal(buf);
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
    // monotonic, so x >= shortest(d) gives round(x) >= d, and x >= the next
    // double up gives round(x) > d.
    if (lower) {
      TightenLower(&b.frac_lo, exclusive ? Exact(std::nextafter(d, INFINITY)) : Shortest(d));
    } else {
      TightenUpper(&b.frac_hi, exclusive ? Exact(std::nextafter(d, -INFINITY)) : Shortest(d));
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
