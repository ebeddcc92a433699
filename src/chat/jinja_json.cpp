// json.dumps() as Python writes it (the tojson filter transformers installs).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace llmhost::jinja {

namespace {

void JsonString(std::string_view s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  size_t pos = 0;
  while (pos < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[pos]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      out->push_back(static_cast<char>(c));
      ++pos;
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); ++pos; continue;
      case '\\': out->append("\\\\"); ++pos; continue;
      case '\n': out->append("\\n"); ++pos; continue;
      case '\r': out->append("\\r"); ++pos; continue;
      case '\t': out->append("\\t"); ++pos; continue;
      case '\b': out->append("\\b"); ++pos; continue;
      case '\f': out->append("\\f"); ++pos; continue;
      default: break;
    }
    char buf[16];
    if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out->append(buf);
      ++pos;
      continue;
    }
    size_t start = pos;
    char32_t cp = DecodeCodePoint(s, &pos);
    if (!ensure_ascii) {
      out->append(s.substr(start, pos - start));
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      out->append(buf);
    } else {
      char32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                    static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      out->append(buf);
    }
  }
  out->push_back('"');
}

std::string JsonFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return FloatRepr(d);
}

struct JsonWriter {
  Renderer& r;
  const JsonOptions& opt;
  std::string out;

  void Newline(int level) {
    out.push_back('\n');
    for (int k = 0; k < level; ++k) out += *opt.indent;
    r.CheckStringSize(out.size());
  }

  void Key(const Value& k) {
    switch (k.kind()) {
      case Kind::kString: JsonString(k.s(), opt.ensure_ascii, &out); return;
      case Kind::kBool: out += k.b() ? "\"true\"" : "\"false\""; return;
      case Kind::kNone: out += "\"null\""; return;
      case Kind::kInt: out += "\"" + std::to_string(k.i()) + "\""; return;
      case Kind::kFloat: out += "\"" + JsonFloat(k.f()) + "\""; return;
      default:
        ThrowTypeError("keys must be str, int, float, bool or None, not " + k.TypeName());
    }
  }

  void Write(const Value& v, int level) {
    r.Charge(1);
    switch (v.kind()) {
      case Kind::kNone: out += "null"; return;
      case Kind::kBool: out += v.b() ? "true" : "false"; return;
      case Kind::kInt: out += std::to_string(v.i()); return;
      case Kind::kFloat: out += JsonFloat(v.f()); return;
      case Kind::kString:
        r.CheckStringSize(out.size() + v.s().size());
        r.Charge(v.s().size() / 64);
        JsonString(v.s(), opt.ensure_ascii, &out);
        return;
      case Kind::kSeq: {
        if (!v.is_list()) break;
        const auto& items = v.seq().items;
        if (items.empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        for (size_t k = 0; k < items.size(); ++k) {
          if (k) out += opt.item_sep;
          if (opt.indent) Newline(level + 1);
          Write(items[k], level + 1);
        }
        if (opt.indent) Newline(level);
        out.push_back(']');
        r.CheckStringSize(out.size());
        return;
      }
      case Kind::kDict: {
        const auto& items = v.dict().items();
        if (items.empty()) {
          out += "{}";
          return;
        }
        std::vector<const std::pair<Value, Value>*> order;
        for (const auto& kv : items) order.push_back(&kv);
        if (opt.sort_keys) {
          std::stable_sort(order.begin(), order.end(),
                           [](const auto* a, const auto* b) { return Compare(a->first, b->first) < 0; });
        }
        out.push_back('{');
        bool first = true;
        for (const auto* kv : order) {
          if (!first) out += opt.item_sep;
          first = false;
          if (opt.indent) Newline(level + 1);
          Key(kv->first);
          out += opt.key_sep;
          Write(kv->second, level + 1);
        }
        if (opt.indent) Newline(level);
        out.push_back('}');
        r.CheckStringSize(out.size());
        return;
      }
      default: break;
    }
    ThrowTypeError("Object of type " + v.TypeName() + " is not JSON serializable");
  }
};

}  // namespace

std::string JsonDumps(Renderer& r, const Value& v, const JsonOptions& options) {
  JsonWriter w{r, options, {}};
  w.Write(v, 0);
  return std::move(w.out);
}

}  // namespace llmhost::jinja
