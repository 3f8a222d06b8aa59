// The lexer: UTF-8 source -> tokens, with Python's INDENT/DEDENT/NEWLINE
// structure (newlines inside brackets are ignored; blank and comment-only
// lines produce nothing).
#pragma once
#include <vector>

#include "lang/diag.hpp"
#include "lang/token.hpp"

namespace pxl {

// Thrown (instead of a plain Error) when the input ended too early: an open
// bracket, an unterminated triple-quoted string, a block header with no body.
// The REPL uses it to ask for another line.
class IncompleteInput : public Error {
public:
  using Error::Error;
};

std::vector<Token> lex(const SourceRef& src);

} // namespace pxl
