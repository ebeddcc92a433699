// The renderer: executes a parsed Program against a context, with Jinja2's
// scoping rules (loop bodies, macros, set/filter blocks get their own scope)
// and the limits that make untrusted templates safe (steps, output size,
// recursion depth).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace llmhost::jinja {

// Largest string or sequence a template may build (bytes / items).
constexpr size_t kMaxStringBytes = 64u << 20;
constexpr size_t kMaxSeqItems = 4u << 20;

struct RenderLimits {
  uint64_t max_steps = 50'000'000;  // expression evaluations, statements, loop iterations, bytes/64 built
  size_t max_output = 64u << 20;    // bytes of rendered text
  int max_call_depth = 100;         // nested macro calls / recursive loops
  int max_eval_depth = 1500;        // nested evaluation (expressions within calls)
  int max_namespaces = 1000;        // namespace() objects per render
};

// One scope. Lookups walk to the parent; assignments stay local.
class Frame {
 public:
  explicit Frame(std::shared_ptr<Frame> parent) : parent_(std::move(parent)) {}
  const Value* Lookup(std::string_view name) const;
  void Set(const std::string& name, Value value);
  const std::shared_ptr<Frame>& parent() const { return parent_; }

 private:
  std::shared_ptr<Frame> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};
using FramePtr = std::shared_ptr<Frame>;

// namespace(): the one mutable object.
class NamespaceObj final : public Object {
 public:
  std::string TypeName() const override { return "Namespace"; }
  std::string Repr() const override;
  bool GetAttr(std::string_view name, Value* out) override;
  bool IsNamespace() const override { return true; }
  bool MayHoldNamespace() const override { return true; }
  void SetAttr(const std::string& name, Value value);
  void Clear() { attrs_.clear(); }
  const std::vector<std::pair<std::string, Value>>& attrs() const { return attrs_; }

 private:
  std::vector<std::pair<std::string, Value>> attrs_;
};

// A builtin callable (global function or bound method).
class BuiltinObj final : public Object {
 public:
  using Fn = Value (*)(Renderer& r, const Value& self, CallArgs& args);
  BuiltinObj(std::string name, Fn fn, Value self = Value()) : name_(std::move(name)), fn_(fn), self_(std::move(self)) {}
  std::string TypeName() const override { return "builtin_function_or_method"; }
  std::string Repr() const override { return "<built-in method " + name_ + ">"; }
  bool IsCallable() const override { return true; }
  Value Call(Renderer& r, CallArgs& args) override;
  // A string method of a Markup: string arguments are escaped and string
  // results are Markup, as markupsafe wraps them.
  void set_markup(bool markup) { markup_ = markup; }
  bool MayHoldNamespace() const override { return self_.MayHoldNamespace(); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  Fn fn_;
  Value self_;
  bool markup_ = false;
};

class Renderer {
 public:
  explicit Renderer(const RenderLimits& limits) : limits_(limits) {}
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Extra globals (raise_exception, strftime_now, ...), looked up after the
  // context and before the builtin globals.
  void AddGlobal(std::string name, Value value) { globals_.emplace_back(std::move(name), std::move(value)); }

  // Renders `program` with `context` as the template's variables. Throws Error.
  std::string Render(const Program& program, std::vector<std::pair<std::string, Value>> context);

  // Jinja2's compile-time as_const(): evaluates an expression without a
  // context. Throws (type "Impossible" or any error) when it cannot.
  Value FoldConst(const Expr& e);

  // ---- services for filters, tests and methods ----
  Value GetAttr(const Value& obj, std::string_view name);
  Value GetItem(const Value& obj, const Value& key);
  Value CallValue(const Value& callee, CallArgs& args);
  Value CallFilter(std::string_view name, const Value& subject, CallArgs& args);
  bool CallTest(std::string_view name, const Value& subject, CallArgs& args);
  // Python iter() materialised; throws TypeError for non-iterables.
  std::vector<Value> Iterate(const Value& v);
  // Counts work against the step budget; throws when it runs out.
  void Charge(uint64_t steps);
  // Throws when a string of `bytes` / a sequence of `items` would be too big.
  void CheckStringSize(size_t bytes);
  void CheckSeqSize(size_t items);
  Value MakeNamespace(CallArgs& args);
  Value Undefined(std::string hint) { return Value::Undefined(std::move(hint)); }

  // ---- used by runtime objects ----
  Value CallMacro(const Stmt& def, const std::string& name, const std::weak_ptr<Frame>& scope, CallArgs& args);
  Value CallLoop(const Stmt& loop, const std::weak_ptr<Frame>& scope, const Value& iterable, int depth);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Flow ExecBody(const Body& body, const FramePtr& frame, std::string* out);
  Flow Exec(const Stmt& s, const FramePtr& frame, std::string* out);
  void ExecFor(const Stmt& s, const FramePtr& frame, const Value& iterable, int depth, std::string* out);
  void ExecCallBlock(const Stmt& s, const FramePtr& frame, std::string* out);
  void Assign(const Target& t, const Value& v, const FramePtr& frame);
  void Append(std::string* out, std::string_view text);

  Value Eval(const Expr& e, const FramePtr& frame);
  Value EvalInner(const Expr& e, const FramePtr& frame);
  Value EvalFilterChain(const Expr& e, const FramePtr& frame, const Value* subject);
  void EvalCallArgs(const Expr& e, size_t first, const FramePtr& frame, CallArgs* out);
  Value EvalSlice(const Value& obj, const Expr& slice, const FramePtr& frame);
  Value LookupName(const std::string& name, const FramePtr& frame);

  RenderLimits limits_;
  std::vector<std::pair<std::string, Value>> globals_;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
  bool folding_ = false;
  std::vector<std::weak_ptr<NamespaceObj>> namespaces_;  // created by this render, oldest first
  void ReleaseNamespaces();
};

}  // namespace llmhost::jinja
