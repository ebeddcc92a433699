#include "chat/jinja_eval.h"

#include <algorithm>

#include "chat/jinja_builtins.h"
#include "chat/jinja_objects.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace llmhost::jinja {

namespace {

struct DepthGuard {
  DepthGuard(int* counter, int limit, const char* what) : counter(counter) {
    if (++*counter > limit) {
      --*counter;
      Throw("RecursionError", std::string("maximum ") + what + " depth exceeded");
    }
  }
  ~DepthGuard() { --*counter; }
  int* counter;
};

std::string ObjectTypeRepr(const Value& v) {
  if (v.is_none()) return "'None'";
  return "'" + v.TypeName() + " object'";
}

}  // namespace

// ---- limits ----

void Renderer::Charge(uint64_t steps) {
  steps_ += steps;
  if (steps_ > limits_.max_steps) {
    Throw("ResourceExhausted", "template exceeded its work limit (" + std::to_string(limits_.max_steps) + " steps)");
  }
}

void Renderer::CheckStringSize(size_t bytes) {
  if (bytes > kMaxStringBytes) Throw("ResourceExhausted", "string too large (" + std::to_string(bytes) + " bytes)");
}

void Renderer::CheckSeqSize(size_t items) {
  if (items > kMaxSeqItems) Throw("ResourceExhausted", "sequence too large (" + std::to_string(items) + " items)");
}

void Renderer::Append(std::string* out, std::string_view text) {
  if (out->size() + text.size() > limits_.max_output) {
    Throw("ResourceExhausted", "rendered output exceeds " + std::to_string(limits_.max_output) + " bytes");
  }
  out->append(text);
}

Value Renderer::MakeNamespace(CallArgs& args) {
  if (static_cast<int>(namespaces_.size()) >= limits_.max_namespaces) {
    Throw("ResourceExhausted", "too many namespace objects");
  }
  auto ns = std::make_shared<NamespaceObj>();
  namespaces_.push_back(ns);
  for (const Value& p : args.pos) {  // namespace(dict) / namespace(pairs)
    if (p.is_dict()) {
      for (const auto& [k, v] : p.dict().items()) {
        if (!k.is_string()) ThrowTypeError("keywords must be strings");
        ns->SetAttr(k.s(), v);
      }
    } else {
      for (const Value& pair : Iterate(p)) {
        std::vector<Value> kv = Iterate(pair);
        if (kv.size() != 2 || !kv[0].is_string()) Throw("ValueError", "dictionary update sequence element has wrong length");
        ns->SetAttr(kv[0].s(), kv[1]);
      }
    }
  }
  for (auto& [k, v] : args.kw) ns->SetAttr(k, v);
  return Value::Obj(std::move(ns));
}

// ---- rendering ----

Renderer::~Renderer() { ReleaseNamespaces(); }

// Namespaces are the only mutable objects, so every reference cycle passes
// through one: emptying them (oldest first, so that nothing deep is freed
// recursively) frees everything a render built.
void Renderer::ReleaseNamespaces() {
  for (auto& weak : namespaces_) {
    if (auto ns = weak.lock()) ns->Clear();
  }
  namespaces_.clear();
}

std::string Renderer::Render(const Program& program, std::vector<std::pair<std::string, Value>> context) {
  struct Release {
    Renderer* r;
    ~Release() { r->ReleaseNamespaces(); }
  };
  auto root = std::make_shared<Frame>(nullptr);
  Release release{this};
  for (auto& [k, v] : context) root->Set(k, std::move(v));
  std::string out;
  ExecBody(program.body, root, &out);
  return out;
}

Renderer::Flow Renderer::ExecBody(const Body& body, const FramePtr& frame, std::string* out) {
  // Statement nesting counts with expression nesting against one stack budget.
  DepthGuard guard(&eval_depth_, limits_.max_eval_depth, "evaluation");
  for (const auto& s : body) {
    Flow f;
    try {
      f = Exec(*s, frame, out);
    } catch (Error& e) {
      if (e.line() == 0) e.set_line(s->line);
      throw;
    }
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Renderer::Flow Renderer::Exec(const Stmt& s, const FramePtr& frame, std::string* out) {
  Charge(1);
  switch (s.kind) {
    case StmtKind::kText: Append(out, s.text); return Flow::kNormal;
    case StmtKind::kPrint: {
      Value v = Eval(*s.expr, frame);
      if (v.is_string()) {
        Append(out, v.s());
      } else {
        std::string text;
        AppendStr(v, &text);
        Append(out, text);
      }
      return Flow::kNormal;
    }
    case StmtKind::kIf:
      for (size_t i = 0; i < s.conds.size(); ++i) {
        if (Eval(*s.conds[i], frame).Truthy()) return ExecBody(s.bodies[i], frame, out);
      }
      return ExecBody(s.else_body, frame, out);
    case StmtKind::kFor: ExecFor(s, frame, Eval(*s.expr, frame), 0, out); return Flow::kNormal;
    case StmtKind::kSet: Assign(s.target, Eval(*s.expr, frame), frame); return Flow::kNormal;
    case StmtKind::kSetBlock: {
      auto inner = std::make_shared<Frame>(frame);
      std::string text;
      // break/continue leave the block: its text is dropped, nothing assigned.
      if (Flow f = ExecBody(s.body, inner, &text); f != Flow::kNormal) return f;
      Value v = Value::Str(std::move(text));
      if (s.expr) v = EvalFilterChain(*s.expr, frame, &v);
      Assign(s.target, v, frame);
      return Flow::kNormal;
    }
    case StmtKind::kMacro:
      frame->Set(s.text, Value::Obj(std::make_shared<MacroObj>(&s, s.text, frame)));
      return Flow::kNormal;
    case StmtKind::kCallBlock: ExecCallBlock(s, frame, out); return Flow::kNormal;
    case StmtKind::kFilterBlock: {
      auto inner = std::make_shared<Frame>(frame);
      std::string text;
      if (Flow f = ExecBody(s.body, inner, &text); f != Flow::kNormal) return f;
      Value subject = Value::Str(std::move(text));
      Value v = EvalFilterChain(*s.expr, frame, &subject);
      Append(out, ToStr(v));
      return Flow::kNormal;
    }
    case StmtKind::kWith: {
      std::vector<Value> values;
      for (const auto& e : s.values) values.push_back(Eval(*e, frame));
      auto inner = std::make_shared<Frame>(frame);
      for (size_t i = 0; i < s.targets.size(); ++i) Assign(s.targets[i], values[i], inner);
      return ExecBody(s.body, inner, out);
    }
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
    case StmtKind::kScope: return ExecBody(s.body, frame, out);
  }
  return Flow::kNormal;
}

void Renderer::ExecFor(const Stmt& s, const FramePtr& frame, const Value& iterable, int depth, std::string* out) {
  std::vector<Value> items = Iterate(iterable);
  if (s.cond) {
    std::vector<Value> kept;
    for (Value& item : items) {
      Charge(1);
      auto probe = std::make_shared<Frame>(frame);
      Assign(s.target, item, probe);
      if (Eval(*s.cond, probe).Truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    auto inner = std::make_shared<Frame>(frame);
    ExecBody(s.else_body, inner, out);
    return;
  }
  auto shared_items = std::make_shared<const std::vector<Value>>(std::move(items));
  auto loop = std::make_shared<LoopObj>(&s, frame, shared_items, depth);
  loop->set_self(loop);
  Value loop_value = Value::Obj(loop);
  // Jinja2 runs `else` unless the last iteration ran its body to the end: an
  // empty loop, or one whose final iteration did break or continue.
  bool run_else = true;
  for (size_t i = 0; i < shared_items->size(); ++i) {
    Charge(1);
    loop->set_index(i);
    auto inner = std::make_shared<Frame>(frame);
    inner->Set("loop", loop_value);
    Assign(s.target, (*shared_items)[i], inner);
    Flow f = ExecBody(s.body, inner, out);
    if (f == Flow::kBreak) break;
    if (f == Flow::kNormal) run_else = false;
  }
  if (run_else && !s.else_body.empty()) {
    auto inner = std::make_shared<Frame>(frame);
    ExecBody(s.else_body, inner, out);
  }
}

Value Renderer::CallLoop(const Stmt& loop, const std::weak_ptr<Frame>& scope, const Value& iterable, int depth) {
  DepthGuard guard(&call_depth_, limits_.max_call_depth, "recursion");
  FramePtr frame = scope.lock();
  if (!frame) Throw("RuntimeError", "recursive loop called after its loop ended");
  std::string out;
  ExecFor(loop, frame, iterable, depth, &out);
  return Value::Str(std::move(out));
}

void Renderer::ExecCallBlock(const Stmt& s, const FramePtr& frame, std::string* out) {
  const Expr& call = *s.expr;
  Value callee = Eval(*call.args[0], frame);
  CallArgs args;
  EvalCallArgs(call, 1, frame, &args);
  args.kw.emplace_back("caller", Value::Obj(std::make_shared<MacroObj>(&s, "caller", frame)));
  Value v = CallValue(callee, args);
  Append(out, ToStr(v));
}

Value Renderer::CallMacro(const Stmt& def, const std::string& name, const std::weak_ptr<Frame>& scope,
                          CallArgs& args) {
  DepthGuard guard(&call_depth_, limits_.max_call_depth, "recursion");
  FramePtr parent = scope.lock();
  if (!parent) Throw("RuntimeError", "macro '" + name + "' called after its scope ended");
  auto frame = std::make_shared<Frame>(parent);
  size_t nparams = def.params.size();
  std::vector<std::pair<std::string, Value>> kwargs = std::move(args.kw);
  auto pop_kw = [&](const std::string& key, Value* out) {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      if (it->first == key) {
        *out = std::move(it->second);
        kwargs.erase(it);
        return true;
      }
    }
    return false;
  };
  bool found_caller = false;
  for (size_t i = 0; i < nparams; ++i) {
    const MacroParam& p = def.params[i];
    Value v;
    if (i < args.pos.size()) {
      v = args.pos[i];
    } else if (pop_kw(p.name, &v)) {
      // given by keyword
    } else if (p.default_value) {
      v = Eval(*p.default_value, frame);
    } else {
      v = Value::Undefined("parameter '" + p.name + "' was not provided");
    }
    if (p.name == "caller") found_caller = true;
    frame->Set(p.name, std::move(v));
  }
  if (def.uses_caller && !found_caller) {
    Value caller;
    if (!pop_kw("caller", &caller)) caller = Value::Undefined("No caller defined");
    frame->Set("caller", std::move(caller));
  }
  if (def.uses_kwargs) {
    auto d = std::make_shared<DictObj>();
    for (auto& [k, v] : kwargs) d->Set(Value::Str(k), std::move(v));
    frame->Set("kwargs", Value::Dict(std::move(d)));
  } else if (!kwargs.empty()) {
    ThrowTypeError("macro '" + name + "' takes no keyword argument '" + kwargs.front().first + "'");
  }
  if (def.uses_varargs) {
    std::vector<Value> rest;
    for (size_t i = nparams; i < args.pos.size(); ++i) rest.push_back(args.pos[i]);
    frame->Set("varargs", Value::Tuple(std::move(rest)));
  } else if (args.pos.size() > nparams) {
    ThrowTypeError("macro '" + name + "' takes not more than " + std::to_string(nparams) + " argument(s)");
  }
  std::string out;
  ExecBody(def.body, frame, &out);
  return Value::Str(std::move(out));
}

void Renderer::Assign(const Target& t, const Value& v, const FramePtr& frame) {
  switch (t.kind) {
    case Target::kName: frame->Set(t.name, v); return;
    case Target::kTuple: {
      std::vector<Value> items = Iterate(v);
      if (items.size() != t.items.size()) {
        if (items.size() > t.items.size()) {
          Throw("ValueError", "too many values to unpack (expected " + std::to_string(t.items.size()) + ")");
        }
        Throw("ValueError", "not enough values to unpack (expected " + std::to_string(t.items.size()) + ", got " +
                                std::to_string(items.size()) + ")");
      }
      for (size_t i = 0; i < items.size(); ++i) Assign(t.items[i], items[i], frame);
      return;
    }
    case Target::kNamespaceAttr: {
      const Value* ns = frame->Lookup(t.name);
      if (!ns || !ns->is_object() || !ns->obj().IsNamespace()) {
        Throw("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
      }
      static_cast<NamespaceObj&>(ns->obj()).SetAttr(t.attr, v);
      return;
    }
  }
}

// ---- expressions ----

Value Renderer::FoldConst(const Expr& e) {
  folding_ = true;
  auto frame = std::make_shared<Frame>(nullptr);
  return Eval(e, frame);
}

Value Renderer::LookupName(const std::string& name, const FramePtr& frame) {
  if (folding_) Throw("Impossible", "not a constant");
  if (const Value* v = frame->Lookup(name)) return *v;
  for (const auto& [k, v] : globals_) {
    if (k == name) return v;
  }
  Value g;
  if (GetGlobal(name, &g)) return g;
  return Value::Undefined("'" + name + "' is undefined");
}

Value Renderer::Eval(const Expr& e, const FramePtr& frame) {
  DepthGuard guard(&eval_depth_, limits_.max_eval_depth, "evaluation");
  Charge(1);
  return EvalInner(e, frame);
}

Value Renderer::EvalInner(const Expr& e, const FramePtr& frame) {
  switch (e.kind) {
    case ExprKind::kConst: return e.value;
    case ExprKind::kName: return LookupName(e.name, frame);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) items.push_back(Eval(*a, frame));
      return e.kind == ExprKind::kList ? Value::List(std::move(items)) : Value::Tuple(std::move(items));
    }
    case ExprKind::kDict: {
      auto d = std::make_shared<DictObj>();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = Eval(*e.args[i], frame);
        d->Set(std::move(k), Eval(*e.args[i + 1], frame));
      }
      return Value::Dict(std::move(d));
    }
    case ExprKind::kGetAttr: return GetAttr(Eval(*e.args[0], frame), e.name);
    case ExprKind::kGetItem: {
      Value obj = Eval(*e.args[0], frame);
      if (e.args[1]->kind == ExprKind::kSlice) return EvalSlice(obj, *e.args[1], frame);
      return GetItem(obj, Eval(*e.args[1], frame));
    }
    case ExprKind::kSlice: Throw("TypeError", "slice outside subscript");
    case ExprKind::kCall: {
      if (folding_) Throw("Impossible", "not a constant");
      Value callee = Eval(*e.args[0], frame);
      CallArgs args;
      EvalCallArgs(e, 1, frame, &args);
      return CallValue(callee, args);
    }
    case ExprKind::kFilter: return EvalFilterChain(e, frame, nullptr);
    case ExprKind::kTest: {
      Value subject = Eval(*e.args[0], frame);
      CallArgs args;
      EvalCallArgs(e, 1, frame, &args);
      if (!e.test) Throw("TemplateRuntimeError", "No test named '" + e.name + "' found.");
      return Value::Bool(e.test(*this, subject, args));
    }
    case ExprKind::kNot: return Value::Bool(!Eval(*e.args[0], frame).Truthy());
    case ExprKind::kNeg: return UnaryMinus(Eval(*e.args[0], frame));
    case ExprKind::kPos: return UnaryPlus(Eval(*e.args[0], frame));
    case ExprKind::kBinary: {
      Value a = Eval(*e.args[0], frame);
      Value b = Eval(*e.args[1], frame);
      return BinaryOp(*this, e.op, a, b);
    }
    case ExprKind::kAnd: {
      Value a = Eval(*e.args[0], frame);
      if (!a.Truthy()) return a;
      return Eval(*e.args[1], frame);
    }
    case ExprKind::kOr: {
      Value a = Eval(*e.args[0], frame);
      if (a.Truthy()) return a;
      return Eval(*e.args[1], frame);
    }
    case ExprKind::kConcat: {
      std::string out;
      for (const auto& a : e.args) {
        Value v = Eval(*a, frame);
        if (v.is_string()) {
          CheckStringSize(out.size() + v.s().size());
          out += v.s();
        } else {
          AppendStr(v, &out);
          CheckStringSize(out.size());
        }
      }
      Charge(out.size() / 64);
      return Value::Str(std::move(out));
    }
    case ExprKind::kCompare: {
      Value left = Eval(*e.args[0], frame);
      for (size_t i = 0; i < e.cmp_ops.size(); ++i) {
        Value right = Eval(*e.args[i + 1], frame);
        CmpOp op = e.cmp_ops[i];
        bool ok;
        if (op == CmpOp::kIn || op == CmpOp::kNotIn) {
          ok = Contains(*this, right, left) == (op == CmpOp::kIn);
        } else {
          ok = CompareValues(op, left, right);
        }
        if (!ok) return Value::Bool(false);
        left = std::move(right);
      }
      return Value::Bool(true);
    }
    case ExprKind::kCondExpr: {
      if (Eval(*e.args[0], frame).Truthy()) return Eval(*e.args[1], frame);
      if (e.args[2]) return Eval(*e.args[2], frame);
      return Value::Undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

Value Renderer::EvalFilterChain(const Expr& e, const FramePtr& frame, const Value* subject) {
  if (folding_) {  // filters that need the template context never fold
    static const char* kContextFilters[] = {"map", "select", "reject", "selectattr", "rejectattr"};
    for (const char* n : kContextFilters) {
      if (e.name == n) Throw("Impossible", "not a constant");
    }
  }
  Value input;
  if (e.args[0]) {
    input = (e.args[0]->kind == ExprKind::kFilter) ? EvalFilterChain(*e.args[0], frame, subject)
                                                   : Eval(*e.args[0], frame);
  } else if (subject) {
    input = *subject;
  }
  CallArgs args;
  EvalCallArgs(e, 1, frame, &args);
  Charge(1);
  if (!e.filter) Throw("TemplateRuntimeError", "No filter named '" + e.name + "' found.");
  return e.filter(*this, input, args);
}

void Renderer::EvalCallArgs(const Expr& e, size_t first, const FramePtr& frame, CallArgs* out) {
  for (size_t i = first; i < e.args.size(); ++i) out->pos.push_back(Eval(*e.args[i], frame));
  for (const auto& [k, v] : e.kwargs) out->kw.emplace_back(k, Eval(*v, frame));
  if (e.dyn_args) {
    for (Value& v : Iterate(Eval(*e.dyn_args, frame))) out->pos.push_back(std::move(v));
  }
  if (e.dyn_kwargs) {
    Value d = Eval(*e.dyn_kwargs, frame);
    if (!d.is_dict()) ThrowTypeError("argument after ** must be a mapping, not " + d.TypeName());
    for (const auto& [k, v] : d.dict().items()) {
      if (!k.is_string()) ThrowTypeError("keywords must be strings");
      for (const auto& existing : out->kw) {
        if (existing.first == k.s()) ThrowTypeError("got multiple values for keyword argument '" + k.s() + "'");
      }
      out->kw.emplace_back(k.s(), v);
    }
  }
}

Value Renderer::EvalSlice(const Value& obj, const Expr& slice, const FramePtr& frame) {
  FailIfUndefined(obj);
  Value parts[3];
  for (int i = 0; i < 3; ++i) {
    if (slice.args[i]) parts[i] = Eval(*slice.args[i], frame);
    else parts[i] = Value::None();
  }
  if (auto v = SliceValue(*this, obj, parts[0], parts[1], parts[2])) return *v;
  // Constant folding evaluates slices through the sandbox's getitem.
  if (folding_) return Value::Undefined(ObjectTypeRepr(obj) + " has no element slice");
  // Jinja2 compiles slices to a plain Python subscript (no getitem fallback).
  if (obj.is_dict()) ThrowTypeError("unhashable type: 'slice'");
  if (obj.is_string() || obj.is_list() || (obj.is_seq() && obj.seq().kind == SeqKind::kRange)) {
    ThrowTypeError("slice indices must be integers or None or have an __index__ method");
  }
  ThrowTypeError("'" + obj.TypeName() + "' object is not subscriptable");
}

// ---- attribute and item access (Jinja's sandboxed getattr/getitem) ----

Value Renderer::GetAttr(const Value& obj, std::string_view name) {
  FailIfUndefined(obj);
  if (name.size() >= 2 && name[0] == '_' && name[1] == '_') {
    return Value::Undefined("access to attribute '" + std::string(name) + "' of '" + obj.TypeName() +
                                "' object is unsafe.",
                            true);
  }
  Value out;
  if (obj.is_object() && obj.obj().GetAttr(name, &out)) return out;
  if (GetBuiltinAttr(obj, name, &out)) return out;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().FindStr(name)) return *v;
  }
  return Value::Undefined(ObjectTypeRepr(obj) + " has no attribute '" + std::string(name) + "'");
}

Value Renderer::GetItem(const Value& obj, const Value& key) {
  FailIfUndefined(obj);
  switch (obj.kind()) {
    case Kind::kDict:
      if (IsHashable(key)) {
        if (const Value* v = obj.dict().Find(key)) return *v;
      }
      break;
    case Kind::kSeq:
      if ((obj.is_list() || obj.seq().kind == SeqKind::kRange) && key.is_integral()) {
        const auto& items = obj.seq().items;
        int64_t i = key.i();
        int64_t n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return items[i];
      }
      break;
    case Kind::kString:
      if (key.is_integral()) {
        const std::string& s = obj.s();
        int64_t i = key.i();
        if (IsAsciiStr(s)) {
          int64_t n = static_cast<int64_t>(s.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) return obj.is_markup() ? Value::Markup(std::string(1, s[i])) : Value::Str(std::string(1, s[i]));
        } else {
          int64_t n = static_cast<int64_t>(CodePointLen(s));
          if (i < 0) i += n;
          if (i >= 0 && i < n) {
            size_t b = ByteOffsetOf(s, i);
            size_t p = b;
            DecodeCodePoint(s, &p);
            return obj.is_markup() ? Value::Markup(s.substr(b, p - b)) : Value::Str(s.substr(b, p - b));
          }
        }
      }
      break;
    default: break;
  }
  if (key.is_string()) {
    // obj["name"] falls back to the attribute (a method, a loop field, ...).
    std::string_view name = key.s();
    if (name.size() >= 2 && name[0] == '_' && name[1] == '_') {
      return Value::Undefined("access to attribute '" + key.s() + "' is unsafe.", true);
    }
    Value out;
    if (obj.is_object() && obj.obj().GetAttr(name, &out)) return out;
    if (GetBuiltinAttr(obj, name, &out)) return out;
    return Value::Undefined(ObjectTypeRepr(obj) + " has no attribute '" + key.s() + "'");
  }
  return Value::Undefined(ObjectTypeRepr(obj) + " has no element " + Repr(key));
}

Value Renderer::CallValue(const Value& callee, CallArgs& args) {
  FailIfUndefined(callee);
  if (callee.is_object() && callee.obj().IsCallable()) return callee.obj().Call(*this, args);
  ThrowTypeError("'" + callee.TypeName() + "' object is not callable");
}

Value Renderer::CallFilter(std::string_view name, const Value& subject, CallArgs& args) {
  FilterFn f = FindFilter(name);
  if (!f) Throw("TemplateRuntimeError", "No filter named '" + std::string(name) + "' found.");
  Charge(1);
  return f(*this, subject, args);
}

bool Renderer::CallTest(std::string_view name, const Value& subject, CallArgs& args) {
  TestFn t = FindTest(name);
  if (!t) Throw("TemplateRuntimeError", "No test named '" + std::string(name) + "' found.");
  Charge(1);
  return t(*this, subject, args);
}

std::vector<Value> Renderer::Iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return {};
    case Kind::kString: {
      const std::string& s = v.s();
      Charge(s.size());
      std::vector<Value> out;
      out.reserve(s.size());
      size_t pos = 0;
      while (pos < s.size()) {
        size_t start = pos;
        DecodeCodePoint(s, &pos);
        out.push_back(Value::Str(s.substr(start, pos - start)));
      }
      return out;
    }
    case Kind::kSeq: {
      const SeqObj& sq = v.seq();
      Charge(sq.items.size() / 8);
      if (sq.kind == SeqKind::kGenerator) {
        // A generator runs once: later iterations see it empty.
        auto& mut = const_cast<SeqObj&>(sq);
        std::vector<Value> out = std::move(mut.items);
        mut.items.clear();
        return out;
      }
      return sq.items;
    }
    case Kind::kDict: {
      std::vector<Value> out;
      out.reserve(v.dict().size());
      for (const auto& kv : v.dict().items()) out.push_back(kv.first);
      return out;
    }
    default: ThrowTypeError("'" + v.TypeName() + "' object is not iterable");
  }
}

}  // namespace llmhost::jinja
