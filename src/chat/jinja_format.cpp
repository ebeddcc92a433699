// printf-style `%` and str.format(), as Python formats them.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace llmhost::jinja {
namespace {

bool IsDigitChar(char c) { return c >= '0' && c <= '9'; }

// Pads `s` to `width` code points.
std::string Pad(Renderer& r, std::string s, int64_t width, char align, const std::string& fill) {
  int64_t len = static_cast<int64_t>(CodePointLen(s));
  if (width <= len) return s;
  int64_t n = width - len;
  r.CheckStringSize(s.size() + static_cast<size_t>(n) * fill.size());
  auto rep = [&](int64_t k) {
    std::string o;
    for (int64_t i = 0; i < k; ++i) o += fill;
    return o;
  };
  if (align == '<') return s + rep(n);
  if (align == '^') return rep(n / 2) + s + rep(n - n / 2);
  return rep(n) + s;
}

std::string FormatDouble(const char* conv, int precision, bool alt, double d) {
  char fmt[16];
  std::snprintf(fmt, sizeof(fmt), "%%%s.%d%s", alt ? "#" : "", precision, conv);
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf), fmt, d);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof(buf)) return std::string(buf, n);
  std::string big(n + 1, '\0');
  std::snprintf(big.data(), big.size(), fmt, d);
  big.resize(n);
  return big;
}

std::string IntDigits(int64_t v, int base, bool upper) {
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (u == 0) return "0";
  std::string out;
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  while (u) {
    out.push_back(digits[u % base]);
    u /= base;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

double ToDoubleArg(const Value& v, char conv) {
  if (v.is_number()) return v.AsDouble();
  ThrowTypeError(std::string("must be real number, not ") + v.TypeName());
}

int64_t ToIntArg(const Value& v, char conv) {
  if (v.is_integral()) return v.i();
  if (v.is_float()) {
    if (!std::isfinite(v.f())) Throw("OverflowError", "cannot convert float infinity to integer");
    if (std::fabs(v.f()) >= 9.2e18) Throw("OverflowError", "integer overflow");
    return static_cast<int64_t>(v.f());
  }
  ThrowTypeError(std::string("%") + conv + " format: a real number is required, not " + v.TypeName());
}

}  // namespace

std::string PercentFormat(Renderer& r, std::string_view fmt, const Value& args, bool escape_args) {
  std::vector<Value> list;
  const DictObj* mapping = nullptr;
  if (args.is_seq() && args.seq().kind == SeqKind::kTuple) {
    list = args.seq().items;
  } else {
    list.push_back(args);
    if (args.is_dict()) mapping = &args.dict();
  }
  size_t next_arg = 0;
  bool used_mapping = false;
  auto take = [&]() -> Value {
    if (next_arg >= list.size()) ThrowTypeError("not enough arguments for format string");
    return list[next_arg++];
  };
  std::string out;
  size_t i = 0;
  while (i < fmt.size()) {
    char c = fmt[i++];
    if (c != '%') {
      out.push_back(c);
      continue;
    }
    if (i >= fmt.size()) Throw("ValueError", "incomplete format");
    Value arg;
    bool have_arg = false;
    if (fmt[i] == '(') {
      if (!mapping) ThrowTypeError("format requires a mapping");
      int depth = 1;
      size_t start = ++i;
      while (i < fmt.size() && depth > 0) {
        if (fmt[i] == '(') ++depth;
        if (fmt[i] == ')') --depth;
        ++i;
      }
      if (depth) Throw("ValueError", "incomplete format key");
      std::string key(fmt.substr(start, i - 1 - start));
      const Value* v = mapping->FindStr(key);
      if (!v) Throw("KeyError", "'" + key + "'");
      arg = *v;
      have_arg = true;
      used_mapping = true;
    }
    bool left = false, zero = false, plus = false, space = false, alt = false;
    for (; i < fmt.size(); ++i) {
      char f = fmt[i];
      if (f == '-') left = true;
      else if (f == '0') zero = true;
      else if (f == '+') plus = true;
      else if (f == ' ') space = true;
      else if (f == '#') alt = true;
      else break;
    }
    int64_t width = 0;
    if (i < fmt.size() && fmt[i] == '*') {
      Value w = take();
      if (!w.is_integral()) ThrowTypeError("* wants int");
      width = std::clamp<int64_t>(w.i(), -static_cast<int64_t>(kMaxStringBytes) - 1, kMaxStringBytes + 1);
      if (width < 0) {
        left = true;
        width = -width;
      }
      ++i;
    } else {
      while (i < fmt.size() && IsDigitChar(fmt[i])) {
        width = std::min<int64_t>(width * 10 + (fmt[i++] - '0'), kMaxStringBytes + 1);
      }
    }
    int64_t prec = -1;
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      prec = 0;
      if (i < fmt.size() && fmt[i] == '*') {
        Value p = take();
        if (!p.is_integral()) ThrowTypeError("* wants int");
        prec = std::max<int64_t>(0, p.i());
        ++i;
      } else {
        while (i < fmt.size() && IsDigitChar(fmt[i])) prec = std::min<int64_t>(prec * 10 + (fmt[i++] - '0'), 1000);
      }
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) Throw("ValueError", "incomplete format");
    char conv = fmt[i++];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (!have_arg) arg = take();
    r.CheckStringSize(static_cast<size_t>(width));
    std::string body;
    std::string sign;
    bool numeric = false;
    switch (conv) {
      case 's':
        body = ToStr(arg);
        if (escape_args && !arg.is_markup()) body = HtmlEscape(body);
        break;
      case 'r':
      case 'a':
        body = Repr(arg);
        if (escape_args) body = HtmlEscape(body);
        break;
      case 'c':
        if (arg.is_string() && CodePointLen(arg.s()) == 1) {
          body = arg.s();
        } else if (arg.is_integral()) {
          if (arg.i() < 0 || arg.i() > 0x10FFFF) Throw("OverflowError", "%c arg not in range(0x110000)");
          AppendCodePoint(&body, static_cast<char32_t>(arg.i()));
        } else {
          ThrowTypeError("%c requires int or char");
        }
        break;
      case 'd': case 'i': case 'u': case 'o': case 'x': case 'X': {
        numeric = true;
        int64_t v = ToIntArg(arg, conv);
        int base = (conv == 'o') ? 8 : (conv == 'x' || conv == 'X') ? 16 : 10;
        body = IntDigits(v, base, conv == 'X');
        if (prec > static_cast<int64_t>(body.size())) body.insert(0, prec - body.size(), '0');
        if (alt && base == 8) body.insert(0, "0o");
        if (alt && base == 16) body.insert(0, conv == 'X' ? "0X" : "0x");
        sign = v < 0 ? "-" : plus ? "+" : space ? " " : "";
        break;
      }
      case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
        numeric = true;
        double d = ToDoubleArg(arg, conv);
        std::string conv_s(1, conv);
        body = FormatDouble(conv_s.c_str(), static_cast<int>(prec < 0 ? 6 : prec), alt, std::fabs(d));
        sign = std::signbit(d) && !std::isnan(d) ? "-" : plus ? "+" : space ? " " : "";
        break;
      }
      default:
        Throw("ValueError", std::string("unsupported format character '") + conv + "'");
    }
    if (!numeric && prec >= 0) body = std::string(body.substr(0, ByteOffsetOf(body, prec)));
    std::string field = sign + body;
    int64_t len = static_cast<int64_t>(CodePointLen(field));
    if (width > len) {
      if (left) {
        field.append(width - len, ' ');
      } else if (zero && numeric) {
        field = sign + std::string(width - len, '0') + body;
      } else {
        field.insert(0, width - len, ' ');
      }
    }
    out += field;
    r.CheckStringSize(out.size());
  }
  // Python skips this check when the argument supports item access (a
  // dict, a list, an Undefined), whether or not it was used as a mapping.
  bool mapping_like = args.is_dict() || args.is_undefined() ||
                      (args.is_seq() && (args.seq().kind == SeqKind::kList || args.seq().kind == SeqKind::kRange));
  if (!used_mapping && next_arg < list.size() && !mapping_like) {
    ThrowTypeError("not all arguments converted during string formatting");
  }
  return out;
}

// ---- format(value, spec) ----

std::string FormatWithSpec(Renderer& r, const Value& v, std::string_view spec) {
  if (spec.empty()) return ToStr(v);
  // [[fill]align][sign][#][0][width][,|_][.precision][type]
  size_t i = 0;
  std::string fill = " ";
  char align = '\0';
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  {
    size_t p = 0;
    DecodeCodePoint(spec, &p);
    if (p < spec.size() && is_align(spec[p])) {
      fill = std::string(spec.substr(0, p));
      align = spec[p];
      i = p + 1;
    } else if (is_align(spec[0])) {
      align = spec[0];
      i = 1;
    }
  }
  char sign = '-';
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
  bool alt = false;
  if (i < spec.size() && spec[i] == '#') {
    alt = true;
    ++i;
  }
  if (i < spec.size() && spec[i] == '0') {
    if (!align) {
      fill = "0";
      align = '=';
    }
    ++i;
  }
  int64_t width = 0;
  while (i < spec.size() && IsDigitChar(spec[i])) width = std::min<int64_t>(width * 10 + (spec[i++] - '0'), kMaxStringBytes + 1);
  char grouping = '\0';
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) grouping = spec[i++];
  int64_t prec = -1;
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    prec = 0;
    if (i >= spec.size() || !IsDigitChar(spec[i])) Throw("ValueError", "Format specifier missing precision");
    while (i < spec.size() && IsDigitChar(spec[i])) prec = std::min<int64_t>(prec * 10 + (spec[i++] - '0'), 1000);
  }
  char type = '\0';
  if (i < spec.size()) type = spec[i++];
  if (i != spec.size()) Throw("ValueError", "Invalid format specifier");
  r.CheckStringSize(static_cast<size_t>(width));

  std::string body, sign_str;
  bool numeric = v.is_number();
  if (v.is_string() || (!numeric)) {
    if (!v.is_string()) ThrowTypeError("unsupported format string passed to " + v.TypeName() + ".__format__");
    if (type && type != 's') Throw("ValueError", std::string("Unknown format code '") + type + "' for object of type 'str'");
    if (sign != '-' || alt || align == '=') Throw("ValueError", "Sign not allowed in string format specifier");
    body = v.s();
    if (prec >= 0) body = body.substr(0, ByteOffsetOf(body, prec));
    return Pad(r, body, width, align ? align : '<', fill);
  }
  bool as_int = v.is_integral() && (type == '\0' || type == 'd' || type == 'b' || type == 'o' || type == 'x' ||
                                    type == 'X' || type == 'c' || type == 'n');
  if (as_int) {
    if (prec >= 0) Throw("ValueError", "Precision not allowed in integer format specifier");
    int64_t x = v.i();
    int base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
    if (type == 'c') {
      AppendCodePoint(&body, static_cast<char32_t>(x));
    } else {
      body = IntDigits(x, base, type == 'X');
      if (grouping && base == 10) {
        std::string g;
        int n = 0;
        for (size_t k = body.size(); k-- > 0;) {
          g.push_back(body[k]);
          if (++n % 3 == 0 && k > 0) g.push_back(grouping);
        }
        body.assign(g.rbegin(), g.rend());
      }
      if (alt && base != 10) body.insert(0, base == 2 ? "0b" : base == 8 ? "0o" : type == 'X' ? "0X" : "0x");
    }
    sign_str = x < 0 ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
  } else {
    if (v.is_integral() == false && (type == 'd' || type == 'b' || type == 'o' || type == 'x' || type == 'X' || type == 'c')) {
      Throw("ValueError", std::string("Unknown format code '") + type + "' for object of type 'float'");
    }
    double d = v.AsDouble();
    double ad = std::fabs(d);
    switch (type) {
      case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
        char conv[2] = {type, 0};
        body = FormatDouble(conv, static_cast<int>(prec < 0 ? 6 : prec), alt, ad);
        break;
      }
      case '%':
        body = FormatDouble("f", static_cast<int>(prec < 0 ? 6 : prec), alt, ad * 100) + "%";
        break;
      case 'n':
      case '\0':
        if (prec < 0) {
          body = FloatRepr(ad);
        } else {
          body = FormatDouble("g", static_cast<int>(prec == 0 ? 1 : prec), alt, ad);
          if (body.find_first_of(".en") == std::string::npos) body += ".0";
        }
        break;
      default:
        Throw("ValueError", std::string("Unknown format code '") + type + "' for object of type 'float'");
    }
    sign_str = (std::signbit(d) && !std::isnan(d)) ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
  }
  char a = align ? align : '>';
  if (a == '=') {
    int64_t len = static_cast<int64_t>(CodePointLen(sign_str + body));
    std::string padding;
    for (int64_t k = len; k < width; ++k) padding += fill;
    return sign_str + padding + body;
  }
  return Pad(r, sign_str + body, width, a, fill);
}

// ---- str.format ----

std::string StrFormat(Renderer& r, std::string_view fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  bool used_auto = false, used_manual = false;
  size_t i = 0;
  while (i < fmt.size()) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out.push_back('}');
        i += 2;
        continue;
      }
      Throw("ValueError", "Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.push_back('{');
      i += 2;
      continue;
    }
    // Find the matching '}' (nested braces allowed in the spec).
    size_t j = i + 1;
    int depth = 1;
    while (j < fmt.size() && depth > 0) {
      if (fmt[j] == '{') ++depth;
      if (fmt[j] == '}') --depth;
      if (depth) ++j;
    }
    if (depth) Throw("ValueError", "expected '}' before end of string");
    std::string_view field = fmt.substr(i + 1, j - i - 1);
    i = j + 1;
    std::string_view spec, conv;
    size_t colon = std::string_view::npos, bang = std::string_view::npos;
    for (size_t k = 0; k < field.size(); ++k) {
      if (field[k] == '[') {
        while (k < field.size() && field[k] != ']') ++k;
        continue;
      }
      if (field[k] == '!' && bang == std::string_view::npos) bang = k;
      if (field[k] == ':') {
        colon = k;
        break;
      }
    }
    if (colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    if (bang != std::string_view::npos && bang < field.size()) {
      conv = field.substr(bang + 1);
      field = field.substr(0, bang);
    }
    // First part of the field name: index or keyword.
    size_t k = 0;
    while (k < field.size() && field[k] != '.' && field[k] != '[') ++k;
    std::string_view head = field.substr(0, k);
    Value v;
    if (head.empty()) {
      if (used_manual) Throw("ValueError", "cannot switch from manual field specification to automatic field numbering");
      used_auto = true;
      if (auto_index >= args.pos.size()) Throw("IndexError", "Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
      v = args.pos[auto_index++];
    } else if (std::all_of(head.begin(), head.end(), IsDigitChar)) {
      if (used_auto) Throw("ValueError", "cannot switch from automatic field numbering to manual field specification");
      used_manual = true;
      size_t idx = std::stoul(std::string(head.substr(0, 9)));
      if (idx >= args.pos.size()) Throw("IndexError", "Replacement index " + std::to_string(idx) + " out of range for positional args tuple");
      v = args.pos[idx];
    } else {
      bool found = false;
      for (const auto& [name, val] : args.kw) {
        if (name == head) {
          v = val;
          found = true;
          break;
        }
      }
      if (!found) Throw("KeyError", "'" + std::string(head) + "'");
    }
    // .attr and [key] parts.
    while (k < field.size()) {
      if (field[k] == '.') {
        size_t e = k + 1;
        while (e < field.size() && field[e] != '.' && field[e] != '[') ++e;
        std::string name(field.substr(k + 1, e - k - 1));
        if (!name.empty() && name[0] == '_') Throw("SecurityError", "access to attribute '" + name + "' is unsafe.");
        v = r.GetAttr(v, name);
        k = e;
      } else if (field[k] == '[') {
        size_t e = field.find(']', k);
        if (e == std::string_view::npos) Throw("ValueError", "Missing ']' in format string");
        std::string key(field.substr(k + 1, e - k - 1));
        if (!key.empty() && std::all_of(key.begin(), key.end(), IsDigitChar)) {
          v = r.GetItem(v, Value::Int(std::stoll(key.substr(0, 18))));
        } else {
          v = r.GetItem(v, Value::Str(key));
        }
        k = e + 1;
      } else {
        Throw("ValueError", "Only '.' or '[' may follow ']' in format field specifier");
      }
    }
    if (conv == "r" || conv == "a") {
      v = Value::Str(Repr(v));
    } else if (conv == "s") {
      v = Value::Str(ToStr(v));
    } else if (!conv.empty()) {
      Throw("ValueError", "Unknown conversion specifier " + std::string(conv));
    }
    std::string spec_s(spec);
    if (spec_s.find('{') != std::string::npos) spec_s = StrFormat(r, spec_s, args);
    out += FormatWithSpec(r, v, spec_s);
    r.CheckStringSize(out.size());
  }
  return out;
}

}  // namespace llmhost::jinja
