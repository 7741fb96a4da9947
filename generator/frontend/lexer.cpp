#include "generator/frontend/lexer.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace kiln::frontend {

static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// A byte as the user should read it in a message: printable as itself, anything else as hex.
static std::string show_byte(unsigned char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof(buf), "'\\x%02x'", c);
  return buf;
}

namespace {

struct Lexer {
  const SourceFile& file;
  std::string_view s;
  size_t pos = 0;
  int nesting = 0;  // open ( and [ : newlines inside continue the expression
  LexResult out;

  void push(Tok kind, size_t begin, size_t end) {
    Token t;
    t.kind = kind;
    t.text = s.substr(begin, end - begin);
    t.loc = file.loc_at(begin);
    out.tokens.push_back(t);
  }

  void error(size_t begin, size_t end, std::string message, std::string expected = {}, std::string got = {}) {
    Diagnostic d;
    d.loc = file.loc_at(begin);
    d.message = std::move(message);
    d.expected = std::move(expected);
    d.got = std::move(got);
    d.length = static_cast<int>(end - begin);
    out.diagnostics.push_back(std::move(d));
    push(Tok::Error, begin, end);
  }

  // Digits, an optional fraction (a '.' followed by a digit, so `1..4` stays a range) and an
  // optional exponent. A number running into letters is one malformed token, not two tokens.
  void number() {
    size_t begin = pos;
    bool is_float = false, malformed = false;
    while (pos < s.size() && is_digit(s[pos])) ++pos;
    if (pos + 1 < s.size() && s[pos] == '.' && is_digit(s[pos + 1])) {
      is_float = true;
      ++pos;
      while (pos < s.size() && is_digit(s[pos])) ++pos;
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      is_float = true;
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) ++pos;
      if (pos >= s.size() || !is_digit(s[pos])) malformed = true;
      while (pos < s.size() && is_digit(s[pos])) ++pos;
    }
    while (pos < s.size() && (is_ident_char(s[pos]) || (s[pos] == '.' && pos + 1 < s.size() && is_digit(s[pos + 1])))) {
      malformed = true;
      ++pos;
    }
    std::string text(s.substr(begin, pos - begin));
    if (malformed)
      return error(begin, pos, "malformed number", "digits with an optional fraction and exponent", "'" + text + "'");
    if (is_float) {
      push(Tok::Float, begin, pos);
      out.tokens.back().float_value = std::strtod(text.c_str(), nullptr);
      return;
    }
    int64_t value = 0;
    for (char c : text) {
      int digit = c - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return error(begin, pos, "integer literal overflows int64",
                     "at most " + std::to_string(std::numeric_limits<int64_t>::max()), text);
      value = value * 10 + digit;
    }
    push(Tok::Int, begin, pos);
    out.tokens.back().int_value = value;
  }

  // The longest operator starting here, or Error for a byte that starts none.
  void punct() {
    size_t begin = pos;
    char c = s[pos];
    char next = pos + 1 < s.size() ? s[pos + 1] : '\0';
    auto two = [&](Tok kind) {
      pos += 2;
      push(kind, begin, pos);
    };
    auto one = [&](Tok kind) {
      pos += 1;
      push(kind, begin, pos);
    };
    switch (c) {
      case '(':
        ++nesting;
        return one(Tok::LParen);
      case '[':
        ++nesting;
        return one(Tok::LBracket);
      case ')':
        nesting = nesting > 0 ? nesting - 1 : 0;
        return one(Tok::RParen);
      case ']':
        nesting = nesting > 0 ? nesting - 1 : 0;
        return one(Tok::RBracket);
      // A brace never sits inside parentheses, so it ends any left open by a typo: the rest of
      // the kernel then still splits into lines and errors stay on the line that caused them.
      case '{':
        nesting = 0;
        return one(Tok::LBrace);
      case '}':
        nesting = 0;
        return one(Tok::RBrace);
      case ',':
        return one(Tok::Comma);
      case ':':
        return one(Tok::Colon);
      case '.':
        return next == '.' ? two(Tok::DotDot) : one(Tok::Dot);
      case '-':
        return next == '>' ? two(Tok::Arrow) : one(Tok::Minus);
      case '=':
        return next == '=' ? two(Tok::EqEq) : one(Tok::Assign);
      case '+':
        return one(Tok::Plus);
      case '*':
        return next == '*' ? two(Tok::StarStar) : one(Tok::Star);
      case '/':
        return one(Tok::Slash);
      case '%':
        return one(Tok::Percent);
      case '@':
        return one(Tok::At);
      case '<':
        return next == '=' ? two(Tok::Le) : next == '<' ? two(Tok::Shl) : one(Tok::Lt);
      case '>':
        return next == '=' ? two(Tok::Ge) : next == '>' ? two(Tok::Shr) : one(Tok::Gt);
      case '&':
        return one(Tok::Amp);
      case '|':
        return one(Tok::Pipe);
      case '^':
        return one(Tok::Caret);
      case '~':
        return one(Tok::Tilde);
      case '!':
        if (next == '=') return two(Tok::Ne);
        break;
      default:
        break;
    }
    ++pos;
    error(begin, pos, "unexpected character " + show_byte(static_cast<unsigned char>(c)));
  }

  // A string ends at its closing quote on the same line; it has no escapes.
  void string() {
    size_t begin = pos;
    char quote = s[pos++];
    while (pos < s.size() && s[pos] != quote && s[pos] != '\n') ++pos;
    if (pos >= s.size() || s[pos] != quote)
      return error(begin, pos, "unterminated string", std::string("a closing ") + quote, "end of line");
    ++pos;
    push(Tok::String, begin, pos);
  }

  void run() {
    while (pos < s.size()) {
      char c = s[pos];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++pos;
      } else if (c == '#') {
        while (pos < s.size() && s[pos] != '\n') ++pos;
      } else if (c == '\n') {
        // Blank lines and repeated newlines collapse: the parser sees one separator.
        bool after_separator = out.tokens.empty() || out.tokens.back().kind == Tok::Newline;
        if (nesting == 0 && !after_separator) push(Tok::Newline, pos, pos + 1);
        ++pos;
      } else if (is_ident_start(c)) {
        size_t begin = pos;
        while (pos < s.size() && is_ident_char(s[pos])) ++pos;
        push(Tok::Ident, begin, pos);
      } else if (is_digit(c)) {
        number();
      } else if (c == '"' || c == '\'') {
        string();
      } else {
        punct();
      }
    }
    // A last line without '\n' still ends its statement.
    if (!out.tokens.empty() && out.tokens.back().kind != Tok::Newline) push(Tok::Newline, s.size(), s.size());
    push(Tok::Eof, s.size(), s.size());
  }
};

}  // namespace

LexResult lex(const SourceFile& file) {
  Lexer lexer{file, file.text(), 0, 0, {}};
  lexer.run();
  return std::move(lexer.out);
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Newline:
      return "newline";
    case Tok::Eof:
      return "end of file";
    default:
      return "'" + std::string(t.text) + "'";
  }
}

}  // namespace kiln::frontend
