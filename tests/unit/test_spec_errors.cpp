// Golden rendered diagnostics of the .kiln front end, one or more per error class: the full
// text a user sees, location, source line and caret included. The parser's AST, precedence,
// recovery and fuzz tests live in test_spec_parser.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "generator/frontend/parser.h"
#include "generator/frontend/source.h"
#include "generator/frontend/spec_check.h"

namespace kiln::frontend {
namespace {

// What `kiln check t.kiln` prints to stderr: syntax errors, or if there are none the checks'.
std::string errors_of(const std::string& text) {
  SourceFile file("t.kiln", text);
  ParseResult parsed = parse_spec(file);
  std::vector<Diagnostic> errors = std::move(parsed.diagnostics);
  if (errors.empty()) errors = check_spec(parsed.spec);
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

}  // namespace
}  // namespace kiln::frontend
