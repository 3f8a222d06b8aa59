// The parser: tokens -> AST. Recursive descent over Python's grammar (the
// subset of DESIGN §2); each parse function has its production above it.
// Syntax errors name what was expected and what was found; input that ends
// too early throws IncompleteInput (the REPL then asks for more lines).
#pragma once
#include <mutex>

#include "lang/ast.hpp"
#include "lang/lexer.hpp"

namespace pxl {

// A def's body left unparsed: its tokens (shared with the rest of its module's
// lazy bodies) from the ':' after the signature. Parsed once, on first use,
// from whichever thread gets there first (a host callback may run on a device
// thread).
struct LazyBody {
  std::shared_ptr<const std::vector<Token>> toks;
  SourceRef src;
  size_t def_token = 0, colon_token = 0;
  std::once_flag once;
  Block body;
  std::vector<std::string> nonlocals;
  // The parsed body; throws the body's syntax error, if any, on every use.
  const Block& parsed();
};

// With `lazy_def_bodies`, the bodies of defs are only lexed (their tokens
// kept) and parsed when first needed (LazyBody): for the stdlib, most of
// whose functions a program never calls, this halves start-up. User code is
// parsed whole, so every syntax error shows before anything runs.
Module parse_module(const SourceRef& src, bool lazy_def_bodies = false);
// A single expression (":type EXPR" in the REPL).
ExprPtr parse_expression(const SourceRef& src);

} // namespace pxl
