// Every UPat feature, with cases that must match and cases that must not.
#include <gtest/gtest.h>

#include "generator/ir/text.h"
#include "generator/rewrite/upat.h"

namespace kiln {
namespace {

using namespace pat;

class UPatTest : public ::testing::Test {
 protected:
  const UOp* p(std::string_view s) {
    ParseError e;
    const UOp* u = parse(ctx, s, &e);
    EXPECT_NE(u, nullptr) << e.message << " in " << s;
    return u;
  }
  bool matches(const UPat& pat, std::string_view s) {
    Match m;
    return match_first(pat, p(s), m);
  }
  Context ctx;
};

TEST_F(UPatTest, WildcardMatchesAnything) {
  EXPECT_TRUE(matches(UPat(), "(CONST:weakint 3)"));
  EXPECT_TRUE(matches(x, "(ADD:weakint (VAR:weakint a 0 4) (CONST:weakint 1))"));
}

TEST_F(UPatTest, OpSets) {
  UPat add_or_mul = UPat::op({Op::ADD, Op::MUL});
  EXPECT_TRUE(matches(add_or_mul, "(ADD:weakint (VAR:weakint a 0 4) (CONST:weakint 1))"));
  EXPECT_TRUE(matches(add_or_mul, "(MUL:weakint (VAR:weakint a 0 4) (CONST:weakint 1))"));
  EXPECT_FALSE(matches(add_or_mul, "(MAX:weakint (VAR:weakint a 0 4) (CONST:weakint 1))"));
  EXPECT_TRUE(matches(UPat::op(OpSet::of_group(G_COMPARISON)), "(CMPLT:bool (VAR:weakint a 0 4) (CONST:weakint 1))"));
  EXPECT_FALSE(matches(UPat::op(OpSet::of_group(G_COMPARISON)), "(CONST:bool true)"));
}

TEST_F(UPatTest, DtypeSets) {
  UPat ints = UPat::var("x", {dtypes::int32, dtypes::weakint});
  EXPECT_TRUE(matches(ints, "(VAR:weakint a 0 4)"));
  EXPECT_TRUE(matches(ints, "(CONST:int 3)"));
  EXPECT_FALSE(matches(ints, "(CONST:float 3.0)"));
  EXPECT_FALSE(matches(ints, "(CONST:long 3)"));
}

TEST_F(UPatTest, ArgMatching) {
  UPat loop = UPat::op(Op::RANGE).arg(RangeArg{0, AxisType::Loop, -1});
  EXPECT_TRUE(matches(loop, "(RANGE:weakint 0 loop (CONST:weakint 4))"));
  EXPECT_FALSE(matches(loop, "(RANGE:weakint 1 loop (CONST:weakint 4))"));
  EXPECT_FALSE(matches(loop, "(RANGE:weakint 0 reduce (CONST:weakint 4))"));
}

TEST_F(UPatTest, ConstantsMatchNumerically) {
  EXPECT_TRUE(matches(UPat::cnst(0), "(CONST:weakint 0)"));
  EXPECT_TRUE(matches(UPat::cnst(0), "(CONST:float 0.0)"));
  EXPECT_TRUE(matches(UPat::cnst(0), "(CONST:float -0.0)"));
  EXPECT_TRUE(matches(UPat::cnst(1), "(CONST:bool true)"));
  EXPECT_FALSE(matches(UPat::cnst(0), "(CONST:weakint 1)"));
  EXPECT_FALSE(matches(UPat::cnst(0), "(VAR:weakint a 0 0)"));
  EXPECT_FALSE(matches(UPat::cnst(0), "(CONST:bool invalid)"));
  EXPECT_TRUE(matches(UPat::invalid(), "(CONST:bool invalid)"));
  EXPECT_FALSE(matches(UPat::invalid(), "(CONST:bool false)"));
  EXPECT_TRUE(matches(UPat::cbool(true), "(CONST:bool true)"));
  EXPECT_FALSE(matches(UPat::cbool(true), "(CONST:weakint 1)"));
}

TEST_F(UPatTest, NamedCapturesBindAndMustAgree) {
  Match m;
  const UOp* u = p("(ADD:weakint (VAR:weakint a 0 4) (CONST:weakint 1))");
  ASSERT_TRUE(match_first(x + c0, u, m));
  EXPECT_EQ(m[x], u->src(0));
  EXPECT_EQ(m[c0], u->src(1));
  EXPECT_EQ(m.ival(c0), 1);
  // the same name twice must bind the same node
  EXPECT_TRUE(matches(x + x, "(ADD:weakint (VAR:weakint a 0 4) (VAR:weakint a 0 4))"));
  EXPECT_FALSE(matches(x + x, "(ADD:weakint (VAR:weakint a 0 4) (VAR:weakint b 0 4))"));
}

TEST_F(UPatTest, CommutativeOpsTryBothOrders) {
  // constant on the left still matches x + c0
  Match m;
  const UOp* u = p("(ADD:weakint (CONST:weakint 2) (VAR:weakint a 0 4))");
  ASSERT_TRUE(match_first(x + c0, u, m));
  EXPECT_EQ(m[c0], u->src(0));
  // non-commutative ops keep their order
  EXPECT_TRUE(matches(x / c0, "(FLOORDIV:weakint (VAR:weakint a 0 4) (CONST:weakint 2))"));
  EXPECT_FALSE(matches(x / c0, "(FLOORDIV:weakint (CONST:weakint 2) (VAR:weakint a 0 4))"));
  EXPECT_FALSE(matches(x < c0, "(CMPLT:bool (CONST:weakint 2) (VAR:weakint a 0 4))"));
}

TEST_F(UPatTest, PermutationBacktracksIntoNestedCaptures) {
  // (x*c0) + (x*c1): the second order is needed when the first binds x to the wrong side
  const UOp* u =
      p("(ADD:weakint (MUL:weakint (VAR:weakint a 0 4) (CONST:weakint 3)) "
        "(MUL:weakint (CONST:weakint 5) (VAR:weakint a 0 4)))");
  Match m;
  ASSERT_TRUE(match_first(x * c0 + x * c1, u, m));
  EXPECT_EQ(m[x]->op, Op::DEFINE_VAR);
  EXPECT_EQ(m.ival(c0) + m.ival(c1), 8);
  EXPECT_FALSE(matches(x * c0 + x * c1,
                       "(ADD:weakint (MUL:weakint (VAR:weakint a 0 4) (CONST:weakint 3)) "
                       "(MUL:weakint (VAR:weakint b 0 4) (CONST:weakint 5)))"));
}

TEST_F(UPatTest, EveryMatchIsOfferedUntilOneIsAccepted) {
  const UOp* u = p("(ADD:weakint (CONST:weakint 2) (CONST:weakint 7))");
  Match m;
  std::vector<int64_t> seen;
  match_each(x + c0, u, m, [&](const Match& mm) {
    seen.push_back(mm.ival(c0));
    return false;  // reject: the matcher must try the other order
  });
  EXPECT_EQ(seen, (std::vector<int64_t>{7, 2}));
  // a rejected match leaves no captures behind
  for (const UOp* s : m.slots_) EXPECT_EQ(s, nullptr);
}

TEST_F(UPatTest, RepeatedSourcePattern) {
  UPat all_consts = UPat::op(Op::SINK, {UPat::op(Op::CONST)}, UPat::SrcMode::Repeat);
  EXPECT_TRUE(matches(all_consts, "(SINK:void (CONST:weakint 1) (CONST:weakint 2) (CONST:weakint 3))"));
  EXPECT_TRUE(matches(all_consts, "(SINK:void)"));
  EXPECT_FALSE(matches(all_consts, "(SINK:void (CONST:weakint 1) (VAR:weakint a 0 1))"));
}

TEST_F(UPatTest, StrictAndPrefixSourceLengths) {
  UPat two = UPat::op(Op::SINK, {UPat(), UPat()});
  EXPECT_TRUE(matches(two, "(SINK:void (CONST:weakint 1) (CONST:weakint 2))"));
  EXPECT_FALSE(matches(two, "(SINK:void (CONST:weakint 1) (CONST:weakint 2) (CONST:weakint 3))"));
  EXPECT_FALSE(matches(two, "(SINK:void (CONST:weakint 1))"));
  EXPECT_TRUE(matches(two.allow_any_len(), "(SINK:void (CONST:weakint 1) (CONST:weakint 2) (CONST:weakint 3))"));
  EXPECT_FALSE(matches(two.allow_any_len(), "(SINK:void (CONST:weakint 1))"));
  // no source patterns: any sources
  EXPECT_TRUE(matches(UPat::op(Op::SINK), "(SINK:void (CONST:weakint 1) (CONST:weakint 2) (CONST:weakint 3))"));
}

TEST_F(UPatTest, AlternativesAndOptionalCasts) {
  UPat maybe_cast = UPat::var("x", {dtypes::weakint}).or_casted("v");
  Match m;
  const UOp* plain = p("(VAR:weakint a 0 4)");
  ASSERT_TRUE(match_first(maybe_cast, plain, m));
  EXPECT_EQ(m[UPat::var("v")], plain);
  Match m2;
  const UOp* casted = p("(CAST:int (VAR:weakint a 0 4))");
  ASSERT_TRUE(match_first(maybe_cast, casted, m2));
  EXPECT_EQ(m2[UPat::var("v")], casted);
  EXPECT_EQ(m2[x], casted->src(0));
  EXPECT_FALSE(matches(maybe_cast, "(CAST:int (CONST:float 1.0))"));
}

TEST_F(UPatTest, EarlyRejectNeedsTheSourceOps) {
  // x + CONST can only match an ADD that has a CONST source
  UPat pat = x + c0;
  EXPECT_TRUE(pat.node().early_reject.has(Op::CONST));
  EXPECT_FALSE(matches(pat, "(ADD:weakint (VAR:weakint a 0 4) (VAR:weakint b 0 4))"));
}

TEST_F(UPatTest, TemplatesBuildWithPromotionAndFolding) {
  const UOp* u = p("(ADD:weakint (ADD:weakint (VAR:weakint a 0 4) (CONST:weakint 2)) (CONST:weakint 3))");
  Match m;
  ASSERT_TRUE(match_first((x + c0) + c1, u, m));
  EXPECT_EQ(print((x + (c0 + c1).fold()).build(m)), "(ADD:weakint (VAR:weakint a 0 4) (CONST:weakint 5))");
  EXPECT_EQ(print((x + (c0 + c1)).build(m)),
            "(ADD:weakint (VAR:weakint a 0 4) (ADD:weakint (CONST:weakint 2) (CONST:weakint 3)))");
  // a literal result takes the matched node's dtype
  const UOp* f = p("(MUL:float (VAR:weakint a 0 4) (CONST:float 0.0))");
  Match mf;
  mf.root = f;
  EXPECT_EQ(print(UPat::cnst(0).build(mf)), "(CONST:float 0.0)");
}

TEST_F(UPatTest, CapturesAreSharedByName) {
  EXPECT_EQ(UPat::var("x").capture(), x.capture());
  EXPECT_NE(x.capture(), y.capture());
  EXPECT_EQ(capture_name(c0.capture()), "c0");
}

}  // namespace
}  // namespace kiln
