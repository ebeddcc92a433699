#include "chat/jinja_fold.h"

#include <optional>

#include "chat/jinja_eval.h"

namespace llmhost::jinja {
namespace {

// Jinja2's has_safe_repr(): values a folded constant may hold.
bool HasSafeRepr(const Value& v) {
  switch (v.kind()) {
    case Kind::kNone:
    case Kind::kBool:
    case Kind::kInt:
    case Kind::kFloat:
    case Kind::kString:
      return true;
    case Kind::kSeq: {
      SeqKind k = v.seq().kind;
      if (k == SeqKind::kRange) return true;
      if (k != SeqKind::kList && k != SeqKind::kTuple) return false;
      for (const Value& item : v.seq().items) {
        if (!HasSafeRepr(item)) return false;
      }
      return true;
    }
    case Kind::kDict:
      for (const auto& [k, val] : v.dict().items()) {
        if (!HasSafeRepr(k) || !HasSafeRepr(val)) return false;
      }
      return true;
    default:
      return false;
  }
}

class Folder {
 public:
  Folder() {
    limits_.max_steps = 100000;  // parse-time work stays small; bigger ones run later
    limits_.max_output = 1u << 20;
  }

  // Folds the children of *e, then *e itself. Returns its value when
  // as_const() succeeds (even a value that cannot become a literal).
  std::optional<Value> Fold(ExprPtr& e) {
    if (!e) return std::nullopt;
    if (e->kind == ExprKind::kConst) return e->value;
    bool children_const = true;
    for (size_t i = 0; i < e->args.size(); ++i) {
      bool ok = Fold(e->args[i]).has_value() || !e->args[i];
      // A conditional needs only its test, and/or only their left side: the
      // rest is checked by trying (Jinja2 short-circuits there too).
      bool lazy = e->kind == ExprKind::kCondExpr || e->kind == ExprKind::kAnd || e->kind == ExprKind::kOr;
      if (!lazy || i == 0) children_const = children_const && ok;
    }
    for (auto& kw : e->kwargs) children_const = Fold(kw.second).has_value() && children_const;
    if (e->dyn_args) children_const = Fold(e->dyn_args).has_value() && children_const;
    if (e->dyn_kwargs) children_const = Fold(e->dyn_kwargs).has_value() && children_const;
    // A slice is only a part of its subscript: it "folds" when its parts do.
    if (e->kind == ExprKind::kSlice) return children_const ? std::optional<Value>(Value::None()) : std::nullopt;
    // Filter blocks (no subject) apply to rendered text, never constant.
    bool blockfilter = e->kind == ExprKind::kFilter && !e->args[0];
    if (e->kind == ExprKind::kName || e->kind == ExprKind::kCall || blockfilter || !children_const) {
      return std::nullopt;
    }
    std::optional<Value> v;
    try {
      Renderer r(limits_);
      v = r.FoldConst(*e);
    } catch (const Error&) {
      return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (HasSafeRepr(*v)) {
      auto c = std::make_unique<Expr>();
      c->kind = ExprKind::kConst;
      c->line = e->line;
      c->value = *v;
      e = std::move(c);
    }
    return v;
  }

  void FoldBody(Body& body) {
    for (auto& s : body) {
      if (s->kind == StmtKind::kPrint) {
        // A constant {{ }} is written as its text, whatever the value.
        std::optional<Value> v = Fold(s->expr);
        if (v) {
          s->kind = StmtKind::kText;
          s->text = ToStr(*v);
          s->expr.reset();
        }
        continue;
      }
      Fold(s->expr);
      Fold(s->cond);
      for (auto& v : s->values) Fold(v);
      for (auto& c : s->conds) Fold(c);
      for (auto& p : s->params) Fold(p.default_value);
      for (auto& b : s->bodies) FoldBody(b);
      FoldBody(s->body);
      FoldBody(s->else_body);
    }
  }

 private:
  RenderLimits limits_;
};

}  // namespace

void FoldConstants(Program* program) {
  Folder folder;
  folder.FoldBody(program->body);
}

}  // namespace llmhost::jinja
