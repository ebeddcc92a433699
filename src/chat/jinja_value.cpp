#include "chat/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "chat/jinja_unicode.h"

namespace llmhost::jinja {

void Throw(const char* type, std::string message) { throw Error(type, std::move(message)); }

Value Object::Call(Renderer&, CallArgs&) { ThrowTypeError("'" + TypeName() + "' object is not callable"); }

// ---- construction ----

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}

Value Value::Float(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = d;
  return v;
}

Value Value::Str(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.ptr_ = std::make_shared<StrObj>(std::move(s));
  return v;
}

Value Value::Markup(std::string s) {
  Value v = Str(std::move(s));
  v.unsafe_ = true;
  return v;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

Value Value::Undefined(std::string hint, bool unsafe) {
  Value v;
  v.unsafe_ = unsafe;
  if (!hint.empty()) v.ptr_ = std::make_shared<StrObj>(std::move(hint));
  return v;
}

Value Value::Seq(SeqKind kind, std::vector<Value> items) {
  auto obj = std::make_shared<SeqObj>();
  obj->kind = kind;
  int depth = 0;
  bool has_ns = false;
  for (const Value& item : items) {
    depth = std::max(depth, item.Depth());
    has_ns = has_ns || item.MayHoldNamespace();
  }
  if (depth + 1 > kMaxValueDepth) Throw("RuntimeError", "value nested too deeply");
  obj->depth = depth + 1;
  obj->has_ns = has_ns;
  obj->items = std::move(items);
  Value v;
  v.kind_ = Kind::kSeq;
  v.ptr_ = std::move(obj);
  return v;
}

Value Value::Dict(std::shared_ptr<DictObj> dict) {
  Value v;
  v.kind_ = Kind::kDict;
  v.ptr_ = std::move(dict);
  return v;
}

Value Value::Obj(std::shared_ptr<Object> obj) {
  Value v;
  v.kind_ = Kind::kObject;
  v.ptr_ = std::move(obj);
  return v;
}

// ---- accessors ----

const std::string& Value::s() const {
  static const std::string kEmpty;
  if (!ptr_ || (kind_ != Kind::kString && kind_ != Kind::kUndefined)) return kEmpty;
  return static_cast<const StrObj*>(ptr_.get())->s;
}
const SeqObj& Value::seq() const { return *static_cast<const SeqObj*>(ptr_.get()); }
const DictObj& Value::dict() const { return *static_cast<const DictObj*>(ptr_.get()); }
Object& Value::obj() const { return *static_cast<Object*>(ptr_.get()); }

bool Value::is_list() const {
  return kind_ == Kind::kSeq && (seq().kind == SeqKind::kList || seq().kind == SeqKind::kTuple);
}

double Value::AsDouble() const {
  switch (kind_) {
    case Kind::kBool: return b_ ? 1.0 : 0.0;
    case Kind::kInt: return static_cast<double>(i_);
    case Kind::kFloat: return f_;
    default: return 0.0;
  }
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0.0;
    case Kind::kString: return !s().empty();
    case Kind::kSeq: return seq().kind == SeqKind::kGenerator || !seq().items.empty();
    case Kind::kDict: return dict().size() > 0;
    case Kind::kObject: return obj().Length() != 0;
  }
  return false;
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return unsafe_ ? "Markup" : "str";
    case Kind::kSeq:
      switch (seq().kind) {
        case SeqKind::kList: return "list";
        case SeqKind::kTuple: return "tuple";
        case SeqKind::kGenerator: return "generator";
        case SeqKind::kKeys: return "dict_keys";
        case SeqKind::kValues: return "dict_values";
        case SeqKind::kItems: return "dict_items";
        case SeqKind::kRange: return "range";
      }
      return "list";
    case Kind::kDict: return "dict";
    case Kind::kObject: return obj().TypeName();
  }
  return "object";
}

int Value::Depth() const {
  if (kind_ == Kind::kSeq) return seq().depth;
  if (kind_ == Kind::kDict) return dict().depth();
  return 0;
}

bool Value::MayHoldNamespace() const {
  if (kind_ == Kind::kSeq) return seq().has_ns;
  if (kind_ == Kind::kDict) return dict().has_ns();
  if (kind_ == Kind::kObject) return obj().MayHoldNamespace();
  return false;
}

// ---- dict ----

const Value* DictObj::FindStr(std::string_view key) const {
  if (!index_.empty()) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  for (const auto& [k, v] : items_) {
    if (k.is_string() && k.s() == key) return &v;
  }
  return nullptr;
}

const Value* DictObj::Find(const Value& key) const {
  if (key.is_string()) return FindStr(key.s());
  for (const auto& [k, v] : items_) {
    if (!k.is_string() && Equals(k, key)) return &v;
  }
  return nullptr;
}

void DictObj::Set(Value key, Value value) {
  if (!IsHashable(key)) ThrowTypeError("unhashable type: '" + key.TypeName() + "'");
  int depth = std::max(key.Depth(), value.Depth()) + 1;
  if (depth > kMaxValueDepth) Throw("RuntimeError", "value nested too deeply");
  depth_ = std::max(depth_, depth);
  has_ns_ = has_ns_ || value.MayHoldNamespace();
  if (const Value* existing = Find(key)) {
    const_cast<Value&>(*existing) = std::move(value);
    return;
  }
  items_.emplace_back(std::move(key), std::move(value));
  constexpr size_t kIndexFrom = 8;
  if (items_.size() == kIndexFrom) {
    for (size_t i = 0; i < items_.size(); ++i) {
      if (items_[i].first.is_string()) index_.emplace(items_[i].first.s(), i);
    }
  } else if (items_.size() > kIndexFrom && items_.back().first.is_string()) {
    index_.emplace(items_.back().first.s(), items_.size() - 1);
  }
}

// ---- str / repr ----

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci looks like "-1.2345e+02": split sign, digits and exponent.
  bool neg = false;
  size_t p = 0;
  if (sci[p] == '-') {
    neg = true;
    ++p;
  }
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = p; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  int exp10 = std::atoi(sci.c_str() + e + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  std::string out = neg ? "-" : "";
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  } else if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decpt), '0');
    out += digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out += digits;
    out.append(decpt - digits.size(), '0');
    out += ".0";
  } else {
    out.append(digits, 0, decpt);
    out += '.';
    out.append(digits, decpt, std::string::npos);
  }
  return out;
}

void AppendStrRepr(std::string_view s, std::string* out) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  out->push_back(quote);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    char32_t cp = DecodeCodePoint(s, &pos);
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(cp));
    } else if (cp == '\t') {
      out->append("\\t");
    } else if (cp == '\n') {
      out->append("\\n");
    } else if (cp == '\r') {
      out->append("\\r");
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && !IsPrintable(cp))) {
      char buf[16];
      if (cp < 0x100) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      } else if (cp < 0x10000) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(cp));
      }
      out->append(buf);
    } else {
      out->append(s.substr(start, pos - start));
    }
  }
  out->push_back(quote);
}

static void AppendRepr(const Value& v, std::string* out);

static void AppendItems(const std::vector<Value>& items, std::string* out) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out->append(", ");
    AppendRepr(items[i], out);
  }
}

static void AppendRepr(const Value& v, std::string* out) {
  // Containers nest at most kMaxValueDepth, but namespaces can chain them.
  thread_local int depth = 0;
  struct Guard {
    Guard() {
      if (++depth > 4 * kMaxValueDepth) {
        --depth;
        Throw("RecursionError", "maximum recursion depth exceeded while getting the repr of an object");
      }
    }
    ~Guard() { --depth; }
  } guard;
  if (out->size() > (64u << 20)) Throw("ResourceExhausted", "value too large to print");
  switch (v.kind()) {
    case Kind::kUndefined: out->append("Undefined"); return;
    case Kind::kString:
      if (v.is_markup()) {
        out->append("Markup(");
        AppendStrRepr(v.s(), out);
        out->push_back(')');
        return;
      }
      AppendStrRepr(v.s(), out);
      return;
    case Kind::kSeq: {
      const SeqObj& sq = v.seq();
      switch (sq.kind) {
        case SeqKind::kList:
          out->push_back('[');
          AppendItems(sq.items, out);
          out->push_back(']');
          return;
        case SeqKind::kTuple:
          out->push_back('(');
          AppendItems(sq.items, out);
          if (sq.items.size() == 1) out->push_back(',');
          out->push_back(')');
          return;
        case SeqKind::kGenerator: out->append("<generator object at 0x0>"); return;
        case SeqKind::kRange:
          out->append("range(" + std::to_string(sq.range_start) + ", " + std::to_string(sq.range_stop));
          if (sq.range_step != 1) out->append(", " + std::to_string(sq.range_step));
          out->push_back(')');
          return;
        case SeqKind::kKeys:
        case SeqKind::kValues:
        case SeqKind::kItems:
          out->append(v.TypeName());
          out->append("([");
          AppendItems(sq.items, out);
          out->append("])");
          return;
      }
      return;
    }
    case Kind::kDict: {
      out->push_back('{');
      bool first = true;
      for (const auto& [k, val] : v.dict().items()) {
        if (!first) out->append(", ");
        first = false;
        AppendRepr(k, out);
        out->append(": ");
        AppendRepr(val, out);
      }
      out->push_back('}');
      return;
    }
    case Kind::kObject: out->append(v.obj().Repr()); return;
    default: AppendStr(v, out); return;
  }
}

void AppendStr(const Value& v, std::string* out) {
  switch (v.kind()) {
    case Kind::kUndefined: return;
    case Kind::kNone: out->append("None"); return;
    case Kind::kBool: out->append(v.b() ? "True" : "False"); return;
    case Kind::kInt: out->append(std::to_string(v.i())); return;
    case Kind::kFloat: out->append(FloatRepr(v.f())); return;
    case Kind::kString: out->append(v.s()); return;
    default: AppendRepr(v, out); return;
  }
}

std::string ToStr(const Value& v) {
  if (v.is_string()) return v.s();
  std::string out;
  AppendStr(v, &out);
  return out;
}

std::string Repr(const Value& v) {
  std::string out;
  AppendRepr(v, &out);
  return out;
}

// ---- comparison ----

bool IsHashable(const Value& v) {
  switch (v.kind()) {
    case Kind::kSeq:
      if (v.seq().kind != SeqKind::kTuple) return v.seq().kind == SeqKind::kGenerator || v.seq().kind == SeqKind::kRange;
      for (const Value& item : v.seq().items) {
        if (!IsHashable(item)) return false;
      }
      return true;
    case Kind::kDict: return false;
    case Kind::kObject: return true;
    default: return true;
  }
}

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.AsDouble() == b.AsDouble();
    return a.i() == b.i();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return a.s() == b.s();
    case Kind::kSeq: {
      const SeqObj& x = a.seq();
      const SeqObj& y = b.seq();
      if (&x == &y) return true;
      bool listy = (x.kind == SeqKind::kList || x.kind == SeqKind::kTuple || x.kind == SeqKind::kRange);
      if (x.kind != y.kind || !listy) return false;
      if (x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!Equals(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const DictObj& x = a.dict();
      const DictObj& y = b.dict();
      if (&x == &y) return true;
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* other = y.Find(k);
        if (!other || !Equals(v, *other)) return false;
      }
      return true;
    }
    case Kind::kObject: return a.heap() == b.heap();
    default: return false;
  }
}

bool Orderable(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return true;
  if (a.is_string() && b.is_string()) return true;
  return a.is_seq() && b.is_seq() && a.seq().kind == b.seq().kind &&
         (a.seq().kind == SeqKind::kList || a.seq().kind == SeqKind::kTuple);
}

int Compare(const Value& a, const Value& b) {
  if (a.is_undefined() || b.is_undefined()) {
    Throw("UndefinedError", a.is_undefined() && !a.s().empty() ? a.s() : b.s().empty() ? "value is undefined" : b.s());
  }
  if (!Orderable(a, b)) {
    ThrowTypeError("'<' not supported between instances of '" + a.TypeName() + "' and '" + b.TypeName() + "'");
  }
  if (a.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.AsDouble(), y = b.AsDouble();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.i() < b.i() ? -1 : (a.i() > b.i() ? 1 : 0);
  }
  if (a.is_string()) {
    int c = a.s().compare(b.s());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  const auto& x = a.seq().items;
  const auto& y = b.seq().items;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (!Equals(x[i], y[i])) return Compare(x[i], y[i]);
  }
  return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
}

}  // namespace llmhost::jinja
