// Methods of builtin types as the immutable sandbox exposes them: str
// methods, dict.get/items/keys/values, list.index/count. Mutating methods
// resolve to an unsafe Undefined that raises SecurityError when called.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_builtins_impl.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace llmhost::jinja {
namespace {

using Method = BuiltinObj::Fn;

// Code point positions of a string, for Python's index arithmetic.
class CpIndex {
 public:
  explicit CpIndex(const std::string& s) : s_(s), ascii_(IsAsciiStr(s)) {
    if (!ascii_) {
      size_t pos = 0;
      while (pos < s.size()) {
        offs_.push_back(pos);
        DecodeCodePoint(s, &pos);
      }
      offs_.push_back(s.size());
    }
  }
  int64_t size() const { return ascii_ ? static_cast<int64_t>(s_.size()) : static_cast<int64_t>(offs_.size()) - 1; }
  size_t Byte(int64_t cp) const { return ascii_ ? static_cast<size_t>(cp) : offs_[cp]; }
  int64_t Cp(size_t byte) const {
    if (ascii_) return static_cast<int64_t>(byte);
    return std::lower_bound(offs_.begin(), offs_.end(), byte) - offs_.begin();
  }

 private:
  const std::string& s_;
  bool ascii_;
  std::vector<size_t> offs_;
};

// Python's start/end arguments of find/count/startswith: slice-style clamp.
void Range(const Args& a, size_t first, int64_t n, int64_t* start, int64_t* end) {
  auto adj = [&](size_t i, int64_t dflt) {
    if (!a.set(i)) return dflt;
    int64_t x = IntArg(a[i]);
    if (x < 0) x = std::max<int64_t>(0, x + n);
    return std::min(x, n);
  };
  *start = adj(first, 0);
  *end = adj(first + 1, n);
  if (a.set(first) && IntArg(a[first]) > n) *start = n + 1;  // beyond the end: nothing matches
}

// Finds `sub` in s[start:end) (code points); returns the code point index or -1.
int64_t FindIn(const std::string& s, const std::string& sub, int64_t start, int64_t end, bool reverse) {
  CpIndex ix(s);
  if (start > ix.size() || end < start) return -1;
  size_t b = ix.Byte(start), e = ix.Byte(end);
  std::string_view hay = std::string_view(s).substr(b, e - b);
  size_t p = reverse ? hay.rfind(sub) : hay.find(sub);
  if (p == std::string_view::npos) return -1;
  return ix.Cp(b + p);
}

const std::string& Self(const Value& self) { return self.s(); }

Value MFind(Renderer&, const Value& self, CallArgs& args) {
  Args a("find", args, {"sub", "start", "end"}, 1);
  int64_t st, en;
  Range(a, 1, static_cast<int64_t>(CodePointLen(Self(self))), &st, &en);
  return Value::Int(FindIn(Self(self), StrArg(a[0]), st, en, false));
}

Value MRfind(Renderer&, const Value& self, CallArgs& args) {
  Args a("rfind", args, {"sub", "start", "end"}, 1);
  int64_t st, en;
  Range(a, 1, static_cast<int64_t>(CodePointLen(Self(self))), &st, &en);
  return Value::Int(FindIn(Self(self), StrArg(a[0]), st, en, true));
}

Value MIndex(Renderer& r, const Value& self, CallArgs& args) {
  Value v = MFind(r, self, args);
  if (v.i() < 0) Throw("ValueError", "substring not found");
  return v;
}

Value MRindex(Renderer& r, const Value& self, CallArgs& args) {
  Value v = MRfind(r, self, args);
  if (v.i() < 0) Throw("ValueError", "substring not found");
  return v;
}

Value MCount(Renderer&, const Value& self, CallArgs& args) {
  Args a("count", args, {"sub", "start", "end"}, 1);
  const std::string& s = Self(self);
  const std::string& sub = StrArg(a[0]);
  CpIndex ix(s);
  int64_t st, en;
  Range(a, 1, ix.size(), &st, &en);
  if (st > ix.size() || en < st) return Value::Int(0);
  if (sub.empty()) return Value::Int(en - st + 1);
  std::string_view hay = std::string_view(s).substr(ix.Byte(st), ix.Byte(en) - ix.Byte(st));
  int64_t n = 0;
  for (size_t p = hay.find(sub); p != std::string_view::npos; p = hay.find(sub, p + sub.size())) ++n;
  return Value::Int(n);
}

bool MatchAffix(Renderer& r, const Value& self, CallArgs& args, const char* fn, bool prefix) {
  Args a(fn, args, {"prefix", "start", "end"}, 1);
  const std::string& s = Self(self);
  CpIndex ix(s);
  int64_t st, en;
  Range(a, 1, ix.size(), &st, &en);
  std::vector<Value> options;
  if (a[0].is_string()) {
    options.push_back(a[0]);
  } else if (a[0].is_seq() && a[0].seq().kind == SeqKind::kTuple) {
    options = a[0].seq().items;
  } else {
    ThrowTypeError(std::string(fn) + " first arg must be str or a tuple of str, not " + a[0].TypeName());
  }
  if (st > ix.size()) return false;
  std::string_view hay = std::string_view(s).substr(ix.Byte(st), en >= st ? ix.Byte(en) - ix.Byte(st) : 0);
  for (const Value& o : options) {
    const std::string& x = StrArg(o, "tuple element");
    if (en < st) continue;
    if (x.size() > hay.size()) continue;
    if (prefix ? hay.compare(0, x.size(), x) == 0 : hay.compare(hay.size() - x.size(), x.size(), x) == 0) return true;
  }
  return false;
}

Value MStartswith(Renderer& r, const Value& self, CallArgs& args) {
  return Value::Bool(MatchAffix(r, self, args, "startswith", true));
}
Value MEndswith(Renderer& r, const Value& self, CallArgs& args) {
  return Value::Bool(MatchAffix(r, self, args, "endswith", false));
}

Value StripImpl(const Value& self, CallArgs& args, const char* fn, bool left, bool right) {
  Args a(fn, args, {"chars"});
  if (!a.set(0)) return Value::Str(PyStrip(Self(self), nullptr, left, right));
  std::string chars = StrArg(a[0], "strip arg");
  return Value::Str(PyStrip(Self(self), &chars, left, right));
}
Value MStrip(Renderer&, const Value& self, CallArgs& args) { return StripImpl(self, args, "strip", true, true); }
Value MLstrip(Renderer&, const Value& self, CallArgs& args) { return StripImpl(self, args, "lstrip", true, false); }
Value MRstrip(Renderer&, const Value& self, CallArgs& args) { return StripImpl(self, args, "rstrip", false, true); }

// Splits on runs of whitespace (sep=None).
std::vector<Value> SplitWhitespace(const std::string& s, int64_t maxsplit, bool from_right) {
  // Tokens as byte spans.
  std::vector<std::pair<size_t, size_t>> words;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    char32_t cp = DecodeCodePoint(s, &pos);
    if (IsPySpace(cp)) continue;
    size_t end = pos;
    while (end < s.size()) {
      size_t q = end;
      if (IsPySpace(DecodeCodePoint(s, &q))) break;
      end = q;
    }
    words.emplace_back(start, end);
    pos = end;
  }
  std::vector<Value> out;
  if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
    for (const auto& [b, e] : words) out.push_back(Value::Str(s.substr(b, e - b)));
    return out;
  }
  size_t k = static_cast<size_t>(maxsplit);
  if (!from_right) {
    for (size_t i = 0; i < k; ++i) out.push_back(Value::Str(s.substr(words[i].first, words[i].second - words[i].first)));
    // The rest runs from the next word to the end, trailing whitespace kept.
    out.push_back(Value::Str(s.substr(words[k].first)));
  } else {
    size_t first_kept = words.size() - k;
    out.push_back(Value::Str(s.substr(0, words[first_kept - 1].second)));
    for (size_t i = first_kept; i < words.size(); ++i) {
      out.push_back(Value::Str(s.substr(words[i].first, words[i].second - words[i].first)));
    }
  }
  return out;
}

Value SplitImpl(Renderer& r, const Value& self, CallArgs& args, const char* fn, bool from_right) {
  Args a(fn, args, {"sep", "maxsplit"});
  const std::string& s = Self(self);
  int64_t maxsplit = a.has(1) ? IntArg(a[1]) : -1;
  r.Charge(s.size() / 16);
  if (!a.set(0)) return Value::List(SplitWhitespace(s, maxsplit, from_right));
  const std::string& sep = StrArg(a[0], "sep");
  if (sep.empty()) Throw("ValueError", "empty separator");
  std::vector<Value> out;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t p = s.find(sep, start);
      if (p == std::string::npos) break;
      out.push_back(Value::Str(s.substr(start, p - start)));
      start = p + sep.size();
    }
    out.push_back(Value::Str(s.substr(start)));
    return Value::List(std::move(out));
  }
  size_t end = s.size();
  int64_t splits = 0;
  while (maxsplit < 0 || splits < maxsplit) {
    if (end < sep.size()) break;
    size_t p = s.rfind(sep, end - sep.size());
    if (p == std::string::npos) break;
    out.push_back(Value::Str(s.substr(p + sep.size(), end - p - sep.size())));
    end = p;
    ++splits;
  }
  out.push_back(Value::Str(s.substr(0, end)));
  std::reverse(out.begin(), out.end());
  return Value::List(std::move(out));
}

Value MSplit(Renderer& r, const Value& self, CallArgs& args) { return SplitImpl(r, self, args, "split", false); }
Value MRsplit(Renderer& r, const Value& self, CallArgs& args) { return SplitImpl(r, self, args, "rsplit", true); }

Value MSplitlines(Renderer&, const Value& self, CallArgs& args) {
  Args a("splitlines", args, {"keepends"});
  std::vector<Value> out;
  for (auto& line : SplitLines(Self(self), a.has(0) && a[0].Truthy())) out.push_back(Value::Str(std::move(line)));
  return Value::List(std::move(out));
}

Value MReplace(Renderer& r, const Value& self, CallArgs& args) {
  Args a("replace", args, {"old", "new", "count"}, 2);
  const std::string& s = Self(self);
  const std::string& oldv = StrArg(a[0], "replace() argument 1");
  const std::string& newv = StrArg(a[1], "replace() argument 2");
  int64_t count = a.has(2) ? IntArg(a[2]) : -1;
  std::string out;
  int64_t done = 0;
  auto grow = [&](size_t add) {
    r.CheckStringSize(out.size() + add);
  };
  if (oldv.empty()) {
    size_t pos = 0;
    while (pos <= s.size()) {
      if (count < 0 || done < count) {
        grow(newv.size());
        out += newv;
        ++done;
      }
      if (pos == s.size()) break;
      size_t start = pos;
      DecodeCodePoint(s, &pos);
      out.append(s, start, pos - start);
    }
    if (pos < s.size()) out.append(s, pos, std::string::npos);
    return Value::Str(std::move(out));
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    size_t p = s.find(oldv, start);
    if (p == std::string::npos) break;
    grow(p - start + newv.size());
    out.append(s, start, p - start);
    out += newv;
    start = p + oldv.size();
    ++done;
  }
  grow(s.size() - start);
  out.append(s, start, std::string::npos);
  r.Charge(out.size() / 64);
  return Value::Str(std::move(out));
}

Value MUpper(Renderer&, const Value& self, CallArgs& args) { Args a("upper", args, {}); return Value::Str(PyUpper(Self(self))); }
Value MLower(Renderer&, const Value& self, CallArgs& args) { Args a("lower", args, {}); return Value::Str(PyLower(Self(self))); }
Value MTitle(Renderer&, const Value& self, CallArgs& args) { Args a("title", args, {}); return Value::Str(PyTitle(Self(self))); }
Value MCapitalize(Renderer&, const Value& self, CallArgs& args) { Args a("capitalize", args, {}); return Value::Str(PyCapitalize(Self(self))); }
Value MSwapcase(Renderer&, const Value& self, CallArgs& args) { Args a("swapcase", args, {}); return Value::Str(PySwapcase(Self(self))); }
Value MCasefold(Renderer&, const Value& self, CallArgs& args) { Args a("casefold", args, {}); return Value::Str(PyCasefold(Self(self))); }

template <bool (*Pred)(char32_t)>
Value AllChars(const Value& self, CallArgs& args, const char* fn) {
  Args a(fn, args, {});
  const std::string& s = Self(self);
  if (s.empty()) return Value::Bool(false);
  size_t pos = 0;
  while (pos < s.size()) {
    if (!Pred(DecodeCodePoint(s, &pos))) return Value::Bool(false);
  }
  return Value::Bool(true);
}

Value MIsalpha(Renderer&, const Value& self, CallArgs& args) { return AllChars<IsAlphaCp>(self, args, "isalpha"); }
Value MIsdigit(Renderer&, const Value& self, CallArgs& args) { return AllChars<IsDigitCp>(self, args, "isdigit"); }
Value MIsdecimal(Renderer&, const Value& self, CallArgs& args) { return AllChars<IsDecimalCp>(self, args, "isdecimal"); }
Value MIsnumeric(Renderer&, const Value& self, CallArgs& args) { return AllChars<IsNumericCp>(self, args, "isnumeric"); }
Value MIsalnum(Renderer&, const Value& self, CallArgs& args) { return AllChars<IsAlnumCp>(self, args, "isalnum"); }
Value MIsspace(Renderer&, const Value& self, CallArgs& args) { return AllChars<IsPySpace>(self, args, "isspace"); }

Value MIsascii(Renderer&, const Value& self, CallArgs& args) {
  Args a("isascii", args, {});
  return Value::Bool(IsAsciiStr(Self(self)));
}

Value MIsprintable(Renderer&, const Value& self, CallArgs& args) {
  Args a("isprintable", args, {});
  const std::string& s = Self(self);
  size_t pos = 0;
  while (pos < s.size()) {
    if (!IsPrintable(DecodeCodePoint(s, &pos))) return Value::Bool(false);
  }
  return Value::Bool(true);
}

Value CaseCheck(const Value& self, CallArgs& args, bool lower) {
  Args a(lower ? "islower" : "isupper", args, {});
  const std::string& s = Self(self);
  bool cased = false;
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp = DecodeCodePoint(s, &pos);
    bool wrong = lower ? (IsUpperCp(cp) || IsTitleCp(cp)) : (IsLowerCp(cp) || IsTitleCp(cp));
    if (wrong) return Value::Bool(false);
    if (lower ? IsLowerCp(cp) : IsUpperCp(cp)) cased = true;
  }
  return Value::Bool(cased);
}
Value MIslower(Renderer&, const Value& self, CallArgs& args) { return CaseCheck(self, args, true); }
Value MIsupper(Renderer&, const Value& self, CallArgs& args) { return CaseCheck(self, args, false); }

Value MIstitle(Renderer&, const Value& self, CallArgs& args) {
  Args a("istitle", args, {});
  const std::string& s = Self(self);
  bool cased = false, prev_cased = false;
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp = DecodeCodePoint(s, &pos);
    if (IsUpperCp(cp) || IsTitleCp(cp)) {
      if (prev_cased) return Value::Bool(false);
      prev_cased = cased = true;
    } else if (IsLowerCp(cp)) {
      if (!prev_cased) return Value::Bool(false);
      prev_cased = cased = true;
    } else {
      prev_cased = false;
    }
  }
  return Value::Bool(cased);
}

Value MIsidentifier(Renderer&, const Value& self, CallArgs& args) {
  Args a("isidentifier", args, {});
  const std::string& s = Self(self);
  if (s.empty()) return Value::Bool(false);
  size_t pos = 0;
  bool first = true;
  while (pos < s.size()) {
    char32_t cp = DecodeCodePoint(s, &pos);
    bool ok = cp == '_' || IsAlphaCp(cp) || (!first && IsDigitCp(cp));
    if (!ok) return Value::Bool(false);
    first = false;
  }
  return Value::Bool(true);
}

Value MJoin(Renderer& r, const Value& self, CallArgs& args) {
  Args a("join", args, {"iterable"}, 1);
  std::vector<Value> items = r.Iterate(a[0]);
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      ThrowTypeError("sequence item " + std::to_string(i) + ": expected str instance, " + items[i].TypeName() + " found");
    }
    if (i) out += Self(self);
    out += items[i].s();
    r.CheckStringSize(out.size());
  }
  return Value::Str(std::move(out));
}

std::string FillChar(const Args& a, size_t i) {
  if (!a.has(i)) return " ";
  const std::string& f = StrArg(a[i], "fillchar");
  if (CodePointLen(f) != 1) ThrowTypeError("The fill character must be exactly one character long");
  return f;
}

std::string Repeat(Renderer& r, const std::string& fill, int64_t n) {
  if (n <= 0) return "";
  r.CheckStringSize(static_cast<size_t>(n) * fill.size());
  std::string out;
  for (int64_t i = 0; i < n; ++i) out += fill;
  return out;
}

Value MCenter(Renderer& r, const Value& self, CallArgs& args) {
  Args a("center", args, {"width", "fillchar"}, 1);
  int64_t width = IntArg(a[0]);
  std::string fill = FillChar(a, 1);
  const std::string& s = Self(self);
  int64_t n = static_cast<int64_t>(CodePointLen(s));
  if (width <= n) return self;
  int64_t marg = width - n;
  int64_t left = marg / 2 + (marg & width & 1);
  return Value::Str(Repeat(r, fill, left) + s + Repeat(r, fill, marg - left));
}

Value MLjust(Renderer& r, const Value& self, CallArgs& args) {
  Args a("ljust", args, {"width", "fillchar"}, 1);
  int64_t pad = IntArg(a[0]) - static_cast<int64_t>(CodePointLen(Self(self)));
  return Value::Str(Self(self) + Repeat(r, FillChar(a, 1), pad));
}

Value MRjust(Renderer& r, const Value& self, CallArgs& args) {
  Args a("rjust", args, {"width", "fillchar"}, 1);
  int64_t pad = IntArg(a[0]) - static_cast<int64_t>(CodePointLen(Self(self)));
  return Value::Str(Repeat(r, FillChar(a, 1), pad) + Self(self));
}

Value MZfill(Renderer& r, const Value& self, CallArgs& args) {
  Args a("zfill", args, {"width"}, 1);
  const std::string& s = Self(self);
  int64_t pad = IntArg(a[0]) - static_cast<int64_t>(CodePointLen(s));
  if (pad <= 0) return self;
  std::string zeros = Repeat(r, "0", pad);
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) return Value::Str(s.substr(0, 1) + zeros + s.substr(1));
  return Value::Str(zeros + s);
}

Value PartitionImpl(const Value& self, CallArgs& args, bool from_right) {
  Args a(from_right ? "rpartition" : "partition", args, {"sep"}, 1);
  const std::string& s = Self(self);
  const std::string& sep = StrArg(a[0], "sep");
  if (sep.empty()) Throw("ValueError", "empty separator");
  size_t p = from_right ? s.rfind(sep) : s.find(sep);
  if (p == std::string::npos) {
    if (from_right) return Value::Tuple({Value::Str(""), Value::Str(""), self});
    return Value::Tuple({self, Value::Str(""), Value::Str("")});
  }
  return Value::Tuple({Value::Str(s.substr(0, p)), Value::Str(sep), Value::Str(s.substr(p + sep.size()))});
}
Value MPartition(Renderer&, const Value& self, CallArgs& args) { return PartitionImpl(self, args, false); }
Value MRpartition(Renderer&, const Value& self, CallArgs& args) { return PartitionImpl(self, args, true); }

Value MRemoveprefix(Renderer&, const Value& self, CallArgs& args) {
  Args a("removeprefix", args, {"prefix"}, 1);
  const std::string& s = Self(self);
  const std::string& p = StrArg(a[0]);
  if (s.compare(0, p.size(), p) == 0 && s.size() >= p.size()) return Value::Str(s.substr(p.size()));
  return self;
}

Value MRemovesuffix(Renderer&, const Value& self, CallArgs& args) {
  Args a("removesuffix", args, {"suffix"}, 1);
  const std::string& s = Self(self);
  const std::string& p = StrArg(a[0]);
  if (!p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0) {
    return Value::Str(s.substr(0, s.size() - p.size()));
  }
  return self;
}

Value MExpandtabs(Renderer& r, const Value& self, CallArgs& args) {
  Args a("expandtabs", args, {"tabsize"});
  int64_t tab = a.has(0) ? IntArg(a[0]) : 8;
  const std::string& s = Self(self);
  std::string out;
  int64_t col = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    char32_t cp = DecodeCodePoint(s, &pos);
    if (cp == '\t') {
      if (tab > 0) {
        int64_t n = tab - col % tab;
        out += Repeat(r, " ", n);
        col += n;
      }
    } else {
      out.append(s, start, pos - start);
      col = (cp == '\n' || cp == '\r') ? 0 : col + 1;
    }
    r.CheckStringSize(out.size());
  }
  return Value::Str(std::move(out));
}

Value MFormat(Renderer& r, const Value& self, CallArgs& args) { return Value::Str(StrFormat(r, Self(self), args)); }

Value MFormatMap(Renderer& r, const Value& self, CallArgs& args) {
  Args a("format_map", args, {"mapping"}, 1);
  if (!a[0].is_dict()) ThrowTypeError("format_map() argument must be a mapping");
  CallArgs call;
  for (const auto& [k, v] : a[0].dict().items()) {
    if (k.is_string()) call.kw.emplace_back(k.s(), v);
  }
  return Value::Str(StrFormat(r, Self(self), call));
}

// ---- dict ----

Value MDictGet(Renderer&, const Value& self, CallArgs& args) {
  Args a("get", args, {"key", "default"}, 1);
  if (!IsHashable(a[0])) ThrowTypeError("unhashable type: '" + a[0].TypeName() + "'");
  const Value* v = self.dict().Find(a[0]);
  if (v) return *v;
  return a.has(1) ? a[1] : Value::None();
}

Value MDictItems(Renderer&, const Value& self, CallArgs& args) {
  Args a("items", args, {});
  std::vector<Value> out;
  for (const auto& [k, v] : self.dict().items()) out.push_back(Value::Tuple({k, v}));
  return Value::Seq(SeqKind::kItems, std::move(out));
}

Value MDictKeys(Renderer&, const Value& self, CallArgs& args) {
  Args a("keys", args, {});
  std::vector<Value> out;
  for (const auto& kv : self.dict().items()) out.push_back(kv.first);
  return Value::Seq(SeqKind::kKeys, std::move(out));
}

Value MDictValues(Renderer&, const Value& self, CallArgs& args) {
  Args a("values", args, {});
  std::vector<Value> out;
  for (const auto& kv : self.dict().items()) out.push_back(kv.second);
  return Value::Seq(SeqKind::kValues, std::move(out));
}

Value MCopy(Renderer&, const Value& self, CallArgs& args) {
  Args a("copy", args, {});
  return self;
}

// ---- list / tuple ----

Value MListIndex(Renderer& r, const Value& self, CallArgs& args) {
  Args a("index", args, {"value", "start", "stop"}, 1);
  const auto& items = self.seq().items;
  int64_t st, en;
  Range(a, 1, static_cast<int64_t>(items.size()), &st, &en);
  for (int64_t i = st; i < en; ++i) {
    if (Equals(items[i], a[0])) return Value::Int(i);
  }
  Throw("ValueError", Repr(a[0]) + " is not in list");
}

Value MListCount(Renderer&, const Value& self, CallArgs& args) {
  Args a("count", args, {"value"}, 1);
  int64_t n = 0;
  for (const Value& v : self.seq().items) n += Equals(v, a[0]);
  return Value::Int(n);
}

// ---- numbers ----

Value MIsInteger(Renderer&, const Value& self, CallArgs& args) {
  Args a("is_integer", args, {});
  return Value::Bool(std::isfinite(self.f()) && std::floor(self.f()) == self.f());
}

const std::unordered_map<std::string_view, Method>& StrMethods() {
  static const auto* m = new std::unordered_map<std::string_view, Method>{
      {"find", &MFind}, {"rfind", &MRfind}, {"index", &MIndex}, {"rindex", &MRindex}, {"count", &MCount},
      {"startswith", &MStartswith}, {"endswith", &MEndswith}, {"strip", &MStrip}, {"lstrip", &MLstrip},
      {"rstrip", &MRstrip}, {"split", &MSplit}, {"rsplit", &MRsplit}, {"splitlines", &MSplitlines},
      {"replace", &MReplace}, {"upper", &MUpper}, {"lower", &MLower}, {"title", &MTitle},
      {"capitalize", &MCapitalize}, {"swapcase", &MSwapcase}, {"casefold", &MCasefold}, {"isalpha", &MIsalpha},
      {"isdigit", &MIsdigit}, {"isdecimal", &MIsdecimal}, {"isnumeric", &MIsnumeric}, {"isalnum", &MIsalnum},
      {"isspace", &MIsspace}, {"isascii", &MIsascii}, {"isprintable", &MIsprintable}, {"islower", &MIslower},
      {"isupper", &MIsupper}, {"istitle", &MIstitle}, {"isidentifier", &MIsidentifier}, {"join", &MJoin},
      {"center", &MCenter}, {"ljust", &MLjust}, {"rjust", &MRjust}, {"zfill", &MZfill},
      {"partition", &MPartition}, {"rpartition", &MRpartition}, {"removeprefix", &MRemoveprefix},
      {"removesuffix", &MRemovesuffix}, {"expandtabs", &MExpandtabs}, {"format", &MFormat},
      {"format_map", &MFormatMap}};
  return *m;
}

Value Bound(std::string_view name, Method fn, const Value& self) {
  return Value::Obj(std::make_shared<BuiltinObj>(std::string(name), fn, self));
}

Value Unsafe(std::string_view name, const Value& self) {
  return Value::Undefined("access to attribute '" + std::string(name) + "' of '" + self.TypeName() +
                              "' object is unsafe.",
                          true);
}

}  // namespace

bool GetBuiltinAttr(const Value& self, std::string_view name, Value* out) {
  switch (self.kind()) {
    case Kind::kString: {
      const auto& m = StrMethods();
      auto it = m.find(name);
      if (it == m.end()) {
        if (name == "encode") return false;
        return false;
      }
      *out = Bound(name, it->second, self);
      if (self.is_markup()) {
        static const std::string_view kWrapped[] = {
            "capitalize", "title", "lower", "upper", "replace", "ljust", "rjust", "lstrip", "rstrip",
            "center", "strip", "expandtabs", "swapcase", "zfill", "partition", "rpartition", "join",
            "split", "rsplit", "splitlines", "format", "format_map", "removeprefix", "removesuffix"};
        for (std::string_view w : kWrapped) {
          if (w == name) static_cast<BuiltinObj&>(out->obj()).set_markup(true);
        }
      }
      return true;
    }
    case Kind::kDict: {
      if (name == "get") *out = Bound(name, &MDictGet, self);
      else if (name == "items") *out = Bound(name, &MDictItems, self);
      else if (name == "keys") *out = Bound(name, &MDictKeys, self);
      else if (name == "values") *out = Bound(name, &MDictValues, self);
      else if (name == "copy") *out = Bound(name, &MCopy, self);
      else if (name == "clear" || name == "pop" || name == "popitem" || name == "setdefault" || name == "update") {
        *out = Unsafe(name, self);
      } else {
        return false;
      }
      return true;
    }
    case Kind::kSeq: {
      SeqKind k = self.seq().kind;
      if (k != SeqKind::kList && k != SeqKind::kTuple) return false;
      if (name == "index") *out = Bound(name, &MListIndex, self);
      else if (name == "count") *out = Bound(name, &MListCount, self);
      else if (k == SeqKind::kList && name == "copy") *out = Bound(name, &MCopy, self);
      else if (k == SeqKind::kList && (name == "append" || name == "extend" || name == "insert" || name == "pop" ||
                                       name == "remove" || name == "reverse" || name == "sort" || name == "clear")) {
        *out = Unsafe(name, self);
      } else {
        return false;
      }
      return true;
    }
    case Kind::kFloat:
      if (name == "is_integer") {
        *out = Bound(name, &MIsInteger, self);
        return true;
      }
      if (name == "real") {
        *out = self;
        return true;
      }
      if (name == "imag") {
        *out = Value::Float(0.0);
        return true;
      }
      return false;
    case Kind::kInt:
    case Kind::kBool:
      if (name == "real" || name == "numerator") {
        *out = Value::Int(self.i());
        return true;
      }
      if (name == "imag") {
        *out = Value::Int(0);
        return true;
      }
      if (name == "denominator") {
        *out = Value::Int(1);
        return true;
      }
      return false;
    default: return false;
  }
}

}  // namespace llmhost::jinja
