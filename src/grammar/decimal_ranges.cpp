#include "grammar/decimal_ranges.h"

#include <vector>

namespace llmhost::grammar {
namespace {

// Magnitudes as digit strings without leading zeros.
int CompareDigits(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a < b ? -1 : (a > b ? 1 : 0);
}

int CompareMagnitude(const Decimal& a, const Decimal& b) {
  int c = CompareDigits(a.int_digits, b.int_digits);
  if (c != 0) return c;
  return a.frac_digits < b.frac_digits ? -1 : (a.frac_digits > b.frac_digits ? 1 : 0);
}

std::string AddOne(std::string d) {
  for (size_t i = d.size(); i-- > 0;) {
    if (d[i] != '9') {
      ++d[i];
      return d;
    }
    d[i] = '0';
  }
  return "1" + d;
}

std::string SubOne(std::string d) {  // d > 0
  for (size_t i = d.size(); i-- > 0;) {
    if (d[i] != '0') {
      --d[i];
      break;
    }
    d[i] = '9';
  }
  size_t nz = d.find_first_not_of('0');
  return nz == std::string::npos ? "0" : d.substr(nz);
}

NodeId Digit(Grammar& g, char lo = '0', char hi = '9') {
  return g.Bytes({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
}

// Digit strings of x's length between x and y (x <= y, same length).
NodeId SameLength(Grammar& g, const std::string& x, const std::string& y) {
  if (x.empty()) return g.Empty();
  std::string xr = x.substr(1), yr = y.substr(1);
  if (x[0] == y[0]) return g.Seq({g.Byte(static_cast<uint8_t>(x[0])), SameLength(g, xr, yr)});
  if (xr.find_first_not_of('0') == std::string::npos && yr.find_first_not_of('9') == std::string::npos)
    return g.Seq(
        {Digit(g, x[0], y[0]), g.Repeat(Digit(g), static_cast<int32_t>(xr.size()), static_cast<int32_t>(xr.size()))});
  std::vector<NodeId> alts{g.Seq({g.Byte(static_cast<uint8_t>(x[0])), SameLength(g, xr, std::string(xr.size(), '9'))})};
  if (x[0] + 1 <= y[0] - 1)
    alts.push_back(g.Seq({Digit(g, static_cast<char>(x[0] + 1), static_cast<char>(y[0] - 1)),
                          g.Repeat(Digit(g), static_cast<int32_t>(xr.size()), static_cast<int32_t>(xr.size()))}));
  alts.push_back(g.Seq({g.Byte(static_cast<uint8_t>(y[0])), SameLength(g, std::string(yr.size(), '0'), yr)}));
  return g.Alt(std::move(alts));
}

// Canonical non-negative integer texts between a and b (b nullopt: no bound).
NodeId MagnitudeRange(Grammar& g, std::string a, const std::optional<std::string>& b) {
  std::vector<NodeId> alts;
  if (a == "0") {
    alts.push_back(g.Byte('0'));
    if (b && *b == "0") return alts[0];
    a = "1";
  }
  size_t last = b ? b->size() : a.size();
  for (size_t len = a.size(); len <= last; ++len) {
    std::string lo = len == a.size() ? a : "1" + std::string(len - 1, '0');
    std::string hi = (b && len == b->size()) ? *b : std::string(len, '9');
    alts.push_back(SameLength(g, lo, hi));
  }
  if (!b) alts.push_back(g.Seq({Digit(g, '1', '9'), g.Repeat(Digit(g), static_cast<int32_t>(a.size()), -1)}));
  return g.Alt(std::move(alts));
}

// Fraction digit strings s with 0.s >= 0.f (f without trailing zeros);
// `nonempty` at the top (a fraction has a digit), not below.
NodeId FracAtLeast(Grammar& g, const std::string& f, bool nonempty) {
  if (f.empty()) return g.Repeat(Digit(g), nonempty ? 1 : 0, -1);
  std::vector<NodeId> alts;
  if (f[0] < '9') alts.push_back(g.Seq({Digit(g, static_cast<char>(f[0] + 1), '9'), g.Repeat(Digit(g), 0, -1)}));
  alts.push_back(g.Seq({g.Byte(static_cast<uint8_t>(f[0])), FracAtLeast(g, f.substr(1), false)}));
  return g.Alt(std::move(alts));
}

// Fraction digit strings s with 0.s <= 0.f.
NodeId FracAtMost(Grammar& g, const std::string& f, bool nonempty) {
  if (f.empty()) return g.Repeat(g.Byte('0'), nonempty ? 1 : 0, -1);
  std::vector<NodeId> alts;
  if (!nonempty) alts.push_back(g.Empty());
  if (f[0] > '0') alts.push_back(g.Seq({Digit(g, '0', static_cast<char>(f[0] - 1)), g.Repeat(Digit(g), 0, -1)}));
  alts.push_back(g.Seq({g.Byte(static_cast<uint8_t>(f[0])), FracAtMost(g, f.substr(1), false)}));
  return g.Alt(std::move(alts));
}

// Fraction digit strings s with 0.a <= 0.s <= 0.b (0.a <= 0.b).
NodeId FracBetween(Grammar& g, const std::string& a, const std::string& b, bool nonempty) {
  if (a.empty()) return FracAtMost(g, b, nonempty);
  if (a[0] == b[0]) return g.Seq({g.Byte(static_cast<uint8_t>(a[0])), FracBetween(g, a.substr(1), b.substr(1), false)});
  std::vector<NodeId> alts{g.Seq({g.Byte(static_cast<uint8_t>(a[0])), FracAtLeast(g, a.substr(1), false)})};
  if (a[0] + 1 <= b[0] - 1)
    alts.push_back(
        g.Seq({Digit(g, static_cast<char>(a[0] + 1), static_cast<char>(b[0] - 1)), g.Repeat(Digit(g), 0, -1)}));
  alts.push_back(g.Seq({g.Byte(static_cast<uint8_t>(b[0])), FracAtMost(g, b.substr(1), false)}));
  return g.Alt(std::move(alts));
}

// I.F texts (F non-empty) with a <= I.F <= b, both non-negative.
NodeId MagnitudeFraction(Grammar& g, const Decimal& a, const std::optional<Decimal>& b) {
  NodeId dot = g.Byte('.');
  if (b && a.int_digits == b->int_digits)
    return g.Seq({g.Literal(a.int_digits), dot, FracBetween(g, a.frac_digits, b->frac_digits, true)});
  std::vector<NodeId> alts{g.Seq({g.Literal(a.int_digits), dot, FracAtLeast(g, a.frac_digits, true)})};
  std::string mid_lo = AddOne(a.int_digits);
  if (!b) {
    alts.push_back(g.Seq({MagnitudeRange(g, mid_lo, std::nullopt), dot, g.Repeat(Digit(g), 1, -1)}));
  } else {
    if (CompareDigits(mid_lo, b->int_digits) < 0)
      alts.push_back(g.Seq({MagnitudeRange(g, mid_lo, SubOne(b->int_digits)), dot, g.Repeat(Digit(g), 1, -1)}));
    alts.push_back(g.Seq({g.Literal(b->int_digits), dot, FracAtMost(g, b->frac_digits, true)}));
  }
  return g.Alt(std::move(alts));
}

Decimal Magnitude(const Decimal& d) {
  Decimal m = d;
  m.negative = false;
  return m;
}

}  // namespace

Decimal Decimal::Negated() const {
  Decimal d = *this;
  d.negative = !IsZero() && !negative;
  return d;
}

int Compare(const Decimal& a, const Decimal& b) {
  bool an = a.negative && !a.IsZero(), bn = b.negative && !b.IsZero();
  if (an != bn) return an ? -1 : 1;
  int m = CompareMagnitude(a, b);
  return an ? -m : m;
}

Decimal Increment(const Decimal& a) {
  Decimal out;
  if (a.negative && !a.IsZero()) {
    out.int_digits = SubOne(a.int_digits);
    out.negative = out.int_digits != "0";
  } else {
    out.int_digits = AddOne(a.int_digits);
  }
  return out;
}

Decimal Decrement(const Decimal& a) { return Increment(a.Negated()).Negated(); }

std::optional<Decimal> ParseDecimal(const std::string& text) {
  size_t i = 0;
  Decimal d;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) d.negative = text[i++] == '-';
  std::string digits;
  long point = -1;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.') {
      if (point >= 0) return std::nullopt;
      point = static_cast<long>(digits.size());
    } else {
      digits += text[i];
    }
  }
  if (digits.empty()) return std::nullopt;
  if (point < 0) point = static_cast<long>(digits.size());
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t used = 0;
    long exp = 0;
    try {
      exp = std::stol(text.substr(i + 1), &used);
    } catch (...) {
      return std::nullopt;
    }
    if (used == 0 || exp > 100000 || exp < -100000) return std::nullopt;
    i += 1 + used;
    point += exp;
  }
  if (i != text.size()) return std::nullopt;
  if (point < 0) {
    digits.insert(0, static_cast<size_t>(-point), '0');
    point = 0;
  }
  if (point > static_cast<long>(digits.size())) digits.append(static_cast<size_t>(point) - digits.size(), '0');
  std::string int_part = digits.substr(0, static_cast<size_t>(point));
  std::string frac_part = digits.substr(static_cast<size_t>(point));
  size_t nz = int_part.find_first_not_of('0');
  d.int_digits = nz == std::string::npos ? "0" : int_part.substr(nz);
  size_t last = frac_part.find_last_not_of('0');
  d.frac_digits = last == std::string::npos ? "" : frac_part.substr(0, last + 1);
  if (d.IsZero()) d.negative = false;
  return d;
}

NodeId IntegerRange(Grammar& g, const std::optional<Decimal>& lo, const std::optional<Decimal>& hi) {
  if (lo && hi && Compare(*lo, *hi) > 0) return g.Alt({});
  Decimal zero;
  std::vector<NodeId> alts;
  if (!lo || Compare(*lo, zero) < 0) {  // negative integers
    std::string mag_lo = (hi && Compare(*hi, zero) < 0) ? hi->int_digits : "1";
    std::optional<std::string> mag_hi;
    if (lo) mag_hi = lo->int_digits;
    alts.push_back(g.Seq({g.Byte('-'), MagnitudeRange(g, mag_lo, mag_hi)}));
  }
  if (!hi || Compare(*hi, zero) >= 0) {
    std::string from = (lo && Compare(*lo, zero) > 0) ? lo->int_digits : "0";
    std::optional<std::string> to;
    if (hi) to = hi->int_digits;
    alts.push_back(MagnitudeRange(g, from, to));
  }
  return g.Alt(std::move(alts));
}

NodeId FractionRange(Grammar& g, const std::optional<Decimal>& lo, const std::optional<Decimal>& hi) {
  if (lo && hi && Compare(*lo, *hi) > 0) return g.Alt({});
  Decimal zero;
  std::vector<NodeId> alts;
  if (!lo || Compare(*lo, zero) <= 0) {  // "-I.F", -0.0 included where 0 is in range
    Decimal mag_lo = (hi && Compare(*hi, zero) < 0) ? Magnitude(*hi) : zero;
    std::optional<Decimal> mag_hi;
    if (lo) mag_hi = Magnitude(*lo);
    alts.push_back(g.Seq({g.Byte('-'), MagnitudeFraction(g, mag_lo, mag_hi)}));
  }
  if (!hi || Compare(*hi, zero) >= 0) {
    Decimal from = (lo && Compare(*lo, zero) > 0) ? *lo : zero;
    alts.push_back(MagnitudeFraction(g, from, hi));
  }
  return g.Alt(std::move(alts));
}

}  // namespace llmhost::grammar
