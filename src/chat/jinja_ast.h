// The parsed form of a template: expressions and statements. Built once by
// the parser, then only read by the renderer (safe to share across threads).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace llmhost::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  kConst,     // value
  kName,      // name
  kList,      // args
  kTuple,     // args
  kDict,      // args: key, value, key, value, ...
  kGetAttr,   // args[0].name
  kGetItem,   // args[0][args[1]]
  kSlice,     // args[0..2]: start, stop, step (null when absent)
  kCall,      // args[0](args[1..], kwargs, dyn_args, dyn_kwargs)
  kFilter,    // args[0] | name(args[1..], ...); args[0] null in filter blocks
  kTest,      // args[0] is name(args[1..], ...)
  kNot,       // not args[0]
  kNeg,       // -args[0]
  kPos,       // +args[0]
  kBinary,    // args[0] op args[1]
  kAnd,       // args[0] and args[1]
  kOr,        // args[0] or args[1]
  kConcat,    // args[0] ~ args[1] ~ ...
  kCompare,   // args[0] ops[0] args[1] ops[1] args[2] ...
  kCondExpr,  // args[1] if args[0] else args[2] (args[2] may be null)
};

// Filter and test implementations, resolved when the template is parsed.
using FilterFn = Value (*)(Renderer& r, const Value& subject, CallArgs& args);
using TestFn = bool (*)(Renderer& r, const Value& subject, CallArgs& args);

enum class BinOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CmpOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;            // kConst
  std::string name;       // kName, kGetAttr, kFilter, kTest
  BinOp op = BinOp::kAdd;
  std::vector<CmpOp> cmp_ops;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args, dyn_kwargs;
  FilterFn filter = nullptr;  // kFilter
  TestFn test = nullptr;      // kTest
};

// Left side of an assignment or a loop variable.
struct Target {
  enum Kind : uint8_t { kName, kNamespaceAttr, kTuple } kind = kName;
  std::string name;              // kName, kNamespaceAttr (the namespace)
  std::string attr;              // kNamespaceAttr
  std::vector<Target> items;     // kTuple
};

enum class StmtKind : uint8_t {
  kText,         // text
  kPrint,        // {{ expr }}
  kIf,           // conds[i] -> bodies[i]; else_body
  kFor,          // for target in expr [if cond] [recursive]: body / else_body
  kSet,          // target = expr
  kSetBlock,     // {% set target | filter %}body{% endset %}
  kMacro,        // name(params) body
  kCallBlock,    // {% call(params) expr %}body{% endcall %}
  kFilterBlock,  // {% filter expr %}body{% endfilter %}
  kWith,         // {% with targets = values %}body{% endwith %}
  kBreak,
  kContinue,
  kScope,        // {% generation %} / {% block %}: renders its body
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: none
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;                 // kText; kMacro: the macro name
  ExprPtr expr;                     // kPrint, kFor (iterable), kSet, kSetBlock (filter), kCallBlock, kFilterBlock
  ExprPtr cond;                     // kFor: inline filter
  Target target;                    // kFor, kSet, kSetBlock
  std::vector<Target> targets;      // kWith
  std::vector<ExprPtr> values;      // kWith
  std::vector<ExprPtr> conds;       // kIf
  std::vector<Body> bodies;         // kIf
  Body body;
  Body else_body;
  bool recursive = false;           // kFor
  std::vector<MacroParam> params;   // kMacro, kCallBlock
  bool uses_varargs = false;        // kMacro/kCallBlock: body reads `varargs`
  bool uses_kwargs = false;         // ... `kwargs`
  bool uses_caller = false;         // ... `caller`
};

// A parsed template.
struct Program {
  Body body;
};

}  // namespace llmhost::jinja
