// Jinja tests (`x is defined`, `x is divisibleby 3`, ...), with Python's
// notion of each type.
#include "chat/jinja_builtins.h"
#include "chat/jinja_builtins_impl.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace llmhost::jinja {
namespace {

void NoArgs(const char* name, const CallArgs& args) { Args a(name, args, {}); }

const Value& OneArg(const char* name, const CallArgs& args) {
  if (args.pos.size() + args.kw.size() != 1) ThrowTypeError(std::string(name) + "() takes exactly one argument");
  return args.pos.empty() ? args.kw[0].second : args.pos[0];
}

bool TDefined(Renderer&, const Value& v, CallArgs& a) { NoArgs("defined", a); return !v.is_undefined(); }
bool TUndefined(Renderer&, const Value& v, CallArgs& a) { NoArgs("undefined", a); return v.is_undefined(); }
bool TNone(Renderer&, const Value& v, CallArgs& a) { NoArgs("none", a); return v.is_none(); }
bool TBoolean(Renderer&, const Value& v, CallArgs& a) { NoArgs("boolean", a); return v.is_bool(); }
bool TFalse(Renderer&, const Value& v, CallArgs& a) { NoArgs("false", a); return v.is_bool() && !v.b(); }
bool TTrue(Renderer&, const Value& v, CallArgs& a) { NoArgs("true", a); return v.is_bool() && v.b(); }
bool TInteger(Renderer&, const Value& v, CallArgs& a) { NoArgs("integer", a); return v.is_int(); }
bool TFloat(Renderer&, const Value& v, CallArgs& a) { NoArgs("float", a); return v.is_float(); }
bool TNumber(Renderer&, const Value& v, CallArgs& a) { NoArgs("number", a); return v.is_number(); }
bool TString(Renderer&, const Value& v, CallArgs& a) { NoArgs("string", a); return v.is_string(); }
bool TMapping(Renderer&, const Value& v, CallArgs& a) { NoArgs("mapping", a); return v.is_dict(); }
bool TEscaped(Renderer&, const Value& v, CallArgs& a) { NoArgs("escaped", a); return v.is_markup(); }

bool TIterable(Renderer&, const Value& v, CallArgs& a) {
  NoArgs("iterable", a);
  if (v.is_object()) return v.obj().TypeName() == "LoopContext";
  return v.is_undefined() || v.is_string() || v.is_seq() || v.is_dict();
}

bool TSequence(Renderer&, const Value& v, CallArgs& a) {
  NoArgs("sequence", a);
  if (v.is_seq()) {
    SeqKind k = v.seq().kind;
    return k == SeqKind::kList || k == SeqKind::kTuple || k == SeqKind::kRange;
  }
  return v.is_undefined() || v.is_string() || v.is_dict();
}

bool TCallable(Renderer&, const Value& v, CallArgs& a) {
  NoArgs("callable", a);
  return v.is_undefined() || (v.is_object() && v.obj().IsCallable());
}

bool TLower(Renderer&, const Value& v, CallArgs& a) {
  NoArgs("lower", a);
  std::string s = ToStr(v);
  bool cased = false;
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp = DecodeCodePoint(s, &pos);
    if (IsUpperCp(cp) || IsTitleCp(cp)) return false;
    if (IsLowerCp(cp)) cased = true;
  }
  return cased;
}

bool TUpper(Renderer&, const Value& v, CallArgs& a) {
  NoArgs("upper", a);
  std::string s = ToStr(v);
  bool cased = false;
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp = DecodeCodePoint(s, &pos);
    if (IsLowerCp(cp) || IsTitleCp(cp)) return false;
    if (IsUpperCp(cp)) cased = true;
  }
  return cased;
}

bool TOdd(Renderer& r, const Value& v, CallArgs& a) {
  NoArgs("odd", a);
  return Equals(BinaryOp(r, BinOp::kMod, v, Value::Int(2)), Value::Int(1));
}

bool TEven(Renderer& r, const Value& v, CallArgs& a) {
  NoArgs("even", a);
  return Equals(BinaryOp(r, BinOp::kMod, v, Value::Int(2)), Value::Int(0));
}

bool TDivisibleby(Renderer& r, const Value& v, CallArgs& a) {
  const Value& num = OneArg("divisibleby", a);
  return Equals(BinaryOp(r, BinOp::kMod, v, num), Value::Int(0));
}

bool TIn(Renderer& r, const Value& v, CallArgs& a) { return Contains(r, OneArg("in", a), v); }

bool TSameas(Renderer&, const Value& v, CallArgs& a) {
  const Value& other = OneArg("sameas", a);
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Kind::kUndefined: return v.heap() == other.heap();
    case Kind::kNone: return true;
    case Kind::kBool: return v.b() == other.b();
    case Kind::kInt: return v.i() == other.i() && v.i() >= -5 && v.i() <= 256;  // CPython's small ints
    case Kind::kFloat: return false;
    default: return v.heap() == other.heap();
  }
}

bool TFilter(Renderer&, const Value& v, CallArgs& a) {
  NoArgs("filter", a);
  return v.is_string() && FindFilter(v.s()) != nullptr;
}

bool TTest(Renderer&, const Value& v, CallArgs& a) {
  NoArgs("test", a);
  return v.is_string() && FindTest(v.s()) != nullptr;
}

bool TEq(Renderer&, const Value& v, CallArgs& a) { return CompareValues(CmpOp::kEq, v, OneArg("eq", a)); }
bool TNe(Renderer&, const Value& v, CallArgs& a) { return CompareValues(CmpOp::kNe, v, OneArg("ne", a)); }
bool TGt(Renderer&, const Value& v, CallArgs& a) { return CompareValues(CmpOp::kGt, v, OneArg("gt", a)); }
bool TGe(Renderer&, const Value& v, CallArgs& a) { return CompareValues(CmpOp::kGe, v, OneArg("ge", a)); }
bool TLt(Renderer&, const Value& v, CallArgs& a) { return CompareValues(CmpOp::kLt, v, OneArg("lt", a)); }
bool TLe(Renderer&, const Value& v, CallArgs& a) { return CompareValues(CmpOp::kLe, v, OneArg("le", a)); }

}  // namespace

void RegisterTests(TestTable& t) {
  t["defined"] = &TDefined;
  t["undefined"] = &TUndefined;
  t["none"] = &TNone;
  t["boolean"] = &TBoolean;
  t["false"] = &TFalse;
  t["true"] = &TTrue;
  t["integer"] = &TInteger;
  t["float"] = &TFloat;
  t["number"] = &TNumber;
  t["string"] = &TString;
  t["mapping"] = &TMapping;
  t["iterable"] = &TIterable;
  t["sequence"] = &TSequence;
  t["callable"] = &TCallable;
  t["lower"] = &TLower;
  t["upper"] = &TUpper;
  t["escaped"] = &TEscaped;
  t["odd"] = &TOdd;
  t["even"] = &TEven;
  t["divisibleby"] = &TDivisibleby;
  t["in"] = &TIn;
  t["sameas"] = &TSameas;
  t["filter"] = &TFilter;
  t["test"] = &TTest;
  for (const char* n : {"==", "eq", "equalto"}) t[n] = &TEq;
  for (const char* n : {"!=", "ne"}) t[n] = &TNe;
  for (const char* n : {">", "gt", "greaterthan"}) t[n] = &TGt;
  for (const char* n : {">=", "ge"}) t[n] = &TGe;
  for (const char* n : {"<", "lt", "lessthan"}) t[n] = &TLt;
  for (const char* n : {"<=", "le"}) t[n] = &TLe;
}

}  // namespace llmhost::jinja
