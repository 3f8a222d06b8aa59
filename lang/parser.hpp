// The parser: tokens -> AST. Recursive descent over Python's grammar (the
// subset of DESIGN §2); each parse function has its production above it.
// Syntax errors name what was expected and what was found; input that ends
// too early throws IncompleteInput (the REPL then asks for more lines).
#pragma once
#include "lang/ast.hpp"
#include "lang/lexer.hpp"

namespace pxl {

Module parse_module(const SourceRef& src);
// A single expression (":type EXPR" in the REPL).
ExprPtr parse_expression(const SourceRef& src);

} // namespace pxl
