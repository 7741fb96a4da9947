// Floor division and modulo folding (symbolic/divmod.cpp) and the divisibility facts it is built
// on (ir/divisibility.cpp): golden text per rule, cases where a rule must not fire, and a random
// differential test that evaluates expressions exactly before and after simplification.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "generator/ir/text.h"
#include "generator/ir/uop.h"
#include "generator/symbolic/symbolic.h"
#include "tests/unit/ref_alu.h"

namespace kiln {
namespace {

const UOp* parse_or_die(Context& ctx, std::string_view text) {
  ParseError err;
  const UOp* u = parse(ctx, text, &err);
  if (u == nullptr) ADD_FAILURE() << "parse error at " << err.offset << ": " << err.message << "\n  in: " << text;
  return u;
}

std::string simplified(std::string_view text) {
  Context ctx;
  const UOp* u = parse_or_die(ctx, text);
  return u ? print(simplify(u)) : "<parse error>";
}

// ---------------------------------------------------------------- divisibility facts

TEST(Divisibility, ConstFactor) {
  Context ctx;
  const UOp* a = ctx.var("a", 0, 10);
  const UOp* n = ctx.var("n", 0, 64, dtypes::weakint, 8);
  EXPECT_EQ(ctx.cint(12)->const_factor(), 12);
  EXPECT_EQ(ctx.cint(-6)->const_factor(), -6);
  EXPECT_EQ((Expr(a) * 6)->const_factor(), 6);
  EXPECT_EQ((Expr(a) * 6 + Expr(a) * 4)->const_factor(), 2);
  EXPECT_EQ((Expr(a) * 6 + 9)->const_factor(), 3);
  EXPECT_EQ(n->const_factor(), 8);
  EXPECT_EQ(a->const_factor(), 1);
  EXPECT_EQ((Expr(a) * Expr(n))->const_factor(), 1);
}

TEST(Divisibility, Divides) {
  Context ctx;
  const UOp* a = ctx.var("a", 0, 10);
  const UOp* n = ctx.var("n", 0, 64, dtypes::weakint, 8);
  EXPECT_EQ(ctx.cint(12)->divides(4), ctx.cint(3));
  EXPECT_EQ(ctx.cint(12)->divides(5), nullptr);
  EXPECT_EQ(ctx.cint(-12)->divides(4), ctx.cint(-3));
  EXPECT_EQ(a->divides(1), a);
  EXPECT_EQ(a->divides(2), nullptr);
  EXPECT_EQ(a->divides(0), nullptr);
  EXPECT_EQ(print((Expr(a) * 6)->divides(3)), print(Expr(a) * 2));
  EXPECT_EQ(print((Expr(a) * 6 + 9)->divides(3)), print(Expr(a) * 2 + 3));
  EXPECT_EQ((Expr(a) * 6 + 9)->divides(2), nullptr);
  EXPECT_EQ(n->divides(4), (Expr(n) / 4).get());  // exact because of multiple_of, kept as a FLOORDIV
  EXPECT_EQ(n->divides(3), nullptr);
}

TEST(Divisibility, PopConstAndSplit) {
  Context ctx;
  const UOp* a = ctx.var("a", 0, 10);
  const UOp* b = ctx.var("b", 0, 10);
  auto [x, c] = (Expr(a) + 5)->pop_const();
  EXPECT_EQ(x, a);
  EXPECT_EQ(c.i, 5);
  auto [y, one] = a->pop_const(Op::MUL);
  EXPECT_EQ(y, a);
  EXPECT_EQ(one.i, 1);
  auto [z, zero] = (Expr(a) * 3)->pop_const(Op::ADD);
  EXPECT_EQ(zero.i, 0);
  EXPECT_EQ(z, (Expr(a) * 3).get());
  const UOp* ab = Expr(a) * 2 + (Expr(b) + 7);
  std::vector<const UOp*> want = {Expr(a) * 2, b, ctx.cint(7)};
  EXPECT_EQ(ab->split(Op::ADD), want);
  EXPECT_EQ(a->split(Op::ADD), std::vector<const UOp*>{a});
}

TEST(Divisibility, DivideExactAndGcd) {
  Context ctx;
  const UOp* a = ctx.var("a", 0, 10);
  const UOp* b = ctx.var("b", 1, 10);
  EXPECT_EQ(print((Expr(a) * Expr(b) * 4)->divide_exact(Expr(b) * 2)),
            "(MUL:weakint (CONST:weakint 2) (VAR:weakint a 0 10))");
  EXPECT_EQ((Expr(a) * 4)->divide_exact(b), nullptr);
  EXPECT_EQ(b->divide_exact(b), ctx.cint(1));
  EXPECT_EQ((Expr(a) * 4)->divide_exact(ctx.cint(0)), nullptr);
  const UOp* terms[] = {Expr(a) * Expr(b) * 4, Expr(b) * 6};
  EXPECT_EQ(print(simplify(gcd(terms))), print(simplify(Expr(b) * 2)));
  const UOp* coprime[] = {Expr(a) * 3, Expr(b) * 4};
  EXPECT_EQ(simplify(gcd(coprime)), ctx.cint(1));
}

// ---------------------------------------------------------------- golden text

struct Golden {
  const char* in;
  const char* out;
};

void check(const std::vector<Golden>& cases) {
  for (const Golden& g : cases) EXPECT_EQ(simplified(g.in), g.out) << "  in: " << g.in;
}

#define A8 "(VAR:weakint a 0 8)"
#define A100 "(VAR:weakint a 0 100)"
#define B100 "(VAR:weakint b 0 100)"
#define C4 "(CONST:weakint 4)"

TEST(DivMod, QuotientConstantOverRange) {
  check({
      {"(FLOORDIV:weakint (VAR:weakint a -4 -1) " C4 ")", "(CONST:weakint -1)"},
      {"(FLOORMOD:weakint (VAR:weakint a -4 -1) " C4 ")", "(ADD:weakint (VAR:weakint a -4 -1) (CONST:weakint 4))"},
      {"(FLOORDIV:weakint (VAR:weakint a 0 3) " C4 ")", "(CONST:weakint 0)"},
      {"(FLOORMOD:weakint (VAR:weakint a 0 3) " C4 ")", "(VAR:weakint a 0 3)"},
      // a quotient that changes across the range stays
      {"(FLOORDIV:weakint (VAR:weakint a -3 3) " C4 ")", "(FLOORDIV:weakint (VAR:weakint a -3 3) (CONST:weakint 4))"},
  });
}

TEST(DivMod, ConstantShiftedOut) {
  check({
      {"(FLOORDIV:weakint (ADD:weakint (VAR:weakint a 0 7) (CONST:weakint 11)) " C4 ")",
       "(ADD:weakint (FLOORDIV:weakint (ADD:weakint (VAR:weakint a 0 7) (CONST:weakint 3)) (CONST:weakint 4)) "
       "(CONST:weakint 2))"},
      {"(FLOORMOD:weakint (ADD:weakint (VAR:weakint a 0 7) (CONST:weakint 11)) " C4 ")",
       "(FLOORMOD:weakint (ADD:weakint (VAR:weakint a 0 7) (CONST:weakint 3)) (CONST:weakint 4))"},
      // a negative divisor: 11 = -3*-4 + -1
      {"(FLOORMOD:weakint (ADD:weakint (VAR:weakint a 0 7) (CONST:weakint 11)) (CONST:weakint -4))",
       "(FLOORMOD:weakint (ADD:weakint (VAR:weakint a 0 7) (CONST:weakint -1)) (CONST:weakint -4))"},
      // already reduced: must not fire
      {"(FLOORDIV:weakint (ADD:weakint (VAR:weakint a 0 7) (CONST:weakint 3)) " C4 ")",
       "(FLOORDIV:weakint (ADD:weakint (VAR:weakint a 0 7) (CONST:weakint 3)) (CONST:weakint 4))"},
  });
}

TEST(DivMod, NestedDivisions) {
  check({
      // (a//4 + 2)//3 -> (a + 8)//12
      {"(FLOORDIV:weakint (ADD:weakint (FLOORDIV:weakint " A100 " " C4 ") (CONST:weakint 2)) (CONST:weakint 3))",
       "(FLOORDIV:weakint (ADD:weakint " A100 " (CONST:weakint 8)) (CONST:weakint 12))"},
      // (a%24)//4 -> (a//4)%6
      {"(FLOORDIV:weakint (FLOORMOD:weakint " A100 " (CONST:weakint 24)) " C4 ")",
       "(FLOORMOD:weakint (FLOORDIV:weakint " A100 " (CONST:weakint 4)) (CONST:weakint 6))"},
      // (a%24 + b)%4 -> (a + b)%4
      {"(FLOORMOD:weakint (ADD:weakint (FLOORMOD:weakint " A100 " (CONST:weakint 24)) (VAR:weakint b 0 9)) " C4 ")",
       "(FLOORMOD:weakint (ADD:weakint " A100 " (VAR:weakint b 0 9)) (CONST:weakint 4))"},
      // 24 is not a multiple of 5: the inner mod stays
      {"(FLOORMOD:weakint (ADD:weakint (FLOORMOD:weakint " A100 " (CONST:weakint 24)) (VAR:weakint b 0 9)) "
       "(CONST:weakint 5))",
       "(FLOORMOD:weakint (ADD:weakint (VAR:weakint b 0 9) (FLOORMOD:weakint " A100 " (CONST:weakint 24))) "
       "(CONST:weakint 5))"},
  });
}

TEST(DivMod, Congruence) {
  check({
      // (a*6 + b)//3 with b in [0,2] -> a*2
      {"(FLOORDIV:weakint (ADD:weakint (MUL:weakint " A100
       " (CONST:weakint 6)) (VAR:weakint b 0 2)) (CONST:weakint 3))",
       "(MUL:weakint " A100 " (CONST:weakint 2))"},
      {"(FLOORMOD:weakint (ADD:weakint (MUL:weakint " A100
       " (CONST:weakint 6)) (VAR:weakint b 0 2)) (CONST:weakint 3))",
       "(VAR:weakint b 0 2)"},
      // negative ranges fold too: the congruence only needs the bounds
      {"(FLOORDIV:weakint (ADD:weakint (MUL:weakint (VAR:weakint a -10 100) " C4 ") (VAR:weakint b 0 3)) " C4 ")",
       "(VAR:weakint a -10 100)"},
      {"(FLOORMOD:weakint (ADD:weakint (MUL:weakint (VAR:weakint a -10 100) " C4 ") (VAR:weakint b 0 3)) " C4 ")",
       "(VAR:weakint b 0 3)"},
      // the remainder b in [0,4] crosses a period of 4: no fold
      {"(FLOORMOD:weakint (ADD:weakint (MUL:weakint " A100 " " C4 ") (VAR:weakint b 0 4)) " C4 ")",
       "(FLOORMOD:weakint (VAR:weakint b 0 4) (CONST:weakint 4))"},
  });
}

TEST(DivMod, CongruenceTieTriesBothSigns) {
  // 6 = 2 (mod 4) is a half-period tie: the remainder -2 keeps -2a+3 inside one period
  check({
      {"(FLOORDIV:weakint (ADD:weakint (MUL:weakint (VAR:weakint a 0 1) (CONST:weakint 6)) (CONST:weakint 3)) " C4 ")",
       "(MUL:weakint (VAR:weakint a 0 1) (CONST:weakint 2))"},
      {"(FLOORMOD:weakint (ADD:weakint (MUL:weakint (VAR:weakint a 0 1) (CONST:weakint 6)) (CONST:weakint 3)) " C4 ")",
       "(ADD:weakint (MUL:weakint (VAR:weakint a 0 1) (CONST:weakint -2)) (CONST:weakint 3))"},
  });
}

TEST(DivMod, CommonFactor) {
  check({
      {"(FLOORMOD:weakint (ADD:weakint (MUL:weakint " A100 " (CONST:weakint 6)) (MUL:weakint " B100
       " (CONST:weakint 4))) (CONST:weakint 8))",
       "(MUL:weakint (FLOORMOD:weakint (ADD:weakint (MUL:weakint " A100 " (CONST:weakint 3)) (MUL:weakint " B100
       " (CONST:weakint 2))) (CONST:weakint 4)) (CONST:weakint 2))"},
      // with a constant: (a*4 + b*6 + 5)%8 -> ((a*2 + b*3 + 2)%4)*2 + 1
      {"(FLOORMOD:weakint (ADD:weakint (ADD:weakint (MUL:weakint " A100 " " C4 ") (MUL:weakint " B100
       " (CONST:weakint 6))) (CONST:weakint 5)) (CONST:weakint 8))",
       "(ADD:weakint (MUL:weakint (FLOORMOD:weakint (ADD:weakint (ADD:weakint (MUL:weakint " A100
       " (CONST:weakint 2)) (MUL:weakint " B100 " (CONST:weakint 3))) (CONST:weakint 2)) " C4
       ") (CONST:weakint 2)) (CONST:weakint 1))"},
      // (a*8 + b*2)%4 -> (b%2)*2
      {"(FLOORMOD:weakint (ADD:weakint (MUL:weakint (VAR:weakint a 0 15) (CONST:weakint 8)) (MUL:weakint "
       "(VAR:weakint b 0 15) (CONST:weakint 2))) " C4 ")",
       "(MUL:weakint (FLOORMOD:weakint (VAR:weakint b 0 15) (CONST:weakint 2)) (CONST:weakint 2))"},
  });
}

TEST(DivMod, NestByFactor) {
  check({
      // (a*3 + b*6 + c)//12 with c in [0,1]: divide by 3 first
      {"(FLOORDIV:weakint (ADD:weakint (ADD:weakint (MUL:weakint " A100 " (CONST:weakint 3)) (MUL:weakint " B100
       " (CONST:weakint 6))) (VAR:weakint c 0 1)) (CONST:weakint 12))",
       "(FLOORDIV:weakint (ADD:weakint " B100 " (FLOORDIV:weakint " A100 " (CONST:weakint 2))) (CONST:weakint 2))"},
      {"(FLOORMOD:weakint (ADD:weakint (ADD:weakint (MUL:weakint " A100 " (CONST:weakint 3)) (MUL:weakint " B100
       " (CONST:weakint 6))) (VAR:weakint c 0 2)) (CONST:weakint 12))",
       "(ADD:weakint (VAR:weakint c 0 2) (MUL:weakint (FLOORMOD:weakint (ADD:weakint " A100 " (MUL:weakint " B100
       " (CONST:weakint 2))) (CONST:weakint 4)) (CONST:weakint 3)))"},
  });
}

TEST(DivMod, SymbolicDivisor) {
  const char* b = "(VAR:weakint b 1 10)";
  std::string ab = std::string("(MUL:weakint " A100 " ") + b + ")";
  check({
      // (a*b + c)//b -> a + c//b
      {("(FLOORDIV:weakint (ADD:weakint " + ab + " (VAR:weakint c 0 100)) " + b + ")").c_str(),
       ("(ADD:weakint " A100 " (FLOORDIV:weakint (VAR:weakint c 0 100) " + std::string(b) + "))").c_str()},
      {("(FLOORMOD:weakint (ADD:weakint " + ab + " (VAR:weakint c 0 100)) " + b + ")").c_str(),
       ("(FLOORMOD:weakint (VAR:weakint c 0 100) " + std::string(b) + ")").c_str()},
      // (a*b*4)//(b*2) -> a*2: the common factor b*2 divides out
      {("(FLOORDIV:weakint (MUL:weakint " + ab + " " C4 ") (MUL:weakint " + b + " (CONST:weakint 2)))").c_str(),
       "(MUL:weakint " A100 " (CONST:weakint 2))"},
      {("(FLOORMOD:weakint (MUL:weakint " + ab + " " C4 ") (MUL:weakint " + b + " (CONST:weakint 2)))").c_str(),
       "(CONST:weakint 0)"},
  });
}

TEST(DivMod, VarMultipleOf) {
  check({
      {"(FLOORMOD:weakint (VAR:weakint n 0 64 mul=4) " C4 ")", "(CONST:weakint 0)"},
      {"(FLOORMOD:weakint (VAR:weakint n 0 64 mul=4) (CONST:weakint 2))", "(CONST:weakint 0)"},
      // the quotient is irreducible
      {"(FLOORDIV:weakint (VAR:weakint n 0 64 mul=4) " C4 ")",
       "(FLOORDIV:weakint (VAR:weakint n 0 64 mul=4) (CONST:weakint 4))"},
      // (n + a)//4 with a in [0,3] -> n//4
      {"(FLOORDIV:weakint (ADD:weakint (VAR:weakint n 0 64 mul=4) (VAR:weakint a 0 3)) " C4 ")",
       "(FLOORDIV:weakint (VAR:weakint n 0 64 mul=4) (CONST:weakint 4))"},
  });
}

TEST(DivMod, MustNotFire) {
  check({
      // divisor ranges that contain 0
      {"(FLOORDIV:weakint " A100 " (VAR:weakint b -2 2))", "(FLOORDIV:weakint " A100 " (VAR:weakint b -2 2))"},
      {"(FLOORMOD:weakint " A100 " (VAR:weakint b -2 2))", "(FLOORMOD:weakint " A100 " (VAR:weakint b -2 2))"},
      {"(FLOORMOD:weakint (ADD:weakint " A100 " (CONST:weakint 7)) (VAR:weakint b 0 3))",
       "(FLOORMOD:weakint (ADD:weakint " A100 " (CONST:weakint 7)) (VAR:weakint b 0 3))"},
      // a constant zero divisor is left as written (no exception, no fold)
      {"(FLOORDIV:weakint " A8 " (CONST:weakint 0))", "(FLOORDIV:weakint " A8 " (CONST:weakint 0))"},
      {"(FLOORMOD:weakint (ADD:weakint " A8 " (CONST:weakint 5)) (CONST:weakint 0))",
       "(FLOORMOD:weakint (ADD:weakint " A8 " (CONST:weakint 5)) (CONST:weakint 0))"},
      // factor_remainder needs a non-negative numerator
      {"(FLOORDIV:weakint (ADD:weakint (MUL:weakint (VAR:weakint a -5 5) (VAR:weakint b 1 4)) (VAR:weakint c 0 9)) "
       "(VAR:weakint b 1 4))",
       "(FLOORDIV:weakint (ADD:weakint (VAR:weakint c 0 9) (MUL:weakint (VAR:weakint a -5 5) (VAR:weakint b 1 4))) "
       "(VAR:weakint b 1 4))"},
  });
}

TEST(DivMod, FixedWidthIntsUntouched) {
  // the slow rules are for index math only
  check({{"(FLOORMOD:int (VAR:int a 0 3) (CONST:int 4))", "(FLOORMOD:int (VAR:int a 0 3) (CONST:int 4))"}});
}

// ---------------------------------------------------------------- random differential test

using Env = std::unordered_map<const UOp*, int64_t>;

// Exact value of `root` under `env` (a value per DEFINE_VAR); nullopt where undefined.
std::optional<int64_t> evaluate(const UOp* root, const Env& env) {
  std::unordered_map<const UOp*, ConstValue> val;
  for (const UOp* u : toposort(root)) {
    if (u->op == Op::DEFINE_VAR) {
      val[u] = ConstValue::of_int(env.at(u));
    } else if (u->op == Op::CONST) {
      val[u] = u->cval();
    } else {
      std::vector<ConstValue> ops;
      for (const UOp* s : u->src()) ops.push_back(val.at(s));
      std::optional<ConstValue> r = ref::alu(u->op, u->dtype, ops);
      if (!r) return std::nullopt;
      val[u] = *r;
    }
  }
  return val.at(root).i;
}

TEST(DivMod, RandomDifferential) {
  std::mt19937_64 rng(20240607);
  auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int folded = 0, checked = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    Context ctx;
    std::vector<const UOp*> vars;
    for (const char* name : {"a", "b", "c"}) {
      int64_t mul = uni(0, 5) == 0 ? uni(2, 4) : 1;
      int64_t lo = uni(-12, 10) * mul, hi = lo + uni(0, 12) * mul;
      vars.push_back(ctx.var(name, lo, hi, dtypes::weakint, mul));
    }
    auto term = [&](const UOp* v) -> Expr {
      int64_t k = uni(-12, 12);
      switch (uni(0, 5)) {
        case 0:
          return (Expr(v) % uni(2, 12)) * k;  // nested mod
        case 1:
          return (Expr(v) / uni(2, 6)) * k;  // nested div
        default:
          return Expr(v) * k;
      }
    };
    int64_t d = uni(0, 7) == 0 ? -uni(1, 12) : uni(1, 16);
    Expr num = term(vars[0]) + term(vars[1]) + uni(-30, 30);
    if (uni(0, 2) == 0) num = num + Expr(vars[2]);
    const UOp* e = uni(0, 1) ? (num / d).get() : (num % d).get();
    const UOp* s = nullptr;
    try {
      s = simplify(e);
    } catch (const std::exception& ex) {
      FAIL() << ex.what() << "\n  in: " << print(e);
    }
    folded += s != e;
    for (int p = 0; p < 20; ++p) {
      Env env;
      for (const UOp* v : vars) {
        const VarArg& va = v->arg<VarArg>();
        env[v] = va.min + uni(0, (va.max - va.min) / va.multiple_of) * va.multiple_of;
      }
      std::optional<int64_t> want = evaluate(e, env), got = evaluate(s, env);
      ASSERT_TRUE(want.has_value());
      ASSERT_TRUE(got.has_value()) << print(e) << "\n  -> " << print(s);
      ASSERT_EQ(*want, *got) << print(e) << "\n  -> " << print(s);
      ASSERT_GE(*got, s->imin()) << print(s);
      ASSERT_LE(*got, s->imax()) << print(s);
      ++checked;
    }
  }
  EXPECT_GT(folded, 1000);  // most of these shapes simplify somehow
  EXPECT_EQ(checked, 2000 * 20);
}

// A remainder term whose maximum is exactly the divisor it is split off by: (2a + b) % 4 with b in
// [0, 2] may not become ((a + b // 2) % 2) * 2 + b (4 at a = 0, b = 2). Every value, against the
// arithmetic written out.
TEST(DivMod, NestByFactorKeepsARemainderThatReachesTheFactor) {
  Context ctx;
  const UOp* a = ctx.var("a", 0, 3);
  const UOp* b = ctx.var("b", 0, 2);
  const UOp* e = (Expr(a) * 2 + Expr(b)) % 4;
  const UOp* s = simplify(e);
  for (int64_t av = 0; av <= 3; ++av)
    for (int64_t bv = 0; bv <= 2; ++bv) {
      std::optional<int64_t> got = evaluate(s, {{a, av}, {b, bv}});
      ASSERT_TRUE(got.has_value()) << print(s);
      EXPECT_EQ(*got, (2 * av + bv) % 4) << "a=" << av << " b=" << bv << ": " << print(s);
      EXPECT_GE(*got, s->imin()) << print(s);
      EXPECT_LE(*got, s->imax()) << print(s);
    }
}

}  // namespace
}  // namespace kiln
