// Tokens of the pxl surface syntax (a Python subset).
#pragma once
#include <string>

#include "lang/source.hpp"

namespace pxl {

enum class Tok : uint8_t {
  Name,
  Int,
  Float,
  Imag,
  String,
  FString,
  Newline,
  Indent,
  Dedent,
  End,
  // keywords
  KwDef,
  KwReturn,
  KwIf,
  KwElif,
  KwElse,
  KwFor,
  KwIn,
  KwWhile,
  KwBreak,
  KwContinue,
  KwPass,
  KwLambda,
  KwAnd,
  KwOr,
  KwNot,
  KwIs,
  KwNone,
  KwTrue,
  KwFalse,
  KwImport,
  KwFrom,
  KwAs,
  KwAssert,
  KwDel,
  KwGlobal,
  KwNonlocal,
  KwClass,
  KwTry,
  KwExcept,
  KwFinally,
  KwRaise,
  KwWith,
  KwYield,
  KwAsync,
  KwAwait,
  // operators and delimiters
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Dot,
  Semicolon,
  At,
  Arrow,
  Assign,
  Plus,
  Minus,
  Star,
  DoubleStar,
  Slash,
  DoubleSlash,
  Percent,
  Amp,
  Pipe,
  Caret,
  Tilde,
  LShift,
  RShift,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Walrus,
  PlusEq,
  MinusEq,
  StarEq,
  SlashEq,
  DoubleSlashEq,
  PercentEq,
  DoubleStarEq,
  AmpEq,
  PipeEq,
  CaretEq,
  AtEq,
  LShiftEq,
  RShiftEq,
  Ellipsis,
};

const char* tok_name(Tok t); // for "expected X, found Y" messages

struct Token {
  Tok kind = Tok::End;
  Span span;
  std::string text; // identifier, decoded string body, raw f-string body, number text
  // For f-strings: offset in the source of the first body character, so
  // embedded expressions get exact spans.
  uint32_t body_offset = 0;
  bool raw = false; // an rf-string: its literal pieces keep their backslashes
};

} // namespace pxl
