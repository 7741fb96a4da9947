// Golden rendered diagnostics of the .kiln front end, one or more per error class: the full
// text a user sees, location, source line and caret included. The parser's AST, precedence,
// recovery and fuzz tests live in test_spec_parser.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "generator/frontend/parser.h"
#include "generator/frontend/source.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"

namespace kiln::frontend {
namespace {

// What `kiln check t.kiln` prints to stderr: syntax errors, or if there are none the checks', or
// if there are none the lowering's.
std::string errors_of(const std::string& text) {
  SourceFile file("t.kiln", text);
  ParseResult parsed = parse_spec(file);
  std::vector<Diagnostic> errors = std::move(parsed.diagnostics);
  if (errors.empty()) errors = check_spec(parsed.spec);
  Context ctx;
  if (errors.empty()) errors = lower_spec(ctx, parsed.spec, file).diagnostics;
  return render(errors);
}

TEST(SpecErrors, BadCharacter) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A $ B\n"
                      "}\n"),
            "t.kiln:3:9: error: unexpected character '$'\n"
            "  C = A $ B\n"
            "        ^\n");
}

// check and gen agree: a dim the body names but no argument's shape carries has no value at a
// call (gen refused it; check passed it)
TEST(SpecErrors, DimInNoArgumentsShape) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "dim N in 1..8\n"
                      "kernel k(A: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A * N + N\n"
                      "}\n"
                      "kernel j(A: f32[N]) -> (C: f32[N]) {\n"
                      "  C = A * N\n"
                      "}\n"),
            "t.kiln:4:11: error: dim 'N' is in no argument's shape of kernel 'k', so no call can give its value "
            "(declare an input or output with it)\n"
            "  C = A * N + N\n"
            "          ^\n");
}

TEST(SpecErrors, BadCharacterNonPrintable) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A\x01"
                      "\n"
                      "}\n"),
            "t.kiln:3:8: error: unexpected character '\\x01'\n"
            "  C = A\x01"
            "\n"
            "       ^\n");
}

TEST(SpecErrors, MalformedNumberExponent) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A * 1e+\n"
                      "}\n"),
            "t.kiln:3:11: error: malformed number (expected digits with an optional fraction and exponent, got '1e+')\n"
            "  C = A * 1e+\n"
            "          ^~~\n");
}

TEST(SpecErrors, MalformedNumberLetters) {
  EXPECT_EQ(errors_of("dim M in 1..64x\n"),
            "t.kiln:1:13: error: malformed number (expected digits with an optional fraction and exponent, got '64x')\n"
            "dim M in 1..64x\n"
            "            ^~~\n");
}

TEST(SpecErrors, IntegerLiteralOverflow) {
  EXPECT_EQ(errors_of("dim M in 1..9223372036854775808\n"),
            "t.kiln:1:13: error: integer literal overflows int64 (expected at most 9223372036854775807, got "
            "9223372036854775808)\n"
            "dim M in 1..9223372036854775808\n"
            "            ^~~~~~~~~~~~~~~~~~~\n");
}

TEST(SpecErrors, IntegerLiteralOverflowInShape) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[99999999999999999999]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:17: error: integer literal overflows int64 (expected at most 9223372036854775807, got "
            "99999999999999999999)\n"
            "kernel k(A: f32[99999999999999999999]) -> (C: f32[M]) {\n"
            "                ^~~~~~~~~~~~~~~~~~~~\n");
}

TEST(SpecErrors, SyntaxErrorInDim) {
  EXPECT_EQ(errors_of("dim M 1..64\n"),
            "t.kiln:1:7: error: syntax error in dim declaration (expected 'in', got '1')\n"
            "dim M 1..64\n"
            "      ^\n");
}

TEST(SpecErrors, SyntaxErrorInDimRange) {
  EXPECT_EQ(errors_of("dim M in 1...64\n"),
            "t.kiln:1:13: error: syntax error in dim declaration (expected an integer, got '.')\n"
            "dim M in 1...64\n"
            "            ^\n");
}

TEST(SpecErrors, SyntaxErrorInSignature) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M]) (C: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:21: error: syntax error in kernel signature (expected '->', got '(')\n"
            "kernel k(A: f32[M]) (C: f32[M]) {\n"
            "                    ^\n");
}

TEST(SpecErrors, SyntaxErrorInShape) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M 2]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:19: error: syntax error in shape (expected ',' or ']', got '2')\n"
            "kernel k(A: f32[M 2]) -> (C: f32[M]) {\n"
            "                  ^\n");
}

TEST(SpecErrors, SyntaxErrorInExpression) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A + * B\n"
                      "}\n"),
            "t.kiln:3:11: error: syntax error in expression (expected an expression, got '*')\n"
            "  C = A + * B\n"
            "          ^\n");
}

TEST(SpecErrors, SyntaxErrorMissingOperator) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A B\n"
                      "}\n"),
            "t.kiln:3:9: error: syntax error in expression (expected an operator or newline, got 'B')\n"
            "  C = A B\n"
            "        ^\n");
}

TEST(SpecErrors, SyntaxErrorTopLevel) {
  EXPECT_EQ(errors_of("dimension M in 1..64\n"),
            "t.kiln:1:1: error: syntax error at top level (expected 'dim' or 'kernel', got 'dimension')\n"
            "dimension M in 1..64\n"
            "^~~~~~~~~\n");
}

TEST(SpecErrors, ChainedComparison) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A < B < A\n"
                      "}\n"),
            "t.kiln:3:13: error: comparison operators cannot be chained (expected one comparison, parenthesized if "
            "nested, got '<')\n"
            "  C = A < B < A\n"
            "            ^\n");
}

TEST(SpecErrors, ChainedEquality) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A == B != A\n"
                      "}\n"),
            "t.kiln:3:14: error: comparison operators cannot be chained (expected one comparison, parenthesized if "
            "nested, got '!=')\n"
            "  C = A == B != A\n"
            "             ^~\n");
}

TEST(SpecErrors, PositionalAfterKeyword) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = f(A, axis=1, B)\n"
                      "}\n"),
            "t.kiln:3:20: error: positional argument after keyword argument (expected a keyword argument, got 'B')\n"
            "  C = f(A, axis=1, B)\n"
            "                   ^\n");
}

TEST(SpecErrors, UnclosedParenthesis) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = (A + B\n"
                      "}\n"),
            "t.kiln:3:7: error: unclosed '(' (expected ',' or ')', got '}' on line 4)\n"
            "  C = (A + B\n"
            "      ^\n");
}

TEST(SpecErrors, UnclosedCall) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  h = max(A,\n"
                      "  C = h\n"
                      "}\n"),
            "t.kiln:3:10: error: unclosed '(' (expected ',' or ')', got '}' on line 5)\n"
            "  h = max(A,\n"
            "         ^\n");
}

TEST(SpecErrors, MissingBraceBeforeKernel) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "kernel k2(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = B\n"
                      "}\n"),
            "t.kiln:4:1: error: missing '}' at the end of kernel 'k' (expected '}', got 'kernel')\n"
            "kernel k2(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
            "^~~~~~\n");
}

TEST(SpecErrors, MissingBraceAtEnd) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A\n"),
            "t.kiln:4:1: error: missing '}' at the end of kernel 'k' (expected '}', got end of file)\n"
            "\n"
            "^\n");
}

TEST(SpecErrors, UnknownDtype) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f33[M]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:13: error: unknown dtype (expected one of bool, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, "
            "f32, f64, got 'f33')\n"
            "kernel k(A: f33[M]) -> (C: f32[M]) {\n"
            "            ^~~\n");
}

TEST(SpecErrors, UnknownDtypeOutput) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M]) -> (C: float[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:28: error: unknown dtype (expected one of bool, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, "
            "f32, f64, got 'float')\n"
            "kernel k(A: f32[M]) -> (C: float[M]) {\n"
            "                           ^~~~~\n");
}

TEST(SpecErrors, RedefinedDim) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "dim N in 1..8\n"
                      "dim M in 1..8\n"),
            "t.kiln:3:5: error: redefinition of 'M' (first defined as dim on line 1)\n"
            "dim M in 1..8\n"
            "    ^\n");
}

TEST(SpecErrors, RedefinedKernel) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"
                      "\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = B\n"
                      "}\n"),
            "t.kiln:6:8: error: redefinition of 'k' (first defined as kernel on line 2)\n"
            "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
            "       ^\n");
}

TEST(SpecErrors, RedefinedParameter) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], A: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:21: error: redefinition of 'A' (first defined as input on line 2)\n"
            "kernel k(A: f32[M], A: f32[M]) -> (C: f32[M]) {\n"
            "                    ^\n");
}

TEST(SpecErrors, RedefinedOutputAsInput) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M]) -> (A: f32[M]) {\n"
                      "  A = A\n"
                      "}\n"),
            "t.kiln:2:25: error: redefinition of 'A' (first defined as input on line 2)\n"
            "kernel k(A: f32[M]) -> (A: f32[M]) {\n"
            "                        ^\n"
            "t.kiln:3:3: error: cannot assign to input 'A' of kernel 'k' (expected an output or a new local name, got "
            "input 'A')\n"
            "  A = A\n"
            "  ^\n");
}

TEST(SpecErrors, RedefinedLocal) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  h = A\n"
                      "  h = B\n"
                      "  C = h\n"
                      "}\n"),
            "t.kiln:4:3: error: redefinition of 'h' (first defined as local on line 3)\n"
            "  h = B\n"
            "  ^\n");
}

TEST(SpecErrors, ParameterShadowsDim) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(M: f32[M]) -> (C: f32[M]) {\n"
                      "  C = M\n"
                      "}\n"),
            "t.kiln:2:10: error: redefinition of 'M' (first defined as dim on line 1)\n"
            "kernel k(M: f32[M]) -> (C: f32[M]) {\n"
            "         ^\n");
}

TEST(SpecErrors, UnknownDimInShape) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M, N]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:20: error: unknown dim 'N' in the shape of 'A' (expected a declared dim or an integer, got 'N')\n"
            "kernel k(A: f32[M, N]) -> (C: f32[M]) {\n"
            "                   ^\n");
}

TEST(SpecErrors, UnknownDimInOutputShape) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M]) -> (C: f32[Q, 4]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:32: error: unknown dim 'Q' in the shape of 'C' (expected a declared dim or an integer, got 'Q')\n"
            "kernel k(A: f32[M]) -> (C: f32[Q, 4]) {\n"
            "                               ^\n");
}

TEST(SpecErrors, DimRangeEmpty) {
  EXPECT_EQ(errors_of("dim M in 64..1\n"),
            "t.kiln:1:10: error: range of dim 'M' is empty: its minimum is above its maximum (expected min <= max, got "
            "64..1)\n"
            "dim M in 64..1\n"
            "         ^~~~~\n");
}

TEST(SpecErrors, DimRangeStartsAtZero) {
  EXPECT_EQ(
      errors_of("dim M in 0..64\n"),
      "t.kiln:1:10: error: range of dim 'M' starts below 1, but a size must be at least 1 (expected min >= 1, got 0)\n"
      "dim M in 0..64\n"
      "         ^\n");
}

TEST(SpecErrors, DimRangeNegative) {
  EXPECT_EQ(
      errors_of("dim M in -4..-1\n"),
      "t.kiln:1:10: error: range of dim 'M' starts below 1, but a size must be at least 1 (expected min >= 1, got -4)\n"
      "dim M in -4..-1\n"
      "         ^~\n");
}

TEST(SpecErrors, SpecializationOutsideRange) {
  EXPECT_EQ(
      errors_of("dim M in 1..64 specialize 1, 65\n"),
      "t.kiln:1:30: error: specialization 65 of dim 'M' is outside its range (expected a value in 1..64, got 65)\n"
      "dim M in 1..64 specialize 1, 65\n"
      "                             ^~\n");
}

TEST(SpecErrors, SpecializationBelowRange) {
  EXPECT_EQ(errors_of("dim M in 8..64 specialize 4\n"),
            "t.kiln:1:27: error: specialization 4 of dim 'M' is outside its range (expected a value in 8..64, got 4)\n"
            "dim M in 8..64 specialize 4\n"
            "                          ^\n");
}

TEST(SpecErrors, SpecializationMultipleZero) {
  EXPECT_EQ(
      errors_of("dim M in 1..64 specialize %0\n"),
      "t.kiln:1:27: error: specialization %0 of dim 'M' is not a valid multiple (expected %k with k in 1..64, got %0)\n"
      "dim M in 1..64 specialize %0\n"
      "                          ^~\n");
}

TEST(SpecErrors, SpecializationMultipleAboveMax) {
  EXPECT_EQ(errors_of("dim M in 1..64 specialize %16, %128\n"),
            "t.kiln:1:32: error: specialization %128 of dim 'M' can never match: no size in range is a multiple "
            "(expected %k with k in 1..64, got %128)\n"
            "dim M in 1..64 specialize %16, %128\n"
            "                               ^~~~\n");
}

TEST(SpecErrors, SpecializationDuplicate) {
  EXPECT_EQ(errors_of("dim M in 1..64 specialize %16, %16\n"),
            "t.kiln:1:32: error: duplicate specialization %16 of dim 'M'\n"
            "dim M in 1..64 specialize %16, %16\n"
            "                               ^~~\n");
}

TEST(SpecErrors, SizeOverflow) {
  EXPECT_EQ(errors_of("dim M in 1..4294967296\n"
                      "kernel k(A: f32[M, M]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:10: error: number of elements of 'A' overflows int64 (expected at most 9223372036854775807, got "
            "4294967296 * 4294967296)\n"
            "kernel k(A: f32[M, M]) -> (C: f32[M]) {\n"
            "         ^\n");
}

TEST(SpecErrors, SizeOverflowLiterals) {
  EXPECT_EQ(errors_of("dim M in 1..8\n"
                      "kernel k(A: f32[M]) -> (C: f32[4611686018427387904, 2, M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:25: error: number of elements of 'C' overflows int64 (expected at most 9223372036854775807, got "
            "4611686018427387904 * 2 * 8)\n"
            "kernel k(A: f32[M]) -> (C: f32[4611686018427387904, 2, M]) {\n"
            "                        ^\n");
}

TEST(SpecErrors, ZeroSizedAxis) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M, 0]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:20: error: axis of 'A' has no elements (expected a size >= 1, got 0)\n"
            "kernel k(A: f32[M, 0]) -> (C: f32[M]) {\n"
            "                   ^\n");
}

TEST(SpecErrors, UnassignedOutput) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M]) -> (C: f32[M], D: f32[M]) {\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:2:36: error: output 'D' of kernel 'k' is never assigned\n"
            "kernel k(A: f32[M]) -> (C: f32[M], D: f32[M]) {\n"
            "                                   ^\n");
}

TEST(SpecErrors, UnassignedOutputEmptyBody) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M]) -> (C: f32[M]) {\n"
                      "}\n"),
            "t.kiln:2:25: error: output 'C' of kernel 'k' is never assigned\n"
            "kernel k(A: f32[M]) -> (C: f32[M]) {\n"
            "                        ^\n");
}

TEST(SpecErrors, OutputAssignedTwice) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A\n"
                      "  C = B\n"
                      "}\n"),
            "t.kiln:4:3: error: output 'C' is assigned more than once (first on line 3)\n"
            "  C = B\n"
            "  ^\n");
}

TEST(SpecErrors, AssignmentToInput) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  A = B\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:3:3: error: cannot assign to input 'A' of kernel 'k' (expected an output or a new local name, got "
            "input 'A')\n"
            "  A = B\n"
            "  ^\n");
}

TEST(SpecErrors, AssignmentToDim) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  M = B\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:3:3: error: cannot assign to dim 'M' of kernel 'k' (expected an output or a new local name, got "
            "dim 'M')\n"
            "  M = B\n"
            "  ^\n");
}

TEST(SpecErrors, UseBeforeAssignment) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = h\n"
                      "  h = A\n"
                      "}\n"),
            "t.kiln:3:7: error: use of 'h' before its assignment on line 4\n"
            "  C = h\n"
            "      ^\n");
}

TEST(SpecErrors, OutputUsedBeforeAssignment) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M]) -> (C: f32[M], D: f32[M]) {\n"
                      "  D = C + A\n"
                      "  C = A\n"
                      "}\n"),
            "t.kiln:3:7: error: use of 'C' before its assignment on line 4\n"
            "  D = C + A\n"
            "      ^\n");
}

TEST(SpecErrors, UnknownName) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A + bias\n"
                      "}\n"),
            "t.kiln:3:11: error: unknown name 'bias'\n"
            "  C = A + bias\n"
            "          ^~~~\n");
}

TEST(SpecErrors, UnknownNameInKeyword) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = f(A, axis=ax)\n"
                      "}\n"),
            "t.kiln:3:17: error: unknown name 'ax'\n"
            "  C = f(A, axis=ax)\n"
            "                ^~\n");
}

TEST(SpecErrors, DuplicateKeyword) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = f(A, axis=1, axis=2)\n"
                      "}\n"),
            "t.kiln:3:20: error: duplicate keyword argument 'axis' (first given at column 12)\n"
            "  C = f(A, axis=1, axis=2)\n"
            "                   ^~~~\n");
}

TEST(SpecErrors, DuplicateKeywordInMethod) {
  EXPECT_EQ(errors_of("dim M in 1..64\n"
                      "kernel k(A: f32[M], B: f32[M]) -> (C: f32[M]) {\n"
                      "  C = A.sum(axis=0, keepdim=true, keepdim=false)\n"
                      "}\n"),
            "t.kiln:3:35: error: duplicate keyword argument 'keepdim' (first given at column 21)\n"
            "  C = A.sum(axis=0, keepdim=true, keepdim=false)\n"
            "                                  ^~~~~~~\n");
}

// ---------------------------------------------------------------- call forms and 64-bit arguments

// The head of a kernel whose one statement each test below appends.
const std::string kKernel =
    "dim M in 1..64\ndim N in 1..64\n"
    "kernel k(A: f32[M, N], I: i32[M, N], X: f32[2, 16, 8, 8], W: f32[16, 16, 3, 3]) -> (C: f32[M, N]) {\n";

TEST(SpecErrors, MixedTupleAndSizes) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.reshape((M, N), 1)\n}\n"),
            "t.kiln:4:17: error: cannot mix a tuple with separate arguments for argument 'shape' of 'reshape' "
            "(expected one tuple or separate values, got a tuple of 2 items)\n"
            "  C = A.reshape((M, N), 1)\n"
            "                ^\n");
}

TEST(SpecErrors, MixedTupleAndTensors) {
  EXPECT_EQ(errors_of(kKernel + "  C = cat(A, (A, A))\n}\n"),
            "t.kiln:4:14: error: cannot mix a tuple with separate arguments for argument 'tensors' of 'cat' (expected "
            "one tuple or separate tensors, got a tuple of 2 items)\n"
            "  C = cat(A, (A, A))\n"
            "             ^\n");
}

TEST(SpecErrors, SeparateSizeOfWrongType) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.reshape(M, 1.5)\n}\n"),
            "t.kiln:4:20: error: wrong type for argument 'shape' of 'reshape' (expected a size, got 1.5)\n"
            "  C = A.reshape(M, 1.5)\n"
            "                   ^~~\n");
}

TEST(SpecErrors, MinusOneNotInferable) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.reshape(-1, 5)\n}\n"),
            "t.kiln:4:9: error: reshape: cannot infer the -1 in (-1, 5) for [M, N]: expected M*N elements to be a "
            "multiple of 5\n"
            "  C = A.reshape(-1, 5)\n"
            "        ^~~~~~~\n");
}

TEST(SpecErrors, TwoMinusOnes) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.reshape(-1, -1)\n}\n"),
            "t.kiln:4:9: error: reshape: expected sizes >= 0 and at most one -1, got (-1, -1)\n"
            "  C = A.reshape(-1, -1)\n"
            "        ^~~~~~~\n");
}

TEST(SpecErrors, ArgumentGivenTwice) {
  EXPECT_EQ(
      errors_of(kKernel + "  C = A.sum(1, axis=1)\n}\n"),
      "t.kiln:4:16: error: argument 'axis' of 'sum' given twice (expected it by position or by keyword, got both)\n"
      "  C = A.sum(1, axis=1)\n"
      "               ^~~~\n");
}

TEST(SpecErrors, AxisNotTruncated) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.sum(axis=4294967296)\n}\n"),
            "t.kiln:4:9: error: axis: expected an axis in [-2, 2) for shape [M, N], got 4294967296\n"
            "  C = A.sum(axis=4294967296)\n"
            "        ^~~\n");
}

TEST(SpecErrors, PermuteNotTruncated) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.permute((4294967297, 4294967296))\n}\n"),
            "t.kiln:4:9: error: axis: expected an axis in [-2, 2) for shape [M, N], got 4294967297\n"
            "  C = A.permute((4294967297, 4294967296))\n"
            "        ^~~~~~~\n");
}

TEST(SpecErrors, NegativeAxisNotTruncated) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.softmax(axis=-4294967297)\n}\n"),
            "t.kiln:4:9: error: axis: expected an axis in [-2, 2) for shape [M, N], got -4294967297\n"
            "  C = A.softmax(axis=-4294967297)\n"
            "        ^~~~~~~\n");
}

TEST(SpecErrors, TransposeNotTruncated) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.transpose(1, 4294967296)\n}\n"),
            "t.kiln:4:9: error: axis: expected an axis in [-2, 2) for shape [M, N], got 4294967296\n"
            "  C = A.transpose(1, 4294967296)\n"
            "        ^~~~~~~~~\n");
}

TEST(SpecErrors, IndexOutOfRange) {
  EXPECT_EQ(errors_of(kKernel + "  C = A[9223372036854775807]\n}\n"),
            "t.kiln:4:8: error: index: expected an index in [-M, M) on axis 0 of [M, N], got 9223372036854775807\n"
            "  C = A[9223372036854775807]\n"
            "       ^\n");
}

TEST(SpecErrors, TooManyIndices) {
  EXPECT_EQ(errors_of(kKernel + "  C = A[0, 0, 0]\n}\n"),
            "t.kiln:4:8: error: index: expected at most 2 indices for shape [M, N], got 3\n"
            "  C = A[0, 0, 0]\n"
            "       ^\n");
}

TEST(SpecErrors, ZeroSliceStep) {
  EXPECT_EQ(errors_of(kKernel + "  C = A[::0]\n}\n"),
            "t.kiln:4:8: error: index: expected a non-zero slice step, got 0\n"
            "  C = A[::0]\n"
            "       ^\n");
}

TEST(SpecErrors, SliceBoundType) {
  EXPECT_EQ(errors_of(kKernel + "  C = A[0:1.5]\n}\n"),
            "t.kiln:4:11: error: wrong type for an index (expected a size, got 1.5)\n"
            "  C = A[0:1.5]\n"
            "          ^~~\n");
}

TEST(SpecErrors, SliceStepType) {
  EXPECT_EQ(errors_of(kKernel + "  C = A[::M]\n}\n"),
            "t.kiln:4:11: error: wrong type for a slice step (expected an integer, got dim 'M')\n"
            "  C = A[::M]\n"
            "          ^\n");
}

TEST(SpecErrors, FlipAxisTwice) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.flip(0, 0)\n}\n"),
            "t.kiln:4:9: error: flip: expected each axis at most once, got 0 again\n"
            "  C = A.flip(0, 0)\n"
            "        ^~~~\n");
}

TEST(SpecErrors, BitwiseOnFloats) {
  EXPECT_EQ(errors_of(kKernel + "  C = A & A\n}\n"),
            "t.kiln:4:9: error: bitwise_and: expected integer or bool operands, got float and float\n"
            "  C = A & A\n"
            "        ^\n");
}

TEST(SpecErrors, ShiftByFloat) {
  EXPECT_EQ(errors_of(kKernel + "  C = I << 1.5\n}\n"),
            "t.kiln:4:9: error: lshift: expected integer operands, got int and weakfloat\n"
            "  C = I << 1.5\n"
            "        ^~\n");
}

TEST(SpecErrors, GeluApproximate) {
  EXPECT_EQ(errors_of(kKernel + "  C = gelu(A, approximate=\"erf\")\n}\n"),
            "t.kiln:4:7: error: gelu: expected approximate \"tanh\" or \"none\", got \"erf\"\n"
            "  C = gelu(A, approximate=\"erf\")\n"
            "      ^~~~\n");
}

TEST(SpecErrors, UnterminatedString) {
  EXPECT_EQ(errors_of(kKernel + "  C = gelu(A, approximate=\"none)\n}\n"),
            "t.kiln:4:27: error: unterminated string (expected a closing \", got end of line)\n"
            "  C = gelu(A, approximate=\"none)\n"
            "                          ^~~~~~\n");
}

TEST(SpecErrors, PadMode) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.pad((0, 0), mode=\"edge\")\n}\n"),
            "t.kiln:4:9: error: pad: expected mode \"constant\", \"reflect\", \"replicate\" or \"circular\", got "
            "\"edge\"\n"
            "  C = A.pad((0, 0), mode=\"edge\")\n"
            "        ^~~\n");
}

TEST(SpecErrors, PadModeOnSymbolicShape) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.pad((0, 0), mode=\"reflect\")\n}\n"),
            "t.kiln:4:9: error: pad: expected constant sizes and pads with mode \"reflect\", got [M, N]\n"
            "  C = A.pad((0, 0), mode=\"reflect\")\n"
            "        ^~~\n");
}

TEST(SpecErrors, FlatPadsOdd) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.pad((1, 2, 3))\n}\n"),
            "t.kiln:4:9: error: pad: expected an even number of flat pads, at most 4 for shape [M, N], got 3\n"
            "  C = A.pad((1, 2, 3))\n"
            "        ^~~\n");
}

TEST(SpecErrors, PadOverflows) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.pad(((0, 4611686018427387904), (0, 0)))\n}\n"),
            "t.kiln:4:9: error: pad: expected a shape of at most 9223372036854775807 elements, got "
            "[M+4611686018427387904, N]\n"
            "  C = A.pad(((0, 4611686018427387904), (0, 0)))\n"
            "        ^~~\n");
}

TEST(SpecErrors, ExpandOverflows) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.expand(4611686018427387904, -1, -1)\n}\n"),
            "t.kiln:4:9: error: expand: expected a shape of at most 9223372036854775807 elements, got "
            "[4611686018427387904, M, N]\n"
            "  C = A.expand(4611686018427387904, -1, -1)\n"
            "        ^~~~~~\n");
}

TEST(SpecErrors, DilationOverflows) {
  EXPECT_EQ(errors_of(kKernel + "  C = X.max_pool2d(3, dilation=4611686018427387904)\n}\n"),
            "t.kiln:4:9: error: pool: expected a kernel of extent over 2^63 to fit in [2, 16, 8, 8] on axis 2\n"
            "  C = X.max_pool2d(3, dilation=4611686018427387904)\n"
            "        ^~~~~~~~~~\n");
}

TEST(SpecErrors, NoneBeyondTheAxes) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.reshape(M, N, None)\n}\n"),
            "t.kiln:4:9: error: reshape: expected None at one of the 2 axes of [M, N], got it at 2\n"
            "  C = A.reshape(M, N, None)\n"
            "        ^~~~~~~\n");
  EXPECT_EQ(errors_of(kKernel + "  C = A.reshape(None)\n}\n"),
            "t.kiln:4:17: error: wrong type for argument 'shape' of 'reshape' (expected a tuple of sizes, got None)\n"
            "  C = A.reshape(None)\n"
            "                ^~~~\n");
}

TEST(SpecErrors, DivRoundingMode) {
  EXPECT_EQ(errors_of(kKernel + "  C = A.div(2, rounding_mode=\"round\")\n}\n"),
            "t.kiln:4:9: error: div: expected rounding_mode \"trunc\" or \"floor\", got \"round\"\n"
            "  C = A.div(2, rounding_mode=\"round\")\n"
            "        ^~~\n");
}

TEST(SpecErrors, TwoEllipses) {
  EXPECT_EQ(errors_of(kKernel + "  C = A[..., 0, ...]\n}\n"),
            "t.kiln:4:8: error: index: expected at most one ..., got 2\n"
            "  C = A[..., 0, ...]\n"
            "       ^\n");
}

TEST(SpecErrors, EllipsisOutsideAnIndex) {
  EXPECT_EQ(errors_of(kKernel + "  C = A + ...\n}\n"),
            "t.kiln:4:11: error: syntax error in expression (expected an expression, got '..')\n"
            "  C = A + ...\n"
            "          ^~\n");
}

TEST(SpecErrors, NoneIndexTooMany) {
  EXPECT_EQ(errors_of(kKernel + "  C = A[None, 0, 0, 0]\n}\n"),
            "t.kiln:4:8: error: index: expected at most 2 indices for shape [M, N], got 3\n"
            "  C = A[None, 0, 0, 0]\n"
            "       ^\n");
}

}  // namespace
}  // namespace kiln::frontend
