#include "chat/jinja_ops.h"

#include <cmath>

#include "chat/jinja_unicode.h"

namespace llmhost::jinja {

void FailIfUndefined(const Value& v) {
  if (!v.is_undefined()) return;
  if (v.is_unsafe_undefined()) Throw("SecurityError", v.s());
  Throw("UndefinedError", v.s().empty() ? "value is undefined" : v.s());
}

namespace {

[[noreturn]] void Overflow() { Throw("OverflowError", "integer overflow"); }

[[noreturn]] void Unsupported(const char* op, const Value& a, const Value& b) {
  ThrowTypeError(std::string("unsupported operand type(s) for ") + op + ": '" + a.TypeName() + "' and '" +
                 b.TypeName() + "'");
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  if (b == 0) Throw("ZeroDivisionError", "integer division or modulo by zero");
  if (a == INT64_MIN && b == -1) Overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t ModInt(int64_t a, int64_t b) {
  if (b == 0) Throw("ZeroDivisionError", "integer modulo by zero");
  if (b == -1) return 0;
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// Python's float divmod.
void FloatDivMod(double a, double b, double* div, double* mod) {
  double m = std::fmod(a, b);
  double d = (a - m) / b;
  if (m != 0.0) {
    if ((b < 0) != (m < 0)) {
      m += b;
      d -= 1.0;
    }
  } else {
    m = std::copysign(0.0, b);
  }
  double fd;
  if (d != 0.0) {
    fd = std::floor(d);
    if (d - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, a / b);
  }
  *div = fd;
  *mod = m;
}

Value Repeat(Renderer& r, const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.s();
    if (!s.empty() && static_cast<uint64_t>(n) > kMaxStringBytes / s.size()) r.CheckStringSize(kMaxStringBytes + 1);
    r.CheckStringSize(s.size() * n);
    r.Charge(s.size() * n / 64);
    std::string out;
    out.reserve(s.size() * n);
    for (int64_t i = 0; i < n; ++i) out += s;
    return seq.is_markup() ? Value::Markup(std::move(out)) : Value::Str(std::move(out));
  }
  const auto& items = seq.seq().items;
  if (!items.empty() && static_cast<uint64_t>(n) > kMaxSeqItems / items.size()) r.CheckSeqSize(kMaxSeqItems + 1);
  r.CheckSeqSize(items.size() * n);
  r.Charge(items.size() * n);
  std::vector<Value> out;
  out.reserve(items.size() * n);
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::Seq(seq.seq().kind, std::move(out));
}

Value IntPow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) Overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) Overflow();
  }
  return Value::Int(result);
}

}  // namespace

Value BinaryOp(Renderer& r, BinOp op, const Value& a, const Value& b) {
  // A string on the left of % formats even with an Undefined argument.
  if (op == BinOp::kMod && a.is_string()) {
    std::string s = PercentFormat(r, a.s(), b, a.is_markup());
    return a.is_markup() ? Value::Markup(std::move(s)) : Value::Str(std::move(s));
  }
  FailIfUndefined(a);
  FailIfUndefined(b);
  bool ints = a.is_integral() && b.is_integral();
  bool nums = a.is_number() && b.is_number();
  switch (op) {
    case BinOp::kAdd: {
      if (ints) {
        int64_t v;
        if (__builtin_add_overflow(a.i(), b.i(), &v)) Overflow();
        return Value::Int(v);
      }
      if (nums) return Value::Float(a.AsDouble() + b.AsDouble());
      if (a.is_string() && b.is_string()) {
        r.CheckStringSize(a.s().size() + b.s().size());
        r.Charge((a.s().size() + b.s().size()) / 64);
        if (a.is_markup() || b.is_markup()) {  // the plain side is escaped
          return Value::Markup((a.is_markup() ? a.s() : HtmlEscape(a.s())) +
                               (b.is_markup() ? b.s() : HtmlEscape(b.s())));
        }
        return Value::Str(a.s() + b.s());
      }
      if (a.is_markup() || b.is_markup()) Unsupported("+", a, b);
      if (a.is_list() && b.is_seq() && a.seq().kind == b.seq().kind) {
        r.CheckSeqSize(a.seq().items.size() + b.seq().items.size());
        r.Charge(a.seq().items.size() + b.seq().items.size());
        std::vector<Value> items = a.seq().items;
        items.insert(items.end(), b.seq().items.begin(), b.seq().items.end());
        return Value::Seq(a.seq().kind, std::move(items));
      }
      if (a.is_string() || a.is_list()) {
        std::string t = a.TypeName();
        ThrowTypeError("can only concatenate " + t + " (not \"" + b.TypeName() + "\") to " + t);
      }
      Unsupported("+", a, b);
    }
    case BinOp::kSub: {
      if (ints) {
        int64_t v;
        if (__builtin_sub_overflow(a.i(), b.i(), &v)) Overflow();
        return Value::Int(v);
      }
      if (nums) return Value::Float(a.AsDouble() - b.AsDouble());
      Unsupported("-", a, b);
    }
    case BinOp::kMul: {
      if (ints) {
        int64_t v;
        if (__builtin_mul_overflow(a.i(), b.i(), &v)) Overflow();
        return Value::Int(v);
      }
      if (nums) return Value::Float(a.AsDouble() * b.AsDouble());
      if ((a.is_string() || a.is_list()) && b.is_integral()) return Repeat(r, a, b.i());
      if ((b.is_string() || b.is_list()) && a.is_integral()) return Repeat(r, b, a.i());
      if (a.is_string() || a.is_list() || b.is_string() || b.is_list()) {
        const Value& other = (a.is_string() || a.is_list()) ? b : a;
        ThrowTypeError("can't multiply sequence by non-int of type '" + other.TypeName() + "'");
      }
      Unsupported("*", a, b);
    }
    case BinOp::kDiv: {
      if (!nums) Unsupported("/", a, b);
      double d = b.AsDouble();
      if (d == 0.0) Throw("ZeroDivisionError", "division by zero");
      return Value::Float(a.AsDouble() / d);
    }
    case BinOp::kFloorDiv: {
      if (ints) return Value::Int(FloorDivInt(a.i(), b.i()));
      if (!nums) Unsupported("//", a, b);
      if (b.AsDouble() == 0.0) Throw("ZeroDivisionError", "float floor division by zero");
      double div, mod;
      FloatDivMod(a.AsDouble(), b.AsDouble(), &div, &mod);
      return Value::Float(div);
    }
    case BinOp::kMod: {
      if (ints) return Value::Int(ModInt(a.i(), b.i()));
      if (!nums) Unsupported("%", a, b);
      if (b.AsDouble() == 0.0) Throw("ZeroDivisionError", "float modulo");
      double div, mod;
      FloatDivMod(a.AsDouble(), b.AsDouble(), &div, &mod);
      return Value::Float(mod);
    }
    case BinOp::kPow: {
      if (ints && b.i() >= 0) return IntPow(a.i(), b.i());
      if (!nums) Unsupported("** or pow()", a, b);
      double x = a.AsDouble(), y = b.AsDouble();
      if (x == 0.0 && y < 0) Throw("ZeroDivisionError", "0.0 cannot be raised to a negative power");
      if (x < 0 && std::floor(y) != y) Throw("ValueError", "complex result of a power");
      double v = std::pow(x, y);
      if (std::isinf(v) && !std::isinf(x) && !std::isinf(y)) Throw("OverflowError", "(34, 'Numerical result out of range')");
      return Value::Float(v);
    }
  }
  Unsupported("?", a, b);
}

Value UnaryMinus(const Value& v) {
  FailIfUndefined(v);
  if (v.is_integral()) {
    if (v.i() == INT64_MIN) Overflow();
    return Value::Int(-v.i());
  }
  if (v.is_float()) return Value::Float(-v.f());
  ThrowTypeError("bad operand type for unary -: '" + v.TypeName() + "'");
}

Value UnaryPlus(const Value& v) {
  FailIfUndefined(v);
  if (v.is_integral()) return Value::Int(v.i());
  if (v.is_float()) return v;
  ThrowTypeError("bad operand type for unary +: '" + v.TypeName() + "'");
}

bool CompareValues(CmpOp op, const Value& a, const Value& b) {
  switch (op) {
    case CmpOp::kEq: return Equals(a, b);
    case CmpOp::kNe: return !Equals(a, b);
    default: break;
  }
  // NaN compares false with everything.
  if ((a.is_float() && std::isnan(a.f())) || (b.is_float() && std::isnan(b.f()))) {
    if (a.is_number() && b.is_number()) return false;
  }
  int c = Compare(a, b);
  switch (op) {
    case CmpOp::kLt: return c < 0;
    case CmpOp::kLe: return c <= 0;
    case CmpOp::kGt: return c > 0;
    case CmpOp::kGe: return c >= 0;
    default: return false;
  }
}

bool Contains(Renderer& r, const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kUndefined: return false;
    case Kind::kString:
      if (!item.is_string()) {
        ThrowTypeError("'in <string>' requires string as left operand, not " + item.TypeName());
      }
      return container.s().find(item.s()) != std::string::npos;
    case Kind::kSeq: {
      const auto& items = container.seq().items;
      r.Charge(items.size() / 8);
      if (container.seq().kind == SeqKind::kItems && !(item.is_seq() && item.seq().kind == SeqKind::kTuple)) {
        return false;
      }
      for (const Value& v : items) {
        if (Equals(v, item)) return true;
      }
      return false;
    }
    case Kind::kDict:
      if (!IsHashable(item)) ThrowTypeError("unhashable type: '" + item.TypeName() + "'");
      return container.dict().Find(item) != nullptr;
    default:
      ThrowTypeError("argument of type '" + container.TypeName() + "' is not iterable");
  }
}

// ---- slicing ----

namespace {

// Python's slice.indices(): clamps start/stop for a sequence of length n.
bool SliceIndices(const Value& start, const Value& stop, const Value& step, int64_t n, int64_t* b, int64_t* e,
                  int64_t* st) {
  auto is_none = [](const Value& v) { return v.is_none() || v.is_undefined(); };
  for (const Value* v : {&start, &stop, &step}) {
    if (!is_none(*v) && !v->is_integral()) return false;
  }
  *st = is_none(step) ? 1 : step.i();
  if (*st == 0) Throw("ValueError", "slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t dflt_pos, int64_t dflt_neg) -> int64_t {
    if (is_none(v)) return *st > 0 ? dflt_pos : dflt_neg;
    int64_t x = v.i();
    if (x < 0) {
      x += n;
      if (x < 0) x = *st > 0 ? 0 : -1;
    } else if (x >= n) {
      x = *st > 0 ? n : n - 1;
    }
    return x;
  };
  *b = clamp(start, 0, n - 1);
  *e = clamp(stop, n, -1);
  return true;
}

template <typename F>
void ForSlice(int64_t b, int64_t e, int64_t st, F f) {
  // 128-bit index: a huge step must not overflow.
  if (st > 0) {
    for (__int128 i = b; i < e; i += st) f(static_cast<int64_t>(i));
  } else {
    for (__int128 i = b; i > e; i += st) f(static_cast<int64_t>(i));
  }
}

}  // namespace

std::optional<Value> SliceValue(Renderer& r, const Value& obj, const Value& start, const Value& stop,
                                const Value& step) {
  int64_t b, e, st;
  if (obj.is_string()) {
    const std::string& s = obj.s();
    bool ascii = IsAsciiStr(s);
    std::vector<size_t> offsets;  // code point -> byte offset (non-ASCII only)
    int64_t n = static_cast<int64_t>(s.size());
    if (!ascii) {
      size_t pos = 0;
      while (pos < s.size()) {
        offsets.push_back(pos);
        DecodeCodePoint(s, &pos);
      }
      offsets.push_back(s.size());
      n = static_cast<int64_t>(offsets.size()) - 1;
    }
    if (!SliceIndices(start, stop, step, n, &b, &e, &st)) return std::nullopt;
    r.Charge(s.size() / 64);
    std::string out;
    auto make = [&](std::string text) {
      return obj.is_markup() ? Value::Markup(std::move(text)) : Value::Str(std::move(text));
    };
    if (st == 1 && b < e) {
      if (ascii) return make(s.substr(b, e - b));
      return make(s.substr(offsets[b], offsets[e] - offsets[b]));
    }
    ForSlice(b, e, st, [&](int64_t i) {
      if (ascii) {
        out.push_back(s[i]);
      } else {
        out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
      }
    });
    return make(std::move(out));
  }
  if (obj.is_seq() && (obj.is_list() || obj.seq().kind == SeqKind::kRange)) {
    const auto& items = obj.seq().items;
    if (!SliceIndices(start, stop, step, static_cast<int64_t>(items.size()), &b, &e, &st)) return std::nullopt;
    std::vector<Value> out;
    ForSlice(b, e, st, [&](int64_t i) { out.push_back(items[i]); });
    r.Charge(out.size());
    SeqKind kind = obj.seq().kind == SeqKind::kRange ? SeqKind::kRange : obj.seq().kind;
    Value v = Value::Seq(kind, std::move(out));
    return v;
  }
  return std::nullopt;
}

}  // namespace llmhost::jinja
