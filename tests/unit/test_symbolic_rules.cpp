// Golden-text tests of the symbolic rule families: input text, one matcher, expected text,
// including inputs a rule must leave alone. Shorthand on both sides: `%name` is a leaf of the
// prelude below and `#N` is (CONST:weakint N).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "generator/ir/text.h"
#include "generator/symbolic/symbolic.h"
#include "tests/unit/ref_alu.h"

namespace kiln {
namespace {

struct Leaf {
  const char* name;
  const char* text;
};
const Leaf kPrelude[] = {
    {"a", "(VAR:weakint a 0 8)"},
    {"b", "(VAR:weakint b 0 8)"},
    {"e", "(VAR:weakint e 0 3)"},
    {"e4", "(VAR:weakint e4 0 4)"},
    {"n", "(VAR:weakint n -8 8)"},
    {"i", "(VAR:int32 i 0 100)"},
    {"l", "(VAR:int64 l 0 1000)"},
    {"L", "(VAR:int64 L 0 10000000000)"},
    {"r", "(RANGE:weakint 0 loop (CONST:weakint 16))"},
    {"f", "(PARAM:float32 slot=0)"},
    {"g", "(PARAM:float32 slot=1)"},
    {"buf", "(PARAM:float32* slot=2)"},
    {"c", "(CMPLT:bool (VAR:weakint a 0 8) (VAR:weakint b 0 8))"},
    {"d", "(CMPLT:bool (VAR:weakint b 0 8) (VAR:weakint e 0 3))"},
    {"inv", "(CONST:bool invalid)"},
};

std::string expand(std::string s) {
  static const std::regex kConst("#(-?[0-9]+)");
  return std::regex_replace(s, kConst, "(CONST:weakint $1)");
}

// Prints r with the prelude's leaves and weakint constants abbreviated.
std::string abbreviate(Context& ctx, const UOp* r) {
  std::string s = print(r);
  static const std::regex kConst(R"(\(CONST:weakint (-?[0-9]+)\))");
  // longest leaves first, so that a leaf inside another is not cut out of it
  std::vector<std::pair<std::string, std::string>> leaves;
  for (const Leaf& l : kPrelude) leaves.emplace_back(print(parse(ctx, l.text)), std::string("%") + l.name);
  std::sort(leaves.begin(), leaves.end(), [](const auto& p, const auto& q) { return p.first.size() > q.first.size(); });
  for (const auto& [text, name] : leaves)
    for (size_t at; (at = s.find(text)) != std::string::npos;) s.replace(at, text.size(), name);
  return std::regex_replace(s, kConst, "#$1");
}

const UOp* parse_with_prelude(Context& ctx, const std::string& expr, std::string* error) {
  std::string text;
  for (const Leaf& l : kPrelude) text += std::string("%") + l.name + " = " + l.text + "\n";
  text += "%out = " + expand(expr);
  ParseError err;
  const UOp* u = parse(ctx, text, &err);
  if (u == nullptr) *error = "parse error: " + err.message + " in " + expr;
  return u;
}

struct Case {
  const char* in;
  const char* out;  // nullptr: must not fire (the input comes back)
};

void check(const PatternMatcher& pm, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    // both sides go through the printer, so the expected text may use any dtype alias
    Context ctx;
    std::string got, want;
    if (const UOp* u = parse_with_prelude(ctx, c.in, &got)) got = abbreviate(ctx, graph_rewrite(u, pm));
    if (const UOp* v = parse_with_prelude(ctx, c.out ? c.out : c.in, &want)) want = abbreviate(ctx, v);
    EXPECT_EQ(got, want) << "input: " << c.in;
  }
}

TEST(SymbolicSimple, SelfAndZeroFolding) {
  check(symbolic_simple(), {
                               {"(ADD:weakint %a #0)", "%a"},
                               {"(MUL:weakint #1 %a)", "%a"},
                               {"(FLOORDIV:weakint %a %a)", "#1"},
                               {"(FLOORDIV:weakint %a #1)", "%a"},
                               {"(FLOORDIV:weakint %a #-1)", "(MUL:weakint %a #-1)"},
                               {"(XOR:weakint (XOR:weakint %a %b) %b)", "%a"},
                               {"(FLOORMOD:weakint (FLOORMOD:weakint %a %b) %b)", "(FLOORMOD:weakint %a %b)"},
                               {"(CMPLT:bool %a %a)", "(CONST:bool false)"},
                               {"(FLOORMOD:weakint %a %a)", "#0"},
                               {"(XOR:weakint %n %n)", "#0"},
                               {"(AND:weakint %n #0)", "#0"},
                               {"(CMPNE:bool %i %i)", "(CONST:bool false)"},
                               {"(CMPNE:bool %f %f)", nullptr},  // NaN != NaN
                               {"(TRUNC:int32 %i)", "%i"},
                               {"(MAX:weakint %n %n)", "%n"},
                               {"(MUL:weakint %n #0)", "#0"},
                               {"(MUL:float32 %f (CONST:float32 0.0))", "(CONST:float32 0.0)"},
                           });
}

TEST(SymbolicSimple, Masks) {
  check(symbolic_simple(),
        {
            {"(SHR:int32 (AND:int32 %i (CONST:int32 -16)) (CONST:int32 4))", "(SHR:int32 %i #4)"},
            {"(SHR:int32 (AND:int32 %i (CONST:int32 -8)) (CONST:int32 4))", "(SHR:int32 %i #4)"},
            {"(SHR:int32 (AND:int32 %i (CONST:int32 -32)) (CONST:int32 4))", nullptr},  // clears bit 4
            {"(FLOORDIV:weakint (AND:weakint %n #-4) #4)", "(FLOORDIV:weakint %n #4)"},
            {"(FLOORDIV:weakint (AND:weakint %n #-4) #6)", nullptr},
        });
}

TEST(SymbolicSimple, DivmodRecombine) {
  check(symbolic_simple(),
        {
            {"(ADD:weakint (FLOORMOD:weakint %a #4) (MUL:weakint (FLOORDIV:weakint %a #4) #4))", "%a"},
            // floor semantics make it hold for negative values too
            {"(ADD:weakint (MUL:weakint (FLOORDIV:weakint %n #4) #4) (FLOORMOD:weakint %n #4))", "%n"},
            {"(ADD:weakint (ADD:weakint (FLOORMOD:weakint %a #4) %b) (MUL:weakint (FLOORDIV:weakint %a #4) #4))",
             "(ADD:weakint %a %b)"},
            {"(ADD:weakint (FLOORMOD:weakint %a #4) (MUL:weakint (FLOORMOD:weakint (FLOORDIV:weakint %a #4) #3) #4))",
             "(FLOORMOD:weakint %a #12)"},
            {"(ADD:weakint (FLOORMOD:weakint %a #4) (MUL:weakint (FLOORDIV:weakint %a #4) #3))", nullptr},
            {"(ADD:weakint (FLOORMOD:weakint %a #4) (MUL:weakint (FLOORDIV:weakint %b #4) #4))", nullptr},
        });
}

TEST(SymbolicSimple, Bool) {
  check(symbolic_simple(),
        {
            {"(AND:bool %c (CONST:bool true))", "%c"},
            {"(AND:bool %c (CONST:bool false))", "(CONST:bool false)"},
            {"(OR:bool %c (CONST:bool true))", "(CONST:bool true)"},
            {"(OR:bool (CONST:bool false) %c)", "%c"},
            {"(CMPNE:bool %c (CONST:bool false))", "%c"},
            {"(CMPNE:bool (CMPNE:bool %c (CONST:bool true)) (CONST:bool true))", "%c"},
            {"(WHERE:bool %c (CONST:bool true) (CONST:bool false))", "%c"},
            {"(WHERE:bool %c (CONST:bool false) (CONST:bool true))", "(CMPNE:bool %c (CONST:bool true))"},
            {"(CMPNE:bool (CAST:int32 %c) (CONST:int32 0))", "%c"},
            {"(CMPNE:bool (CAST:int32 %c) (CONST:int32 1))", "(CMPNE:bool %c (CONST:bool true))"},
            {"(CMPNE:bool (CAST:int32 %c) (CONST:int32 5))", "(CONST:bool true)"},
            {"(MUL:bool %c %d)", "(AND:bool %c %d)"},
            {"(ADD:bool %c %d)", "(OR:bool %c %d)"},
            {"(MAX:bool %c %d)", "(OR:bool %c %d)"},
        });
}

TEST(SymbolicSimple, ConstantFolding) {
  check(symbolic_simple(), {
                               {"(ADD:int32 (CONST:int32 2147483647) (CONST:int32 1))", "(CONST:int32 -2147483648)"},
                               {"(FLOORDIV:weakint #-7 #2)", "#-4"},
                               {"(FLOORMOD:weakint #-7 #2)", "#1"},
                               {"(CDIV:int32 (CONST:int32 -7) (CONST:int32 2))", "(CONST:int32 -3)"},
                               {"(CMOD:int32 (CONST:int32 -7) (CONST:int32 2))", "(CONST:int32 -1)"},
                               {"(FLOORDIV:weakint #1 #0)", nullptr},  // undefined: never folded
                               {"(CMPLT:bool #3 #4)", "(CONST:bool true)"},
                               {"(CAST:uint8 (CONST:weakint 300))", "(CONST:uint8 44)"},
                               {"(CAST:float32 (CONST:weakint 3))", "(CONST:float32 3.0)"},
                               {"(CAST:int32 (CONST:float32 -2.75))", "(CONST:int32 -2)"},
                               {"(BITCAST:int32 (CONST:float32 1.0))", "(CONST:int32 1065353216)"},
                               {"(ADD:weakint.2 (STACK:weakint.2 #1 #2) #3)", "(STACK:weakint.2 #4 #5)"},
                           });
}

TEST(SymbolicSimple, CastsAndFloats) {
  check(symbolic_simple(), {
                               {"(CAST:int32 (CAST:int64 %i))", "%i"},
                               {"(CAST:int32 (CAST:int8 %i))", nullptr},  // int8 loses values of int32
                               {"(BITCAST:int32 (BITCAST:float32 %i))", "%i"},
                               {"(CAST:bool %i)", "(CMPNE:bool %i (CONST:int32 0))"},
                               {"(MUL:float32 %f (RECIPROCAL:float32 %f))", "(CONST:float32 1.0)"},
                               {"(MUL:float32 (MUL:float32 %f %g) (RECIPROCAL:float32 %g))", "%f"},
                               {"(POW:float32 %f (CONST:float32 0.0))", "(CONST:float32 1.0)"},
                               {"(POW:float32 (CONST:float32 1.0) %f)", "(CONST:float32 1.0)"},
                           });
}

TEST(SymbolicSimple, Where) {
  check(symbolic_simple(),
        {
            {"(WHERE:weakint %c %a %a)", "%a"},
            {"(WHERE:weakint (CONST:bool true) %a %b)", "%a"},
            {"(WHERE:weakint (CONST:bool false) %a %b)", "%b"},
            {"(WHERE:int32 (CONST:bool true) #7 %i)", "(CONST:int32 7)"},
            {"(WHERE:weakint %c (WHERE:weakint %d %a %b) %b)", "(WHERE:weakint (AND:bool %c %d) %a %b)"},
            {"(WHERE:weakint %c %a (WHERE:weakint %d %a %b))", "(WHERE:weakint (OR:bool %c %d) %a %b)"},
        });
}

TEST(SymbolicSimple, InvalidPropagation) {
  check(symbolic_simple(),
        {
            {"(ADD:weakint (WHERE:weakint %c %a %inv) #1)", "(WHERE:weakint %c (ADD:weakint %a #1) %inv)"},
            // 0 * maybe-invalid must stay gated
            {"(MUL:weakint (WHERE:weakint %c %a %inv) #0)", "(WHERE:weakint %c #0 %inv)"},
            {"(ADD:weakint %inv %a)", "%inv"},
            {"(CAST:int32 (WHERE:weakint %c %a %inv))", "(WHERE:int32 %c (CAST:int32 %a) %inv)"},
            {"(WHERE:weakint %c %inv %a)", "(WHERE:weakint (CMPNE:bool %c (CONST:bool true)) %a %inv)"},
            {"(WHERE:weakint %d (WHERE:weakint %c %a %inv) %b)",
             "(WHERE:weakint (OR:bool (CMPNE:bool %d (CONST:bool true)) %c) (WHERE:weakint %d %a %b) %inv)"},
            {"(LOAD:float32 (INDEX:float32* %buf %inv))", "(CONST:float32 0.0)"},
            {"(STORE:void (INDEX:float32* %buf %inv) %f)", "(NOOP:void)"},
        });
}

TEST(Commutative, CanonicalOrder) {
  check(commutative(), {
                           {"(ADD:weakint #3 %a)", "(ADD:weakint %a #3)"},
                           {"(ADD:weakint %b %a)", "(ADD:weakint %a %b)"},
                           {"(MUL:weakint %a %b)", nullptr},
                           {"(ADD:int32 (CONST:int32 3) %i)", nullptr},  // index math only
                       });
}

TEST(Symbolic, LikeTerms) {
  check(symbolic(), {
                        {"(ADD:weakint (MUL:weakint %a #3) (MUL:weakint %a #4))", "(MUL:weakint %a #7)"},
                        {"(ADD:weakint %a %a)", "(MUL:weakint %a #2)"},
                        {"(ADD:weakint (ADD:weakint %b %a) %a)", "(ADD:weakint %b (MUL:weakint %a #2))"},
                        {"(ADD:weakint %a (MUL:weakint %a #3))", "(MUL:weakint %a #4)"},
                        {"(MUL:weakint (ADD:weakint %a #2) #-1)", "(ADD:weakint (MUL:weakint %a #-1) #-2)"},
                        {"(MUL:weakint #3 (ADD:weakint %a #2))", "(ADD:weakint (MUL:weakint %a #3) #6)"},
                        {"(ADD:weakint (ADD:weakint %a #3) #4)", "(ADD:weakint %a #7)"},
                        {"(MUL:weakint (MUL:weakint %a #2) #3)", "(MUL:weakint %a #6)"},
                        {"(ADD:weakint (ADD:weakint %a #3) %b)", "(ADD:weakint (ADD:weakint %a %b) #3)"},
                        {"(OR:bool %c (CMPNE:bool %c (CONST:bool true)))", "(CONST:bool true)"},
                    });
}

TEST(Symbolic, Where) {
  check(symbolic(), {
                        {"(WHERE:weakint (CMPNE:bool %c (CONST:bool true)) %a %b)", "(WHERE:weakint %c %b %a)"},
                        {"(WHERE:int32 %c (ADD:int32 %i (CAST:int32 %c)) %i)",
                         "(WHERE:int32 %c (ADD:int32 %i (CONST:int32 1)) %i)"},
                        {"(ADD:weakint (WHERE:weakint %c #1 %a) (WHERE:weakint %c #2 %b))",
                         "(WHERE:weakint %c #3 (ADD:weakint %a %b))"},
                        {"(ADD:weakint (WHERE:weakint %c %a #0) (WHERE:weakint %c #0 %b))", "(WHERE:weakint %c %a %b)"},
                        {"(ADD:weakint (WHERE:weakint %c %a %b) (WHERE:weakint %d %a %b))", nullptr},
                    });
}

TEST(Symbolic, RangesAndMax) {
  check(symbolic(), {
                        {"(CMPLT:bool %a #9)", "(CONST:bool true)"},
                        {"(CMPLT:bool %a #8)", nullptr},
                        {"(FLOORDIV:weakint %a #9)", "#0"},
                        {"(RANGE:weakint 0 loop #1)", "#0"},
                        {"(VAR:weakint k 3 3)", "#3"},
                        {"(MAX:weakint %a #0)", "%a"},
                        {"(MAX:weakint %n #0)", nullptr},
                        {"(WHERE:weakint (CMPLT:bool #3 %n) %n #3)", "(MAX:weakint %n #3)"},
                    });
}

TEST(Symbolic, Comparisons) {
  check(symbolic(),
        {
            {"(CMPLT:bool (ADD:weakint %n #3) #5)", "(CMPLT:bool %n #2)"},
            {"(CMPLT:bool (MUL:weakint %n #4) #10)", "(CMPLT:bool %n #3)"},
            {"(CMPLT:bool (MUL:weakint %n #-4) #10)", "(CMPLT:bool (MUL:weakint %n #-1) #3)"},
            {"(CMPLT:bool (FLOORDIV:weakint %n #4) #2)", "(CMPLT:bool %n #8)"},
            {"(CMPLT:bool (FLOORDIV:weakint %n #-4) #1)", "(CMPLT:bool #-4 %n)"},
            {"(CMPLT:bool (MUL:weakint %n #-1) (MUL:weakint %b #-1))", "(CMPLT:bool %b %n)"},
            // lt folding: the small term cannot reach the next multiple of 4
            {"(CMPLT:bool (ADD:weakint (MUL:weakint %a #4) %e) #8)", "(CMPLT:bool %a #2)"},
            {"(CMPLT:bool (ADD:weakint (MUL:weakint %a #4) %e4) #8)",
             "(CMPLT:bool (ADD:weakint %e4 (MUL:weakint %a #4)) #8)"},
            {"(CMPLT:bool (ADD:weakint (MUL:weakint %a #4) %n) #8)",
             "(CMPLT:bool (ADD:weakint %n (MUL:weakint %a #4)) #8)"},
            // a simplex with positive coefficients
            {"(CMPNE:bool (CMPLT:bool (ADD:weakint (MUL:weakint %a #2) (MUL:weakint %b #3)) #1) (CONST:bool true))",
             "(CMPNE:bool (CMPLT:bool (ADD:weakint %a %b) #1) (CONST:bool true))"},
            {"(CMPNE:bool (CMPLT:bool (ADD:weakint (MUL:weakint %a #2) (MUL:weakint %n #3)) #1) (CONST:bool true))",
             nullptr},
        });
}

// uint64 values from 2^63 up are carried as negative int64: rules read them unsigned (issue 19 #6)
TEST(Symbolic, Uint64IsUnsigned) {
  const char* u = "(VAR:ulong u 0 1)";
  auto sub = [&](std::string s) {
    for (size_t at; (at = s.find("%u")) != std::string::npos;) s.replace(at, 2, u);
    return s;
  };
  std::vector<std::string> keep;  // the strings the cases point into
  auto c = [&](std::string in, const char* out) {
    keep.push_back(sub(in));
    const char* i = keep.back().c_str();
    keep.push_back(out ? sub(out) : "");
    return Case{i, out ? keep.back().c_str() : nullptr};
  };
  keep.reserve(64);
  check(symbolic(),
        {
            c("(CMPLT:bool (CONST:ulong 0) (CONST:ulong 18446744073709551609))", "(CONST:bool true)"),
            c("(CMPLT:bool (NEG:ulong (CONST:ulong 1)) (CONST:ulong 0))", "(CONST:bool false)"),
            c("(MAX:ulong (CONST:ulong 18446744073709551609) %u)", "(CONST:ulong 18446744073709551609)"),
            c("(CAST:float (CONST:ulong 18446744073709551615))", "(CONST:float 1.8446744073709552e+19)"),
            c("(FLOORDIV:ulong %u (CONST:ulong 18446744073709551615))", "(CONST:ulong 0)"),
            // x // -1 is -x; x // (2^64-1) is not
            c("(FLOORDIV:ulong (VAR:ulong w 0 18446744073709551615) (CONST:ulong 18446744073709551615))", nullptr),
            c("(CMPLT:bool (ADD:ulong %u (CONST:ulong 18446744073709551615)) (CONST:ulong 1))", nullptr),
            c("(CMPLT:bool (ADD:ulong (VAR:ulong v 1 9) (CONST:weakint -1)) (CONST:ulong 3))",
              "(CMPLT:bool (VAR:ulong v 1 9) (CONST:ulong 4))"),
            c("(FLOORDIV:ulong (FLOORDIV:ulong %u (CONST:ulong 9223372036854775808)) (CONST:ulong 2))",
              "(CONST:ulong 0)"),
            c("(CAST:int (CAST:ulong (VAR:int i -1 1)))", nullptr),
        });
}

// A fold whose constants leave int64 does not fire (issue 19 #7); every value of these fits
TEST(Symbolic, FoldsPastInt64DoNotFire) {
  check(symbolic(),
        {
            // (x//2)//2^62 must not become x//2^63 (2^63 is not an int64)
            {"(FLOORDIV:weakint (FLOORDIV:weakint %n #2) #4611686018427387904)", nullptr},
            {"(FLOORDIV:weakint (ADD:weakint (FLOORDIV:weakint %n #2) #1) #4611686018427387904)", nullptr},
            // -3 + -(2^63-1) is not an int64: the constants stay apart (this looped)
            {"(ADD:weakint (ADD:weakint %a #-3) #-9223372036854775807)", nullptr},
            {"(ADD:weakint (ADD:weakint %a #-3) #-9223372036854775805)", "(ADD:weakint %a #-9223372036854775808)"},
            {"(ADD:weakint (MUL:weakint %a #9223372036854775807) (MUL:weakint %a #2))", nullptr},  // not %a * 2^63+1
        });
}

// A rewrite must not make a value past int64 where the original had none: at %w = INT64_MIN,
// (w+1)*-1 is INT64_MAX but w*-1 is no int64 (found by SymbolicFuzz.CarrierEdgesAgainstExactEvaluation)
TEST(Symbolic, RewritesDoNotLeaveTheCarrier) {
  check(sym(), {
                   {"(MUL:weakint (ADD:weakint (VAR:weakint w -9223372036854775808 -14) #1) #-1)", nullptr},
                   {"(MUL:weakint (ADD:weakint (VAR:weakint w -9223372036854775807 -14) #1) #-1)",
                    "(ADD:weakint (MUL:weakint (VAR:weakint w -9223372036854775807 -14) #-1) #-1)"},
                   // (q * (2^63-1)) // 2 for q in {-1, 0}: the congruence's quotient factor is 2^62, exactly
                   {"(FLOORDIV:weakint (MUL:weakint (FLOORDIV:weakint %n #9) #9223372036854775807) #2)",
                    "(MUL:weakint (FLOORDIV:weakint %n #9) #4611686018427387904)"},  // -2^62 at q = -1
                   // (x + INT64_MIN) // -1 kept the constant apart by INT64_MIN // -1, which traps (SIGFPE)
                   {"(FLOORDIV:weakint (ADD:weakint %a #-9223372036854775808) #-1)", nullptr},
                   // an int32 shift takes amounts up to 31: a long >> 32 stays a long
                   {"(SHR:long (VAR:long q -10 10) (CONST:long 32))", nullptr},
               });
}

// rules only read a constant's value where the pattern asks for a CONST (issue 19 #10)
TEST(SymbolicSimple, MaskedDivisionBySymbol) {
  check(symbolic(), {
                        {"(FLOORDIV:weakint (AND:weakint (VAR:weakint f 1 2) #1) (VAR:weakint x 7 8))", "#0"},
                        {"(FLOORDIV:weakint (AND:weakint %a #-4) %b)", nullptr},
                    });
}

TEST(Symbolic, Casts) {
  check(symbolic(), {
                        {"(CAST:int32 (CAST:int8 %a))", "(CAST:int32 %a)"},
                        {"(CAST:int32 (CAST:int8 %l))", nullptr},  // l does not fit int8
                        {"(CAST:int32 (CAST:int64 %i))", "%i"},
                        {"(ADD:int64 %l (CONST:int64 5))", "(CAST:int64 (ADD:int32 (CAST:int32 %l) #5))"},
                        {"(ADD:int64 %L (CONST:int64 5))", nullptr},  // needs 64 bits
                        {"(CAST:int32 (ADD:weakint %a #3))", "(ADD:int32 (CAST:int32 %a) (CONST:int32 3))"},
                        {"(AFTER:weakint %a %b)", "%a"},
                    });
}

TEST(Valid, UopGivenValid) {
  Context ctx;
  std::string error;
  auto p = [&](const std::string& s) { return parse_with_prelude(ctx, s, &error); };
  const UOp* valid = p("(AND:bool (CMPLT:bool #-1 %n) (CMPLT:bool %n #4))");
  ASSERT_NE(valid, nullptr);
  EXPECT_EQ(abbreviate(ctx, uop_given_valid(valid, p("(FLOORDIV:weakint %n #4)"))), "#0");
  EXPECT_EQ(abbreviate(ctx, uop_given_valid(valid, p("(CMPLT:bool %n #5)"))), "(CONST:bool true)");
  // without the valid, n can be negative
  EXPECT_EQ(abbreviate(ctx, uop_given_valid(p("(CMPLT:bool %n #4)"), p("(FLOORDIV:weakint %n #4)"))),
            "(FLOORDIV:weakint %n #4)");
}

// A launch id is one node wherever it is used, as a loop is: under a valid that fixes the id's end
// (3 < N, N at most 4), the id keeps its end N. SPECIAL(4) "idx0" would be a second declaration of
// idx0 in the kernel (the opts fuzz found one on OpenCL), and the launch might take its end.
TEST(Valid, ALaunchIdKeepsItsEnd) {
  Context ctx;
  const UOp* n = ctx.var("N", 3, 4);
  const UOp* id = ctx.special(n, "idx0");
  const UOp* valid = Expr(ctx.cint(3)) < Expr(n);
  const UOp* e = Expr(id) * Expr(n) + 3;
  const UOp* got = uop_given_valid(valid, e);
  size_t ids = 0;
  for (const UOp* u : toposort(got)) {
    if (u->op != Op::SPECIAL) continue;
    EXPECT_EQ(u, id) << print(got);
    ++ids;
  }
  EXPECT_EQ(ids, 1u) << print(got);
}

TEST(Valid, SimplifyValid) {
  check(pm_simplify_valid(),
        {
            {"(AND:bool (CMPLT:bool %a #4) (CMPLT:bool %a #6))", "(AND:bool (CMPLT:bool %a #4) (CONST:bool true))"},
            {"(AND:bool (CMPLT:bool %a #4) (CMPLT:bool %b #6))", nullptr},
            {"(WHERE:weakint (AND:bool (CMPLT:bool #-1 %n) (CMPLT:bool %n #4)) (FLOORDIV:weakint %n #4) %inv)",
             "(WHERE:weakint (AND:bool (CMPLT:bool #-1 %n) (CMPLT:bool %n #4)) #0 %inv)"},
            // only index math is simplified under a gate
            {"(WHERE:float32 (CMPLT:bool %a #4) %f %inv)", nullptr},
        });
}

TEST(Sym, TermsAndReciprocals) {
  check(
      sym(),
      {
          {"(MUL:weakint (ADD:weakint %a %b) #3)", "(ADD:weakint (MUL:weakint %a #3) (MUL:weakint %b #3))"},
          {"(MUL:float32 (ADD:float32 %f %g) (CONST:float32 3.0))", nullptr},  // inf*0 would differ
          {"(RECIPROCAL:float32 (MUL:float32 %f %f))", "(MUL:float32 (RECIPROCAL:float32 %f) (RECIPROCAL:float32 %f))"},
          {"(CAST:float32 (WHERE:weakint %c %a #1))", "(WHERE:float32 %c (CAST:float32 %a) (CONST:float32 1.0))"},
          {"(ADD:weakint.2 (STACK:weakint.2 %a %a) (STACK:weakint.2 %b %b))",
           "(STACK:weakint.2 (ADD:weakint %a %b) (ADD:weakint %a %b))"},
      });
}

TEST(Sym, LoadStoreReduceSink) {
  check(sym(), {
                   {"(STORE:void (INDEX:float32* %buf %a) (LOAD:float32 (INDEX:float32* %buf %a)))", "(NOOP:void)"},
                   {"(STORE:void (INDEX:float32* %buf %a) (LOAD:float32 (INDEX:float32* %buf %b)))", nullptr},
                   {"(STORE:void (INDEX:float32* %buf %a) (WHERE:float32 %c %f %inv))",
                    "(STORE:void (INDEX:float32* %buf (WHERE:weakint %c %a %inv)) %f)"},
                   {"(REDUCE:float32 add (MUL:float32 (CAST:float32 %r) %f) %r)",
                    "(MUL:float32 (REDUCE:float32 add (CAST:float32 %r) %r) %f)"},
                   {"(REDUCE:float32 max (MUL:float32 (CAST:float32 %r) %f) %r)", nullptr},  // f may be negative
                   {"(SINK:void (SINK:void %a %b) %e)", "(SINK:void %a %b %e)"},
               });
}

TEST(CastWeak, CommitsWidth) {
  check(pm_cast_weak(), {
                            {"(CAST:int32 (ADD:weakint %a #3))", "(ADD:int32 (CAST:int32 %a) (CONST:int32 3))"},
                            {"(CAST:int32 (ADD:weakint %a #10000000000))",
                             "(CAST:int32 (ADD:int64 (CAST:int64 %a) (CONST:int64 10000000000)))"},
                            {"(CAST:float32 (CONST:weakint 3))", "(CONST:float32 3.0)"},
                            {"(CAST:float32 (ADD:weakint %a #1))", nullptr},
                        });
}

TEST(Simplify, Entry) {
  Context ctx;
  const UOp* k = ctx.cint(5);
  EXPECT_EQ(simplify(k), k);
  const UOp* a = ctx.var("a", 0, 8);
  const UOp* e = Expr(a) + 0 + Expr(a) * 2;
  EXPECT_EQ(print(simplify(e)), print(Expr(a) * 3));
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A small interpreter for index math, to check rewrites against the original on random points.
std::optional<int64_t> eval_index(const UOp* root, const std::unordered_map<const UOp*, int64_t>& env) {
  std::unordered_map<const UOp*, ConstValue> val;
  for (const UOp* u : toposort(root)) {
    if (u->op == Op::DEFINE_VAR) {
      val[u] = ConstValue::of_int(env.at(u));
      continue;
    }
    if (u->op == Op::CONST) {
      val[u] = u->cval();
      continue;
    }
    if (!is_alu(u->op)) return std::nullopt;
    std::vector<ConstValue> in;
    for (const UOp* s : u->src()) in.push_back(val.at(s));
    auto r = ref::alu(u->op, u->dtype, in);
    if (!r) return std::nullopt;
    val[u] = *r;
  }
  return val.at(root).i;
}

TEST(Symbolic, RandomDifferential) {
  std::mt19937_64 rng(7);
  auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int iter = 0; iter < 1000; ++iter) {
    Context ctx;
    std::vector<const UOp*> vars;
    for (const char* name : {"a", "b", "c"}) {
      int64_t lo = uni(-6, 6);
      vars.push_back(ctx.var(name, lo, lo + uni(0, 9)));
    }
    std::function<Expr(int)> gen = [&](int depth) -> Expr {
      if (depth == 0 || uni(0, 3) == 0) return uni(0, 2) ? Expr(vars[uni(0, 2)]) : Expr(lift(vars[0], uni(-5, 5)));
      switch (uni(0, 6)) {
        case 0:
          return gen(depth - 1) + gen(depth - 1);
        case 1:
          return gen(depth - 1) * uni(-3, 3);
        case 2:
          return maximum(gen(depth - 1), gen(depth - 1));
        case 3:
          return where(gen(depth - 1) < gen(depth - 1), gen(depth - 1), gen(depth - 1));
        case 4:
          return gen(depth - 1) - gen(depth - 1);
        case 5:
          return where(Expr(gen(depth - 1) < uni(-4, 8)) & Expr(gen(depth - 1) < uni(-4, 8)), gen(depth - 1),
                       gen(depth - 1));
        default:
          return gen(depth - 1) * gen(depth - 1);
      }
    };
    const UOp* e = gen(4);
    const UOp* s = graph_rewrite(e, sym());
    for (int p = 0; p < 10; ++p) {
      std::unordered_map<const UOp*, int64_t> env;
      for (const UOp* v : vars) env[v] = uni(v->arg<VarArg>().min, v->arg<VarArg>().max);
      auto want = eval_index(e, env), got = eval_index(s, env);
      ASSERT_TRUE(want && got) << print(e) << "\n  -> " << print(s);
      ASSERT_EQ(*want, *got) << print(e) << "\n  -> " << print(s);
    }
  }
}

// Shorthand of the MoveWhereOnLoad cases: $s is a second range, $ib an int32 buffer, $z the 0.0 false branch.
std::string load_case(std::string s) {
  const std::pair<const char*, const char*> kMore[] = {
      {"$s", "(RANGE:weakint 1 loop (CONST:weakint 8))"},
      {"$ib", "(PARAM:int32* slot=3)"},
      {"$z", "(CONST:float32 0.0)"},
  };
  for (const auto& [k, v] : kMore)
    for (size_t at; (at = s.find(k)) != std::string::npos;) s.replace(at, std::string(k).size(), v);
  return s;
}

TEST(MoveWhereOnLoad, GateMovesIntoIndexValid) {
  const std::vector<std::pair<std::string, std::optional<std::string>>> cases = {
      // the clause depends only on the index's range: it guards the load
      {"(WHERE:float32 (CMPLT:bool %r #8) (INDEX:float32 %buf %r) $z)",
       "(INDEX:float32 %buf (WHERE:weakint (CMPLT:bool %r #8) %r %inv))"},
      // the negated form: cond.where(0, load)
      {"(WHERE:float32 (CMPLT:bool %r #8) $z (INDEX:float32 %buf %r))",
       "(INDEX:float32 %buf (WHERE:weakint (CMPNE:bool (CMPLT:bool %r #8) (CONST:bool true)) %r %inv))"},
      // through a CAST of the load
      {"(WHERE:float32 (CMPLT:bool %r #8) (CAST:float32 (INDEX:int32 $ib %r)) $z)",
       "(CAST:float32 (INDEX:int32 $ib (WHERE:weakint (CMPLT:bool %r #8) %r %inv)))"},
      // a clause over a range the index does not use stays outside; the other one moves
      {"(WHERE:float32 (AND:bool (CMPLT:bool %r #8) (CMPLT:bool $s #4)) (INDEX:float32 %buf %r) $z)",
       "(WHERE:float32 (CMPLT:bool $s #4) (INDEX:float32 %buf (WHERE:weakint (CMPLT:bool %r #8) %r %inv)) $z)"},
      // a clause the valid already holds is dropped, a new one joins the valid
      {"(WHERE:float32 (AND:bool (CMPLT:bool %r #8) (CMPLT:bool %r #4)) "
       "(INDEX:float32 %buf (WHERE:weakint (CMPLT:bool %r #8) %r %inv)) $z)",
       "(INDEX:float32 %buf (WHERE:weakint (AND:bool (CMPLT:bool %r #8) (CMPLT:bool %r #4)) %r %inv))"},
      {"(WHERE:float32 (CMPLT:bool %r #8) (INDEX:float32 %buf (WHERE:weakint (CMPLT:bool %r #8) %r %inv)) $z)",
       "(INDEX:float32 %buf (WHERE:weakint (CMPLT:bool %r #8) %r %inv))"},
      // a variable has no range: its clause moves, the range clause stays (the index has no range)
      {"(WHERE:float32 (AND:bool (CMPLT:bool %a #4) (CMPLT:bool %r #2)) "
       "(INDEX:float32 %buf (WHERE:weakint (CMPLT:bool %a #2) %a %inv)) $z)",
       "(WHERE:float32 (CMPLT:bool %r #2) "
       "(INDEX:float32 %buf (WHERE:weakint (AND:bool (CMPLT:bool %a #2) (CMPLT:bool %a #4)) %a %inv)) $z)"},
      // a clause may read the index's own loads (a gather) ...
      {"(WHERE:float32 (CMPLT:bool (INDEX:int32 $ib %r) (CONST:int32 5)) (INDEX:float32 %buf (INDEX:int32 $ib %r)) $z)",
       "(INDEX:float32 %buf (WHERE:int32 (CMPLT:bool (INDEX:int32 $ib %r) (CONST:int32 5)) (INDEX:int32 $ib %r) "
       "%inv))"},
      // ... but no other data: must not fire
      {"(WHERE:float32 (CMPLT:bool (INDEX:int32 $ib %r) (CONST:int32 5)) (INDEX:float32 %buf %r) $z)", std::nullopt},
      // a range ended by a REDUCE is not a range of the clause
      {"(WHERE:float32 (CMPLT:bool (REDUCE:weakint add $s $s) #3) (INDEX:float32 %buf %r) $z)",
       "(INDEX:float32 %buf (WHERE:weakint (CMPLT:bool (REDUCE:weakint add $s $s) #3) %r %inv))"},
      // must not fire: only a range the index does not use, or a false branch other than 0
      {"(WHERE:float32 (CMPLT:bool $s #4) (INDEX:float32 %buf %r) $z)", std::nullopt},
      {"(WHERE:float32 (CMPLT:bool %r #8) (INDEX:float32 %buf %r) (CONST:float32 1.0))", std::nullopt},
  };
  std::vector<Case> expanded;
  std::vector<std::string> keep;  // Case holds pointers
  keep.reserve(cases.size() * 2);
  for (const auto& [in, out] : cases) {
    keep.push_back(load_case(in));
    const char* i = keep.back().c_str();
    const char* o = nullptr;
    if (out) keep.push_back(load_case(*out)), o = keep.back().c_str();
    expanded.push_back({i, o});
  }
  check(pm_move_where_on_load(), expanded);
}

TEST(SymbolicSimple, InvalidLanesFold) {
  check(symbolic_simple(), {
                               // lane-wise: an Invalid lane poisons its lane only
                               {"(ADD:int32 (STACK:int32 (CONST:int32 1) (CONST:int32 1) %inv %inv) "
                                "(STACK:int32 (CONST:int32 1) %inv (CONST:int32 1) (CONST:int32 1)))",
                                "(STACK:int32 (CONST:int32 2) %inv %inv %inv)"},
                               {"(CMPLT:bool (STACK:weakint #1 %inv) #2)", "(STACK:bool (CONST:bool true) %inv)"},
                               // a unary op has no value for an Invalid lane: left alone
                               {"(NEG:int32 (STACK:int32 (CONST:int32 1) %inv))", nullptr},
                           });
}

}  // namespace
}  // namespace kiln
