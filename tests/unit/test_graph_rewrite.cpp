// graph_rewrite semantics: order (top-down vs bottom-up), fixed point, memoization, ctx,
// the rewrite cap, rule statistics, substitute.
#include <gtest/gtest.h>

#include "generator/ir/text.h"
#include "generator/rewrite/rewrite.h"

namespace kiln {
namespace {

using namespace pat;

class GraphRewriteTest : public ::testing::Test {
 protected:
  const UOp* p(std::string_view s) {
    ParseError e;
    const UOp* u = parse(ctx, s, &e);
    EXPECT_NE(u, nullptr) << e.message;
    return u;
  }
  Context ctx;
};

TEST_F(GraphRewriteTest, FoldsToAFixedPoint) {
  PatternMatcher pm({rw((x + c0) + c1, x + (c0 + c1).fold())});
  const UOp* u =
      p("(ADD:weakint (ADD:weakint (ADD:weakint (VAR:weakint a 0 9) (CONST:weakint 1)) (CONST:weakint 2)) "
        "(CONST:weakint 3))");
  EXPECT_EQ(print(graph_rewrite(u, pm)), "(ADD:weakint (VAR:weakint a 0 9) (CONST:weakint 6))");
  // nothing to do: the same node comes back
  const UOp* v = p("(VAR:weakint a 0 9)");
  EXPECT_EQ(graph_rewrite(v, pm), v);
}

TEST_F(GraphRewriteTest, TopDownSeesRewrittenSourcesBottomUpSeesOriginals) {
  // rule A: (x*2) -> (x+x); rule B: (x+x) at a root named by tag... use a recording ctx instead
  std::vector<std::string> order;
  PatternMatcher pm({Rule(UPat::op({Op::ADD, Op::MUL}), [](const Match& m, void* c) -> const UOp* {
    static_cast<std::vector<std::string>*>(c)->push_back(std::string(op_name(m.root->op)));
    return nullptr;
  })});
  const UOp* u = p("(MUL:weakint (ADD:weakint (VAR:weakint a 0 9) (CONST:weakint 1)) (CONST:weakint 2))");
  graph_rewrite(u, pm, &order);
  EXPECT_EQ(order, (std::vector<std::string>{"ADD", "MUL"}));  // sources first
  order.clear();
  RewriteOptions bu;
  bu.bottom_up = true;
  graph_rewrite(u, pm, &order, bu);
  EXPECT_EQ(order, (std::vector<std::string>{"MUL", "ADD"}));  // the node before its sources
}

TEST_F(GraphRewriteTest, BottomUpReplacementIsRewrittenAgainAndItsSourcesVisited) {
  // MUL(x, 2) -> ADD(x, x) bottom-up; then ADD(x, x) of VARs -> tagged; sources of the result are visited too
  PatternMatcher pm({
      Rule(x * 2, [](const Match& m) -> const UOp* { return Expr(m[x]) + Expr(m[x]); }),
      Rule(UPat::op(Op::DEFINE_VAR).named("v"),
           [](const Match& m) -> const UOp* { return m.root->tag == 0 ? m.root->with_tag(7) : nullptr; }),
  });
  RewriteOptions bu;
  bu.bottom_up = true;
  const UOp* u = p("(MUL:weakint (VAR:weakint a 0 9) (CONST:weakint 2))");
  EXPECT_EQ(print(graph_rewrite(u, pm, nullptr, bu)),
            "(ADD:weakint (VAR:weakint a 0 9 tag=7) (VAR:weakint a 0 9 tag=7))");
}

TEST_F(GraphRewriteTest, SharedNodesAreRewrittenOnce) {
  int calls = 0;
  PatternMatcher pm({Rule(UPat::op(Op::DEFINE_VAR), [](const Match&, void* c) -> const UOp* {
    ++*static_cast<int*>(c);
    return nullptr;
  })});
  // a diamond: the VAR is used four times but visited once
  const UOp* u =
      p("%a = (VAR:weakint a 0 9)\n%b = (ADD:weakint %a %a)\n%c = (MUL:weakint %b %a)\n"
        "%d = (MAX:weakint %c %a)");
  graph_rewrite(u, pm, &calls);
  EXPECT_EQ(calls, 1);
}

TEST_F(GraphRewriteTest, RulesAreTriedInOrderAndComposeWithPlus) {
  PatternMatcher first({rw(x + 0, x)});
  PatternMatcher second({Rule(x + c0, [](const Match& m) -> const UOp* { return m[x]; })});  // drops any const
  const UOp* zero = p("(ADD:weakint (VAR:weakint a 0 9) (CONST:weakint 0))");
  const UOp* five = p("(ADD:weakint (VAR:weakint a 0 9) (CONST:weakint 5))");
  PatternMatcher both = first + second;
  EXPECT_EQ(both.size(), 2u);
  EXPECT_EQ(print(graph_rewrite(zero, both)), "(VAR:weakint a 0 9)");
  EXPECT_EQ(print(graph_rewrite(five, first)), print(five));  // must not fire: 5 is not 0
  EXPECT_EQ(print(graph_rewrite(five, both)), "(VAR:weakint a 0 9)");
}

TEST_F(GraphRewriteTest, ReturningTheSameNodeIsNoChange) {
  int calls = 0;
  PatternMatcher pm({Rule(UPat::op(Op::ADD), [](const Match& m, void* c) -> const UOp* {
    ++*static_cast<int*>(c);
    return m.root;
  })});
  const UOp* u = p("(ADD:weakint (VAR:weakint a 0 9) (CONST:weakint 0))");
  EXPECT_EQ(graph_rewrite(u, pm, &calls), u);
  EXPECT_EQ(calls, 1);
}

TEST_F(GraphRewriteTest, NonTerminatingRulesFailLoudlyNamingTheRule) {
  // x -> x + 0 and x + 0 -> x would loop; here one rule keeps growing the graph
  PatternMatcher pm({Rule(UPat::op(Op::DEFINE_VAR),
                          [](const Match& m) -> const UOp* { return m.root->ctx().var("a", 0, m.root->imax() + 1); })});
  RewriteOptions o;
  o.max_rewrites = 1000;
  o.name = "looping stage";
  try {
    graph_rewrite(p("(VAR:weakint a 0 1)"), pm, nullptr, o);
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("looping stage"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_graph_rewrite.cpp:"), std::string::npos) << msg;  // the rule's location
  }
}

TEST_F(GraphRewriteTest, RuleStatisticsCountTriesAndHits) {
  set_rule_stats(true);
  PatternMatcher pm({rw(x + 0, x), rw(x * 1, x)});
  pm.reset_stats();
  graph_rewrite(p("(MUL:weakint (ADD:weakint (VAR:weakint a 0 9) (CONST:weakint 0)) (CONST:weakint 1))"), pm);
  std::string s = pm.stats();
  set_rule_stats(false);
  EXPECT_NE(s.find("1 hits / 1 tries"), std::string::npos) << s;
}

TEST_F(GraphRewriteTest, AFixedPointOfARememberedSupersetIsOneOfItsParts) {
  static const PatternMatcher part = PatternMatcher({rw(x + 0, x)}).remember_fixed_points();
  static const PatternMatcher all = (part + PatternMatcher({rw(x * 1, x)})).remember_fixed_points();
  const UOp* u = p("(ADD:weakint (VAR:weakint a 0 9) (CONST:weakint 1))");
  EXPECT_EQ(graph_rewrite(u, all), u);
  // no rule of `all` changes u, so none of `part` does: `part` does not try them again
  set_rule_stats(true);
  part.reset_stats();
  EXPECT_EQ(graph_rewrite(u, part), u);
  std::string s = part.stats();
  set_rule_stats(false);
  EXPECT_EQ(s, "");
  // the other way round proves nothing: `all` has a rule `part` lacks
  const UOp* v = p("(MUL:weakint (VAR:weakint b 0 9) (CONST:weakint 1))");
  EXPECT_EQ(graph_rewrite(v, part), v);
  EXPECT_EQ(print(graph_rewrite(v, all)), "(VAR:weakint b 0 9)");
}

TEST_F(GraphRewriteTest, SubstituteReplacesEverywhere) {
  const UOp* a = p("(VAR:weakint a 0 9)");
  const UOp* b = p("(VAR:weakint b 0 3)");
  const UOp* u = p("(ADD:weakint (MUL:weakint (VAR:weakint a 0 9) (CONST:weakint 4)) (VAR:weakint a 0 9))");
  EXPECT_EQ(print(substitute(u, {{a, b}})),
            "(ADD:weakint (MUL:weakint (VAR:weakint b 0 3) (CONST:weakint 4)) (VAR:weakint b 0 3))");
  EXPECT_EQ(substitute(u, {}), u);
}

TEST_F(GraphRewriteTest, SubstituteVisitsWhatItPutsIn) {
  const UOp* a = p("(VAR:weakint a 0 9)");
  const UOp* b = p("(VAR:weakint b 0 9)");
  const UOp* c = p("(VAR:weakint c 0 9)");
  const UOp* u = p("(MUL:weakint (VAR:weakint a 0 9) (CONST:weakint 4))");
  // a chain is followed to its end
  EXPECT_EQ(print(substitute(u, {{a, b}, {b, c}})), "(MUL:weakint (VAR:weakint c 0 9) (CONST:weakint 4))");
  // a replacement's sources are substituted too
  const UOp* bb = p("(ADD:weakint (VAR:weakint b 0 9) (VAR:weakint b 0 9))");
  EXPECT_EQ(print(substitute(u, {{a, bb}, {b, c}})),
            "(MUL:weakint (ADD:weakint (VAR:weakint c 0 9) (VAR:weakint c 0 9)) (CONST:weakint 4))");
  // a node rebuilt from substituted sources is substituted when it is a key itself
  const UOp* v = p("(ADD:weakint (MUL:weakint (VAR:weakint a 0 9) (CONST:weakint 4)) (VAR:weakint a 0 9))");
  const UOp* bm = p("(MUL:weakint (VAR:weakint b 0 9) (CONST:weakint 4))");
  EXPECT_EQ(print(substitute(v, {{a, b}, {bm, c}})), "(ADD:weakint (VAR:weakint c 0 9) (VAR:weakint b 0 9))");
  // a key mapped to itself changes nothing
  EXPECT_EQ(substitute(u, {{a, a}}), u);
}

TEST_F(GraphRewriteTest, SubstituteMakesNodesInWalkOrder) {
  // the ids of the nodes a substitute makes follow its walk: later passes order nodes by id
  const UOp* a = p("(VAR:weakint a 0 9)");
  const UOp* x = p("(VAR:weakint x 0 9)");
  const UOp* u =
      p("(ADD:weakint (MUL:weakint (VAR:weakint a 0 9) (CONST:weakint 2)) "
        "(SUB:weakint (VAR:weakint a 0 9) (CONST:weakint 3)))");
  const UOp* r = substitute(u, {{a, x}});
  ASSERT_EQ(print(r),
            "(ADD:weakint (MUL:weakint (VAR:weakint x 0 9) (CONST:weakint 2)) "
            "(SUB:weakint (VAR:weakint x 0 9) (CONST:weakint 3)))");
  EXPECT_LT(r->src(0)->id, r->src(1)->id);
  EXPECT_LT(r->src(1)->id, r->id);
}

TEST_F(GraphRewriteTest, ContextIsPassedToRules) {
  struct Counter {
    int next = 100;
  } counter;
  PatternMatcher pm({Rule(UPat::op(Op::DEFINE_VAR), [](const Match& m, void* c) -> const UOp* {
    if (m.root->tag != 0) return nullptr;
    return m.root->with_tag(static_cast<Counter*>(c)->next++);
  })});
  const UOp* u = p("(ADD:weakint (VAR:weakint a 0 9) (VAR:weakint b 0 9))");
  EXPECT_EQ(print(graph_rewrite(u, pm, &counter)),
            "(ADD:weakint (VAR:weakint a 0 9 tag=100) (VAR:weakint b 0 9 tag=101))");
}

}  // namespace
}  // namespace kiln
