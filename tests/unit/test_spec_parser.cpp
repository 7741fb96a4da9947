// The .kiln front end: the examples parse into the expected AST (golden s-expressions),
// precedence and associativity, line handling (CRLF, tabs, no final newline, empty files),
// error recovery and a fuzz that only asks for termination and sane diagnostics. Golden error
// messages per error class are in test_spec_errors.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "generator/frontend/lexer.h"
#include "generator/frontend/parser.h"
#include "generator/frontend/source.h"
#include "generator/frontend/spec_check.h"

namespace kiln::frontend {
namespace {

// The AST of a spec that must parse and check without errors.
std::string ast_of(const std::string& text) {
  SourceFile file("t.kiln", text);
  ParseResult parsed = parse_spec(file);
  EXPECT_EQ(render(parsed.diagnostics), "");
  EXPECT_EQ(render(check_spec(parsed.spec)), "");
  return to_string(parsed.spec);
}

// One expression, parsed as the right side of a statement (names need not be declared).
std::string expr_of(const std::string& expr) {
  SourceFile file("t.kiln", "kernel k() -> () {\n  r = " + expr + "\n}\n");
  ParseResult parsed = parse_spec(file);
  if (!parsed.ok()) return render(parsed.diagnostics);
  if (parsed.spec.kernels.size() != 1 || parsed.spec.kernels[0].body.size() != 1) return "<no statement>";
  return to_string(*parsed.spec.kernels[0].body[0].value);
}

std::string errors_of(const std::string& text) {
  SourceFile file("t.kiln", text);
  ParseResult parsed = parse_spec(file);
  std::vector<Diagnostic> errors = std::move(parsed.diagnostics);
  if (errors.empty()) errors = check_spec(parsed.spec);
  return render(errors);
}

const char* kIssueExample =
    "# comment\n"
    "dim M in 1..4096                 # inclusive range\n"
    "dim N in 1..4096 specialize 1, %16   # buckets worth a kernel of their own: exact values, multiples\n"
    "dim K in 1..4096\n"
    "\n"
    "kernel gemm(A: f32[M, K], B: f32[K, N]) -> (C: f32[M, N]) {\n"
    "  C = A @ B\n"
    "}\n"
    "\n"
    "kernel mlp(x: f32[M, 784], w1: f32[784, 128], b1: f32[128], w2: f32[128, 10]) -> (y: f32[M, 10]) {\n"
    "  h = relu(x @ w1 + b1)\n"
    "  y = softmax(h @ w2, axis=-1)\n"
    "}\n";

const char* kIssueExampleAst =
    "(dim M 1 4096)\n"
    "(dim N 1 4096 (specialize 1 %16))\n"
    "(dim K 1 4096)\n"
    "(kernel gemm\n"
    "  (in (A f32 [M K]) (B f32 [K N]))\n"
    "  (out (C f32 [M N]))\n"
    "  (= C (@ A B)))\n"
    "(kernel mlp\n"
    "  (in (x f32 [M 784]) (w1 f32 [784 128]) (b1 f32 [128]) (w2 f32 [128 10]))\n"
    "  (out (y f32 [M 10]))\n"
    "  (= h (call relu (+ (@ x w1) b1)))\n"
    "  (= y (call softmax (@ h w2) axis=(neg 1))))\n";

TEST(SpecParser, IssueExamples) { EXPECT_EQ(ast_of(kIssueExample), kIssueExampleAst); }

TEST(SpecParser, Locations) {
  SourceFile file("t.kiln", kIssueExample);
  ParseResult parsed = parse_spec(file);
  ASSERT_TRUE(parsed.ok());
  const Dim& n = parsed.spec.dims[1];
  EXPECT_EQ(n.loc.line, 3);
  EXPECT_EQ(n.loc.col, 5);
  EXPECT_EQ(n.specializations[1].loc.col, 32);
  EXPECT_TRUE(n.specializations[1].multiple);
  const Kernel& mlp = parsed.spec.kernels[1];
  EXPECT_EQ(mlp.loc.line, 10);
  EXPECT_EQ(mlp.params[1].shape[1].loc.col, 41);
  EXPECT_EQ(mlp.body[1].loc.line, 12);
  const Expr& softmax = *mlp.body[1].value;
  EXPECT_EQ(softmax.loc.col, 7);
  EXPECT_EQ(softmax.operands[0]->loc.col, 17);  // the '@'
  EXPECT_EQ(softmax.kwargs[0].loc.col, 23);
  EXPECT_EQ(softmax.loc.file, &file);
}

// The shipped examples stay valid: `kiln check kernels/examples.kiln` is part of CI too.
TEST(SpecParser, KernelLibraryExamplesCheck) {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/kernels/examples.kiln");
  ASSERT_TRUE(in) << "kernels/examples.kiln missing";
  std::stringstream text;
  text << in.rdbuf();
  std::string ast = ast_of(text.str());
  EXPECT_NE(ast.find("(kernel gemm\n"), std::string::npos);
  EXPECT_NE(ast.find("(kernel layernorm\n"), std::string::npos);
}

TEST(SpecParser, Precedence) {
  EXPECT_EQ(expr_of("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(expr_of("a * b + c"), "(+ (* a b) c)");
  EXPECT_EQ(expr_of("a @ b + c"), "(+ (@ a b) c)");
  EXPECT_EQ(expr_of("a % b @ c / d"), "(/ (@ (% a b) c) d)");
  EXPECT_EQ(expr_of("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(expr_of("a + b < c * d"), "(< (+ a b) (* c d))");
  EXPECT_EQ(expr_of("a - b >= c"), "(>= (- a b) c)");
  EXPECT_EQ(expr_of("(a < b) == c"), "(== (< a b) c)");
  EXPECT_EQ(expr_of("a != (b <= c)"), "(!= a (<= b c))");
  EXPECT_EQ(expr_of("a > b"), "(> a b)");
  EXPECT_EQ(expr_of("true == false"), "(== true false)");
}

TEST(SpecParser, Associativity) {
  EXPECT_EQ(expr_of("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(expr_of("a / b * c"), "(* (/ a b) c)");
  EXPECT_EQ(expr_of("a @ b @ c"), "(@ (@ a b) c)");
  EXPECT_EQ(expr_of("a ** b ** c"), "(** a (** b c))");
  EXPECT_EQ(expr_of("2 ** 3 ** 2"), "(** 2 (** 3 2))");
}

// As in Python: ** binds tighter than a unary minus on its left, and its exponent may be negated.
TEST(SpecParser, UnaryMinusAndPower) {
  EXPECT_EQ(expr_of("-a ** b"), "(neg (** a b))");
  EXPECT_EQ(expr_of("a ** -b"), "(** a (neg b))");
  EXPECT_EQ(expr_of("-a * b"), "(* (neg a) b)");
  EXPECT_EQ(expr_of("- -a"), "(neg (neg a))");
  EXPECT_EQ(expr_of("a - -1"), "(- a (neg 1))");
  EXPECT_EQ(expr_of("-x.sum()"), "(neg (method sum x))");
}

TEST(SpecParser, CallsMethodsTuplesLiterals) {
  EXPECT_EQ(expr_of("f(x, axis=1)"), "(call f x axis=1)");
  EXPECT_EQ(expr_of("f()"), "(call f)");
  EXPECT_EQ(expr_of("x.sum(axis=1, keepdim=true)"), "(method sum x axis=1 keepdim=true)");
  EXPECT_EQ(expr_of("x.sum(axis=1).max()"), "(method max (method sum x axis=1))");
  EXPECT_EQ(expr_of("(a + b).exp()"), "(method exp (+ a b))");
  EXPECT_EQ(expr_of("x.reshape((1, 2), )"), "(method reshape x (tuple 1 2))");
  EXPECT_EQ(expr_of("(1, 2)"), "(tuple 1 2)");
  EXPECT_EQ(expr_of("(a,)"), "(tuple a)");
  EXPECT_EQ(expr_of("()"), "(tuple)");
  EXPECT_EQ(expr_of("((a))"), "a");
  EXPECT_EQ(expr_of("0.5 * 1e-5 + 2.5E+3 - 7"), "(- (+ (* 0.5 1e-5) 2.5E+3) 7)");
  EXPECT_EQ(expr_of("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(expr_of("f(a,\n    b,\n    c=(1,\n 2))"), "(call f a b c=(tuple 1 2))");
}

TEST(SpecParser, NumberValues) {
  SourceFile file("t.kiln", "1 0.5 1e-5 2E3 9223372036854775807");
  LexResult lexed = lex(file);
  ASSERT_TRUE(lexed.diagnostics.empty());
  ASSERT_EQ(lexed.tokens.size(), 7u);  // five numbers, the final newline, end of file
  EXPECT_EQ(lexed.tokens[0].kind, Tok::Int);
  EXPECT_EQ(lexed.tokens[1].float_value, 0.5);
  EXPECT_EQ(lexed.tokens[2].float_value, 1e-5);
  EXPECT_EQ(lexed.tokens[3].kind, Tok::Float);
  EXPECT_EQ(lexed.tokens[4].int_value, 9223372036854775807);
}

TEST(SpecParser, SignatureForms) {
  EXPECT_EQ(ast_of("dim M in 1..8\n"
                   "kernel scale(x: f32[M], s: f32, n: i32[]) -> (y: f32[M],) { y = x * s }\n"
                   "kernel many(\n"
                   "    a: bool[M, 2],\n"
                   "    b: u8[M],\n"
                   ") -> (c: i64[M], d: f64[2]) {\n"
                   "  c = a + b\n"
                   "\n"
                   "  # a comment line between statements\n"
                   "  d = (1, 2)\n"
                   "}"),
            "(dim M 1 8)\n"
            "(kernel scale\n"
            "  (in (x f32 [M]) (s f32 []) (n i32 []))\n"
            "  (out (y f32 [M]))\n"
            "  (= y (* x s)))\n"
            "(kernel many\n"
            "  (in (a bool [M 2]) (b u8 [M]))\n"
            "  (out (c i64 [M]) (d f64 [2]))\n"
            "  (= c (+ a b))\n"
            "  (= d (tuple 1 2)))\n");
}

TEST(SpecParser, AllDtypes) {
  for (const char* t : {"bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"}) {
    EXPECT_TRUE(spec_dtype(t).has_value()) << t;
    EXPECT_EQ(errors_of(std::string("kernel k(a: ") + t + "[4]) -> (b: " + t + "[4]) {\n  b = a\n}\n"), "") << t;
  }
  EXPECT_EQ(spec_dtype("f32"), dtypes::float32);
  EXPECT_EQ(spec_dtype("bf16"), dtypes::bfloat16);
  EXPECT_FALSE(spec_dtype("float32").has_value());
}

TEST(SpecParser, EmptyFile) {
  EXPECT_EQ(ast_of(""), "");
  EXPECT_EQ(ast_of("\n\n"), "");
  EXPECT_EQ(ast_of("# only a comment"), "");
  EXPECT_EQ(ast_of("  # comments\n\n# and blank lines\n"), "");
}

TEST(SpecParser, NoTrailingNewline) {
  std::string text = kIssueExample;
  text.pop_back();
  EXPECT_EQ(ast_of(text), kIssueExampleAst);
  EXPECT_EQ(ast_of("dim M in 1..4"), "(dim M 1 4)\n");
  EXPECT_EQ(ast_of("dim M in 1..4 # trailing comment"), "(dim M 1 4)\n");
}

static std::string with_crlf(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}

TEST(SpecParser, CrlfLineEndings) {
  EXPECT_EQ(ast_of(with_crlf(kIssueExample)), kIssueExampleAst);
  // The '\r' stays out of the rendered source line, and columns are unchanged.
  EXPECT_EQ(errors_of(with_crlf("dim M in 1..8\nkernel k(A: f32[M]) -> (C: f32[M]) {\n  C = A $ 2\n}\n")),
            "t.kiln:3:9: error: unexpected character '$'\n"
            "  C = A $ 2\n"
            "        ^\n");
}

// A tab counts as one column, and the caret line repeats it so the caret lines up on screen.
TEST(SpecParser, Tabs) {
  EXPECT_EQ(ast_of("dim\tM\tin 1..8\nkernel k(A: f32[M]) -> (C: f32[M]) {\n\tC =\tA\n}\n"),
            "(dim M 1 8)\n(kernel k\n  (in (A f32 [M]))\n  (out (C f32 [M]))\n  (= C A))\n");
  EXPECT_EQ(errors_of("dim M in 1..8\nkernel k(A: f32[M]) -> (C: f32[M]) {\n\tC =\tA + q\n}\n"),
            "t.kiln:3:10: error: unknown name 'q'\n"
            "\tC =\tA + q\n"
            "\t   \t    ^\n");
}

TEST(SpecParser, MultipleErrorsInOneFile) {
  EXPECT_EQ(errors_of("dim M in 1..8 specialize\n"
                      "dim N in 1..8\n"
                      "kernel a(A: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A +\n"
                      "  D = A\n"
                      "  E = A ** # B\n"
                      "}\n"
                      "kernel b(A: f32[M]) -> (C: f32[M]) {\n"
                      "  C = f(A, A=)\n"
                      "}\n"),
            "t.kiln:1:25: error: syntax error in dim declaration (expected an integer or %multiple, got newline)\n"
            "dim M in 1..8 specialize\n"
            "                        ^\n"
            "t.kiln:4:10: error: syntax error in expression (expected an expression, got newline)\n"
            "  C = A +\n"
            "         ^\n"
            "t.kiln:6:15: error: syntax error in expression (expected an expression, got newline)\n"
            "  E = A ** # B\n"
            "              ^\n"
            "t.kiln:9:14: error: syntax error in expression (expected an expression, got ')')\n"
            "  C = f(A, A=)\n"
            "             ^\n");
  // Check errors, several per kernel, come out in source order.
  EXPECT_EQ(errors_of("dim M in 1..8\n"
                      "kernel a(A: f32[M], A: f16[Q]) -> (C: f32[M]) {\n"
                      "  C = B\n"
                      "}\n"),
            "t.kiln:2:21: error: redefinition of 'A' (first defined as input on line 2)\n"
            "kernel a(A: f32[M], A: f16[Q]) -> (C: f32[M]) {\n"
            "                    ^\n"
            "t.kiln:2:28: error: unknown dim 'Q' in the shape of 'A' (expected a declared dim or an integer, got 'Q')\n"
            "kernel a(A: f32[M], A: f16[Q]) -> (C: f32[M]) {\n"
            "                           ^\n"
            "t.kiln:3:7: error: unknown name 'B'\n"
            "  C = B\n"
            "      ^\n");
}

// After an error the parser resumes at the next line and keeps what parsed; one mistake gives
// one message, not a cascade.
TEST(SpecParser, Recovery) {
  SourceFile file("t.kiln",
                  "dim M in 1..8\n"
                  "kernel a(A: f32[M]) -> (C: f32[M]) {\n"
                  "  h = (A + ) * 2 + )\n"
                  "  C = A\n"
                  "}\n"
                  "kernel b(A: f32[M] -> (C: f32[M]) {\n"
                  "  C = A + + +\n"
                  "  ) ) )\n"
                  "}\n"
                  "kernel c(A: f32[M]) -> (C: f32[M]) {\n"
                  "  C = A\n"
                  "}\n");
  ParseResult parsed = parse_spec(file);
  ASSERT_EQ(parsed.diagnostics.size(), 2u) << render(parsed.diagnostics);
  EXPECT_EQ(parsed.diagnostics[0].loc.line, 3);
  EXPECT_EQ(parsed.diagnostics[1].loc.line, 6);
  ASSERT_EQ(parsed.spec.kernels.size(), 2u);
  EXPECT_EQ(parsed.spec.kernels[0].name, "a");
  ASSERT_EQ(parsed.spec.kernels[0].body.size(), 1u);
  EXPECT_EQ(parsed.spec.kernels[0].body[0].target, "C");
  EXPECT_EQ(parsed.spec.kernels[1].name, "c");
}

// A bad token is reported once by the lexer; the parser does not add a second message about it.
TEST(SpecParser, LexerErrorsAreNotRepeated) {
  EXPECT_EQ(errors_of("kernel k(A: f32[4]) -> (C: f32[4]) {\n  C = A ? 1\n  C = 12ab\n}\n"),
            "t.kiln:2:9: error: unexpected character '?'\n"
            "  C = A ? 1\n"
            "        ^\n"
            "t.kiln:3:7: error: malformed number (expected digits with an optional fraction and exponent, got '12ab')\n"
            "  C = 12ab\n"
            "      ^~~~\n");
}

TEST(SpecParser, DeepNestingIsAnErrorNotACrash) {
  std::string deep = expr_of(std::string(300, '(') + "a" + std::string(300, ')'));
  EXPECT_EQ(
      deep.rfind("t.kiln:2:207: error: expression nested too deeply (expected at most 200 levels, got more)\n", 0), 0u)
      << deep.substr(0, 200);
  EXPECT_NE(expr_of(std::string(100000, '(')).find("nested too deeply"), std::string::npos);
  EXPECT_NE(expr_of(std::string(100000, '-') + "a").find("nested too deeply"), std::string::npos);
  EXPECT_NE(expr_of("a" + std::string(100000, '*') + "b").find("error"), std::string::npos);
  std::string powers;
  for (int i = 0; i < 50000; ++i) powers += "a ** ";
  EXPECT_NE(expr_of(powers + "a").find("nested too deeply"), std::string::npos);
}

// Parses, checks and renders; every diagnostic must point into the file.
static void parse_and_render(const std::string& text) {
  SourceFile file("fuzz.kiln", text);
  ParseResult parsed = parse_spec(file);
  std::vector<Diagnostic> errors = std::move(parsed.diagnostics);
  if (errors.empty()) errors = check_spec(parsed.spec);
  for (const Diagnostic& d : errors) {
    ASSERT_EQ(d.loc.file, &file);
    ASSERT_GE(d.loc.line, 1);
    ASSERT_LE(d.loc.line, file.line_count());
    ASSERT_GE(d.loc.col, 1);
    ASSERT_FALSE(d.message.empty());
  }
  std::string rendered = render(errors);
  ASSERT_EQ(rendered.empty(), errors.empty());
}

TEST(SpecParserFuzz, RandomBytes) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 1000; ++i) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    parse_and_render(text);
    if (HasFatalFailure()) return;
  }
}

TEST(SpecParserFuzz, TokenSoup) {
  static const std::vector<std::string> kTokens = {
      "dim",  "kernel", "in",   "specialize", "M",  "N",   "x",    "A",    "f32",
      "bf16", "q",      "1",    "64",         "0",  "0.5", "1e-5", "1e+",  "99999999999999999999",
      "true", "false",  "(",    ")",          "[",  "]",   "{",    "}",    ",",
      ":",    ".",      "..",   "->",         "=",  "+",   "-",    "*",    "**",
      "/",    "%",      "@",    "<",          "<=", ">",   ">=",   "==",   "!=",
      "\n",   "\n",     "#c\n", "\r\n",       "\t", "$",   "axis", "relu", "sum"};
  const std::string prefix = "dim M in 1..64\nkernel k(A: f32[M]) -> (C: f32[M]) {\n";
  std::mt19937 rng(67890);
  for (int i = 0; i < 1000; ++i) {
    // Half start inside a valid kernel body, so the soup reaches statement and expression parsing.
    std::string text = i % 2 ? prefix : "";
    int n = static_cast<int>(rng() % 60);
    for (int j = 0; j < n; ++j) text += kTokens[rng() % kTokens.size()] + (rng() % 3 ? " " : "");
    if (i % 2) text += "\n}\n";
    parse_and_render(text);
    if (HasFatalFailure()) return;
  }
}

// Same input, same diagnostics and AST, byte for byte.
TEST(SpecParser, Deterministic) {
  const std::string bad = "dim M in 0..4\nkernel k(A: f33[Q]) -> (C: f32[M]) {\n  D = A $ B\n}\n";
  EXPECT_EQ(errors_of(bad), errors_of(bad));
  EXPECT_EQ(ast_of(kIssueExample), ast_of(kIssueExample));
}

}  // namespace
}  // namespace kiln::frontend
