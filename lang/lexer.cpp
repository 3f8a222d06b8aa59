#include "lang/lexer.hpp"

#include <cctype>
#include <cstring>
#include <unordered_map>

namespace pxl {

const char* tok_name(Tok t) {
  switch (t) {
  case Tok::Name:
    return "a name";
  case Tok::Int:
    return "an integer";
  case Tok::Float:
    return "a number";
  case Tok::Imag:
    return "an imaginary number";
  case Tok::String:
    return "a string";
  case Tok::FString:
    return "an f-string";
  case Tok::Newline:
    return "end of line";
  case Tok::Indent:
    return "an indented block";
  case Tok::Dedent:
    return "end of block";
  case Tok::End:
    return "end of input";
  case Tok::KwDef:
    return "'def'";
  case Tok::KwReturn:
    return "'return'";
  case Tok::KwIf:
    return "'if'";
  case Tok::KwElif:
    return "'elif'";
  case Tok::KwElse:
    return "'else'";
  case Tok::KwFor:
    return "'for'";
  case Tok::KwIn:
    return "'in'";
  case Tok::KwWhile:
    return "'while'";
  case Tok::KwBreak:
    return "'break'";
  case Tok::KwContinue:
    return "'continue'";
  case Tok::KwPass:
    return "'pass'";
  case Tok::KwLambda:
    return "'lambda'";
  case Tok::KwAnd:
    return "'and'";
  case Tok::KwOr:
    return "'or'";
  case Tok::KwNot:
    return "'not'";
  case Tok::KwIs:
    return "'is'";
  case Tok::KwNone:
    return "'None'";
  case Tok::KwTrue:
    return "'True'";
  case Tok::KwFalse:
    return "'False'";
  case Tok::KwImport:
    return "'import'";
  case Tok::KwFrom:
    return "'from'";
  case Tok::KwAs:
    return "'as'";
  case Tok::KwAssert:
    return "'assert'";
  case Tok::KwDel:
    return "'del'";
  case Tok::KwGlobal:
    return "'global'";
  case Tok::KwNonlocal:
    return "'nonlocal'";
  case Tok::KwClass:
    return "'class'";
  case Tok::KwTry:
    return "'try'";
  case Tok::KwExcept:
    return "'except'";
  case Tok::KwFinally:
    return "'finally'";
  case Tok::KwRaise:
    return "'raise'";
  case Tok::KwWith:
    return "'with'";
  case Tok::KwYield:
    return "'yield'";
  case Tok::KwAsync:
    return "'async'";
  case Tok::KwAwait:
    return "'await'";
  case Tok::LParen:
    return "'('";
  case Tok::RParen:
    return "')'";
  case Tok::LBracket:
    return "'['";
  case Tok::RBracket:
    return "']'";
  case Tok::LBrace:
    return "'{'";
  case Tok::RBrace:
    return "'}'";
  case Tok::Comma:
    return "','";
  case Tok::Colon:
    return "':'";
  case Tok::Dot:
    return "'.'";
  case Tok::Semicolon:
    return "';'";
  case Tok::At:
    return "'@'";
  case Tok::Arrow:
    return "'->'";
  case Tok::Assign:
    return "'='";
  case Tok::Plus:
    return "'+'";
  case Tok::Minus:
    return "'-'";
  case Tok::Star:
    return "'*'";
  case Tok::DoubleStar:
    return "'**'";
  case Tok::Slash:
    return "'/'";
  case Tok::DoubleSlash:
    return "'//'";
  case Tok::Percent:
    return "'%'";
  case Tok::Amp:
    return "'&'";
  case Tok::Pipe:
    return "'|'";
  case Tok::Caret:
    return "'^'";
  case Tok::Tilde:
    return "'~'";
  case Tok::LShift:
    return "'<<'";
  case Tok::RShift:
    return "'>>'";
  case Tok::Eq:
    return "'=='";
  case Tok::Ne:
    return "'!='";
  case Tok::Lt:
    return "'<'";
  case Tok::Le:
    return "'<='";
  case Tok::Gt:
    return "'>'";
  case Tok::Ge:
    return "'>='";
  case Tok::Walrus:
    return "':='";
  case Tok::PlusEq:
    return "'+='";
  case Tok::MinusEq:
    return "'-='";
  case Tok::StarEq:
    return "'*='";
  case Tok::SlashEq:
    return "'/='";
  case Tok::DoubleSlashEq:
    return "'//='";
  case Tok::PercentEq:
    return "'%='";
  case Tok::DoubleStarEq:
    return "'**='";
  case Tok::AmpEq:
    return "'&='";
  case Tok::PipeEq:
    return "'|='";
  case Tok::CaretEq:
    return "'^='";
  case Tok::AtEq:
    return "'@='";
  case Tok::LShiftEq:
    return "'<<='";
  case Tok::RShiftEq:
    return "'>>='";
  case Tok::Ellipsis:
    return "'...'";
  }
  return "?";
}

namespace {

const std::unordered_map<std::string, Tok>& keywords() {
  static const std::unordered_map<std::string, Tok> kw = {
      {"def", Tok::KwDef},       {"return", Tok::KwReturn},
      {"if", Tok::KwIf},         {"elif", Tok::KwElif},
      {"else", Tok::KwElse},     {"for", Tok::KwFor},
      {"in", Tok::KwIn},         {"while", Tok::KwWhile},
      {"break", Tok::KwBreak},   {"continue", Tok::KwContinue},
      {"pass", Tok::KwPass},     {"lambda", Tok::KwLambda},
      {"and", Tok::KwAnd},       {"or", Tok::KwOr},
      {"not", Tok::KwNot},       {"is", Tok::KwIs},
      {"None", Tok::KwNone},     {"True", Tok::KwTrue},
      {"False", Tok::KwFalse},   {"import", Tok::KwImport},
      {"from", Tok::KwFrom},     {"as", Tok::KwAs},
      {"assert", Tok::KwAssert}, {"del", Tok::KwDel},
      {"global", Tok::KwGlobal}, {"nonlocal", Tok::KwNonlocal},
      {"class", Tok::KwClass},   {"try", Tok::KwTry},
      {"except", Tok::KwExcept}, {"finally", Tok::KwFinally},
      {"raise", Tok::KwRaise},   {"with", Tok::KwWith},
      {"yield", Tok::KwYield},   {"async", Tok::KwAsync},
      {"await", Tok::KwAwait}};
  return kw;
}

// Operators, longest first so that maximal munch works by linear scan.
struct OpSpelling {
  const char* text;
  Tok tok;
};
const OpSpelling kOps[] = {
    {"**=", Tok::DoubleStarEq},
    {"//=", Tok::DoubleSlashEq},
    {"<<=", Tok::LShiftEq},
    {">>=", Tok::RShiftEq},
    {"...", Tok::Ellipsis},
    {"**", Tok::DoubleStar},
    {"//", Tok::DoubleSlash},
    {"<<", Tok::LShift},
    {">>", Tok::RShift},
    {"==", Tok::Eq},
    {"!=", Tok::Ne},
    {"<=", Tok::Le},
    {">=", Tok::Ge},
    {"->", Tok::Arrow},
    {":=", Tok::Walrus},
    {"+=", Tok::PlusEq},
    {"-=", Tok::MinusEq},
    {"*=", Tok::StarEq},
    {"/=", Tok::SlashEq},
    {"%=", Tok::PercentEq},
    {"&=", Tok::AmpEq},
    {"|=", Tok::PipeEq},
    {"^=", Tok::CaretEq},
    {"@=", Tok::AtEq},
    {"(", Tok::LParen},
    {")", Tok::RParen},
    {"[", Tok::LBracket},
    {"]", Tok::RBracket},
    {"{", Tok::LBrace},
    {"}", Tok::RBrace},
    {",", Tok::Comma},
    {":", Tok::Colon},
    {".", Tok::Dot},
    {";", Tok::Semicolon},
    {"@", Tok::At},
    {"=", Tok::Assign},
    {"+", Tok::Plus},
    {"-", Tok::Minus},
    {"*", Tok::Star},
    {"/", Tok::Slash},
    {"%", Tok::Percent},
    {"&", Tok::Amp},
    {"|", Tok::Pipe},
    {"^", Tok::Caret},
    {"~", Tok::Tilde},
    {"<", Tok::Lt},
    {">", Tok::Gt},
};

bool is_ident_start(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool is_ident_char(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
public:
  explicit Lexer(const SourceRef& src) : src_(src), s_(src->text()) {}

  std::vector<Token> run() {
    check_utf8();
    indents_.push_back(0);
    bool at_line_start = true;
    while (true) {
      if (at_line_start && depth_ == 0) {
        if (!handle_indentation()) break; // end of input
        at_line_start = false;
      }
      skip_spaces();
      if (pos_ >= s_.size()) break;
      char c = s_[pos_];
      if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c == '\\' && pos_ + 1 < s_.size() &&
          (s_[pos_ + 1] == '\n' || (s_[pos_ + 1] == '\r' && pos_ + 2 < s_.size()))) {
        pos_ += s_[pos_ + 1] == '\r' ? 3 : 2; // line continuation
        continue;
      }
      if (c == '\n' || c == '\r') {
        uint32_t start = static_cast<uint32_t>(pos_);
        pos_ += (c == '\r' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n') ? 2 : 1;
        if (depth_ == 0) {
          emit(Tok::Newline, start, start + 1);
          at_line_start = true;
        }
        continue;
      }
      lex_token();
    }
    if (depth_ > 0)
      throw IncompleteInput(ErrCode::Syntax,
                            std::string("unexpected end of input: ") + tok_name(open_.back().kind) +
                                " was never closed",
                            open_.back().span);
    uint32_t end = static_cast<uint32_t>(s_.size());
    if (!toks_.empty() && toks_.back().kind != Tok::Newline) emit(Tok::Newline, end, end);
    while (indents_.size() > 1) {
      indents_.pop_back();
      emit(Tok::Dedent, end, end);
    }
    emit(Tok::End, end, end);
    return std::move(toks_);
  }

private:
  Span span(size_t b, size_t e) const {
    return Span{src_, static_cast<uint32_t>(b), static_cast<uint32_t>(e)};
  }
  void emit(Tok k, size_t b, size_t e, std::string text = {}) {
    toks_.push_back(Token{k, span(b, e), std::move(text), 0});
  }
  [[noreturn]] void fail(const std::string& msg, size_t b, size_t e,
                         ErrCode code = ErrCode::Lexical) {
    throw Error(code, msg, span(b, e));
  }

  void check_utf8() {
    size_t i = 0;
    while (i < s_.size()) {
      unsigned char c = s_[i];
      int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
      if (n < 0) fail("invalid UTF-8 in source", i, i + 1);
      for (int k = 1; k <= n; ++k)
        if (i + k >= s_.size() || (static_cast<unsigned char>(s_[i + k]) & 0xC0) != 0x80)
          fail("invalid UTF-8 in source", i, i + 1);
      if (c == 0) fail("NUL character in source", i, i + 1);
      i += n + 1;
    }
  }

  void skip_spaces() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\f')) ++pos_;
  }

  // At the start of a logical line: measure indentation, skip blank/comment
  // lines, and emit INDENT/DEDENT. Returns false at end of input.
  bool handle_indentation() {
    while (true) {
      size_t line_start = pos_;
      int col = 0;
      while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\f')) {
        col = s_[pos_] == '\t' ? (col / 8 + 1) * 8 : col + 1;
        ++pos_;
      }
      if (pos_ >= s_.size()) return false;
      char c = s_[pos_];
      if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      }
      if (pos_ < s_.size() && (s_[pos_] == '\n' || s_[pos_] == '\r')) {
        pos_ += (s_[pos_] == '\r' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n') ? 2 : 1;
        continue; // blank line
      }
      if (pos_ >= s_.size()) return false;
      if (col > indents_.back()) {
        indents_.push_back(col);
        emit(Tok::Indent, line_start, pos_);
      } else {
        while (col < indents_.back()) {
          indents_.pop_back();
          emit(Tok::Dedent, pos_, pos_);
        }
        if (col != indents_.back())
          fail("unindent does not match any outer indentation level", line_start, pos_ + 1,
               ErrCode::Indentation);
      }
      return true;
    }
  }

  void lex_token() {
    size_t start = pos_;
    unsigned char c = s_[pos_];
    // String prefixes: r, f, rf, fr (any case); b/u are accepted only as u.
    if (is_ident_start(c)) {
      size_t p = pos_;
      while (p < s_.size() && is_ident_char(s_[p])) ++p;
      std::string word = s_.substr(pos_, p - pos_);
      if (p < s_.size() && (s_[p] == '\'' || s_[p] == '"') && word.size() <= 2) {
        std::string lw;
        for (char ch : word) lw += static_cast<char>(std::tolower(ch));
        if (lw == "r" || lw == "f" || lw == "rf" || lw == "fr" || lw == "u") {
          pos_ = p;
          lex_string(start, lw.find('r') != std::string::npos, lw.find('f') != std::string::npos);
          return;
        }
        if (lw == "b" || lw == "br" || lw == "rb")
          fail("bytes literals are not supported", start, p + 1);
      }
      pos_ = p;
      auto it = keywords().find(word);
      if (it != keywords().end())
        emit(it->second, start, pos_, word);
      else
        emit(Tok::Name, start, pos_, word);
      return;
    }
    if (std::isdigit(c) || (c == '.' && pos_ + 1 < s_.size() && std::isdigit(s_[pos_ + 1]))) {
      lex_number();
      return;
    }
    if (c == '\'' || c == '"') {
      lex_string(start, false, false);
      return;
    }
    for (const auto& op : kOps) {
      if (op.text[0] != c) continue; // most operators: no string compare at all
      size_t n = std::char_traits<char>::length(op.text);
      if (s_.compare(pos_, n, op.text) == 0) {
        pos_ += n;
        emit(op.tok, start, pos_);
        if (op.tok == Tok::LParen || op.tok == Tok::LBracket || op.tok == Tok::LBrace) {
          ++depth_;
          open_.push_back(toks_.back());
        } else if (op.tok == Tok::RParen || op.tok == Tok::RBracket || op.tok == Tok::RBrace) {
          if (depth_ == 0)
            fail(std::string("unmatched ") + tok_name(op.tok), start, pos_, ErrCode::Syntax);
          Tok want = open_.back().kind == Tok::LParen     ? Tok::RParen
                     : open_.back().kind == Tok::LBracket ? Tok::RBracket
                                                          : Tok::RBrace;
          if (want != op.tok)
            fail(std::string("closing ") + tok_name(op.tok) + " does not match opening " +
                     tok_name(open_.back().kind),
                 start, pos_, ErrCode::Syntax);
          --depth_;
          open_.pop_back();
        }
        return;
      }
    }
    if (c == '!') fail("invalid character '!' (use 'not' or '!=')", start, start + 1);
    if (c == '$' || c == '?' || c == '`')
      fail(std::string("invalid character '") + static_cast<char>(c) + "' in source", start,
           start + 1);
    fail("invalid character in source", start, start + 1);
  }

  void lex_number() {
    size_t start = pos_;
    auto digits = [&](auto pred) {
      while (pos_ < s_.size() && (pred(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        ++pos_;
    };
    bool is_float = false;
    if (s_[pos_] == '0' && pos_ + 1 < s_.size() && std::strchr("xXoObB", s_[pos_ + 1]) &&
        s_[pos_ + 1] != '\0') {
      char kind = static_cast<char>(std::tolower(s_[pos_ + 1]));
      pos_ += 2;
      size_t body = pos_;
      if (kind == 'x') digits([](unsigned char ch) { return std::isxdigit(ch) != 0; });
      if (kind == 'o') digits([](unsigned char ch) { return ch >= '0' && ch <= '7'; });
      if (kind == 'b') digits([](unsigned char ch) { return ch == '0' || ch == '1'; });
      if (pos_ == body) fail("invalid number literal", start, pos_);
    } else {
      digits([](unsigned char ch) { return std::isdigit(ch) != 0; });
      if (pos_ < s_.size() && s_[pos_] == '.' && !(pos_ + 1 < s_.size() && s_[pos_ + 1] == '.')) {
        is_float = true;
        ++pos_;
        digits([](unsigned char ch) { return std::isdigit(ch) != 0; });
      }
      if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
        size_t save = pos_;
        ++pos_;
        if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
        if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
          is_float = true;
          digits([](unsigned char ch) { return std::isdigit(ch) != 0; });
        } else {
          pos_ = save;
        }
      }
    }
    // An imaginary literal: a decimal number followed by j (2j, 1.5j, 1e3j).
    bool imag = false;
    if (pos_ < s_.size() && (s_[pos_] == 'j' || s_[pos_] == 'J') &&
        !(s_[start] == '0' && pos_ > start + 1 && std::strchr("xXoObB", s_[start + 1]))) {
      imag = true;
      ++pos_;
    }
    if (pos_ < s_.size() && is_ident_char(s_[pos_]))
      fail("invalid number literal", start, pos_ + 1);
    std::string text;
    for (size_t i = start; i < pos_ - (imag ? 1 : 0); ++i)
      if (s_[i] != '_') text += s_[i];
    emit(imag ? Tok::Imag : is_float ? Tok::Float : Tok::Int, start, pos_, text);
  }

  // pos_ is at the opening quote.
  void lex_string(size_t start, bool raw, bool fstring) {
    char q = s_[pos_];
    bool triple = s_.compare(pos_, 3, std::string(3, q)) == 0;
    pos_ += triple ? 3 : 1;
    size_t body_start = pos_;
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) {
        if (triple)
          throw IncompleteInput(ErrCode::Syntax, "unterminated triple-quoted string",
                                span(start, start + 3));
        fail("unterminated string literal", start, pos_, ErrCode::Syntax);
      }
      char c = s_[pos_];
      if (!triple && (c == '\n' || c == '\r'))
        fail("unterminated string literal (missing closing quote)", start, pos_, ErrCode::Syntax);
      if (c == q && (!triple || s_.compare(pos_, 3, std::string(3, q)) == 0)) break;
      if (c == '\\' && pos_ + 1 < s_.size()) {
        if (raw || fstring) {
          // Raw strings keep the backslash; f-strings are decoded by the parser
          // piecewise (so that '{' offsets stay exact).
          out += c;
          out += s_[pos_ + 1];
          pos_ += 2;
          continue;
        }
        pos_ += 1;
        decode_escape(out);
        continue;
      }
      out += c;
      ++pos_;
    }
    size_t body_end = pos_;
    pos_ += triple ? 3 : 1;
    (void)body_end;
    Token t{fstring ? Tok::FString : Tok::String, span(start, pos_), std::move(out),
            static_cast<uint32_t>(body_start), raw};
    toks_.push_back(std::move(t));
  }

  // pos_ is just past a backslash: decodes the escape (lang/lexer.hpp).
  void decode_escape(std::string& out) {
    size_t esc_start = pos_ - 1;
    std::string err = pxl::decode_escape(s_, pos_, out);
    if (!err.empty()) fail(err, esc_start, pos_, ErrCode::Syntax);
  }

  SourceRef src_;
  const std::string& s_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<Token> open_;
  std::vector<int> indents_;
  std::vector<Token> toks_;
};

} // namespace

std::vector<Token> lex(const SourceRef& src) { return Lexer(src).run(); }

std::string decode_escape(const std::string& s, size_t& pos, std::string& out) {
  char e = s[pos++];
  auto hex = [&](int n, uint32_t& v) {
    v = 0;
    for (int i = 0; i < n; ++i) {
      if (pos >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[pos]))) return false;
      char h = s[pos++];
      v = v * 16 +
          (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : std::tolower(h) - 'a' + 10);
    }
    return true;
  };
  uint32_t cp = 0;
  switch (e) {
  case 'n':
    out += '\n';
    break;
  case 't':
    out += '\t';
    break;
  case 'r':
    out += '\r';
    break;
  case '0':
  case '1':
  case '2':
  case '3':
  case '4':
  case '5':
  case '6':
  case '7': { // up to three octal digits: \0, \101
    cp = static_cast<uint32_t>(e - '0');
    for (int k = 0; k < 2 && pos < s.size() && s[pos] >= '0' && s[pos] <= '7'; ++k)
      cp = cp * 8 + static_cast<uint32_t>(s[pos++] - '0');
    append_utf8(out, cp);
    break;
  }
  case 'a':
    out += '\a';
    break;
  case 'b':
    out += '\b';
    break;
  case 'f':
    out += '\f';
    break;
  case 'v':
    out += '\v';
    break;
  case '\\':
  case '\'':
  case '"':
    out += e;
    break;
  case '\n':
    break; // an escaped newline continues the string
  case 'x':
  case 'u':
  case 'U':
    if (!hex(e == 'x' ? 2 : e == 'u' ? 4 : 8, cp))
      return std::string("truncated \\") + e + " escape in string";
    if (cp > 0x10FFFF) return "invalid \\U escape";
    append_utf8(out, cp);
    break;
  default:
    out += '\\';
    out += e;
  }
  return "";
}

} // namespace pxl
