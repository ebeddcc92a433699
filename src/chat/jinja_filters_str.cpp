// Filters on strings and scalars: tojson, trim, case, replace, indent,
// int/float/round, default, length, truncate, ...
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja_builtins.h"
#include "chat/jinja_builtins_impl.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace llmhost::jinja {

namespace {

// A filter result that stays a Markup when its input was one.
Value SameKind(const Value& in, std::string out) {
  return in.is_markup() ? Value::Markup(std::move(out)) : Value::Str(std::move(out));
}

Value FTojson(Renderer& r, const Value& v, CallArgs& args) {
  Args a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions opt;
  opt.ensure_ascii = a.has(0) && a[0].Truthy();
  if (a.set(1)) {
    if (a[1].is_string()) {
      opt.indent = a[1].s();
    } else if (a[1].is_integral()) {
      int64_t n = a[1].i();
      if (n > 1024) Throw("ResourceExhausted", "indent too large");
      opt.indent = std::string(n > 0 ? n : 0, ' ');
    } else {
      ThrowTypeError("indent must be int or str");
    }
    opt.item_sep = ",";
  }
  if (a.set(2)) {
    std::vector<Value> seps = r.Iterate(a[2]);
    if (seps.size() != 2) Throw("ValueError", "separators must be a pair");
    opt.item_sep = StrArg(seps[0], "separator");
    opt.key_sep = StrArg(seps[1], "separator");
  }
  opt.sort_keys = a.has(3) && a[3].Truthy();
  return Value::Str(JsonDumps(r, v, opt));
}

Value FTrim(Renderer&, const Value& v, CallArgs& args) {
  Args a("trim", args, {"chars"});
  std::string out;
  if (!a.set(0)) {
    out = PyStrip(ToStr(v), nullptr, true, true);
  } else {
    std::string chars = StrArg(a[0], "strip arg");
    out = PyStrip(ToStr(v), &chars, true, true);
  }
  return v.is_markup() ? Value::Markup(std::move(out)) : Value::Str(std::move(out));
}

Value FUpper(Renderer&, const Value& v, CallArgs& args) {
  Args a("upper", args, {});
  return SameKind(v, PyUpper(ToStr(v)));
}

Value FLower(Renderer&, const Value& v, CallArgs& args) {
  Args a("lower", args, {});
  return SameKind(v, PyLower(ToStr(v)));
}

// Jinja's title: split on runs of [-\s({[<], capitalise each piece's first
// character and lowercase the rest.
Value FTitle(Renderer&, const Value& v, CallArgs& args) {
  Args a("title", args, {});
  std::string s = ToStr(v);
  auto is_sep = [](char32_t cp) { return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || IsPySpace(cp); };
  std::string out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    size_t p = pos;
    bool sep = is_sep(DecodeCodePoint(s, &p));
    while (pos < s.size()) {
      size_t q = pos;
      if (is_sep(DecodeCodePoint(s, &q)) != sep) break;
      pos = q;
    }
    std::string_view piece = std::string_view(s).substr(start, pos - start);
    size_t first_end = 0;
    DecodeCodePoint(piece, &first_end);
    out += PyUpper(piece.substr(0, first_end));
    out += PyLower(piece.substr(first_end));
  }
  return Value::Str(std::move(out));
}

Value FCapitalize(Renderer&, const Value& v, CallArgs& args) {
  Args a("capitalize", args, {});
  return SameKind(v, PyCapitalize(ToStr(v)));
}

Value FReplace(Renderer& r, const Value& v, CallArgs& args) {
  Args a("replace", args, {"old", "new", "count"}, 2);
  std::string s = ToStr(v), oldv = ToStr(a[0]), newv = ToStr(a[1]);
  int64_t count = a.set(2) ? IntArg(a[2]) : -1;
  CallArgs m;
  m.pos = {Value::Str(oldv), Value::Str(newv), Value::Int(count)};
  Value method;
  GetBuiltinAttr(Value::Str(s), "replace", &method);
  return r.CallValue(method, m);
}

Value FString(Renderer&, const Value& v, CallArgs& args) {
  Args a("string", args, {});
  return v.is_string() ? v : Value::Str(ToStr(v));
}

Value FSafe(Renderer&, const Value& v, CallArgs& args) {
  Args a("safe", args, {});
  return v.is_markup() ? v : Value::Markup(ToStr(v));
}

Value FEscape(Renderer& r, const Value& v, CallArgs& args) {
  Args a("escape", args, {});
  if (v.is_markup()) return v;
  std::string out = HtmlEscape(ToStr(v));
  r.CheckStringSize(out.size());
  return Value::Markup(std::move(out));
}

Value FForceescape(Renderer& r, const Value& v, CallArgs& args) {
  Args a("forceescape", args, {});
  std::string out = HtmlEscape(ToStr(v));
  r.CheckStringSize(out.size());
  return Value::Markup(std::move(out));
}

Value FWordcount(Renderer&, const Value& v, CallArgs& args) {
  Args a("wordcount", args, {});
  std::string s = ToStr(v);
  int64_t n = 0;
  bool in_word = false;
  size_t pos = 0;
  while (pos < s.size()) {
    bool w = IsWordCp(DecodeCodePoint(s, &pos));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::Int(n);
}

Value FCenter(Renderer& r, const Value& v, CallArgs& args) {
  Args a("center", args, {"width"});
  CallArgs m;
  m.pos.push_back(a.has(0) ? a[0] : Value::Int(80));
  Value method;
  GetBuiltinAttr(v.is_string() ? v : Value::Str(ToStr(v)), "center", &method);
  return r.CallValue(method, m);
}

Value FTruncate(Renderer&, const Value& v, CallArgs& args) {
  Args a("truncate", args, {"length", "killwords", "end", "leeway"});
  int64_t length = a.has(0) ? IntArg(a[0]) : 255;
  bool killwords = a.has(1) && a[1].Truthy();
  std::string end = a.has(2) ? ToStr(a[2]) : "...";
  int64_t leeway = a.set(3) ? IntArg(a[3]) : 5;
  int64_t end_len = static_cast<int64_t>(CodePointLen(end));
  if (length < end_len) Throw("AssertionError", "expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (leeway < 0) Throw("AssertionError", "expected leeway >= 0, got " + std::to_string(leeway));
  int64_t n = PyLen(v);  // Jinja2 takes len() of the value itself
  if (n <= length + leeway) return v;
  if (!v.is_string()) ThrowTypeError("'" + v.TypeName() + "' object has no attribute 'rsplit'");
  const std::string& s = v.s();
  std::string head = s.substr(0, ByteOffsetOf(s, static_cast<size_t>(length - end_len)));
  if (killwords) return Value::Str(head + end);
  size_t sp = head.rfind(' ');
  if (sp != std::string::npos) head = head.substr(0, sp);
  return Value::Str(head + end);
}

std::string HtmlUnescape(const std::string& s) {
  static const std::pair<const char*, const char*> kEntities[] = {
      {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}, {"nbsp", "\xC2\xA0"}};
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '&') {
      out.push_back(s[i++]);
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi != std::string::npos && semi - i <= 10) {
      std::string name = s.substr(i + 1, semi - i - 1);
      if (!name.empty() && name[0] == '#') {
        bool hex = name.size() > 1 && (name[1] | 0x20) == 'x';
        std::string digits = name.substr(hex ? 2 : 1);
        char* endp = nullptr;
        long cp = digits.empty() ? -1 : std::strtol(digits.c_str(), &endp, hex ? 16 : 10);
        if (cp >= 0 && endp && *endp == '\0' && cp <= 0x10FFFF) {
          AppendCodePoint(&out, static_cast<char32_t>(cp));
          i = semi + 1;
          continue;
        }
      }
      bool done = false;
      for (const auto& [n, rep] : kEntities) {
        if (name == n) {
          out += rep;
          i = semi + 1;
          done = true;
          break;
        }
      }
      if (done) continue;
    }
    out.push_back(s[i++]);
  }
  return out;
}

Value FStriptags(Renderer&, const Value& v, CallArgs& args) {
  Args a("striptags", args, {});
  std::string s = ToStr(v);
  for (const char* open : {"<!--", "<"}) {
    const char* close = open[1] == '!' ? "-->" : ">";
    while (true) {
      size_t start = s.find(open);
      if (start == std::string::npos) break;
      size_t end = s.find(close, start);
      if (end == std::string::npos) break;
      s.erase(start, end + std::string(close).size() - start);
    }
  }
  // " ".join(s.split())
  std::string joined;
  size_t pos = 0;
  bool pending = false;
  while (pos < s.size()) {
    size_t start = pos;
    char32_t cp = DecodeCodePoint(s, &pos);
    if (IsPySpace(cp)) {
      pending = !joined.empty();
      continue;
    }
    if (pending) joined.push_back(' ');
    pending = false;
    joined.append(s, start, pos - start);
  }
  return Value::Str(HtmlUnescape(joined));
}

Value FIndent(Renderer& r, const Value& v, CallArgs& args) {
  Args a("indent", args, {"width", "first", "blank"});
  std::string indention;
  if (a.has(0) && a[0].is_string()) {
    indention = a[0].s();
  } else {
    int64_t w = a.has(0) ? IntArg(a[0]) : 4;
    r.CheckStringSize(static_cast<size_t>(std::max<int64_t>(w, 0)));
    indention = std::string(std::max<int64_t>(w, 0), ' ');
  }
  bool first = a.has(1) && a[1].Truthy();
  bool blank = a.has(2) && a[2].Truthy();
  FailIfUndefined(v);  // Jinja2 appends "\n" to the value: only strings work
  if (!v.is_string()) ThrowTypeError("unsupported operand type(s) for +=: '" + v.TypeName() + "' and 'str'");
  std::string s = v.s() + "\n";
  std::vector<std::string> lines = SplitLines(s, false);
  r.CheckStringSize(s.size() + lines.size() * indention.size());
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + indention;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += indention;
      rv += lines[i];
    }
  }
  if (first) rv = indention + rv;
  return SameKind(v, std::move(rv));
}

Value FFormat(Renderer& r, const Value& v, CallArgs& args) {
  if (!args.pos.empty() && !args.kw.empty()) {
    Throw("FilterArgumentError", "can't handle positional and keyword arguments at the same time");
  }
  Value fargs;
  if (!args.kw.empty()) {
    auto d = std::make_shared<DictObj>();
    for (const auto& [k, val] : args.kw) d->Set(Value::Str(k), val);
    fargs = Value::Dict(std::move(d));
  } else {
    fargs = Value::Tuple(args.pos);
  }
  return SameKind(v, PercentFormat(r, ToStr(v), fargs, v.is_markup()));
}

Value FInt(Renderer&, const Value& v, CallArgs& args) {
  Args a("int", args, {"default", "base"});
  Value dflt = a.has(0) ? a[0] : Value::Int(0);
  int base = a.has(1) ? static_cast<int>(IntArg(a[1])) : 10;
  FailIfUndefined(v);
  int64_t out;
  if (v.is_string()) {
    if (ParsePyInt(v.s(), base, &out)) return Value::Int(out);
    double d;
    if (ParsePyFloat(v.s(), &d) && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value::Int(static_cast<int64_t>(d));
    return dflt;
  }
  if (v.is_integral()) return Value::Int(v.i());
  if (v.is_float()) {
    if (!std::isfinite(v.f()) || std::fabs(v.f()) >= 9.2e18) return dflt;
    return Value::Int(static_cast<int64_t>(v.f()));
  }
  return dflt;
}

Value FFloat(Renderer&, const Value& v, CallArgs& args) {
  Args a("float", args, {"default"});
  Value dflt = a.has(0) ? a[0] : Value::Float(0.0);
  FailIfUndefined(v);
  if (v.is_number()) return Value::Float(v.AsDouble());
  double d;
  if (v.is_string() && ParsePyFloat(v.s(), &d)) return Value::Float(d);
  return dflt;
}

Value FAbs(Renderer&, const Value& v, CallArgs& args) {
  Args a("abs", args, {});
  if (v.is_integral()) {
    if (v.i() == INT64_MIN) Throw("OverflowError", "integer overflow");
    return Value::Int(v.i() < 0 ? -v.i() : v.i());
  }
  if (v.is_float()) return Value::Float(std::fabs(v.f()));
  ThrowTypeError("bad operand type for abs(): '" + v.TypeName() + "'");
}

Value FRound(Renderer&, const Value& v, CallArgs& args) {
  Args a("round", args, {"precision", "method"});
  int64_t precision = a.has(0) ? IntArg(a[0]) : 0;
  std::string method = a.has(1) ? ToStr(a[1]) : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    Throw("FilterArgumentError", "method must be common, ceil or floor");
  }
  if (!v.is_number()) ThrowTypeError("type " + v.TypeName() + " doesn't define __round__ method");
  precision = std::clamp<int64_t>(precision, -400, 400);
  if (method == "common") {
    if (v.is_integral()) {
      if (precision >= 0) return Value::Int(v.i());
      if (precision < -18) return Value::Int(0);
      double scale = std::pow(10.0, static_cast<double>(-precision));
      double q = std::nearbyint(static_cast<double>(v.i()) / scale) * scale;
      return Value::Int(static_cast<int64_t>(q));
    }
    double d = v.f();
    if (!std::isfinite(d)) return v;
    if (precision >= 0 && precision <= 300) {
      // printf rounds the exact binary value half-to-even, as Python does.
      char buf[512];
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), d);
      return Value::Float(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value::Float(std::nearbyint(d / scale) * scale);
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.AsDouble() * scale;
  x = method == "ceil" ? std::ceil(x) : std::floor(x);
  return Value::Float(x / scale);
}

Value FDefault(Renderer&, const Value& v, CallArgs& args) {
  Args a("default", args, {"default_value", "boolean"});
  bool boolean = a.has(1) && a[1].Truthy();
  if (v.is_undefined() || (boolean && !v.Truthy())) return a.has(0) ? a[0] : Value::Str("");
  return v;
}

Value FLength(Renderer&, const Value& v, CallArgs& args) {
  Args a("length", args, {});
  return Value::Int(PyLen(v));
}

Value FFilesizeformat(Renderer&, const Value& v, CallArgs& args) {
  Args a("filesizeformat", args, {"binary"});
  bool binary = a.has(0) && a[0].Truthy();
  double bytes;
  if (v.is_number()) {
    bytes = v.AsDouble();
  } else if (!(v.is_string() && ParsePyFloat(v.s(), &bytes))) {
    Throw("ValueError", "could not convert string to float");
  }
  double base = binary ? 1024 : 1000;
  static const char* kBin[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  static const char* kDec[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  if (bytes == 1) return Value::Str("1 Byte");
  if (bytes < base) return Value::Str(std::to_string(static_cast<int64_t>(bytes)) + " Bytes");
  char buf[64];
  for (int i = 0; i < 8; ++i) {
    double unit = std::pow(base, i + 2);
    if (bytes < unit || i == 7) {
      std::snprintf(buf, sizeof(buf), "%.1f %s", base * bytes / unit, binary ? kBin[i] : kDec[i]);
      break;
    }
  }
  return Value::Str(buf);
}

// pprint.pformat's key order: dicts sorted (line wrapping not reproduced).
Value SortedDicts(const Value& v) {
  if (v.is_dict()) {
    std::vector<std::pair<Value, Value>> items = v.dict().items();
    std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
      return Orderable(a.first, b.first) && Compare(a.first, b.first) < 0;
    });
    auto d = std::make_shared<DictObj>();
    for (auto& [k, val] : items) d->Set(k, SortedDicts(val));
    return Value::Dict(std::move(d));
  }
  if (v.is_list()) {
    std::vector<Value> items;
    for (const Value& item : v.seq().items) items.push_back(SortedDicts(item));
    return Value::Seq(v.seq().kind, std::move(items));
  }
  return v;
}

Value FPprint(Renderer&, const Value& v, CallArgs& args) {
  Args a("pprint", args, {});
  return Value::Str(Repr(SortedDicts(v)));
}

Value FUrlencode(Renderer& r, const Value& v, CallArgs& args) {
  Args a("urlencode", args, {});
  auto quote = [](const std::string& s, bool for_query) {
    std::string out;
    for (unsigned char c : s) {
      bool safe = std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (!for_query && c == '/');
      if (safe) {
        out.push_back(static_cast<char>(c));
      } else if (for_query && c == ' ') {
        out.push_back('+');
      } else {
        char buf[4];
        std::snprintf(buf, sizeof(buf), "%%%02X", c);
        out += buf;
      }
    }
    return out;
  };
  bool iterable = v.is_string() || v.is_seq() || v.is_dict() || v.is_undefined();
  if (v.is_string() || !iterable) return Value::Str(quote(ToStr(v), false));
  std::vector<std::pair<Value, Value>> pairs;
  if (v.is_dict()) {
    pairs = v.dict().items();
  } else {
    for (const Value& item : r.Iterate(v)) {
      std::vector<Value> kv = r.Iterate(item);
      if (kv.size() != 2) Throw("ValueError", "urlencode expects pairs");
      pairs.emplace_back(kv[0], kv[1]);
    }
  }
  std::string out;
  for (const auto& [k, val] : pairs) {
    if (!out.empty()) out += "&";
    out += quote(ToStr(k), true) + "=" + quote(ToStr(val), true);
  }
  return Value::Str(out);
}

Value FXmlattr(Renderer& r, const Value& v, CallArgs& args) {
  Args a("xmlattr", args, {"autospace"});
  bool autospace = !a.has(0) || a[0].Truthy();
  if (!v.is_dict()) ThrowTypeError("xmlattr expects a mapping");
  std::string out;
  for (const auto& [k, val] : v.dict().items()) {
    if (val.is_none() || val.is_undefined()) continue;
    std::string key = ToStr(k);
    for (char c : key) {
      if (c == '/' || c == '>' || c == '=' || IsPySpace(static_cast<unsigned char>(c))) {
        Throw("ValueError", "Invalid character in attribute name: '" + key + "'");
      }
    }
    CallArgs none;
    Value esc = FEscape(r, val, none);
    if (!out.empty()) out += " ";
    out += FEscape(r, Value::Str(key), none).s() + "=\"" + esc.s() + "\"";
  }
  if (autospace && !out.empty()) out = " " + out;
  return Value::Str(out);
}

Value FWordwrap(Renderer& r, const Value& v, CallArgs& args) {
  Args a("wordwrap", args, {"width", "break_long_words", "wrapstring", "break_on_hyphens"});
  int64_t width = a.has(0) ? IntArg(a[0]) : 79;
  if (width <= 0) Throw("ValueError", "invalid width " + std::to_string(width) + " (must be > 0)");
  bool break_long = !a.has(1) || a[1].Truthy();
  std::string wrap = a.set(2) ? ToStr(a[2]) : "\n";
  std::string out;
  bool first_para = true;
  for (const std::string& line : SplitLines(ToStr(v), false)) {
    if (!first_para) out += wrap;
    first_para = false;
    // Greedy wrap on spaces (textwrap without hyphen handling).
    std::vector<std::string> words;
    std::string cur;
    for (char c : line) {
      if (c == ' ') {
        if (!cur.empty()) words.push_back(cur);
        cur.clear();
      } else {
        cur.push_back(c);
      }
    }
    if (!cur.empty()) words.push_back(cur);
    std::string row;
    bool first_row = true;
    auto flush = [&]() {
      if (!first_row) out += wrap;
      out += row;
      first_row = false;
      row.clear();
    };
    for (std::string w : words) {
      while (break_long && static_cast<int64_t>(CodePointLen(w)) > width) {
        if (!row.empty()) flush();
        size_t cut = ByteOffsetOf(w, width);
        row = w.substr(0, cut);
        flush();
        w = w.substr(cut);
      }
      if (w.empty()) continue;
      int64_t need = static_cast<int64_t>(CodePointLen(row) + (row.empty() ? 0 : 1) + CodePointLen(w));
      if (!row.empty() && need > width) flush();
      row += (row.empty() ? "" : " ") + w;
    }
    if (!row.empty()) flush();
    r.CheckStringSize(out.size());
  }
  return Value::Str(out);
}

Value FAttr(Renderer& r, const Value& v, CallArgs& args) {
  Args a("attr", args, {"name"}, 1);
  const std::string& name = StrArg(a[0], "attribute name");
  Value out;
  if (v.is_object() && v.obj().GetAttr(name, &out)) return out;
  if (GetBuiltinAttr(v, name, &out)) return out;
  return Value::Undefined("'" + v.TypeName() + " object' has no attribute '" + name + "'");
}

}  // namespace

void RegisterStringFilters(FilterTable& t) {
  t["tojson"] = &FTojson;
  t["trim"] = &FTrim;
  t["upper"] = &FUpper;
  t["lower"] = &FLower;
  t["title"] = &FTitle;
  t["capitalize"] = &FCapitalize;
  t["replace"] = &FReplace;
  t["string"] = &FString;
  t["safe"] = &FSafe;
  t["escape"] = &FEscape;
  t["e"] = &FEscape;
  t["forceescape"] = &FForceescape;
  t["wordcount"] = &FWordcount;
  t["center"] = &FCenter;
  t["truncate"] = &FTruncate;
  t["striptags"] = &FStriptags;
  t["indent"] = &FIndent;
  t["format"] = &FFormat;
  t["int"] = &FInt;
  t["float"] = &FFloat;
  t["abs"] = &FAbs;
  t["round"] = &FRound;
  t["default"] = &FDefault;
  t["d"] = &FDefault;
  t["length"] = &FLength;
  t["count"] = &FLength;
  t["filesizeformat"] = &FFilesizeformat;
  t["pprint"] = &FPprint;
  t["urlencode"] = &FUrlencode;
  t["xmlattr"] = &FXmlattr;
  t["wordwrap"] = &FWordwrap;
  t["attr"] = &FAttr;
}

}  // namespace llmhost::jinja
