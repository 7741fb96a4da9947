#include "generator/frontend/parser.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "generator/frontend/lexer.h"

namespace kiln::frontend {

// Deep enough for any real spec, shallow enough that hostile input cannot exhaust the stack.
static constexpr int kMaxNesting = 200;

// Operator and method chains (`x + x + ...`, `x.exp().exp()...`) are parsed by loops, not by
// nesting, so they are bounded separately: every pass over an expression recurses on its depth.
static constexpr int kMaxDepth = 500;

static bool is_comparison(Tok t) {
  return t == Tok::Lt || t == Tok::Le || t == Tok::Gt || t == Tok::Ge || t == Tok::EqEq || t == Tok::Ne;
}

static BinOp binop_of(Tok t) {
  switch (t) {
    case Tok::Plus:
      return BinOp::Add;
    case Tok::Minus:
      return BinOp::Sub;
    case Tok::Star:
      return BinOp::Mul;
    case Tok::Slash:
      return BinOp::Div;
    case Tok::Percent:
      return BinOp::Mod;
    case Tok::At:
      return BinOp::MatMul;
    case Tok::StarStar:
      return BinOp::Pow;
    case Tok::Lt:
      return BinOp::Lt;
    case Tok::Le:
      return BinOp::Le;
    case Tok::Gt:
      return BinOp::Gt;
    case Tok::Ge:
      return BinOp::Ge;
    case Tok::EqEq:
      return BinOp::Eq;
    case Tok::Amp:
      return BinOp::And;
    case Tok::Pipe:
      return BinOp::Or;
    case Tok::Caret:
      return BinOp::Xor;
    case Tok::Shl:
      return BinOp::Shl;
    case Tok::Shr:
      return BinOp::Shr;
    default:
      return BinOp::Ne;
  }
}

static ExprPtr make_expr(ExprKind kind, Loc loc) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

namespace {

class Parser {
 public:
  explicit Parser(LexResult lexed) : toks_(std::move(lexed.tokens)) { diags_ = std::move(lexed.diagnostics); }

  ParseResult run() {
    ParseResult result;
    while (!at(Tok::Eof)) {
      if (at(Tok::Newline)) {
        advance();
      } else if (at_word("dim")) {
        if (!parse_dim(result.spec)) skip_to_declaration();
      } else if (at_word("kernel")) {
        if (!parse_kernel(result.spec)) skip_to_declaration();
      } else {
        fail("syntax error at top level", "'dim' or 'kernel'");
        skip_to_declaration();
      }
    }
    result.diagnostics = std::move(diags_);
    sort_by_location(result.diagnostics);
    return result;
  }

 private:
  std::vector<Token> toks_;
  size_t pos_ = 0;
  std::vector<Diagnostic> diags_;
  int nesting_ = 0;

  const Token& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  bool at(Tok kind) const { return peek().kind == kind; }
  bool at_word(std::string_view word) const { return at(Tok::Ident) && peek().text == word; }
  const Token& advance() {
    const Token& t = peek();
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool accept(Tok kind) {
    if (!at(kind)) return false;
    advance();
    return true;
  }

  void report(Loc loc, int length, std::string message, std::string expected = {}, std::string got = {}) {
    Diagnostic d;
    d.loc = loc;
    d.length = length;
    d.message = std::move(message);
    d.expected = std::move(expected);
    d.got = std::move(got);
    diags_.push_back(std::move(d));
  }

  // Reports "what (expected X, got <current token>)" and returns false. An Error token was
  // already reported by the lexer; a second message about it would be noise.
  bool fail(const std::string& what, const std::string& expected) {
    const Token& t = peek();
    if (t.kind != Tok::Error)
      report(t.loc, std::max<int>(1, static_cast<int>(t.text.size())), what, expected, describe(t));
    return false;
  }

  // Inside parentheses newlines do not end statements, so a forgotten ')' shows up lines later
  // at what looks like the next statement or the kernel's end: then blame the opening token.
  bool fail_to_close(const Token& open, const std::string& what, const std::string& expected) {
    const Token& t = peek();
    bool first_on_line = pos_ > 0 && toks_[pos_ - 1].loc.line < t.loc.line;
    bool looks_like_next = t.kind == Tok::RBrace || t.kind == Tok::LBrace || t.kind == Tok::Eof ||
                           (t.kind == Tok::Ident && peek(1).kind == Tok::Assign);
    if (t.kind == Tok::Error || !first_on_line || !looks_like_next) return fail(what, expected);
    report(open.loc, 1, "unclosed '" + std::string(open.text) + "'", expected,
           describe(t) + " on line " + std::to_string(t.loc.line));
    return false;
  }

  bool expect(Tok kind, const std::string& what, const std::string& expected) {
    return accept(kind) || fail(what, expected);
  }

  bool expect_ident(std::string& name, Loc& loc, const std::string& what, const std::string& expected) {
    if (!at(Tok::Ident)) return fail(what, expected);
    name = std::string(peek().text);
    loc = advance().loc;
    return true;
  }

  bool expect_word(std::string_view word, const std::string& what) {
    if (!at_word(word)) return fail(what, "'" + std::string(word) + "'");
    advance();
    return true;
  }

  bool at_line_start() const { return pos_ == 0 || toks_[pos_ - 1].kind == Tok::Newline; }
  // `dim`/`kernel` opening a line, not a local variable of that name being assigned.
  bool at_declaration() const {
    return (at_word("dim") || at_word("kernel")) && at_line_start() && peek(1).kind != Tok::Assign;
  }

  // After a broken declaration nothing up to the next one can be trusted.
  void skip_to_declaration() {
    if (!at(Tok::Eof)) advance();
    while (!at(Tok::Eof) && !at_declaration()) advance();
  }

  // After a broken statement: the rest of its line goes, the kernel's closing brace stays.
  void skip_to_line_end() {
    while (!at(Tok::Eof) && !at(Tok::RBrace) && !at(Tok::Newline)) advance();
    accept(Tok::Newline);
  }

  bool end_of_line(const std::string& what) { return accept(Tok::Newline) || at(Tok::Eof) || fail(what, "newline"); }

  // An integer with an optional minus, so that `dim M in -1..4` gets a range error, not a syntax one.
  bool parse_int(int64_t& value, Loc& loc, const std::string& what, const std::string& expected) {
    bool negative = at(Tok::Minus);
    loc = peek().loc;
    if (negative) advance();
    if (!at(Tok::Int)) return fail(what, expected);
    value = negative ? -advance().int_value : advance().int_value;
    return true;
  }

  // dim NAME in MIN..MAX [specialize V, %K, ...]
  bool parse_dim(Spec& spec) {
    const std::string what = "syntax error in dim declaration";
    advance();
    Dim d;
    if (!expect_ident(d.name, d.loc, what, "a dim name")) return false;
    if (!expect_word("in", what)) return false;
    if (!parse_int(d.min, d.min_loc, what, "an integer")) return false;
    if (!expect(Tok::DotDot, what, "'..'")) return false;
    if (!parse_int(d.max, d.max_loc, what, "an integer")) return false;
    if (at_word("specialize")) {
      advance();
      do {
        Specialization s;
        s.loc = peek().loc;
        s.multiple = accept(Tok::Percent);
        Loc ignored;
        if (!parse_int(s.value, ignored, what, "an integer or %multiple")) return false;
        d.specializations.push_back(s);
      } while (accept(Tok::Comma));
    }
    if (!end_of_line(what)) return false;
    spec.dims.push_back(std::move(d));
    return true;
  }

  // NAME: DTYPE[AXIS, ...]  (no brackets: a scalar)
  bool parse_param(std::vector<Param>& params) {
    const std::string what = "syntax error in parameter";
    Param p;
    if (!expect_ident(p.name, p.loc, what, "a parameter name")) return false;
    if (!expect(Tok::Colon, what, "':'")) return false;
    if (!expect_ident(p.dtype, p.dtype_loc, what, "a dtype")) return false;
    if (accept(Tok::LBracket)) {
      while (!at(Tok::RBracket)) {
        ShapeItem item;
        item.loc = peek().loc;
        if (at(Tok::Ident)) {
          item.dim = std::string(advance().text);
        } else if (at(Tok::Int)) {
          item.is_literal = true;
          item.size = advance().int_value;
        } else {
          return fail("syntax error in shape", "a dim name or an integer");
        }
        p.shape.push_back(std::move(item));
        if (!accept(Tok::Comma) && !at(Tok::RBracket)) return fail("syntax error in shape", "',' or ']'");
      }
      advance();
    }
    params.push_back(std::move(p));
    return true;
  }

  bool parse_param_list(std::vector<Param>& params) {
    if (!expect(Tok::LParen, "syntax error in kernel signature", "'('")) return false;
    while (!at(Tok::RParen)) {
      if (!parse_param(params)) return false;
      if (!accept(Tok::Comma) && !at(Tok::RParen)) return fail("syntax error in parameter list", "',' or ')'");
    }
    advance();
    return true;
  }

  // kernel NAME(PARAMS) -> (OUTPUTS) { STMT... }
  bool parse_kernel(Spec& spec) {
    const std::string what = "syntax error in kernel signature";
    advance();
    Kernel k;
    if (!expect_ident(k.name, k.loc, what, "a kernel name")) return false;
    if (!parse_param_list(k.params)) return false;
    if (!expect(Tok::Arrow, what, "'->'")) return false;
    if (!parse_param_list(k.outputs)) return false;
    if (!expect(Tok::LBrace, what, "'{'")) return false;
    bool closed = false;
    while (true) {
      if (accept(Tok::Newline)) continue;
      if (accept(Tok::RBrace)) {
        closed = true;
        break;
      }
      // A missing '}' shows as the next declaration (or the end) arriving inside the body.
      if (at(Tok::Eof) || at_declaration()) {
        fail("missing '}' at the end of kernel '" + k.name + "'", "'}'");
        break;
      }
      if (!parse_statement(k)) skip_to_line_end();
    }
    spec.kernels.push_back(std::move(k));
    if (closed && !end_of_line("syntax error after kernel")) skip_to_declaration();
    return true;
  }

  // NAME = EXPR, ended by a newline or the kernel's closing brace.
  bool parse_statement(Kernel& k) {
    const std::string what = "syntax error in statement";
    Stmt s;
    if (!expect_ident(s.target, s.loc, what, "an assignment 'name = expression'")) return false;
    if (!expect(Tok::Assign, what, "'='")) return false;
    s.value = parse_expr();
    if (!s.value) return false;
    if (int depth = expr_depth(*s.value); depth > kMaxDepth) {
      report(s.value->loc, 1, "expression too deep", "at most " + std::to_string(kMaxDepth) + " nested operations",
             std::to_string(depth));
      dismantle(std::move(s.value));
      return false;
    }
    if (!at(Tok::RBrace) && !accept(Tok::Newline)) return fail("syntax error in expression", "an operator or newline");
    k.body.push_back(std::move(s));
    return true;
  }

  // Each parse_* returns nullptr after reporting an error.
  ExprPtr parse_expr() {
    if (nesting_ >= kMaxNesting) {
      if (peek().kind != Tok::Error)
        report(peek().loc, 1, "expression nested too deeply", "at most " + std::to_string(kMaxNesting) + " levels",
               "more");
      return nullptr;
    }
    ++nesting_;
    ExprPtr e = parse_comparison();
    --nesting_;
    return e;
  }

  ExprPtr binary(const Token& op, ExprPtr lhs, ExprPtr rhs) {
    ExprPtr e = make_expr(ExprKind::Binary, op.loc);
    e->op = binop_of(op.kind);
    e->operands.push_back(std::move(lhs));
    e->operands.push_back(std::move(rhs));
    return e;
  }

  // Comparisons do not chain: `a < b < c` means something else in every language that allows it.
  ExprPtr parse_comparison() {
    ExprPtr lhs = parse_bitwise(0);
    if (!lhs || !is_comparison(peek().kind)) return lhs;
    const Token& op = advance();
    ExprPtr rhs = parse_bitwise(0);
    if (!rhs) return nullptr;
    if (is_comparison(peek().kind)) {
      const Token& t = peek();
      report(t.loc, static_cast<int>(t.text.size()), "comparison operators cannot be chained",
             "one comparison, parenthesized if nested", describe(t));
      return nullptr;
    }
    return binary(op, std::move(lhs), std::move(rhs));
  }

  // Python's levels between comparisons and sums: |, then ^, then &, then the shifts.
  ExprPtr parse_bitwise(int level) {
    static constexpr Tok kLevels[][2] = {
        {Tok::Pipe, Tok::Pipe}, {Tok::Caret, Tok::Caret}, {Tok::Amp, Tok::Amp}, {Tok::Shl, Tok::Shr}};
    if (level == 4) return parse_additive();
    auto at_level = [&] { return at(kLevels[level][0]) || at(kLevels[level][1]); };
    ExprPtr lhs = parse_bitwise(level + 1);
    while (lhs && at_level()) {
      const Token& op = advance();
      ExprPtr rhs = parse_bitwise(level + 1);
      if (!rhs) return nullptr;
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr parse_additive() {
    ExprPtr lhs = parse_multiplicative();
    while (lhs && (at(Tok::Plus) || at(Tok::Minus))) {
      const Token& op = advance();
      ExprPtr rhs = parse_multiplicative();
      if (!rhs) return nullptr;
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr parse_multiplicative() {
    ExprPtr lhs = parse_unary();
    while (lhs && (at(Tok::Star) || at(Tok::Slash) || at(Tok::Percent) || at(Tok::At))) {
      const Token& op = advance();
      ExprPtr rhs = parse_unary();
      if (!rhs) return nullptr;
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  // As in Python, `-a ** b` is `-(a ** b)` and `a ** -b` is allowed; `~` binds like `-`.
  ExprPtr parse_unary() {
    if (!at(Tok::Minus) && !at(Tok::Tilde)) return parse_power();
    const Token& op = advance();
    ExprPtr operand = parse_nested([this] { return parse_unary(); });
    if (!operand) return nullptr;
    ExprPtr e = make_expr(ExprKind::Unary, op.loc);
    e->name = std::string(op.text);
    e->operands.push_back(std::move(operand));
    return e;
  }

  // Right-associative: `a ** b ** c` is `a ** (b ** c)`.
  ExprPtr parse_power() {
    ExprPtr base = parse_postfix();
    if (!base || !at(Tok::StarStar)) return base;
    const Token& op = advance();
    ExprPtr exponent = parse_nested([this] { return parse_unary(); });
    if (!exponent) return nullptr;
    return binary(op, std::move(base), std::move(exponent));
  }

  // Unary and power chains recurse without passing through parse_expr; bound them the same way.
  template <typename F> ExprPtr parse_nested(F f) {
    if (nesting_ >= kMaxNesting) return parse_expr();  // reports the nesting error
    ++nesting_;
    ExprPtr e = f();
    --nesting_;
    return e;
  }

  ExprPtr parse_postfix() {
    ExprPtr e = parse_primary();
    while (e && (at(Tok::Dot) || at(Tok::LBracket))) {
      if (at(Tok::LBracket)) {
        e = parse_subscript(std::move(e));
        continue;
      }
      advance();
      ExprPtr m = make_expr(ExprKind::Method, peek().loc);
      Loc ignored;
      if (!expect_ident(m->name, ignored, "syntax error in method call", "a method name")) return nullptr;
      if (m->name == "T" && !at(Tok::LParen)) {  // tinygrad's one property of a tensor: `w.T`
        m->receiver = std::move(e);
        e = std::move(m);
        continue;
      }
      if (!at(Tok::LParen)) {
        fail("syntax error in method call", "'('");
        return nullptr;
      }
      const Token& open = advance();
      m->receiver = std::move(e);
      if (!parse_arguments(*m, open)) return nullptr;
      e = std::move(m);
    }
    return e;
  }

  // x[i, a:b, ::s]: one item per axis, each an expression or a slice with optional bounds.
  ExprPtr parse_subscript(ExprPtr receiver) {
    const Token& open = advance();
    ExprPtr e = make_expr(ExprKind::Index, open.loc);
    e->receiver = std::move(receiver);
    auto ends_bound = [&] { return at(Tok::Colon) || at(Tok::Comma) || at(Tok::RBracket); };
    while (!at(Tok::RBracket)) {
      Loc item_loc = peek().loc;
      ExprPtr first;
      // `...` lexes as '..' then '.' (so `1...4` stays a range error): adjacent, they are an ellipsis
      if (at(Tok::DotDot) && peek(1).kind == Tok::Dot && peek(1).loc.offset == peek().loc.offset + 2) {
        first = make_expr(ExprKind::Name, advance().loc);
        first->name = "...";
        advance();
      } else if (!at(Tok::Colon) && !(first = parse_expr())) {
        return nullptr;
      }
      if (accept(Tok::Colon)) {
        ExprPtr slice = make_expr(ExprKind::Slice, item_loc);
        slice->operands.push_back(std::move(first));
        ExprPtr stop, step;
        if (!ends_bound() && !(stop = parse_expr())) return nullptr;
        if (accept(Tok::Colon) && !ends_bound() && !(step = parse_expr())) return nullptr;
        slice->operands.push_back(std::move(stop));
        slice->operands.push_back(std::move(step));
        first = std::move(slice);
      }
      e->operands.push_back(std::move(first));
      if (!accept(Tok::Comma) && !at(Tok::RBracket)) {
        fail_to_close(open, "syntax error in index", "',', ':' or ']'");
        return nullptr;
      }
    }
    advance();
    return e;
  }

  // After the '(': positional arguments, then keyword ones, then ')'.
  bool parse_arguments(Expr& call, const Token& open) {
    while (!at(Tok::RParen)) {
      if (at(Tok::Ident) && peek(1).kind == Tok::Assign) {
        Kwarg k;
        k.name = std::string(peek().text);
        k.loc = advance().loc;
        advance();
        k.value = parse_expr();
        if (!k.value) return false;
        call.kwargs.push_back(std::move(k));
      } else {
        if (!call.kwargs.empty()) return fail("positional argument after keyword argument", "a keyword argument");
        ExprPtr a = parse_expr();
        if (!a) return false;
        call.operands.push_back(std::move(a));
      }
      if (!accept(Tok::Comma) && !at(Tok::RParen))
        return fail_to_close(open, "syntax error in argument list", "',' or ')'");
    }
    advance();
    return true;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int:
      case Tok::Float: {
        ExprPtr e = make_expr(ExprKind::Number, t.loc);
        e->name = std::string(t.text);
        e->is_float = t.kind == Tok::Float;
        e->int_value = t.int_value;
        e->float_value = t.float_value;
        advance();
        return e;
      }
      case Tok::Ident: {
        if (t.text == "true" || t.text == "false") {
          ExprPtr e = make_expr(ExprKind::Bool, t.loc);
          e->bool_value = t.text == "true";
          advance();
          return e;
        }
        ExprPtr e = make_expr(peek(1).kind == Tok::LParen ? ExprKind::Call : ExprKind::Name, t.loc);
        e->name = std::string(t.text);
        advance();
        if (e->kind == ExprKind::Call) {
          if (!parse_arguments(*e, advance())) return nullptr;
        }
        return e;
      }
      case Tok::String: {
        ExprPtr e = make_expr(ExprKind::String, t.loc);
        e->name = std::string(t.text.substr(1, t.text.size() - 2));
        advance();
        return e;
      }
      case Tok::LParen:
        return parse_parenthesized();
      case Tok::LBracket:
        return parse_list();
      default:
        fail("syntax error in expression", "an expression");
        return nullptr;
    }
  }

  // `[e1, e2, ...]` is a tuple, as tinygrad takes a list wherever it takes a tuple.
  ExprPtr parse_list() {
    const Token& open = advance();
    ExprPtr tuple = make_expr(ExprKind::Tuple, open.loc);
    while (!at(Tok::RBracket)) {
      ExprPtr e = parse_expr();
      if (!e) return nullptr;
      tuple->operands.push_back(std::move(e));
      if (!accept(Tok::Comma) && !at(Tok::RBracket)) {
        fail_to_close(open, "syntax error in list", "',' or ']'");
        return nullptr;
      }
    }
    advance();
    return tuple;
  }

  // `(e)` is e itself; `()`, `(e,)` and `(e1, e2, ...)` are tuples.
  ExprPtr parse_parenthesized() {
    const Token& open = advance();
    ExprPtr tuple = make_expr(ExprKind::Tuple, open.loc);
    if (accept(Tok::RParen)) return tuple;
    ExprPtr first = parse_expr();
    if (!first) return nullptr;
    if (accept(Tok::RParen)) return first;
    if (!at(Tok::Comma)) {
      fail_to_close(open, "syntax error in parenthesized expression", "',' or ')'");
      return nullptr;
    }
    tuple->operands.push_back(std::move(first));
    while (accept(Tok::Comma)) {
      if (at(Tok::RParen)) break;
      ExprPtr e = parse_expr();
      if (!e) return nullptr;
      tuple->operands.push_back(std::move(e));
    }
    if (!accept(Tok::RParen)) {
      fail_to_close(open, "syntax error in parenthesized expression", "',' or ')'");
      return nullptr;
    }
    return tuple;
  }
};

}  // namespace

ParseResult parse_spec(const SourceFile& file) {
  Parser parser(lex(file));
  return parser.run();
}

}  // namespace kiln::frontend
