// Filter/test registries and the builtin globals (range, dict, namespace,
// joiner, cycler).
#include "chat/jinja_builtins.h"

#include "chat/jinja_builtins_impl.h"

namespace llmhost::jinja {
namespace {

const FilterTable& Filters() {
  static const FilterTable* t = [] {
    auto* table = new FilterTable();
    RegisterStringFilters(*table);
    RegisterSeqFilters(*table);
    return table;
  }();
  return *t;
}

const TestTable& Tests() {
  static const TestTable* t = [] {
    auto* table = new TestTable();
    RegisterTests(*table);
    return table;
  }();
  return *t;
}

// The sandbox's safe_range: Python range() limited to 100000 items.
Value GRange(Renderer& r, const Value&, CallArgs& args) {
  if (!args.kw.empty()) ThrowTypeError("range() takes no keyword arguments");
  if (args.pos.empty() || args.pos.size() > 3) {
    ThrowTypeError("range expected at most 3 arguments, got " + std::to_string(args.pos.size()));
  }
  int64_t start = 0, stop, step = 1;
  if (args.pos.size() == 1) {
    stop = IntArg(args.pos[0]);
  } else {
    start = IntArg(args.pos[0]);
    stop = IntArg(args.pos[1]);
    if (args.pos.size() == 3) step = IntArg(args.pos[2]);
  }
  if (step == 0) Throw("ValueError", "range() arg 3 must not be zero");
  __int128 n = 0;
  if (step > 0 && stop > start) n = ((__int128)stop - start + step - 1) / step;
  if (step < 0 && stop < start) n = ((__int128)start - stop - step - 1) / -step;
  constexpr int64_t kMaxRange = 100000;
  if (n > kMaxRange) {
    Throw("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  r.Charge(static_cast<uint64_t>(n));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) items.push_back(Value::Int(start + i * step));
  Value v = Value::Seq(SeqKind::kRange, std::move(items));
  auto& seq = const_cast<SeqObj&>(v.seq());
  seq.range_start = start;
  seq.range_stop = stop;
  seq.range_step = step;
  return v;
}

Value GDict(Renderer& r, const Value&, CallArgs& args) {
  if (args.pos.size() > 1) ThrowTypeError("dict expected at most 1 argument, got " + std::to_string(args.pos.size()));
  auto d = std::make_shared<DictObj>();
  if (!args.pos.empty()) {
    const Value& src = args.pos[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict().items()) d->Set(k, v);
    } else {
      for (const Value& pair : r.Iterate(src)) {
        std::vector<Value> kv = r.Iterate(pair);
        if (kv.size() != 2) {
          Throw("ValueError", "dictionary update sequence element has length " + std::to_string(kv.size()) +
                                  "; 2 is required");
        }
        d->Set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.kw) d->Set(Value::Str(k), v);
  return Value::Dict(std::move(d));
}

Value GNamespace(Renderer& r, const Value&, CallArgs& args) { return r.MakeNamespace(args); }

// joiner(sep): a callable returning "" the first time, then sep.
class JoinerObj final : public Object {
 public:
  explicit JoinerObj(std::string sep) : sep_(std::move(sep)) {}
  std::string TypeName() const override { return "Joiner"; }
  bool IsCallable() const override { return true; }
  Value Call(Renderer&, CallArgs& args) override {
    Args a("joiner", args, {});
    if (!used_) {
      used_ = true;
      return Value::Str("");
    }
    return Value::Str(sep_);
  }

 private:
  std::string sep_;
  bool used_ = false;
};

Value GJoiner(Renderer&, const Value&, CallArgs& args) {
  Args a("joiner", args, {"sep"});
  return Value::Obj(std::make_shared<JoinerObj>(a.has(0) ? ToStr(a[0]) : ", "));
}

// cycler(*items): .next(), .reset(), .current.
class CyclerObj final : public Object {
 public:
  explicit CyclerObj(std::vector<Value> items) : items_(std::move(items)) {}
  std::string TypeName() const override { return "Cycler"; }
  bool MayHoldNamespace() const override { return true; }
  bool GetAttr(std::string_view name, Value* out) override {
    if (name == "current") {
      *out = items_[pos_];
    } else if (name == "next") {
      *out = Value::Obj(std::make_shared<BuiltinObj>("next", &Next, Value::Obj(self_.lock())));
    } else if (name == "reset") {
      *out = Value::Obj(std::make_shared<BuiltinObj>("reset", &Reset, Value::Obj(self_.lock())));
    } else {
      return false;
    }
    return true;
  }
  void set_self(const std::shared_ptr<CyclerObj>& self) { self_ = self; }

 private:
  static Value Next(Renderer&, const Value& self, CallArgs&) {
    auto* c = static_cast<CyclerObj*>(&self.obj());
    Value v = c->items_[c->pos_];
    c->pos_ = (c->pos_ + 1) % c->items_.size();
    return v;
  }
  static Value Reset(Renderer&, const Value& self, CallArgs&) {
    static_cast<CyclerObj*>(&self.obj())->pos_ = 0;
    return Value::None();
  }
  std::vector<Value> items_;
  size_t pos_ = 0;
  std::weak_ptr<CyclerObj> self_;
};

Value GCycler(Renderer&, const Value&, CallArgs& args) {
  if (args.pos.empty()) ThrowTypeError("at least one item has to be provided");
  auto c = std::make_shared<CyclerObj>(args.pos);
  c->set_self(c);
  return Value::Obj(std::move(c));
}

}  // namespace

FilterFn FindFilter(std::string_view name) {
  const auto& t = Filters();
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

TestFn FindTest(std::string_view name) {
  const auto& t = Tests();
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

bool GetGlobal(std::string_view name, Value* out) {
  BuiltinObj::Fn fn = nullptr;
  if (name == "range") fn = &GRange;
  else if (name == "dict") fn = &GDict;
  else if (name == "namespace") fn = &GNamespace;
  else if (name == "joiner") fn = &GJoiner;
  else if (name == "cycler") fn = &GCycler;
  if (!fn) return false;
  *out = Value::Obj(std::make_shared<BuiltinObj>(std::string(name), fn));
  return true;
}

}  // namespace llmhost::jinja
