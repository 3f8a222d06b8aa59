#include "lang/parser.hpp"

#include "lang/bigint.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>

namespace pxl {

const char* binop_symbol(BinOpKind k) {
  switch (k) {
  case BinOpKind::Add:
    return "+";
  case BinOpKind::Sub:
    return "-";
  case BinOpKind::Mul:
    return "*";
  case BinOpKind::Div:
    return "/";
  case BinOpKind::FloorDiv:
    return "//";
  case BinOpKind::Mod:
    return "%";
  case BinOpKind::Pow:
    return "**";
  case BinOpKind::MatMul:
    return "@";
  case BinOpKind::BitAnd:
    return "&";
  case BinOpKind::BitOr:
    return "|";
  case BinOpKind::BitXor:
    return "^";
  case BinOpKind::LShift:
    return "<<";
  case BinOpKind::RShift:
    return ">>";
  }
  return "?";
}

const char* cmpop_symbol(CmpOpKind k) {
  switch (k) {
  case CmpOpKind::Eq:
    return "==";
  case CmpOpKind::Ne:
    return "!=";
  case CmpOpKind::Lt:
    return "<";
  case CmpOpKind::Le:
    return "<=";
  case CmpOpKind::Gt:
    return ">";
  case CmpOpKind::Ge:
    return ">=";
  case CmpOpKind::In:
    return "in";
  case CmpOpKind::NotIn:
    return "not in";
  case CmpOpKind::Is:
    return "is";
  case CmpOpKind::IsNot:
    return "is not";
  }
  return "?";
}

namespace {

constexpr int kMaxNesting = 150; // deeper input is rejected, never a stack overflow

class Parser {
public:
  Parser(SourceRef src, std::shared_ptr<const std::vector<Token>> toks, bool lazy = false)
      : src_(std::move(src)), toks_(std::move(toks)), lazy_(lazy) {}

  // A lazily parsed def's body (LazyBody::parsed), from its ':'.
  void def_body(LazyBody& lb) {
    lb.body.clear(); // a failed attempt's statements
    pos_ = lb.colon_token;
    nonlocals_.emplace_back();
    block(lb.body, (*toks_)[lb.def_token]);
    lb.nonlocals = std::move(nonlocals_.back());
    nonlocals_.pop_back();
  }

  // file: (NEWLINE | stmt)* END
  Module module() {
    Module m{src_, {}};
    while (!at(Tok::End)) {
      if (accept(Tok::Newline)) continue;
      if (at(Tok::Indent)) fail_at(peek(), "unexpected indent", ErrCode::Indentation);
      statement(m.body);
    }
    return m;
  }

  ExprPtr lone_expression() {
    while (accept(Tok::Newline)) {
    }
    ExprPtr e = testlist_star();
    while (accept(Tok::Newline)) {
    }
    if (!at(Tok::End)) expected("end of expression");
    return e;
  }

private:
  // ---- token helpers ----------------------------------------------------
  const Token& peek(int k = 0) const {
    size_t i = std::min(pos_ + k, toks_->size() - 1);
    return (*toks_)[i];
  }
  bool at(Tok t) const { return peek().kind == t; }
  const Token& advance() {
    const Token& t = (*toks_)[pos_];
    if (pos_ + 1 < toks_->size()) ++pos_;
    return t;
  }
  bool accept(Tok t) {
    if (!at(t)) return false;
    advance();
    return true;
  }
  const Token& expect(Tok t, const char* what = nullptr) {
    if (!at(t)) expected(what ? what : tok_name(t));
    return advance();
  }
  std::string found_text(const Token& t) const {
    switch (t.kind) {
    case Tok::Name:
      return "name '" + t.text + "'";
    case Tok::Int:
    case Tok::Float:
      return "number " + t.text;
    case Tok::Imag:
      return "number " + t.text + "j";
    case Tok::String:
      return "a string";
    default:
      return tok_name(t.kind);
    }
  }
  [[noreturn]] void expected(const std::string& what) {
    const Token& t = peek();
    std::string msg = "expected " + what + ", found " + found_text(t);
    if (t.kind == Tok::End) throw IncompleteInput(ErrCode::Syntax, msg, t.span);
    if (t.kind == Tok::Indent) throw Error(ErrCode::Indentation, "unexpected indent", t.span);
    throw Error(ErrCode::Syntax, msg, t.span);
  }
  [[noreturn]] void fail_at(const Token& t, const std::string& msg,
                            ErrCode code = ErrCode::Syntax) {
    throw Error(code, msg, t.span);
  }
  [[noreturn]] void fail_span(const Span& s, const std::string& msg) {
    throw Error(ErrCode::Syntax, msg, s);
  }
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting)
        throw Error(ErrCode::Syntax,
                    "too deeply nested (more than " + std::to_string(kMaxNesting) + " levels)",
                    p.peek().span);
    }
    ~DepthGuard() { --p.depth_; }
  };
  ExprPtr make(ExprKind k, const Span& s) { return std::make_unique<Expr>(k, s); }
  Span span_from(const Span& start) const {
    const Token& last = (*toks_)[pos_ > 0 ? pos_ - 1 : 0];
    return Span{src_, start.begin, std::max(last.span.end, start.begin)};
  }

  // ---- statements ---------------------------------------------------------
  // stmt: compound_stmt | simple_stmt
  void statement(Block& out) {
    DepthGuard g(*this);
    switch (peek().kind) {
    case Tok::KwIf:
      out.push_back(if_stmt());
      return;
    case Tok::KwWhile:
      out.push_back(while_stmt());
      return;
    case Tok::KwFor:
      out.push_back(for_stmt());
      return;
    case Tok::KwDef:
      out.push_back(funcdef({}));
      return;
    case Tok::At:
      out.push_back(decorated());
      return;
    case Tok::KwClass:
      fail_at(peek(), "classes are not supported in pxl", ErrCode::Unsupported);
    case Tok::KwTry:
    case Tok::KwRaise:
    case Tok::KwExcept:
    case Tok::KwFinally:
      fail_at(peek(), "exceptions are not supported in pxl", ErrCode::Unsupported);
    case Tok::KwWith:
      out.push_back(with_stmt());
      return;
    case Tok::KwYield:
      fail_at(peek(), "generators ('yield') are not supported in pxl", ErrCode::Unsupported);
    case Tok::KwGlobal:
      fail_at(peek(), std::string(tok_name(peek().kind)) + " is not supported in pxl",
              ErrCode::Unsupported);
    case Tok::KwAsync:
    case Tok::KwAwait:
      fail_at(peek(), "async code is not supported in pxl", ErrCode::Unsupported);
    case Tok::KwElif:
    case Tok::KwElse:
      fail_at(peek(), std::string(tok_name(peek().kind)) + " without a matching 'if'");
    default:
      simple_stmt(out);
    }
  }

  // simple_stmt: small_stmt (';' small_stmt)* [';'] NEWLINE
  void simple_stmt(Block& out) {
    out.push_back(small_stmt());
    while (accept(Tok::Semicolon)) {
      if (at(Tok::Newline) || at(Tok::End)) break;
      out.push_back(small_stmt());
    }
    if (!accept(Tok::Newline) && !at(Tok::End)) expected("end of line");
  }

  StmtPtr small_stmt() {
    const Token& t = peek();
    Span start = t.span;
    switch (t.kind) {
    case Tok::KwPass:
      advance();
      return std::make_unique<Stmt>(StmtKind::Pass, start);
    case Tok::KwBreak:
      advance();
      return std::make_unique<Stmt>(StmtKind::Break, start);
    case Tok::KwContinue:
      advance();
      return std::make_unique<Stmt>(StmtKind::Continue, start);
    case Tok::KwReturn: {
      advance();
      auto s = std::make_unique<Stmt>(StmtKind::Return, start);
      if (!at(Tok::Newline) && !at(Tok::Semicolon) && !at(Tok::End)) s->value = testlist_star();
      s->span = span_from(start);
      return s;
    }
    case Tok::KwAssert: {
      advance();
      auto s = std::make_unique<Stmt>(StmtKind::Assert, start);
      s->test = test();
      if (accept(Tok::Comma)) s->value = test();
      s->span = span_from(start);
      return s;
    }
    case Tok::KwDel: {
      advance();
      auto s = std::make_unique<Stmt>(StmtKind::Del, start);
      ExprPtr e = testlist_star();
      check_target(*e, "delete");
      s->targets.push_back(std::move(e));
      s->span = span_from(start);
      return s;
    }
    case Tok::KwNonlocal: {
      // nonlocal NAME (',' NAME)*: declares the names for the whole enclosing
      // def (its FunctionDef's `nonlocals`); the statement does nothing when run.
      advance();
      if (nonlocals_.empty()) fail_span(start, "nonlocal declaration not allowed at module level");
      auto s = std::make_unique<Stmt>(StmtKind::Nonlocal, start);
      do {
        const Token& n = expect(Tok::Name, "a name");
        nonlocals_.back().push_back(n.text);
        auto e = make(ExprKind::Name, n.span);
        e->name = n.text;
        s->targets.push_back(std::move(e));
      } while (accept(Tok::Comma));
      s->span = span_from(start);
      return s;
    }
    case Tok::KwImport:
      return import_stmt();
    case Tok::KwFrom:
      return from_stmt();
    default:
      return expr_stmt();
    }
  }

  // expr_stmt: testlist_star (augassign testlist | ('=' testlist_star)*)
  StmtPtr expr_stmt() {
    Span start = peek().span;
    ExprPtr first = testlist_star();
    static const std::pair<Tok, BinOpKind> aug[] = {{Tok::PlusEq, BinOpKind::Add},
                                                    {Tok::MinusEq, BinOpKind::Sub},
                                                    {Tok::StarEq, BinOpKind::Mul},
                                                    {Tok::SlashEq, BinOpKind::Div},
                                                    {Tok::DoubleSlashEq, BinOpKind::FloorDiv},
                                                    {Tok::PercentEq, BinOpKind::Mod},
                                                    {Tok::DoubleStarEq, BinOpKind::Pow},
                                                    {Tok::AmpEq, BinOpKind::BitAnd},
                                                    {Tok::PipeEq, BinOpKind::BitOr},
                                                    {Tok::CaretEq, BinOpKind::BitXor},
                                                    {Tok::AtEq, BinOpKind::MatMul},
                                                    {Tok::LShiftEq, BinOpKind::LShift},
                                                    {Tok::RShiftEq, BinOpKind::RShift}};
    for (auto [tok, op] : aug) {
      if (at(tok)) {
        advance();
        if (first->kind != ExprKind::Name && first->kind != ExprKind::Attribute &&
            first->kind != ExprKind::Subscript)
          fail_span(first->span, "illegal target for augmented assignment");
        auto s = std::make_unique<Stmt>(StmtKind::AugAssign, start);
        s->op = op;
        s->targets.push_back(std::move(first));
        s->value = testlist_star();
        s->span = span_from(start);
        return s;
      }
    }
    if (at(Tok::Colon) && first->kind == ExprKind::Name) {
      // Annotated assignment "x: int = 3": the annotation is ignored.
      advance();
      test();
      if (!accept(Tok::Assign)) return std::make_unique<Stmt>(StmtKind::Pass, start);
      auto s = std::make_unique<Stmt>(StmtKind::Assign, start);
      s->targets.push_back(std::move(first));
      s->value = testlist_star();
      s->span = span_from(start);
      return s;
    }
    if (!at(Tok::Assign)) {
      auto s = std::make_unique<Stmt>(StmtKind::Expr, start);
      s->value = std::move(first);
      s->span = span_from(start);
      return s;
    }
    auto s = std::make_unique<Stmt>(StmtKind::Assign, start);
    s->targets.push_back(std::move(first));
    while (accept(Tok::Assign)) s->targets.push_back(testlist_star());
    s->value = std::move(s->targets.back());
    s->targets.pop_back();
    for (auto& t : s->targets) check_target(*t, "assign to");
    s->span = span_from(start);
    return s;
  }

  void check_target(const Expr& e, const char* verb) {
    switch (e.kind) {
    case ExprKind::Name:
    case ExprKind::Attribute:
    case ExprKind::Subscript:
      return;
    case ExprKind::Tuple:
    case ExprKind::List: {
      int starred = 0;
      for (const auto& x : e.elts) {
        if (x->kind == ExprKind::Starred) {
          if (++starred > 1) fail_span(x->span, "multiple starred expressions in assignment");
          check_target(*x->elts[0], verb);
        } else {
          check_target(*x, verb);
        }
      }
      return;
    }
    case ExprKind::Call:
      fail_span(e.span, std::string("cannot ") + verb +
                            (e.func ? " a function call" : " a named expression"));
    default:
      fail_span(e.span, std::string("cannot ") + verb + " this expression" +
                            (e.kind == ExprKind::Compare ? " (did you mean '=='?)" : ""));
    }
  }

  // dotted_name: NAME ('.' NAME)*
  std::string dotted_name() {
    std::string name = expect(Tok::Name, "a module name").text;
    while (accept(Tok::Dot)) name += "." + expect(Tok::Name, "a name after '.'").text;
    return name;
  }

  // import_stmt: 'import' dotted_name ['as' NAME] (',' dotted_name ['as' NAME])*
  StmtPtr import_stmt() {
    Span start = advance().span;
    auto s = std::make_unique<Stmt>(StmtKind::Import, start);
    do {
      Span ns = peek().span;
      ImportName in;
      in.module = dotted_name();
      if (accept(Tok::KwAs)) in.alias = expect(Tok::Name, "a name after 'as'").text;
      in.span = span_from(ns);
      s->imports.push_back(std::move(in));
    } while (accept(Tok::Comma));
    s->span = span_from(start);
    return s;
  }

  // from_stmt: 'from' ('.'* dotted_name | '.'+) 'import' ('(' names ')' | names)
  StmtPtr from_stmt() {
    Span start = advance().span;
    auto s = std::make_unique<Stmt>(StmtKind::ImportFrom, start);
    while (at(Tok::Dot) || at(Tok::Ellipsis)) s->from_level += at(Tok::Dot) ? 1 : 3, advance();
    if (at(Tok::Name))
      s->from_module = dotted_name();
    else if (s->from_level == 0)
      expected("a module name");
    expect(Tok::KwImport, "'import'");
    if (at(Tok::Star))
      fail_at(peek(), "'from ... import *' is not supported; import names explicitly",
              ErrCode::Unsupported);
    bool paren = accept(Tok::LParen);
    do {
      if (paren && at(Tok::RParen)) break;
      Span ns = peek().span;
      ImportName in;
      in.module = s->from_module;
      in.name = expect(Tok::Name, "a name to import").text;
      if (accept(Tok::KwAs)) in.alias = expect(Tok::Name, "a name after 'as'").text;
      in.span = span_from(ns);
      s->imports.push_back(std::move(in));
    } while (accept(Tok::Comma));
    if (paren) expect(Tok::RParen);
    s->span = span_from(start);
    return s;
  }

  // block: NEWLINE INDENT stmt+ DEDENT | simple_stmt
  void block(Block& out, const Token& header) {
    expect(Tok::Colon, "':'");
    if (!at(Tok::Newline)) {
      simple_stmt(out);
      return;
    }
    advance();
    if (at(Tok::End))
      throw IncompleteInput(
          ErrCode::Indentation,
          "expected an indented block after " + std::string(tok_name(header.kind)), header.span);
    if (!at(Tok::Indent))
      throw Error(ErrCode::Indentation,
                  "expected an indented block after " + std::string(tok_name(header.kind)) +
                      " on line " + std::to_string(src_->line_of(header.span.begin)) + ", found " +
                      found_text(peek()),
                  peek().span);
    advance();
    while (!at(Tok::Dedent) && !at(Tok::End)) {
      if (accept(Tok::Newline)) continue;
      statement(out);
    }
    accept(Tok::Dedent);
  }

  // if_stmt: 'if' test ':' block ('elif' test ':' block)* ['else' ':' block]
  StmtPtr if_stmt() {
    const Token& kw = advance();
    auto s = std::make_unique<Stmt>(StmtKind::If, kw.span);
    s->test = namedexpr_test();
    block(s->body, kw);
    if (at(Tok::KwElif)) {
      s->orelse.push_back(if_stmt());
    } else if (at(Tok::KwElse)) {
      const Token& e = advance();
      block(s->orelse, e);
    }
    return s;
  }

  // with_stmt: 'with' with_item (',' with_item)* ':' block, or the items in
  // parentheses; with_item: test ['as' target]. Several items nest, as in
  // Python: `with a, b: s` is `with a: with b: s`.
  StmtPtr with_stmt() {
    const Token& kw = advance();
    bool parens = false;
    if (at(Tok::LParen)) {
      // `with (a as x, b):` (the items in parentheses) unless the parentheses
      // are part of the first item's expression, as in `with (a):` or `with (m)(x):`.
      size_t save = pos_;
      advance();
      int depth = 0;
      bool items = false;
      for (size_t k = pos_;
           k < toks_->size() && (*toks_)[k].kind != Tok::Newline && (*toks_)[k].kind != Tok::End;
           ++k) {
        Tok t = (*toks_)[k].kind;
        if (t == Tok::LParen || t == Tok::LBracket || t == Tok::LBrace) ++depth;
        if (t == Tok::RParen || t == Tok::RBracket || t == Tok::RBrace) {
          if (depth == 0) {
            items = k + 1 < toks_->size() && (*toks_)[k + 1].kind == Tok::Colon;
            break;
          }
          --depth;
        }
        if (depth == 0 && (t == Tok::KwAs || t == Tok::Comma)) items = true;
      }
      if (items)
        parens = true;
      else
        pos_ = save;
    }
    return with_items(kw, parens);
  }

  StmtPtr with_items(const Token& kw, bool parens) {
    auto s = std::make_unique<Stmt>(StmtKind::With, kw.span);
    s->value = test();
    if (at(Tok::KwAs)) {
      advance();
      ExprPtr target = bitor_expr();
      check_target(*target, "assign to");
      s->targets.push_back(std::move(target));
    }
    if (at(Tok::Comma)) {
      advance();
      if (!(parens && at(Tok::RParen))) { // (a trailing comma inside parentheses)
        s->body.push_back(with_items(kw, parens));
        return s;
      }
    }
    if (parens) expect(Tok::RParen, "')' after the context managers");
    block(s->body, kw);
    return s;
  }

  // while_stmt: 'while' test ':' block ['else' ':' block]
  StmtPtr while_stmt() {
    const Token& kw = advance();
    auto s = std::make_unique<Stmt>(StmtKind::While, kw.span);
    s->test = namedexpr_test();
    block(s->body, kw);
    if (at(Tok::KwElse)) {
      const Token& e = advance();
      block(s->orelse, e);
    }
    return s;
  }

  // for_stmt: 'for' exprlist 'in' testlist ':' block ['else' ':' block]
  StmtPtr for_stmt() {
    const Token& kw = advance();
    auto s = std::make_unique<Stmt>(StmtKind::For, kw.span);
    ExprPtr target = exprlist();
    check_target(*target, "assign to");
    s->targets.push_back(std::move(target));
    expect(Tok::KwIn, "'in'");
    s->value = testlist_star();
    block(s->body, kw);
    if (at(Tok::KwElse)) {
      const Token& e = advance();
      block(s->orelse, e);
    }
    return s;
  }

  // decorated: ('@' namedexpr_test NEWLINE)+ funcdef
  StmtPtr decorated() {
    std::vector<ExprPtr> decos;
    while (accept(Tok::At)) {
      decos.push_back(namedexpr_test());
      expect(Tok::Newline, "end of line after decorator");
      while (accept(Tok::Newline)) {
      }
    }
    if (at(Tok::KwClass)) fail_at(peek(), "classes are not supported in pxl", ErrCode::Unsupported);
    if (!at(Tok::KwDef)) expected("'def' after decorator");
    return funcdef(std::move(decos));
  }

  // funcdef: 'def' NAME '(' [parameters] ')' ['->' test] ':' block
  StmtPtr funcdef(std::vector<ExprPtr> decos) {
    size_t def_token = pos_;
    const Token& kw = advance();
    auto s = std::make_unique<Stmt>(StmtKind::FunctionDef, kw.span);
    const Token& name = expect(Tok::Name, "a function name");
    s->name = name.text;
    s->name_span = name.span;
    s->decorators = std::move(decos);
    expect(Tok::LParen, "'('");
    s->params = parameters(Tok::RParen);
    expect(Tok::RParen, "')'");
    if (accept(Tok::Arrow)) test();
    s->span = Span{src_, kw.span.begin, name.span.end};
    if (std::optional<size_t> colon = lazy_ ? skip_indented_block() : std::nullopt) {
      auto lb = std::make_shared<LazyBody>();
      lb->toks = toks_;
      lb->src = src_;
      lb->def_token = def_token;
      lb->colon_token = *colon;
      s->lazy_body = std::move(lb);
      return s;
    }
    nonlocals_.emplace_back();
    block(s->body, kw);
    s->nonlocals = std::move(nonlocals_.back());
    nonlocals_.pop_back();
    return s;
  }

  // At a def's ':' NEWLINE INDENT: moves past the block's DEDENT and returns
  // the ':'s position; anything else (a one-line body, a missing block) stays
  // where it is, for block() to parse or report.
  std::optional<size_t> skip_indented_block() {
    if (!(at(Tok::Colon) && peek(1).kind == Tok::Newline && peek(2).kind == Tok::Indent))
      return std::nullopt;
    size_t start = pos_;
    pos_ += 3;
    for (int depth = 1; depth > 0; ++pos_) {
      if (pos_ >= toks_->size() || (*toks_)[pos_].kind == Tok::End) {
        pos_ = start;
        return std::nullopt;
      }
      Tok t = (*toks_)[pos_].kind;
      depth += t == Tok::Indent ? 1 : t == Tok::Dedent ? -1 : 0;
    }
    return start;
  }

  // parameters: param (',' param)* [','] where
  //   param: NAME [':' test] ['=' test] | '*' [NAME] | '**' NAME
  std::vector<Param> parameters(Tok close) {
    std::vector<Param> ps;
    bool seen_default = false, seen_star = false, seen_slash = false;
    while (!at(close)) {
      Param p;
      if (accept(Tok::Star)) {
        if (seen_star) fail_at(peek(), "only one '*' parameter is allowed");
        seen_star = true;
        if (at(Tok::Name)) {
          p.span = peek().span;
          p.name = advance().text;
          p.kind = Param::Kind::VarArgs;
        } else {
          p.kind = Param::Kind::KwOnlyMarker;
          p.span = (*toks_)[pos_ - 1].span;
        }
      } else if (accept(Tok::DoubleStar)) {
        p.span = peek().span;
        p.name = expect(Tok::Name, "a parameter name").text;
        p.kind = Param::Kind::KwArgs;
      } else if (at(Tok::Slash)) {
        // `/`: the parameters before it are positional-only.
        const Token& slash = advance();
        if (seen_star || seen_slash || ps.empty())
          fail_span(slash.span, ps.empty()   ? "at least one argument must precede /"
                                : seen_slash ? "/ may appear only once"
                                             : "/ must be ahead of *");
        seen_slash = true;
        for (auto& q : ps) q.positional_only = true;
        if (!accept(Tok::Comma)) break;
        continue;
      } else {
        p.span = peek().span;
        p.name = expect(Tok::Name, "a parameter name").text;
        p.keyword_only = seen_star;
        if (close == Tok::RParen && accept(Tok::Colon)) test(); // annotation, ignored
        if (accept(Tok::Assign)) {
          p.default_value = test();
          seen_default = true;
        } else if (seen_default && !seen_star) {
          fail_span(p.span, "parameter without a default follows parameter with a default");
        }
      }
      for (const auto& q : ps)
        if (!p.name.empty() && q.name == p.name)
          fail_span(p.span, "duplicate parameter '" + p.name + "'");
      bool is_kwargs = p.kind == Param::Kind::KwArgs;
      ps.push_back(std::move(p));
      if (is_kwargs && !at(close) && !(at(Tok::Comma) && peek(1).kind == close))
        fail_at(peek(), "no parameters may follow '**" + ps.back().name + "'");
      if (!accept(Tok::Comma)) break;
    }
    return ps;
  }

  // ---- expressions --------------------------------------------------------
  // testlist_star: (test|star_expr) (',' (test|star_expr))* [','] -- a tuple when commas
  ExprPtr testlist_star() {
    Span start = peek().span;
    ExprPtr first = star_or_test();
    if (!at(Tok::Comma)) return first;
    auto tup = make(ExprKind::Tuple, start);
    tup->elts.push_back(std::move(first));
    while (accept(Tok::Comma)) {
      if (!starts_expr()) break;
      tup->elts.push_back(star_or_test());
    }
    tup->span = span_from(start);
    return tup;
  }

  // exprlist: (expr|star_expr) (',' (expr|star_expr))* [','] -- for-loop targets
  ExprPtr exprlist() {
    Span start = peek().span;
    ExprPtr first = at(Tok::Star) ? star_expr() : bitor_expr();
    if (!at(Tok::Comma)) return first;
    auto tup = make(ExprKind::Tuple, start);
    tup->elts.push_back(std::move(first));
    while (accept(Tok::Comma)) {
      if (at(Tok::KwIn)) break;
      tup->elts.push_back(at(Tok::Star) ? star_expr() : bitor_expr());
    }
    tup->span = span_from(start);
    return tup;
  }

  bool starts_expr() const {
    switch (peek().kind) {
    case Tok::Name:
    case Tok::Int:
    case Tok::Float:
    case Tok::Imag:
    case Tok::String:
    case Tok::FString:
    case Tok::LParen:
    case Tok::LBracket:
    case Tok::LBrace:
    case Tok::Minus:
    case Tok::Plus:
    case Tok::Tilde:
    case Tok::KwNot:
    case Tok::KwLambda:
    case Tok::KwNone:
    case Tok::KwTrue:
    case Tok::KwFalse:
    case Tok::Star:
    case Tok::Ellipsis:
      return true;
    default:
      return false;
    }
  }

  ExprPtr star_or_test() { return at(Tok::Star) ? star_expr() : test(); }

  // star_expr: '*' expr
  ExprPtr star_expr() {
    Span start = advance().span;
    auto e = make(ExprKind::Starred, start);
    e->elts.push_back(bitor_expr());
    e->span = span_from(start);
    return e;
  }

  // namedexpr_test: NAME ':=' test | test (the walrus `(name := value)`).
  ExprPtr namedexpr_test() {
    if (at(Tok::Name) && peek(1).kind == Tok::Walrus) {
      Span start = peek().span;
      auto e = make(ExprKind::NamedExpr, start);
      e->name = advance().text;
      advance(); // ':='
      e->elts.push_back(test());
      e->span = span_from(start);
      return e;
    }
    ExprPtr e = test();
    if (at(Tok::Walrus))
      fail_span(e->span, "cannot use assignment expressions with this expression");
    return e;
  }

  // A comprehension is a scope of its own: a walrus in its element or
  // conditions (outside lambdas) binds one scope further out.
  static void mark_comprehension(Expr& e) {
    if (e.kind == ExprKind::NamedExpr) ++e.int_value;
    if (e.kind == ExprKind::Lambda) return;
    if (e.func) mark_comprehension(*e.func);
    for (auto& x : e.elts)
      if (x) mark_comprehension(*x);
    for (auto& x : e.values)
      if (x) mark_comprehension(*x);
    for (auto& k : e.keywords) mark_comprehension(*k.value);
    for (auto& c : e.comps) {
      mark_comprehension(*c.iter);
      for (auto& x : c.conds) mark_comprehension(*x);
    }
    for (auto& f : e.fparts) mark_fstring(f);
  }
  static void mark_fstring(FStringPart& f) {
    if (f.expr) mark_comprehension(*f.expr);
    for (auto& p : f.spec) mark_fstring(p);
  }

  // A list/tuple/argument element: a starred expression or a namedexpr_test.
  ExprPtr star_or_named() { return at(Tok::Star) ? star_expr() : namedexpr_test(); }

  // test: or_test ['if' or_test 'else' test] | lambdef
  ExprPtr test() {
    DepthGuard g(*this);
    if (at(Tok::KwLambda)) return lambdef();
    Span start = peek().span;
    ExprPtr body = or_test();
    if (!at(Tok::KwIf)) return body;
    advance();
    auto e = make(ExprKind::IfExp, start);
    ExprPtr cond = or_test();
    expect(Tok::KwElse, "'else' in conditional expression");
    ExprPtr orelse = test();
    e->elts.push_back(std::move(cond));
    e->elts.push_back(std::move(body));
    e->elts.push_back(std::move(orelse));
    e->span = span_from(start);
    return e;
  }

  // test_nocond: or_test | lambdef_nocond (comprehension conditions)
  ExprPtr test_nocond() { return at(Tok::KwLambda) ? lambdef() : or_test(); }

  // lambdef: 'lambda' [parameters] ':' test
  ExprPtr lambdef() {
    Span start = advance().span;
    auto e = make(ExprKind::Lambda, start);
    e->params = parameters(Tok::Colon);
    expect(Tok::Colon, "':' in lambda");
    e->elts.push_back(test());
    e->span = span_from(start);
    return e;
  }

  // or_test: and_test ('or' and_test)* ; and_test: not_test ('and' not_test)*
  ExprPtr or_test() { return bool_chain(true); }
  ExprPtr bool_chain(bool is_or) {
    Span start = peek().span;
    ExprPtr first = is_or ? bool_chain(false) : not_test();
    Tok kw = is_or ? Tok::KwOr : Tok::KwAnd;
    if (!at(kw)) return first;
    auto e = make(ExprKind::BoolOp, start);
    e->is_and = !is_or;
    e->elts.push_back(std::move(first));
    while (accept(kw)) e->elts.push_back(is_or ? bool_chain(false) : not_test());
    e->span = span_from(start);
    return e;
  }

  // not_test: 'not' not_test | comparison
  ExprPtr not_test() {
    if (!at(Tok::KwNot)) return comparison();
    DepthGuard g(*this);
    Span start = advance().span;
    auto e = make(ExprKind::UnaryOp, start);
    e->unop = UnaryOpKind::Not;
    e->elts.push_back(not_test());
    e->span = span_from(start);
    return e;
  }

  // comparison: expr (comp_op expr)*
  ExprPtr comparison() {
    Span start = peek().span;
    ExprPtr first = bitor_expr();
    std::vector<CmpOpKind> ops;
    std::vector<ExprPtr> operands;
    operands.push_back(std::move(first));
    while (true) {
      CmpOpKind op;
      switch (peek().kind) {
      case Tok::Eq:
        op = CmpOpKind::Eq;
        break;
      case Tok::Ne:
        op = CmpOpKind::Ne;
        break;
      case Tok::Lt:
        op = CmpOpKind::Lt;
        break;
      case Tok::Le:
        op = CmpOpKind::Le;
        break;
      case Tok::Gt:
        op = CmpOpKind::Gt;
        break;
      case Tok::Ge:
        op = CmpOpKind::Ge;
        break;
      case Tok::KwIn:
        op = CmpOpKind::In;
        break;
      case Tok::KwIs:
        op = CmpOpKind::Is;
        break;
      case Tok::KwNot:
        if (peek(1).kind != Tok::KwIn) goto done;
        advance();
        op = CmpOpKind::NotIn;
        break;
      default:
        goto done;
      }
      advance();
      if (op == CmpOpKind::Is && accept(Tok::KwNot)) op = CmpOpKind::IsNot;
      ops.push_back(op);
      operands.push_back(bitor_expr());
    }
  done:
    if (ops.empty()) return std::move(operands[0]);
    auto e = make(ExprKind::Compare, start);
    e->cmp_ops = std::move(ops);
    e->elts = std::move(operands);
    e->span = span_from(start);
    return e;
  }

  ExprPtr binary(ExprPtr lhs, BinOpKind op, ExprPtr rhs, const Span& start) {
    auto e = make(ExprKind::BinOp, start);
    e->binop = op;
    e->elts.push_back(std::move(lhs));
    e->elts.push_back(std::move(rhs));
    e->span = span_from(start);
    return e;
  }

  // Left-associative binary levels, loosest first:
  //   expr: xor ('|' xor)*; xor: and ('^' and)*; and: shift ('&' shift)*;
  //   shift: arith (('<<'|'>>') arith)*; arith: term (('+'|'-') term)*;
  //   term: factor (('*'|'@'|'/'|'%'|'//') factor)*
  ExprPtr bitor_expr() { return level(0); }
  ExprPtr level(int lv) {
    static const std::vector<std::vector<std::pair<Tok, BinOpKind>>> levels = {
        {{Tok::Pipe, BinOpKind::BitOr}},
        {{Tok::Caret, BinOpKind::BitXor}},
        {{Tok::Amp, BinOpKind::BitAnd}},
        {{Tok::LShift, BinOpKind::LShift}, {Tok::RShift, BinOpKind::RShift}},
        {{Tok::Plus, BinOpKind::Add}, {Tok::Minus, BinOpKind::Sub}},
        {{Tok::Star, BinOpKind::Mul},
         {Tok::At, BinOpKind::MatMul},
         {Tok::Slash, BinOpKind::Div},
         {Tok::Percent, BinOpKind::Mod},
         {Tok::DoubleSlash, BinOpKind::FloorDiv}}};
    if (lv == static_cast<int>(levels.size())) return factor();
    Span start = peek().span;
    ExprPtr lhs = level(lv + 1);
    while (true) {
      bool matched = false;
      for (auto [tok, op] : levels[lv]) {
        if (at(tok)) {
          advance();
          lhs = binary(std::move(lhs), op, level(lv + 1), start);
          matched = true;
          break;
        }
      }
      if (!matched) return lhs;
    }
  }

  // factor: ('+'|'-'|'~') factor | power
  ExprPtr factor() {
    UnaryOpKind op;
    switch (peek().kind) {
    case Tok::Plus:
      op = UnaryOpKind::Pos;
      break;
    case Tok::Minus:
      op = UnaryOpKind::Neg;
      break;
    case Tok::Tilde:
      op = UnaryOpKind::Invert;
      break;
    default:
      return power();
    }
    DepthGuard g(*this);
    Span start = advance().span;
    ExprPtr operand = factor();
    // Fold "-<number>" so that -2147483648 and -1.5 are plain literals.
    if (op == UnaryOpKind::Neg && operand->kind == ExprKind::FloatLit &&
        operand->span.begin == start.end) {
      operand->float_value = -operand->float_value;
      operand->span.begin = start.begin;
      return operand;
    }
    auto e = make(ExprKind::UnaryOp, start);
    e->unop = op;
    e->elts.push_back(std::move(operand));
    e->span = span_from(start);
    return e;
  }

  // power: primary ['**' factor]
  ExprPtr power() {
    Span start = peek().span;
    ExprPtr base = primary();
    if (!accept(Tok::DoubleStar)) return base;
    DepthGuard g(*this);
    return binary(std::move(base), BinOpKind::Pow, factor(), start);
  }

  // primary: atom trailer*; trailer: '(' [arglist] ')' | '[' subscriptlist ']' | '.' NAME
  ExprPtr primary() {
    Span start = peek().span;
    ExprPtr e = atom();
    while (true) {
      if (at(Tok::LParen)) {
        DepthGuard g(*this);
        advance();
        auto call = make(ExprKind::Call, start);
        call->func = std::move(e);
        arglist(*call);
        expect(Tok::RParen, "')' or ',' in call");
        call->span = span_from(start);
        e = std::move(call);
      } else if (at(Tok::LBracket)) {
        DepthGuard g(*this);
        advance();
        auto sub = make(ExprKind::Subscript, start);
        sub->func = std::move(e);
        sub->elts.push_back(subscriptlist());
        expect(Tok::RBracket, "']'");
        sub->span = span_from(start);
        e = std::move(sub);
      } else if (at(Tok::Dot)) {
        advance();
        auto attr = make(ExprKind::Attribute, start);
        attr->name = expect(Tok::Name, "an attribute name after '.'").text;
        attr->func = std::move(e);
        attr->span = span_from(start);
        e = std::move(attr);
      } else {
        return e;
      }
    }
  }

  // arglist: argument (',' argument)* [','];
  // argument: test [comp_for] | NAME '=' test | '*' test | '**' test
  void arglist(Expr& call) {
    bool seen_kw = false;
    while (!at(Tok::RParen)) {
      Span start = peek().span;
      if (at(Tok::Name) && peek(1).kind == Tok::Assign) {
        Keyword kw;
        kw.name = advance().text;
        advance();
        kw.value = test();
        kw.span = span_from(start);
        for (const auto& k : call.keywords)
          if (k.name == kw.name) fail_span(kw.span, "keyword argument repeated: " + kw.name);
        call.keywords.push_back(std::move(kw));
        seen_kw = true;
      } else if (accept(Tok::DoubleStar)) {
        Keyword kw;
        kw.value = test();
        kw.span = span_from(start);
        call.keywords.push_back(std::move(kw));
        seen_kw = true;
      } else if (at(Tok::Star)) {
        call.elts.push_back(star_expr());
      } else {
        ExprPtr arg = namedexpr_test();
        if (at(Tok::KwFor)) {
          // f(x for x in xs): a generator argument, evaluated as a list.
          auto comp = make(ExprKind::ListComp, start);
          comp->func = std::move(arg);
          comp_for(*comp);
          comp->span = span_from(start);
          arg = std::move(comp);
        }
        if (seen_kw) fail_span(arg->span, "positional argument follows keyword argument");
        call.elts.push_back(std::move(arg));
      }
      if (!accept(Tok::Comma)) break;
    }
  }

  // subscriptlist: subscript (',' subscript)* [',']; subscript: test | [test] ':' [test] [':'
  // [test]]
  ExprPtr subscriptlist() {
    Span start = peek().span;
    ExprPtr first = subscript();
    if (!at(Tok::Comma)) return first;
    auto tup = make(ExprKind::Tuple, start);
    tup->elts.push_back(std::move(first));
    while (accept(Tok::Comma)) {
      if (at(Tok::RBracket)) break;
      tup->elts.push_back(subscript());
    }
    tup->span = span_from(start);
    return tup;
  }

  ExprPtr subscript() {
    Span start = peek().span;
    ExprPtr lower;
    if (!at(Tok::Colon)) {
      lower = star_or_test();
      if (!at(Tok::Colon)) return lower;
    }
    auto sl = make(ExprKind::Slice, start);
    advance(); // ':'
    ExprPtr upper, step;
    if (!at(Tok::Colon) && !at(Tok::Comma) && !at(Tok::RBracket)) upper = test();
    if (accept(Tok::Colon))
      if (!at(Tok::Comma) && !at(Tok::RBracket)) step = test();
    sl->elts.push_back(std::move(lower));
    sl->elts.push_back(std::move(upper));
    sl->elts.push_back(std::move(step));
    sl->span = span_from(start);
    return sl;
  }

  // comp_for: 'for' exprlist 'in' or_test ('if' test_nocond)* [comp_for]
  void comp_for(Expr& comp) {
    while (at(Tok::KwFor)) {
      advance();
      Comprehension c;
      c.target = exprlist();
      check_target(*c.target, "assign to");
      expect(Tok::KwIn, "'in' in comprehension");
      c.iter = or_test();
      while (accept(Tok::KwIf)) c.conds.push_back(test_nocond());
      comp.comps.push_back(std::move(c));
    }
    if (comp.func) mark_comprehension(*comp.func);
    for (auto& x : comp.elts) mark_comprehension(*x);
    for (auto& c : comp.comps)
      for (auto& x : c.conds) mark_comprehension(*x);
  }

  // atom: '(' [testlist_comp] ')' | '[' [testlist_comp] ']' | '{' [dictorsetmaker] '}'
  //     | NAME | NUMBER | STRING+ | '...' | 'None' | 'True' | 'False'
  ExprPtr atom() {
    DepthGuard g(*this);
    const Token& t = peek();
    Span start = t.span;
    switch (t.kind) {
    case Tok::Name: {
      auto e = make(ExprKind::Name, start);
      e->name = advance().text;
      return e;
    }
    case Tok::KwNone:
      advance();
      return make(ExprKind::NoneLit, start);
    case Tok::KwTrue:
    case Tok::KwFalse: {
      auto e = make(ExprKind::BoolLit, start);
      e->bool_value = advance().kind == Tok::KwTrue;
      return e;
    }
    case Tok::Ellipsis:
      advance();
      return make(ExprKind::EllipsisLit, start);
    case Tok::Int:
      return int_literal();
    case Tok::Float: {
      auto e = make(ExprKind::FloatLit, start);
      e->float_value = std::strtod(advance().text.c_str(), nullptr);
      return e;
    }
    case Tok::Imag: {
      auto e = make(ExprKind::ImagLit, start);
      e->float_value = std::strtod(advance().text.c_str(), nullptr);
      return e;
    }
    case Tok::String:
    case Tok::FString:
      return strings();
    case Tok::LParen: {
      advance();
      if (accept(Tok::RParen)) {
        auto e = make(ExprKind::Tuple, start);
        e->span = span_from(start);
        e->parenthesized_tuple = true;
        return e;
      }
      ExprPtr first = star_or_named();
      if (at(Tok::KwFor)) {
        auto comp = make(ExprKind::ListComp, start); // generator -> list
        comp->func = std::move(first);
        comp_for(*comp);
        expect(Tok::RParen);
        comp->span = span_from(start);
        return comp;
      }
      if (accept(Tok::RParen)) {
        if (first->kind == ExprKind::Tuple) first->parenthesized_tuple = true;
        if (first->kind == ExprKind::Starred)
          fail_span(first->span, "cannot use starred expression here");
        return first;
      }
      auto tup = make(ExprKind::Tuple, start);
      tup->elts.push_back(std::move(first));
      while (accept(Tok::Comma)) {
        if (at(Tok::RParen)) break;
        tup->elts.push_back(star_or_named());
      }
      expect(Tok::RParen, "')' or ','");
      tup->span = span_from(start);
      tup->parenthesized_tuple = true;
      return tup;
    }
    case Tok::LBracket: {
      advance();
      auto list = make(ExprKind::List, start);
      if (accept(Tok::RBracket)) {
        list->span = span_from(start);
        return list;
      }
      ExprPtr first = star_or_named();
      if (at(Tok::KwFor)) {
        auto comp = make(ExprKind::ListComp, start);
        comp->func = std::move(first);
        comp_for(*comp);
        expect(Tok::RBracket, "']'");
        comp->span = span_from(start);
        return comp;
      }
      list->elts.push_back(std::move(first));
      while (accept(Tok::Comma)) {
        if (at(Tok::RBracket)) break;
        list->elts.push_back(star_or_named());
      }
      expect(Tok::RBracket, "']' or ','");
      list->span = span_from(start);
      return list;
    }
    case Tok::LBrace:
      return dict_or_set();
    default:
      break;
    }
    expected("an expression");
  }

  ExprPtr int_literal() {
    const Token& t = advance();
    auto e = make(ExprKind::IntLit, t.span);
    const std::string& s = t.text;
    int base = 10;
    size_t skip = 0;
    if (s.size() > 1 && s[0] == '0' && std::isalpha(static_cast<unsigned char>(s[1]))) {
      char k = static_cast<char>(std::tolower(s[1]));
      base = k == 'x' ? 16 : k == 'o' ? 8 : 2;
      skip = 2;
    } else if (s.size() > 1 && s[0] == '0' && s.find_first_not_of('0') != std::string::npos) {
      fail_at(t, "leading zeros in decimal integer literals are not permitted; use 0o for octal");
    }
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str() + skip, nullptr, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) {
      // Beyond 64 bits: the decimal digits, made a big int when evaluated.
      auto big = BigInt::parse(std::string_view(s).substr(skip), base);
      if (!big) fail_at(t, "invalid integer literal");
      e->name = big->to_string();
      return e;
    }
    e->int_value = static_cast<int64_t>(v);
    return e;
  }

  // STRING+: adjacent literals concatenate; any f-string makes the result an f-string.
  ExprPtr strings() {
    Span start = peek().span;
    bool any_f = false;
    std::vector<FStringPart> parts;
    while (at(Tok::String) || at(Tok::FString)) {
      const Token& t = advance();
      if (t.kind == Tok::String) {
        if (!parts.empty() && !parts.back().expr)
          parts.back().literal += t.text;
        else
          parts.push_back(FStringPart{t.text, nullptr, 0, {}, {}});
      } else {
        any_f = true;
        fstring_parts(t.text, t.body_offset, parts, t.span, 0, t.raw);
      }
    }
    if (!any_f) {
      auto e = make(ExprKind::StrLit, span_from(start));
      e->name = parts.empty() ? std::string() : std::move(parts[0].literal);
      return e;
    }
    auto e = make(ExprKind::FString, span_from(start));
    e->fparts = std::move(parts);
    return e;
  }

  // An f-string's literal piece with its escapes decoded (lang/lexer.hpp's
  // decoder; the lexer keeps f-string bodies as written so that the offsets
  // of the {fields} stay exact). Raw f-strings keep them.
  std::string decode_escapes(const std::string& text, bool raw, const Span& where) {
    if (raw) return text;
    std::string out;
    for (size_t i = 0; i < text.size();) {
      if (text[i] != '\\' || i + 1 >= text.size()) {
        out += text[i++];
        continue;
      }
      ++i;
      std::string err = decode_escape(text, i, out);
      if (!err.empty()) fail_span(where, err);
    }
    return out;
  }

  // Splits an f-string body into literal text and {expr[!conv][:spec]} fields.
  void fstring_parts(const std::string& body, uint32_t offset, std::vector<FStringPart>& parts,
                     const Span& tok_span, int nest, bool raw) {
    if (nest > 2) fail_span(tok_span, "f-string format specs nested too deeply");
    std::string lit;
    auto flush = [&] {
      if (lit.empty()) return;
      std::string text = decode_escapes(lit, raw, tok_span);
      if (!parts.empty() && !parts.back().expr)
        parts.back().literal += text;
      else
        parts.push_back(FStringPart{text, nullptr, 0, {}, {}});
      lit.clear();
    };
    size_t i = 0;
    while (i < body.size()) {
      char c = body[i];
      if (c == '{' && i + 1 < body.size() && body[i + 1] == '{' && nest == 0) {
        lit += '{';
        i += 2;
        continue;
      }
      if (c == '}' && i + 1 < body.size() && body[i + 1] == '}' && nest == 0) {
        lit += '}';
        i += 2;
        continue;
      }
      if (c == '}')
        fail_span(
            Span{src_, offset + static_cast<uint32_t>(i), offset + static_cast<uint32_t>(i) + 1},
            "f-string: single '}' is not allowed");
      if (c != '{') {
        lit += c;
        ++i;
        continue;
      }
      flush();
      // Find the end of the expression: ':' '!' '=' or '}' at bracket depth 0.
      size_t j = i + 1;
      int depth = 0;
      char quote = 0;
      while (j < body.size()) {
        char d = body[j];
        if (quote) {
          if (d == quote) quote = 0;
        } else if (d == '\'' || d == '"') {
          quote = d;
        } else if (d == '(' || d == '[' || d == '{') {
          ++depth;
        } else if (d == ')' || d == ']' || d == '}') {
          if (depth == 0) break;
          --depth;
        } else if (depth == 0 &&
                   (d == ':' || (d == '!' && j + 1 < body.size() && body[j + 1] != '=')))
          break;
        ++j;
      }
      Span field{src_, offset + static_cast<uint32_t>(i), offset + static_cast<uint32_t>(j)};
      if (j >= body.size()) fail_span(field, "f-string: expected '}' to close '{'");
      std::string expr_text = body.substr(i + 1, j - i - 1);
      FStringPart part;
      // "{x=}" prints "x=" (the text as written, spaces too) then repr(x), or
      // format(x, spec) when a spec follows and no conversion is given.
      size_t last = expr_text.find_last_not_of(' ');
      bool debug = false;
      if (last != std::string::npos && expr_text[last] == '=' &&
          (last == 0 || std::string("=!<>").find(expr_text[last - 1]) == std::string::npos)) {
        part.expr_text = expr_text;
        expr_text = expr_text.substr(0, last);
        part.conversion = 'r';
        debug = true;
      }
      part.expr = sub_expression(expr_text, offset + static_cast<uint32_t>(i + 1), field);
      if (body[j] == '!') {
        if (j + 1 >= body.size() ||
            (body[j + 1] != 'r' && body[j + 1] != 's' && body[j + 1] != 'a'))
          fail_span(field, "f-string: expected 'r', 's' or 'a' after '!'");
        part.conversion = body[j + 1] == 'a' ? 'r' : body[j + 1];
        j += 2;
        debug = false; // an explicit conversion stays
      }
      if (j < body.size() && body[j] == ':') {
        if (debug) part.conversion = 0;
        size_t k = j + 1;
        int d2 = 0;
        while (k < body.size() && !(body[k] == '}' && d2 == 0)) {
          if (body[k] == '{') ++d2;
          if (body[k] == '}') --d2;
          ++k;
        }
        if (k >= body.size()) fail_span(field, "f-string: expected '}' after format spec");
        fstring_parts(body.substr(j + 1, k - j - 1), offset + static_cast<uint32_t>(j + 1),
                      part.spec, tok_span, nest + 1, raw);
        j = k;
      }
      if (j >= body.size() || body[j] != '}') fail_span(field, "f-string: expected '}'");
      parts.push_back(std::move(part));
      i = j + 1;
    }
    flush();
  }

  ExprPtr sub_expression(const std::string& text, uint32_t offset, const Span& field) {
    size_t lead = text.find_first_not_of(" \t");
    if (lead == std::string::npos) fail_span(field, "f-string: empty expression not allowed");
    auto sub = std::make_shared<SourceFile>(src_->path(), text.substr(lead));
    std::vector<Token> toks = lex(sub);
    for (auto& t : toks) {
      t.span.file = src_;
      t.span.begin += offset + static_cast<uint32_t>(lead);
      t.span.end += offset + static_cast<uint32_t>(lead);
      t.body_offset += offset + static_cast<uint32_t>(lead);
    }
    Parser p(src_, std::make_shared<const std::vector<Token>>(std::move(toks)));
    p.depth_ = depth_;
    ExprPtr e = p.testlist_star();
    while (p.accept(Tok::Newline)) {
    }
    if (!p.at(Tok::End)) p.expected("'}' in f-string");
    return e;
  }

  // dictorsetmaker: (test ':' test | '**' expr) (comp_for | (',' ...)* [','])
  //               | (test|star_expr) (comp_for | (',' ...)* [','])
  ExprPtr dict_or_set() {
    Span start = advance().span;
    if (accept(Tok::RBrace)) {
      auto d = make(ExprKind::Dict, start);
      d->span = span_from(start);
      return d;
    }
    bool is_dict = false;
    ExprPtr first_key, first_val;
    if (accept(Tok::DoubleStar)) {
      is_dict = true;
      first_val = bitor_expr();
    } else {
      first_key = star_or_test();
      if (accept(Tok::Colon)) {
        is_dict = true;
        first_val = test();
      }
    }
    if (is_dict) {
      auto d = make(ExprKind::Dict, start);
      if (at(Tok::KwFor) && first_key) {
        auto comp = make(ExprKind::DictComp, start);
        comp->func = std::move(first_key);
        comp->elts.push_back(std::move(first_val));
        comp_for(*comp);
        expect(Tok::RBrace, "'}'");
        comp->span = span_from(start);
        return comp;
      }
      d->elts.push_back(std::move(first_key));
      d->values.push_back(std::move(first_val));
      while (accept(Tok::Comma)) {
        if (at(Tok::RBrace)) break;
        if (accept(Tok::DoubleStar)) {
          d->elts.push_back(nullptr);
          d->values.push_back(bitor_expr());
          continue;
        }
        d->elts.push_back(test());
        expect(Tok::Colon, "':' in dict literal");
        d->values.push_back(test());
      }
      expect(Tok::RBrace, "'}' or ','");
      d->span = span_from(start);
      return d;
    }
    if (at(Tok::KwFor)) {
      auto comp = make(ExprKind::SetComp, start);
      comp->func = std::move(first_key);
      comp_for(*comp);
      expect(Tok::RBrace, "'}'");
      comp->span = span_from(start);
      return comp;
    }
    auto s = make(ExprKind::Set, start);
    s->elts.push_back(std::move(first_key));
    while (accept(Tok::Comma)) {
      if (at(Tok::RBrace)) break;
      s->elts.push_back(star_or_test());
    }
    expect(Tok::RBrace, "'}' or ','");
    s->span = span_from(start);
    return s;
  }

  SourceRef src_;
  std::shared_ptr<const std::vector<Token>> toks_;
  bool lazy_ = false; // defs' bodies become LazyBody (parse_module's lazy_def_bodies)
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<std::vector<std::string>> nonlocals_; // per enclosing def: its nonlocal names
};

} // namespace

Module parse_module(const SourceRef& src, bool lazy_def_bodies) {
  return Parser(src, std::make_shared<const std::vector<Token>>(lex(src)), lazy_def_bodies)
      .module();
}

ExprPtr parse_expression(const SourceRef& src) {
  return Parser(src, std::make_shared<const std::vector<Token>>(lex(src))).lone_expression();
}

const Block& LazyBody::parsed() {
  std::call_once(once, [this] { Parser(src, toks, true).def_body(*this); });
  return body;
}

} // namespace pxl
