// The abstract syntax tree. Every node carries the Span of the source text it
// came from; nodes are owned by unique_ptr and immutable after parsing.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lang/source.hpp"

namespace pxl {

struct Expr;
struct Stmt;
struct LazyBody; // lang/parser.hpp
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  Name,
  NoneLit,
  BoolLit,
  IntLit,
  FloatLit,
  ImagLit,
  StrLit,
  EllipsisLit,
  FString,
  Tuple,
  List,
  Dict,
  Set,
  BinOp,
  UnaryOp,
  BoolOp,
  Compare,
  Call,
  Attribute,
  Subscript,
  Slice,
  Lambda,
  IfExp,
  ListComp,
  SetComp,
  DictComp,
  Starred,
  NamedExpr
};

enum class BinOpKind : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  MatMul,
  BitAnd,
  BitOr,
  BitXor,
  LShift,
  RShift
};
enum class UnaryOpKind : uint8_t { Neg, Pos, Invert, Not };
enum class CmpOpKind : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn, Is, IsNot };

const char* binop_symbol(BinOpKind k);
const char* cmpop_symbol(CmpOpKind k);

struct Param {
  std::string name;
  Span span;
  ExprPtr default_value; // may be null
  enum class Kind : uint8_t { Normal, VarArgs, KwArgs, KwOnlyMarker } kind = Kind::Normal;
  bool keyword_only = false;
  bool positional_only = false; // before a `/` in the parameter list
};

struct Keyword {
  std::string name; // empty for **kwargs
  ExprPtr value;
  Span span;
};

struct Comprehension {
  ExprPtr target;
  ExprPtr iter;
  std::vector<ExprPtr> conds;
};

struct FStringPart {
  std::string literal;           // when expr is null
  ExprPtr expr;                  // the {expr}
  char conversion = 0;           // 'r', 's' or 0
  std::vector<FStringPart> spec; // format spec (may itself contain {expr})
  std::string expr_text;         // for "{x=}" debugging form
};

struct Expr {
  ExprKind kind;
  Span span;
  // Literals / names
  //  name: Name, StrLit (value), Attribute (attr), NamedExpr (target), IntLit
  //  (the decimal digits of a literal beyond 64 bits; empty: int_value).
  //  int_value: IntLit; NamedExpr: the comprehension scopes around it inside
  //  its function (a walrus binds outside them, as in Python).
  std::string name;
  bool bool_value = false;
  int64_t int_value = 0;
  double float_value = 0;
  // Operators
  BinOpKind binop = BinOpKind::Add;
  UnaryOpKind unop = UnaryOpKind::Neg;
  bool is_and = false;            // BoolOp
  std::vector<CmpOpKind> cmp_ops; // Compare: elts[0] op0 elts[1] op1 elts[2] ...
  // Children: meaning depends on kind.
  //  Tuple/List/Set: elts; Dict: elts (keys; null key = **spread) + values;
  //  BinOp: elts[0], elts[1]; UnaryOp: elts[0]; BoolOp/Compare: elts;
  //  Call: func + elts (positional; Starred for *args) + keywords;
  //  Attribute: func (the object); Subscript: func (object) + elts[0] (index);
  //  Slice: lower/upper/step in elts (null when omitted);
  //  IfExp: elts = {cond, then, else}; ListComp, SetComp: func = element; DictComp:
  //  func = key, value = elts[0]; Starred: elts[0]; Lambda: params + elts[0] body;
  //  NamedExpr `(name := value)`: elts[0] the value.
  ExprPtr func;
  std::vector<ExprPtr> elts;
  std::vector<ExprPtr> values;
  std::vector<Keyword> keywords;
  std::vector<Comprehension> comps;
  std::vector<Param> params;
  std::vector<FStringPart> fparts;
  bool parenthesized_tuple = false;

  Expr(ExprKind k, Span s) : kind(k), span(std::move(s)) {}
};

enum class StmtKind : uint8_t {
  Expr,
  Assign,
  AugAssign,
  If,
  While,
  For,
  Break,
  Continue,
  Pass,
  Return,
  FunctionDef,
  Assert,
  Import,
  ImportFrom,
  Del,
  With,
  Nonlocal
};

struct ImportName {
  std::string module; // dotted
  std::string name;   // for from-imports: the imported name ("*" not supported)
  std::string alias;  // empty: none
  Span span;
};

struct Stmt {
  StmtKind kind;
  Span span;
  // Expr: value; Assign: targets (a = b = value) + value; AugAssign: targets[0], op, value;
  // If/While: test + body + orelse; For: targets[0] (target), value (iter), body, orelse;
  // Return: value (may be null); Assert: test + value (message, may be null);
  // FunctionDef: name, params, decorators, body; Del: targets;
  // With: value (the context manager), targets[0] (the `as` target, optional), body;
  // Nonlocal: the declared names as Name targets (it does nothing when it runs:
  // the FunctionDef's `nonlocals` lists them for the whole function).
  ExprPtr value;
  ExprPtr test;
  std::vector<ExprPtr> targets;
  BinOpKind op = BinOpKind::Add;
  Block body;
  Block orelse;
  std::string name;
  Span name_span;
  std::vector<Param> params;
  std::vector<ExprPtr> decorators;
  // FunctionDef: the names its body declares nonlocal (its assignments to them
  // bind in the enclosing scope that has them).
  std::vector<std::string> nonlocals;
  // FunctionDef of the stdlib: the body (and its nonlocals) are parsed at the
  // first call instead (see parse_module); `body` stays empty.
  std::shared_ptr<LazyBody> lazy_body;
  std::vector<ImportName> imports;
  std::string from_module;
  int from_level = 0; // leading dots in "from . import x"

  Stmt(StmtKind k, Span s) : kind(k), span(std::move(s)) {}
};

struct Module {
  SourceRef source;
  Block body;
};

} // namespace pxl
