// Lexer and parser: token structure, spans, and the diagnostics for bad input.
#include <catch2/catch.hpp>

#include "lang/parser.hpp"

using namespace pxl;

namespace {
SourceRef src(const std::string& text) { return std::make_shared<SourceFile>("t.pxl", text); }
std::vector<Tok> kinds(const std::string& text) {
  std::vector<Tok> out;
  for (const Token& t : lex(src(text))) out.push_back(t.kind);
  return out;
}
std::string parse_error(const std::string& text) {
  try {
    parse_module(src(text));
  } catch (const Error& e) {
    return e.render();
  }
  return "";
}
} // namespace

TEST_CASE("lexer produces INDENT/DEDENT around blocks") {
  auto k = kinds("if x:\n    y = 1\nz\n");
  std::vector<Tok> want = {Tok::KwIf, Tok::Name,    Tok::Colon, Tok::Newline, Tok::Indent,
                           Tok::Name, Tok::Assign,  Tok::Int,   Tok::Newline, Tok::Dedent,
                           Tok::Name, Tok::Newline, Tok::End};
  CHECK(k == want);
}

TEST_CASE("lexer ignores newlines inside brackets, blank lines and comments") {
  auto k = kinds("x = (1,\n     2)  # c\n\n   # only a comment\ny\n");
  CHECK(std::count(k.begin(), k.end(), Tok::Newline) == 2);
  CHECK(std::count(k.begin(), k.end(), Tok::Indent) == 0);
}

TEST_CASE("lexer decodes numbers and strings") {
  auto toks = lex(src("0x1F 1_000 2.5e-3 .5 'a\\tb' r'a\\tb' \"\"\"x\ny\"\"\" '€'"));
  CHECK(toks[0].text == "0x1F");
  CHECK(toks[1].text == "1000");
  CHECK(toks[2].kind == Tok::Float);
  CHECK(toks[3].kind == Tok::Float);
  CHECK(toks[4].text == "a\tb");
  CHECK(toks[5].text == "a\\tb");
  CHECK(toks[6].text == "x\ny");
  CHECK(toks[7].text == "€");
}

TEST_CASE("columns count code points") {
  auto f = src("s = 'é' + y\n");
  auto toks = lex(f);
  CHECK(f->column_of(toks[4].span.begin) == 11);
}

TEST_CASE("parser builds spans covering whole expressions") {
  Module m = parse_module(src("a = b + c * d\n"));
  REQUIRE(m.body.size() == 1);
  const Expr& v = *m.body[0]->value;
  CHECK(v.kind == ExprKind::BinOp);
  CHECK(v.span.begin == 4);
  CHECK(v.span.end == 13);
  CHECK(v.elts[1]->binop == BinOpKind::Mul);
}

TEST_CASE("parser handles the DESIGN syntax") {
  const char* code = R"(
@partial(pmap, axis_name='b')
def f(x, y=2, *args, k=1, **kw):
    a, *b = x
    c = [i * j for i in range(3) for j in range(i) if j]
    d = {k: v for k, v in zip(a, b)}
    e = x[1:3, ::2] + x[..., None] - x[0]
    g = lambda q, r=1: q if r else -q
    h = f"{e:.4f} {a!r} {{}}"
    while not (a < b <= c):
        break
    return (a,)
from jax.sharding import PartitionSpec as P, Mesh
import jax.numpy as jnp
)";
  Module m = parse_module(src(code));
  CHECK(m.body.size() == 3);
  CHECK(m.body[0]->decorators.size() == 1);
  CHECK(m.body[0]->params.size() == 5);
}

TEST_CASE("syntax errors say what was expected and what was found") {
  CHECK(
      parse_error("if x\n  y\n").find("t.pxl:1:5: error[E0001]: expected ':', found end of line") !=
      std::string::npos);
  CHECK(parse_error("x = (1, 2\n").find("'(' was never closed") != std::string::npos);
  CHECK(parse_error("x = 1 +\n").find("expected an expression, found end of line") !=
        std::string::npos);
  CHECK(parse_error("def f(, x): pass\n").find("expected a parameter name") != std::string::npos);
  CHECK(parse_error("f(x=1, 2)\n").find("positional argument follows keyword argument") !=
        std::string::npos);
  CHECK(parse_error("1 = x\n").find("cannot assign to this expression") != std::string::npos);
  CHECK(parse_error("class A: pass\n").find("E0111") != std::string::npos);
  CHECK(parse_error("x = 1 $ 2\n").find("E0003") != std::string::npos);
}

TEST_CASE("indentation errors") {
  CHECK(parse_error("def f():\nreturn 1\n").find("E0002") != std::string::npos);
  CHECK(parse_error("if x:\n    a\n  b\n").find("unindent does not match") != std::string::npos);
  CHECK(parse_error("x\n    y\n").find("unexpected indent") != std::string::npos);
}

TEST_CASE("incomplete input is distinguishable for the REPL") {
  for (const char* code : {"def f():\n", "x = [1,\n", "s = '''abc\n", "if x:\n"}) {
    bool incomplete = false;
    try {
      parse_module(src(code));
    } catch (const IncompleteInput&) {
      incomplete = true;
    } catch (const Error&) {
    }
    CHECK(incomplete);
  }
}

TEST_CASE("deep nesting is an error, not a crash") {
  std::string deep(5000, '(');
  deep += "1" + std::string(5000, ')') + "\n";
  CHECK(parse_error(deep).find("too deeply nested") != std::string::npos);
  std::string neg(5000, '-');
  CHECK(parse_error(neg + "1\n").find("too deeply nested") != std::string::npos);
}

TEST_CASE("caret covers the span") {
  std::string r = parse_error("x = 1\ny = (2 +)\n");
  CHECK(r.find(" 2 | y = (2 +)\n   |         ^\n") != std::string::npos);
}

TEST_CASE("several context managers in one with nest left to right") {
  for (const char* code : {"with a as x, b:\n  pass\n", "with (a as x, b):\n  pass\n",
                           "with (a as x,\n      b,):\n  pass\n"}) {
    Module m = parse_module(src(code));
    REQUIRE(m.body.size() == 1);
    const Stmt& outer = *m.body[0];
    CHECK(outer.kind == StmtKind::With);
    CHECK(outer.targets.size() == 1);
    REQUIRE(outer.body.size() == 1);
    const Stmt& inner = *outer.body[0];
    CHECK(inner.kind == StmtKind::With);
    CHECK(inner.targets.empty());
    CHECK(inner.value->kind == ExprKind::Name);
  }
  // Parentheses that belong to the expression stay there.
  Module m = parse_module(src("with (a):\n  pass\nwith (f)(x) as y:\n  pass\n"));
  REQUIRE(m.body.size() == 2);
  CHECK(m.body[0]->body[0]->kind != StmtKind::With);
  CHECK(m.body[1]->value->kind == ExprKind::Call);
  CHECK(parse_error("with (a, b:\n  pass\n").find("error[E0001]") != std::string::npos);
  CHECK(parse_error("with a,:\n  pass\n").find("expected an expression") != std::string::npos);
}

TEST_CASE("lazily parsed def bodies (the stdlib's) parse at first use") {
  Module m = parse_module(src("def f(x):\n"
                              "    n = 0\n"
                              "    def g():\n"
                              "        nonlocal n\n"
                              "        n = 1\n"
                              "    return g\n"
                              "def h(): return 2\n"
                              "def bad():\n"
                              "    x = = 1\n"
                              "y = 3\n"),
                          true);
  REQUIRE(m.body.size() == 4);
  const Stmt& f = *m.body[0];
  REQUIRE(f.lazy_body);
  CHECK(f.body.empty());
  const Block& fb = f.lazy_body->parsed();
  REQUIRE(fb.size() == 3);
  // A nested def is lazy too, and its nonlocals come with its body.
  REQUIRE(fb[1]->lazy_body);
  fb[1]->lazy_body->parsed();
  CHECK(fb[1]->lazy_body->nonlocals == std::vector<std::string>{"n"});
  // A one-line body is parsed at once; an unparsable one fails only when used,
  // with its own span, and again on every later use.
  CHECK(!m.body[1]->lazy_body);
  CHECK(m.body[1]->body.size() == 1);
  REQUIRE(m.body[2]->lazy_body);
  CHECK_THROWS_AS(m.body[2]->lazy_body->parsed(), Error);
  CHECK_THROWS_AS(m.body[2]->lazy_body->parsed(), Error);
  CHECK(m.body[3]->kind == StmtKind::Assign);
}
