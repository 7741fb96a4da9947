// The .kiln lexer: tokens with locations. Newlines separate statements except inside
// parentheses or brackets, where they continue the expression, so the lexer drops them there.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "generator/frontend/source.h"

namespace kiln::frontend {

enum class Tok : uint8_t {
  Ident,
  Int,
  Float,
  String,  // '...' or "...", no escapes
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Dot,
  DotDot,
  Arrow,
  Assign,
  Plus,
  Minus,
  Star,
  StarStar,
  Slash,
  Percent,
  At,
  Lt,
  Le,
  Gt,
  Ge,
  EqEq,
  Ne,
  Amp,
  Pipe,
  Caret,
  Tilde,
  Shl,
  Shr,
  Newline,
  Error,  // a bad character or number; already reported, the parser stays quiet about it
  Eof,
};

struct Token {
  Tok kind = Tok::Eof;
  std::string_view text;  // a view into the SourceFile
  Loc loc;
  int64_t int_value = 0;   // Int
  double float_value = 0;  // Float
};

struct LexResult {
  std::vector<Token> tokens;  // always ends with Eof
  std::vector<Diagnostic> diagnostics;
};

LexResult lex(const SourceFile& file);

// How a token reads in "got ..." of a diagnostic: `'foo'`, `newline`, `end of file`.
std::string describe(const Token& t);

}  // namespace kiln::frontend
