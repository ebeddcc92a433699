#include "chat/jinja_objects.h"

#include <algorithm>

namespace llmhost::jinja {

// ---- frames ----

const Value* Frame::Lookup(std::string_view name) const {
  for (const Frame* f = this; f; f = f->parent_.get()) {
    for (const auto& [k, v] : f->vars_) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Frame::Set(const std::string& name, Value value) {
  for (auto& [k, v] : vars_) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars_.emplace_back(name, std::move(value));
}

// ---- namespace ----

std::string NamespaceObj::Repr() const {
  // Python's dict repr prints a dict that contains itself as {...}.
  thread_local std::vector<const NamespaceObj*> active;
  if (std::find(active.begin(), active.end(), this) != active.end()) return "<Namespace {...}>";
  active.push_back(this);
  struct Pop {
    ~Pop() { active.pop_back(); }
  } pop;
  std::string out = "<Namespace {";
  bool first = true;
  for (const auto& [k, v] : attrs_) {
    if (!first) out += ", ";
    first = false;
    AppendStrRepr(k, &out);
    out += ": ";
    out += jinja::Repr(v);
  }
  return out + "}>";
}

bool NamespaceObj::GetAttr(std::string_view name, Value* out) {
  for (const auto& [k, v] : attrs_) {
    if (k == name) {
      *out = v;
      return true;
    }
  }
  return false;
}

void NamespaceObj::SetAttr(const std::string& name, Value value) {
  for (auto& [k, v] : attrs_) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  attrs_.emplace_back(name, std::move(value));
}

// ---- builtin callables ----

namespace {

Value ToMarkup(const Value& v) {
  if (v.is_string()) return v.is_markup() ? v : Value::Markup(v.s());
  if (v.is_list()) {
    std::vector<Value> items;
    for (const Value& item : v.seq().items) items.push_back(ToMarkup(item));
    return Value::Seq(v.seq().kind, std::move(items));
  }
  return v;
}

Value EscapeArg(const Value& v) {
  if (v.is_string() && !v.is_markup()) return Value::Markup(HtmlEscape(v.s()));
  if (v.is_list()) {
    std::vector<Value> items;
    for (const Value& item : v.seq().items) items.push_back(EscapeArg(item));
    return Value::Seq(v.seq().kind, std::move(items));
  }
  return v;
}

}  // namespace

Value BuiltinObj::Call(Renderer& r, CallArgs& args) {
  if (!markup_) return fn_(r, self_, args);
  for (Value& v : args.pos) v = EscapeArg(v);
  for (auto& kv : args.kw) kv.second = EscapeArg(kv.second);
  return ToMarkup(fn_(r, self_, args));
}

}  // namespace llmhost::jinja
