// Runtime objects of the renderer: macros (and call-block callers) and the
// `loop` variable. Frames, namespaces and builtin callables are declared in
// jinja_eval.h; their code lives here too.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"

namespace llmhost::jinja {

// A macro, or the `caller` of a call block.
class MacroObj final : public Object {
 public:
  MacroObj(const Stmt* def, std::string name, std::weak_ptr<Frame> scope)
      : def_(def), name_(std::move(name)), scope_(std::move(scope)) {}
  std::string TypeName() const override { return "Macro"; }
  std::string Repr() const override { return "<Macro '" + name_ + "'>"; }
  bool IsCallable() const override { return true; }
  Value Call(Renderer& r, CallArgs& args) override { return r.CallMacro(*def_, name_, scope_, args); }
  bool GetAttr(std::string_view name, Value* out) override {
    if (name == "name") {
      *out = Value::Str(name_);
    } else if (name == "arguments") {
      std::vector<Value> names;
      for (const auto& p : def_->params) names.push_back(Value::Str(p.name));
      *out = Value::Tuple(std::move(names));
    } else if (name == "catch_kwargs") {
      *out = Value::Bool(def_->uses_kwargs);
    } else if (name == "catch_varargs") {
      *out = Value::Bool(def_->uses_varargs);
    } else if (name == "caller") {
      *out = Value::Bool(def_->uses_caller);
    } else {
      return false;
    }
    return true;
  }

 private:
  const Stmt* def_;
  std::string name_;
  std::weak_ptr<Frame> scope_;
};

// The `loop` variable. One object per loop, advanced each iteration, as
// Jinja's LoopContext is.
class LoopObj final : public Object {
 public:
  LoopObj(const Stmt* def, std::weak_ptr<Frame> scope, std::shared_ptr<const std::vector<Value>> items, int depth)
      : def_(def), scope_(std::move(scope)), items_(std::move(items)), depth_(depth) {}
  std::string TypeName() const override { return "LoopContext"; }
  std::string Repr() const override {
    return "<LoopContext " + std::to_string(index_ + 1) + "/" + std::to_string(items_->size()) + ">";
  }
  bool IsCallable() const override { return def_->recursive; }
  int64_t Length() const override { return static_cast<int64_t>(items_->size()); }
  bool MayHoldNamespace() const override { return true; }
  void set_index(size_t i) { index_ = i; }

  bool GetAttr(std::string_view name, Value* out) override {
    int64_t n = static_cast<int64_t>(items_->size());
    int64_t i = static_cast<int64_t>(index_);
    if (name == "index") *out = Value::Int(i + 1);
    else if (name == "index0") *out = Value::Int(i);
    else if (name == "revindex") *out = Value::Int(n - i);
    else if (name == "revindex0") *out = Value::Int(n - i - 1);
    else if (name == "first") *out = Value::Bool(i == 0);
    else if (name == "last") *out = Value::Bool(i == n - 1);
    else if (name == "length") *out = Value::Int(n);
    else if (name == "depth") *out = Value::Int(depth_ + 1);
    else if (name == "depth0") *out = Value::Int(depth_);
    else if (name == "previtem") *out = i > 0 ? (*items_)[i - 1] : Value::Undefined("there is no previous item");
    else if (name == "nextitem") *out = i + 1 < n ? (*items_)[i + 1] : Value::Undefined("there is no next item");
    else if (name == "cycle") *out = Value::Obj(std::make_shared<BuiltinObj>("cycle", &Cycle, Value::Int(i)));
    else if (name == "changed") *out = Value::Obj(std::make_shared<BuiltinObj>("changed", &Changed, Value::Obj(self_.lock())));
    else return false;
    return true;
  }

  Value Call(Renderer& r, CallArgs& args) override {
    if (!def_->recursive) return Object::Call(r, args);
    if (args.pos.size() != 1 || !args.kw.empty()) ThrowTypeError("loop() takes exactly one argument");
    return r.CallLoop(*def_, scope_, args.pos[0], depth_ + 1);
  }

  void set_self(const std::shared_ptr<LoopObj>& self) { self_ = self; }

 private:
  static Value Cycle(Renderer&, const Value& index, CallArgs& args) {
    if (args.pos.empty()) ThrowTypeError("no items for cycling given");
    return args.pos[static_cast<size_t>(index.i()) % args.pos.size()];
  }
  static Value Changed(Renderer&, const Value& self, CallArgs& args) {
    auto* loop = static_cast<LoopObj*>(&self.obj());
    Value now = Value::List(args.pos);
    bool changed = !loop->has_last_changed_ || !Equals(now, loop->last_changed_);
    loop->last_changed_ = now;
    loop->has_last_changed_ = true;
    return Value::Bool(changed);
  }

  const Stmt* def_;
  std::weak_ptr<Frame> scope_;
  std::shared_ptr<const std::vector<Value>> items_;
  int depth_;
  size_t index_ = 0;
  std::weak_ptr<LoopObj> self_;
  Value last_changed_;
  bool has_last_changed_ = false;
};

}  // namespace llmhost::jinja
