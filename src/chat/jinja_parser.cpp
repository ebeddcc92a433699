#include "chat/jinja_parser.h"

#include <functional>
#include <initializer_list>

#include "chat/jinja_builtins.h"
#include "chat/jinja_fold.h"
#include "chat/jinja_lexer.h"

namespace llmhost::jinja {
namespace {

const char* Describe(const Token& t) {
  switch (t.type) {
    case TokType::kData: return "template data";
    case TokType::kBlockBegin: return "begin of statement block";
    case TokType::kBlockEnd: return "end of statement block";
    case TokType::kVarBegin: return "begin of print statement";
    case TokType::kVarEnd: return "end of print statement";
    case TokType::kName: return "name";
    case TokType::kString: return "string";
    case TokType::kInt: return "integer";
    case TokType::kFloat: return "float";
    case TokType::kOp: return "operator";
    case TokType::kEof: return "end of template";
  }
  return "token";
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  std::unique_ptr<Program> Run() {
    auto prog = std::make_unique<Program>();
    prog->body = Subparse({});
    return prog;
  }

 private:
  // ---- token helpers ----
  const Token& Cur() const { return toks_[pos_]; }
  const Token& Look() const { return toks_[pos_ + 1 < toks_.size() ? pos_ + 1 : pos_]; }
  void Next() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool IsOp(const char* op) const { return Cur().type == TokType::kOp && Cur().value == op; }
  bool IsName(const char* name) const { return Cur().type == TokType::kName && Cur().value == name; }
  bool SkipOp(const char* op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(const char* name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }

  [[noreturn]] void Fail(const std::string& msg, int line = 0) const {
    throw Error("TemplateSyntaxError", msg, line ? line : Cur().line);
  }
  std::string Unexpected() const {
    const Token& t = Cur();
    if (t.type == TokType::kEof) return "unexpected end of template";
    std::string what = (t.type == TokType::kName || t.type == TokType::kOp) ? "'" + t.value + "'" : Describe(t);
    return "unexpected " + what;
  }
  void ExpectOp(const char* op) {
    if (!SkipOp(op)) Fail(std::string("expected token '") + op + "', got " + Unexpected().substr(11));
  }
  std::string ExpectName() {
    if (Cur().type != TokType::kName) Fail("expected token 'name', got " + Unexpected().substr(11));
    std::string v = Cur().value;
    Next();
    return v;
  }
  void ExpectBlockEnd() {
    if (Cur().type != TokType::kBlockEnd) Fail("expected token 'end of statement block', got " + Unexpected().substr(11));
    Next();
  }

  struct DepthGuard {
    explicit DepthGuard(Parser* p) : p(p) {
      if (++p->depth_ > kMaxParseDepth) p->Fail("template nested too deeply");
    }
    ~DepthGuard() { --p->depth_; }
    Parser* p;
  };

  ExprPtr NewExpr(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ---- statements ----

  // Parses until a block tag whose name is in `end_names` (left current:
  // the name token after `{%`), or the end of the template when empty.
  Body Subparse(std::initializer_list<const char*> end_names) {
    DepthGuard guard(this);
    Body body;
    while (true) {
      const Token& t = Cur();
      if (t.type == TokType::kEof) {
        if (end_names.size() == 0) return body;
        std::string expect;
        for (const char* n : end_names) expect += (expect.empty() ? "'" : " or '") + std::string(n) + "'";
        Fail("Unexpected end of template. Jinja was looking for the following tags: " + expect + ".");
      }
      if (t.type == TokType::kData) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = t.line;
        s->text = t.value;
        body.push_back(std::move(s));
        Next();
      } else if (t.type == TokType::kVarBegin) {
        Next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kPrint;
        s->line = t.line;
        s->expr = ParseTuple(false, true, {}, false);
        if (Cur().type != TokType::kVarEnd) Fail("expected token 'end of print statement', got " + Unexpected().substr(11));
        Next();
        body.push_back(std::move(s));
      } else if (t.type == TokType::kBlockBegin) {
        Next();
        if (Cur().type == TokType::kName) {
          for (const char* n : end_names) {
            if (Cur().value == n) return body;
          }
        }
        body.push_back(ParseStatement());
      } else {
        Fail(Unexpected());
      }
    }
  }

  StmtPtr ParseStatement() {
    if (Cur().type != TokType::kName) Fail("tag name expected");
    std::string tag = Cur().value;
    int line = Cur().line;
    Next();
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (tag == "if") return ParseIf(std::move(s));
    if (tag == "for") return ParseFor(std::move(s));
    if (tag == "set") return ParseSet(std::move(s));
    if (tag == "macro") return ParseMacro(std::move(s));
    if (tag == "call") return ParseCallBlock(std::move(s));
    if (tag == "filter") return ParseFilterBlock(std::move(s));
    if (tag == "with") return ParseWith(std::move(s));
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) Fail("'" + tag + "' outside loop", line);
      s->kind = tag == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      ExpectBlockEnd();
      return s;
    }
    if (tag == "generation") {
      s->kind = StmtKind::kScope;
      ExpectBlockEnd();
      s->body = Subparse({"endgeneration"});
      Next();
      ExpectBlockEnd();
      return s;
    }
    if (tag == "block") {  // no inheritance: a block renders in place
      s->kind = StmtKind::kScope;
      ExpectName();
      SkipName("scoped");
      SkipName("required");
      ExpectBlockEnd();
      s->body = Subparse({"endblock"});
      Next();
      if (Cur().type == TokType::kName) Next();
      ExpectBlockEnd();
      return s;
    }
    Fail("Encountered unknown tag '" + tag + "'.", line);
  }

  StmtPtr ParseIf(StmtPtr s) {
    s->kind = StmtKind::kIf;
    while (true) {
      s->conds.push_back(ParseTuple(false, false, {}, false));
      ExpectBlockEnd();
      s->bodies.push_back(Subparse({"elif", "else", "endif"}));
      std::string which = Cur().value;
      Next();
      if (which == "elif") continue;
      if (which == "else") {
        ExpectBlockEnd();
        s->else_body = Subparse({"endif"});
        Next();
      }
      break;
    }
    ExpectBlockEnd();
    return s;
  }

  StmtPtr ParseFor(StmtPtr s) {
    s->kind = StmtKind::kFor;
    s->target = ParseAssignTarget(true, false, {"in"});
    if (!SkipName("in")) Fail("expected token 'in', got " + Unexpected().substr(11));
    s->expr = ParseTuple(false, false, {"recursive"}, false);
    if (SkipName("if")) s->cond = ParseExpression(true);
    s->recursive = SkipName("recursive");
    ExpectBlockEnd();
    ++loop_depth_;
    s->body = Subparse({"endfor", "else"});
    --loop_depth_;
    if (Cur().value == "else") {
      Next();
      ExpectBlockEnd();
      s->else_body = Subparse({"endfor"});
    }
    Next();
    ExpectBlockEnd();
    return s;
  }

  StmtPtr ParseSet(StmtPtr s) {
    s->target = ParseAssignTarget(true, true, {});
    if (SkipOp("=")) {
      s->kind = StmtKind::kSet;
      s->expr = ParseTuple(false, true, {}, false);
      ExpectBlockEnd();
      return s;
    }
    s->kind = StmtKind::kSetBlock;
    if (IsOp("|")) s->expr = ParseFilter(nullptr, false);
    ExpectBlockEnd();
    s->body = Subparse({"endset"});
    Next();
    ExpectBlockEnd();
    return s;
  }

  void ParseSignature(Stmt* s) {
    ExpectOp("(");
    while (!IsOp(")")) {
      if (!s->params.empty()) ExpectOp(",");
      if (IsOp(")")) break;
      MacroParam p;
      p.name = ParseAssignTarget(false, false, {}, true).name;
      if (SkipOp("=")) {
        p.default_value = ParseExpression(true);
      } else if (!s->params.empty() && s->params.back().default_value) {
        Fail("non-default argument follows default argument");
      }
      s->params.push_back(std::move(p));
    }
    ExpectOp(")");
  }

  // Marks which of varargs/kwargs/caller a macro body reads.
  void ScanSpecialNames(Stmt* s) {
    std::function<void(const Expr*)> expr = [&](const Expr* e) {
      if (!e) return;
      if (e->kind == ExprKind::kName) {
        if (e->name == "varargs") s->uses_varargs = true;
        if (e->name == "kwargs") s->uses_kwargs = true;
        if (e->name == "caller") s->uses_caller = true;
      }
      for (const auto& a : e->args) expr(a.get());
      for (const auto& kw : e->kwargs) expr(kw.second.get());
      expr(e->dyn_args.get());
      expr(e->dyn_kwargs.get());
    };
    std::function<void(const Body&)> body = [&](const Body& b) {
      for (const auto& st : b) {
        expr(st->expr.get());
        expr(st->cond.get());
        for (const auto& v : st->values) expr(v.get());
        for (const auto& c : st->conds) expr(c.get());
        for (const auto& p : st->params) expr(p.default_value.get());
        for (const auto& bb : st->bodies) body(bb);
        body(st->body);
        body(st->else_body);
      }
    };
    body(s->body);
  }

  StmtPtr ParseMacro(StmtPtr s) {
    s->kind = StmtKind::kMacro;
    s->text = ParseAssignTarget(false, false, {}, true).name;
    ParseSignature(s.get());
    ExpectBlockEnd();
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = Subparse({"endmacro"});
    loop_depth_ = saved;
    Next();
    if (Cur().type == TokType::kName && Cur().value == s->text) Next();
    ExpectBlockEnd();
    ScanSpecialNames(s.get());
    return s;
  }

  StmtPtr ParseCallBlock(StmtPtr s) {
    s->kind = StmtKind::kCallBlock;
    if (IsOp("(")) ParseSignature(s.get());
    s->expr = ParseExpression(true);
    if (s->expr->kind != ExprKind::kCall) Fail("expected call", s->line);
    ExpectBlockEnd();
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = Subparse({"endcall"});
    loop_depth_ = saved;
    Next();
    ExpectBlockEnd();
    ScanSpecialNames(s.get());
    return s;
  }

  StmtPtr ParseFilterBlock(StmtPtr s) {
    s->kind = StmtKind::kFilterBlock;
    s->expr = ParseFilter(nullptr, true);
    ExpectBlockEnd();
    s->body = Subparse({"endfilter"});
    Next();
    ExpectBlockEnd();
    return s;
  }

  StmtPtr ParseWith(StmtPtr s) {
    s->kind = StmtKind::kWith;
    while (Cur().type != TokType::kBlockEnd) {
      if (!s->targets.empty()) ExpectOp(",");
      s->targets.push_back(ParseAssignTarget(true, false, {}));
      ExpectOp("=");
      s->values.push_back(ParseExpression(true));
    }
    ExpectBlockEnd();
    s->body = Subparse({"endwith"});
    Next();
    ExpectBlockEnd();
    return s;
  }

  // ---- assignment targets ----

  Target ParseAssignTarget(bool with_tuple, bool with_namespace, std::initializer_list<const char*> extra_end,
                           bool name_only = false) {
    Target t;
    if (with_namespace && Cur().type == TokType::kName && Look().type == TokType::kOp && Look().value == ".") {
      t.kind = Target::kNamespaceAttr;
      t.name = ExpectName();
      Next();  // '.'
      t.attr = ExpectName();
      return t;
    }
    if (name_only) {
      t.name = ExpectName();
      CheckAssignable(t.name);
      return t;
    }
    ExprPtr e = with_tuple ? ParseTuple(true, true, extra_end, false) : ParsePrimary();
    if (!ToTarget(e.get(), &t)) Fail("can't assign to " + std::string(e->kind == ExprKind::kConst ? "'const'" : "expression"));
    return t;
  }

  void CheckAssignable(const std::string& name) {
    static const char* kConsts[] = {"true", "false", "none", "True", "False", "None"};
    for (const char* c : kConsts) {
      if (name == c) Fail("can't assign to '" + name + "'");
    }
  }

  static bool ToTarget(const Expr* e, Target* t) {
    if (e->kind == ExprKind::kName) {
      t->kind = Target::kName;
      t->name = e->name;
      return true;
    }
    if (e->kind == ExprKind::kTuple) {
      t->kind = Target::kTuple;
      for (const auto& item : e->args) {
        Target sub;
        if (!ToTarget(item.get(), &sub)) return false;
        t->items.push_back(std::move(sub));
      }
      return true;
    }
    return false;
  }

  // ---- expressions ----

  bool IsTupleEnd(std::initializer_list<const char*> extra_end) const {
    const Token& t = Cur();
    if (t.type == TokType::kVarEnd || t.type == TokType::kBlockEnd || (t.type == TokType::kOp && t.value == ")")) {
      return true;
    }
    if (t.type == TokType::kName) {
      for (const char* n : extra_end) {
        if (t.value == n) return true;
      }
    }
    return false;
  }

  ExprPtr ParseTuple(bool simplified, bool with_condexpr, std::initializer_list<const char*> extra_end,
                     bool explicit_parens) {
    int line = Cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) ExpectOp(",");
      if (IsTupleEnd(extra_end)) break;
      if (simplified) {
        args.push_back(ParsePrimary());
      } else {
        args.push_back(ParseExpression(with_condexpr));
      }
      if (IsOp(",")) {
        is_tuple = true;
      } else {
        break;
      }
      line = Cur().line;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parens) Fail("Expected an expression, got '" + std::string(Describe(Cur())) + "'");
    }
    auto e = NewExpr(ExprKind::kTuple, line);
    e->args = std::move(args);
    return e;
  }

  ExprPtr ParseExpression(bool with_condexpr) {
    DepthGuard guard(this);
    return with_condexpr ? ParseCondExpr() : ParseOr();
  }

  ExprPtr ParseCondExpr() {
    ExprPtr expr1 = ParseOr();
    while (IsName("if")) {
      int line = Cur().line;
      Next();
      ExprPtr cond = ParseOr();
      ExprPtr expr3;
      if (SkipName("else")) expr3 = ParseCondExpr();
      auto e = NewExpr(ExprKind::kCondExpr, line);
      e->args.push_back(std::move(cond));
      e->args.push_back(std::move(expr1));
      e->args.push_back(std::move(expr3));
      expr1 = std::move(e);
    }
    return expr1;
  }

  ExprPtr Binary(ExprKind kind, ExprPtr a, ExprPtr b, int line) {
    auto e = NewExpr(kind, line);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr ParseOr() {
    ExprPtr left = ParseAnd();
    while (IsName("or")) {
      int line = Cur().line;
      Next();
      left = Binary(ExprKind::kOr, std::move(left), ParseAnd(), line);
    }
    return left;
  }

  ExprPtr ParseAnd() {
    ExprPtr left = ParseNot();
    while (IsName("and")) {
      int line = Cur().line;
      Next();
      left = Binary(ExprKind::kAnd, std::move(left), ParseNot(), line);
    }
    return left;
  }

  ExprPtr ParseNot() {
    if (IsName("not")) {
      DepthGuard guard(this);
      int line = Cur().line;
      Next();
      auto e = NewExpr(ExprKind::kNot, line);
      e->args.push_back(ParseNot());
      return e;
    }
    return ParseCompare();
  }

  ExprPtr ParseCompare() {
    int line = Cur().line;
    ExprPtr expr = ParseMath1();
    std::vector<CmpOp> ops;
    std::vector<ExprPtr> operands;
    while (true) {
      CmpOp op;
      if (IsOp("==")) {
        op = CmpOp::kEq;
      } else if (IsOp("!=")) {
        op = CmpOp::kNe;
      } else if (IsOp("<")) {
        op = CmpOp::kLt;
      } else if (IsOp("<=")) {
        op = CmpOp::kLe;
      } else if (IsOp(">")) {
        op = CmpOp::kGt;
      } else if (IsOp(">=")) {
        op = CmpOp::kGe;
      } else if (IsName("in")) {
        op = CmpOp::kIn;
      } else if (IsName("not") && Look().type == TokType::kName && Look().value == "in") {
        Next();
        op = CmpOp::kNotIn;
      } else {
        break;
      }
      Next();
      ops.push_back(op);
      operands.push_back(ParseMath1());
    }
    if (ops.empty()) return expr;
    auto e = NewExpr(ExprKind::kCompare, line);
    e->args.push_back(std::move(expr));
    for (auto& o : operands) e->args.push_back(std::move(o));
    e->cmp_ops = std::move(ops);
    return e;
  }

  ExprPtr BinOpExpr(BinOp op, ExprPtr a, ExprPtr b, int line) {
    auto e = Binary(ExprKind::kBinary, std::move(a), std::move(b), line);
    e->op = op;
    return e;
  }

  ExprPtr ParseMath1() {
    ExprPtr left = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      BinOp op = IsOp("+") ? BinOp::kAdd : BinOp::kSub;
      int line = Cur().line;
      Next();
      left = BinOpExpr(op, std::move(left), ParseConcat(), line);
    }
    return left;
  }

  ExprPtr ParseConcat() {
    int line = Cur().line;
    ExprPtr first = ParseMath2();
    if (!IsOp("~")) return first;
    auto e = NewExpr(ExprKind::kConcat, line);
    e->args.push_back(std::move(first));
    while (SkipOp("~")) e->args.push_back(ParseMath2());
    return e;
  }

  ExprPtr ParseMath2() {
    ExprPtr left = ParsePow();
    while (true) {
      BinOp op;
      if (IsOp("*")) {
        op = BinOp::kMul;
      } else if (IsOp("/")) {
        op = BinOp::kDiv;
      } else if (IsOp("//")) {
        op = BinOp::kFloorDiv;
      } else if (IsOp("%")) {
        op = BinOp::kMod;
      } else {
        break;
      }
      int line = Cur().line;
      Next();
      left = BinOpExpr(op, std::move(left), ParsePow(), line);
    }
    return left;
  }

  ExprPtr ParsePow() {
    ExprPtr left = ParseUnary(true);
    while (IsOp("**")) {
      int line = Cur().line;
      Next();
      left = BinOpExpr(BinOp::kPow, std::move(left), ParseUnary(true), line);
    }
    return left;
  }

  ExprPtr ParseUnary(bool with_filter) {
    DepthGuard guard(this);
    int line = Cur().line;
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      ExprKind kind = IsOp("-") ? ExprKind::kNeg : ExprKind::kPos;
      Next();
      node = NewExpr(kind, line);
      node->args.push_back(ParseUnary(false));
    } else {
      node = ParsePrimary();
    }
    node = ParsePostfix(std::move(node));
    if (with_filter) node = ParseFilterExpr(std::move(node));
    return node;
  }

  ExprPtr ParsePrimary() {
    DepthGuard guard(this);
    const Token& t = Cur();
    int line = t.line;
    if (t.type == TokType::kName) {
      auto e = NewExpr(ExprKind::kConst, line);
      if (t.value == "true" || t.value == "True") {
        e->value = Value::Bool(true);
      } else if (t.value == "false" || t.value == "False") {
        e->value = Value::Bool(false);
      } else if (t.value == "none" || t.value == "None") {
        e->value = Value::None();
      } else {
        e->kind = ExprKind::kName;
        e->name = t.value;
      }
      Next();
      return e;
    }
    if (t.type == TokType::kString) {
      std::string s;
      while (Cur().type == TokType::kString) {
        s += Cur().value;
        Next();
      }
      auto e = NewExpr(ExprKind::kConst, line);
      e->value = Value::Str(std::move(s));
      return e;
    }
    if (t.type == TokType::kInt || t.type == TokType::kFloat) {
      auto e = NewExpr(ExprKind::kConst, line);
      e->value = t.type == TokType::kInt ? Value::Int(t.ival) : Value::Float(t.fval);
      Next();
      return e;
    }
    if (IsOp("(")) {
      Next();
      ExprPtr e = ParseTuple(false, true, {}, true);
      ExpectOp(")");
      return e;
    }
    if (IsOp("[")) {
      Next();
      auto e = NewExpr(ExprKind::kList, line);
      while (!IsOp("]")) {
        if (!e->args.empty()) ExpectOp(",");
        if (IsOp("]")) break;
        e->args.push_back(ParseExpression(true));
      }
      ExpectOp("]");
      return e;
    }
    if (IsOp("{")) {
      Next();
      auto e = NewExpr(ExprKind::kDict, line);
      while (!IsOp("}")) {
        if (!e->args.empty()) ExpectOp(",");
        if (IsOp("}")) break;
        e->args.push_back(ParseExpression(true));
        ExpectOp(":");
        e->args.push_back(ParseExpression(true));
      }
      ExpectOp("}");
      return e;
    }
    Fail(Unexpected());
  }

  ExprPtr ParsePostfix(ExprPtr node) {
    while (true) {
      if (IsOp(".") || IsOp("[")) {
        node = ParseSubscript(std::move(node));
      } else if (IsOp("(")) {
        node = ParseCall(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr ParseFilterExpr(ExprPtr node) {
    while (true) {
      if (IsOp("|")) {
        node = ParseFilter(std::move(node), false);
      } else if (IsName("is")) {
        node = ParseTest(std::move(node));
      } else if (IsOp("(")) {
        node = ParseCall(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr ParseSubscript(ExprPtr node) {
    DepthGuard guard(this);
    int line = Cur().line;
    if (SkipOp(".")) {
      const Token& t = Cur();
      if (t.type == TokType::kName) {
        auto e = NewExpr(ExprKind::kGetAttr, line);
        e->name = t.value;
        e->args.push_back(std::move(node));
        Next();
        return e;
      }
      if (t.type != TokType::kInt) Fail("expected name or number");
      auto idx = NewExpr(ExprKind::kConst, line);
      idx->value = Value::Int(t.ival);
      Next();
      auto e = NewExpr(ExprKind::kGetItem, line);
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(idx));
      return e;
    }
    ExpectOp("[");
    std::vector<ExprPtr> args;
    while (!IsOp("]")) {
      if (!args.empty()) ExpectOp(",");
      args.push_back(ParseSubscribed());
    }
    ExpectOp("]");
    auto e = NewExpr(ExprKind::kGetItem, line);
    e->args.push_back(std::move(node));
    if (args.size() == 1) {
      e->args.push_back(std::move(args[0]));
    } else {
      auto tup = NewExpr(ExprKind::kTuple, line);
      tup->args = std::move(args);
      e->args.push_back(std::move(tup));
    }
    return e;
  }

  ExprPtr ParseSubscribed() {
    int line = Cur().line;
    std::vector<ExprPtr> args;
    if (IsOp(":")) {
      Next();
      args.push_back(nullptr);
    } else {
      ExprPtr node = ParseExpression(true);
      if (!IsOp(":")) return node;
      Next();
      args.push_back(std::move(node));
    }
    if (IsOp(":")) {
      args.push_back(nullptr);
    } else if (!IsOp("]") && !IsOp(",")) {
      args.push_back(ParseExpression(true));
    } else {
      args.push_back(nullptr);
    }
    if (SkipOp(":")) {
      if (!IsOp("]") && !IsOp(",")) {
        args.push_back(ParseExpression(true));
      } else {
        args.push_back(nullptr);
      }
    } else {
      args.push_back(nullptr);
    }
    auto e = NewExpr(ExprKind::kSlice, line);
    e->args = std::move(args);
    return e;
  }

  // Fills args (appended after any existing ones), kwargs, *args, **kwargs.
  void ParseCallArgs(Expr* e) {
    int line = Cur().line;
    ExpectOp("(");
    bool require_comma = false;
    bool any_kwargs = false;
    auto ensure = [&](bool ok) {
      if (!ok) Fail("invalid syntax for function call expression", line);
    };
    while (!IsOp(")")) {
      if (require_comma) {
        ExpectOp(",");
        if (IsOp(")")) break;
      }
      if (IsOp("*")) {
        ensure(!e->dyn_args && !e->dyn_kwargs);
        Next();
        e->dyn_args = ParseExpression(true);
      } else if (IsOp("**")) {
        ensure(!e->dyn_kwargs);
        Next();
        e->dyn_kwargs = ParseExpression(true);
      } else if (Cur().type == TokType::kName && Look().type == TokType::kOp && Look().value == "=") {
        ensure(!e->dyn_kwargs);
        std::string key = Cur().value;
        Next();
        Next();
        e->kwargs.emplace_back(std::move(key), ParseExpression(true));
        any_kwargs = true;
      } else {
        ensure(!e->dyn_args && !e->dyn_kwargs && !any_kwargs);
        e->args.push_back(ParseExpression(true));
      }
      require_comma = true;
    }
    ExpectOp(")");
  }

  ExprPtr ParseCall(ExprPtr node) {
    DepthGuard guard(this);
    auto e = NewExpr(ExprKind::kCall, Cur().line);
    e->args.push_back(std::move(node));
    ParseCallArgs(e.get());
    return e;
  }

  ExprPtr ParseFilter(ExprPtr node, bool start_inline) {
    while (IsOp("|") || start_inline) {
      DepthGuard guard(this);
      if (!start_inline) Next();
      start_inline = false;
      int line = Cur().line;
      std::string name = ExpectName();
      while (SkipOp(".")) name += "." + ExpectName();
      auto e = NewExpr(ExprKind::kFilter, line);
      e->name = name;
      e->filter = FindFilter(name);  // unknown: checked by Validate()
      e->args.push_back(std::move(node));
      if (IsOp("(")) ParseCallArgs(e.get());
      node = std::move(e);
    }
    return node;
  }

  ExprPtr ParseTest(ExprPtr node) {
    DepthGuard guard(this);
    int line = Cur().line;
    Next();  // 'is'
    bool negated = SkipName("not");
    std::string name = ExpectName();
    while (SkipOp(".")) name += "." + ExpectName();
    auto e = NewExpr(ExprKind::kTest, line);
    e->name = name;
    e->test = FindTest(name);  // unknown: checked by Validate()
    e->args.push_back(std::move(node));
    const Token& t = Cur();
    if (IsOp("(")) {
      ParseCallArgs(e.get());
    } else if ((t.type == TokType::kName || t.type == TokType::kString || t.type == TokType::kInt ||
                t.type == TokType::kFloat || IsOp("[") || IsOp("{")) &&
               !(IsName("else") || IsName("or") || IsName("and"))) {
      if (IsName("is")) Fail("You cannot chain multiple tests with is");
      e->args.push_back(ParsePostfix(ParsePrimary()));
    }
    if (!negated) return e;
    auto n = NewExpr(ExprKind::kNot, line);
    n->args.push_back(std::move(e));
    return n;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

// Unknown filters and tests are compile errors in Jinja2, except inside an
// `if` statement or an inline if-expression (a "soft" frame), where they
// fail only when executed. Loops, macros and blocks open hard frames again.
void ValidateExpr(const Expr* e, bool soft) {
  if (!e) return;
  if (e->kind == ExprKind::kCondExpr) soft = true;
  if (!soft && e->kind == ExprKind::kFilter && !e->filter) {
    throw Error("TemplateSyntaxError", "No filter named '" + e->name + "'.", e->line);
  }
  if (!soft && e->kind == ExprKind::kTest && !e->test) {
    throw Error("TemplateSyntaxError", "No test named '" + e->name + "'.", e->line);
  }
  for (const auto& a : e->args) ValidateExpr(a.get(), soft);
  for (const auto& kw : e->kwargs) ValidateExpr(kw.second.get(), soft);
  ValidateExpr(e->dyn_args.get(), soft);
  ValidateExpr(e->dyn_kwargs.get(), soft);
}

void ValidateBody(const Body& body, bool soft) {
  for (const auto& s : body) {
    switch (s->kind) {
      case StmtKind::kIf:
        for (const auto& c : s->conds) ValidateExpr(c.get(), true);
        for (const auto& b : s->bodies) ValidateBody(b, true);
        ValidateBody(s->else_body, true);
        break;
      case StmtKind::kFor:
        ValidateExpr(s->expr.get(), soft);
        ValidateExpr(s->cond.get(), false);
        ValidateBody(s->body, false);
        ValidateBody(s->else_body, false);
        break;
      case StmtKind::kPrint:
      case StmtKind::kSet:
        ValidateExpr(s->expr.get(), soft);
        break;
      case StmtKind::kCallBlock:
        ValidateExpr(s->expr.get(), soft);
        for (const auto& p : s->params) ValidateExpr(p.default_value.get(), false);
        ValidateBody(s->body, false);
        break;
      case StmtKind::kWith:
        for (const auto& v : s->values) ValidateExpr(v.get(), soft);
        ValidateBody(s->body, false);
        break;
      case StmtKind::kMacro:
        for (const auto& p : s->params) ValidateExpr(p.default_value.get(), false);
        ValidateBody(s->body, false);
        break;
      default:
        ValidateExpr(s->expr.get(), false);
        ValidateBody(s->body, false);
        break;
    }
  }
}

}  // namespace

std::unique_ptr<Program> ParseTemplate(std::string_view source) {
  Parser parser(Tokenize(source));
  std::unique_ptr<Program> program = parser.Run();
  ValidateBody(program->body, false);
  FoldConstants(program.get());
  return program;
}

}  // namespace llmhost::jinja
