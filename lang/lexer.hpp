// The lexer: UTF-8 source -> tokens, with Python's INDENT/DEDENT/NEWLINE
// structure (newlines inside brackets are ignored; blank and comment-only
// lines produce nothing).
#pragma once
#include <string>
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

// Python's string escapes, the one decoder of the lexer (plain strings) and
// the parser (the literal pieces of f-strings): `s[pos]` is the character
// after a backslash; appends what the escape stands for to `out` and moves
// `pos` past it. Unknown escapes stay as written (backslash kept). Returns ""
// or the error text of a malformed \x, \u or \U escape.
std::string decode_escape(const std::string& s, size_t& pos, std::string& out);

} // namespace pxl
