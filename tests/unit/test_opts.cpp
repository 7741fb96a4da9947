// The opts one at a time on scheduled kernels: each changed kernel must compute what the kernel
// as scheduled computes. A program is scheduled, the opts are applied to one of its kernels (each
// must apply and change the AST), and the schedule with that kernel replaced runs in the kernel
// interpreter (bounds-checked: a padded iteration that reads past the end fails) and as C compiled
// natively, on poisoned outputs, against the float64 oracle and the unchanged kernel's run. Then
// the refusals, with their reasons.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/pipeline.h"
#include "generator/ir/text.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "tests/unit/c_runner.h"
#include "tests/unit/kernel_interp.h"
#include "tests/unit/oracle.h"
#include "tests/unit/random_program.h"

using namespace kiln;
using namespace kiln::testing_programs;
using codegen::Opt;
using Kind = codegen::Opt::Kind;

namespace {

// "" when got matches want within the dtype's tolerance, else where it first differs
std::string differs(const std::vector<double>& got, const std::vector<double>& want, DType d) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  for (size_t j = 0; j < want.size(); ++j) {
    double g = got[j], w = want[j];
    bool same = std::isnan(w)   ? std::isnan(g)
                : std::isinf(w) ? g == w
                                : std::abs(g - w) <= tolerance(d) * std::max(1.0, std::abs(w));
    if (!same) {
      std::ostringstream os;
      os << "at " << j << ": got " << g << ", want " << w;
      return os.str();
    }
  }
  return "";
}

// The end of every range of a kernel that is not an inner piece of a split, by axis (-1: symbolic)
std::map<int32_t, int64_t> range_ends(const UOp* sink) {
  std::map<int32_t, int64_t> ends;
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::RANGE) continue;
    AxisType t = u->arg<RangeArg>().type;
    if (t == AxisType::Loop || t == AxisType::Reduce)
      ends[u->arg<RangeArg>().axis] = u->src(0)->op == Op::CONST ? u->src(0)->ival() : -1;
  }
  return ends;
}

// The loop order of a kernel's C: the axes of its `for` headers, in order
std::vector<int> loop_axes(const std::string& c) {
  std::vector<int> axes;
  for (size_t p = c.find("for ("); p != std::string::npos; p = c.find("for (", p + 1))
    axes.push_back(std::stoi(c.substr(c.find(" ridx", p) + 5)));
  return axes;
}

struct OptsTest : ::testing::Test, ProgramInputs {
  schedule::Schedule schedule_of(const std::vector<Tensor>& outs) {
    return schedule::schedule(ins, outs, "p" + std::to_string(programs++));
  }

  // Applies `opts` in order to kernel `k` (each must apply and change it); returns the new kernel.
  const UOp* optimize(const schedule::Schedule& s, size_t k, const std::vector<Opt>& opts) {
    const UOp* sink = s.kernels.at(k).ast;
    for (const Opt& o : opts) {
      std::string why;
      const UOp* next = codegen::apply_opt(sink, o, &why);
      EXPECT_NE(next, nullptr) << o.str() << " refused: " << why << "\n" << print_graph(sink);
      if (!next) return nullptr;
      EXPECT_NE(next, sink) << o.str() << " changed nothing";
      sink = next;
    }
    return sink;
  }

  // The program with kernel k changed by `opts` against the oracle and against the program as
  // scheduled, in the interpreter and natively, at every binding of the vars.
  void expect_same(const std::vector<Tensor>& outs, size_t k, const std::vector<Opt>& opts,
                   const std::vector<std::map<std::string, int64_t>>& bindings = {{}}) {
    schedule::Schedule plain = schedule_of(outs);
    schedule::Schedule changed = plain;
    const UOp* opted = optimize(plain, k, opts);
    if (!opted) return;
    changed.kernels[k].ast = opted;
    std::string label;
    for (const Opt& o : opts) label += o.str() + " ";
    codegen::PipelineOptions as_given;
    as_given.optimize = false;  // the opts under test, not the heuristics'
    std::string src;
    for (const auto& kernel : changed.kernels) src += codegen::compile_to_c(kernel.ast, changed.vars, as_given).source;
    crun::Library lib = crun::Library::compile(render::c_preamble() + src, {"-Wall", "-Wextra", "-Werror"});
    for (const auto& vars : bindings) {
      std::mt19937_64 rng(7);
      oracle::Bindings b;
      b.vars = vars;
      std::vector<std::vector<double>> inputs = random_inputs(ins, b, rng);
      std::vector<interp::Output> want = interp::run_schedule(plain, vars, inputs);
      std::vector<interp::Output> got = interp::run_schedule(changed, vars, inputs);
      // the lowered kernels as linear programs: like C, they load before they know what is kept,
      // so a padded iteration's ungated read fails the bounds check here
      std::vector<interp::Output> lowered =
          interp::run_schedule(changed, vars, inputs, {}, [&](size_t kk, std::span<interp::Buf* const> params) {
            interp::run_stage(codegen::full_rewrite_to_sink(changed.kernels[kk].ast, as_given), params, vars);
          });
      std::vector<interp::Output> native = crun::run_schedule(changed, lib, vars, inputs);
      for (size_t i = 0; i < outs.size(); ++i) {
        std::vector<double> exact = oracle::evaluate(outs[i].uop(), b).doubles();
        DType d = got[i].dtype;
        EXPECT_EQ(differs(want[i].values, exact, d), "") << "as scheduled, output " << i;
        EXPECT_EQ(differs(got[i].values, want[i].values, d), "") << label << "interpreted, output " << i;
        EXPECT_EQ(differs(got[i].values, exact, d), "") << label << "interpreted vs oracle, output " << i;
        EXPECT_EQ(differs(lowered[i].values, exact, d), "") << label << "lowered, output " << i;
        EXPECT_EQ(differs(native[i].values, exact, d), "") << label << "native, output " << i << "\n" << src;
      }
    }
  }
};

}  // namespace

// ---------------------------------------------------------------- PADTO

TEST_F(OptsTest, PadtoPadsToTheNextMultipleAndGatesEveryAddress) {
  Tensor x = input("x", {7, 13}), y = input("y", {13});
  schedule::Schedule s = schedule_of({(x + y).exp()});
  const UOp* padded = optimize(s, 0, {{Kind::Padto, 1, 16}});
  ASSERT_NE(padded, nullptr);
  EXPECT_EQ(range_ends(padded), (std::map<int32_t, int64_t>{{0, 7}, {1, 16}}));
  // x, y and the output: each address depends on the padded axis, each is gated
  size_t gated = 0;
  for (const UOp* u : toposort(padded))
    gated += u->op == Op::INDEX && u->src(1)->op == Op::WHERE && u->src(1)->src(2)->is_invalid();
  EXPECT_EQ(gated, 3u) << print_graph(padded);
}

TEST_F(OptsTest, PadtoThenLanesOnWidthsNoLaneDivides) {
  Tensor a = input("a", {1000}), b = input("b", {7, 997});
  expect_same({(a * 3).sin()}, 0, {{Kind::Padto, 0, 16}, {Kind::Lane, 0, 16}});
  expect_same({(b + 1).sqrt()}, 0, {{Kind::Padto, 1, 16}, {Kind::Lane, 1, 16}});
  expect_same({(b + 1).sqrt()}, 0,
              {{Kind::Padto, 0, 4}, {Kind::Upcast, 0, 4}, {Kind::Padto, 1, 8}, {Kind::Lane, 1, 8}});
}

TEST_F(OptsTest, PadtoSumOverEachAxis) {
  Tensor x = input("x", {7, 13});
  for (int axis : {0, 1}) {
    // the output axis is 0, the reduction axis 1
    expect_same({x.sum({axis})}, 0, {{Kind::Padto, 0, 4}, {Kind::Upcast, 0, 4}});
    expect_same({x.sum({axis})}, 0, {{Kind::Padto, 1, 16}, {Kind::Unroll, 1, 16}});
    expect_same({x.sum({axis})}, 0, {{Kind::Padto, 1, 8}, {Kind::Padto, 0, 16}, {Kind::Lane, 0, 16}});
  }
  expect_same({x.sum()}, 0, {{Kind::Padto, 0, 8}, {Kind::Padto, 1, 16}, {Kind::Unroll, 1, 4}});
}

TEST_F(OptsTest, PadtoReductionsAddTheirIdentity) {
  // all negative: a padded max that took 0 would show; never zero: a padded product that took 0 would
  Tensor x = input("x", {5, 11});
  Tensor neg = -x.abs() - 0.5;
  expect_same({neg.max({1})}, 0, {{Kind::Padto, 1, 16}, {Kind::Unroll, 1, 4}});
  expect_same({neg.max({0})}, 0, {{Kind::Padto, 1, 8}});
  expect_same({x.prod({1})}, 0, {{Kind::Padto, 1, 4}, {Kind::Unroll, 1, 4}});
  ins.clear();
  Tensor i = input("i", {5, 11}, dtypes::int32);
  expect_same({(-i.abs()).max({1}), (i * 3).sum({1})}, 0, {{Kind::Padto, 1, 16}});
}

TEST_F(OptsTest, PadtoMatmulAtPrimeShapes) {
  for (auto [m, k, n] : {std::tuple{7, 13, 29}, {1, 29, 31}, {31, 7, 1}, {17, 1, 19}}) {
    ins.clear();
    Tensor a = input("a", {m, k}), b = input("b", {k, n});
    // a dim of 1 has no range: find the axes by what they do
    std::vector<int32_t> loops, reduces;
    const UOp* ast = schedule_of({a.matmul(b)}).kernels[0].ast;
    for (const UOp* u : toposort(ast))
      if (u->op == Op::END || u->op == Op::REDUCE)
        for (const UOp* r : u->src().subspan(1))
          (u->op == Op::END ? loops : reduces).push_back(r->arg<RangeArg>().axis);
    ASSERT_FALSE(loops.empty());
    int32_t cols = loops.back(), rows = loops.front();
    expect_same({a.matmul(b)}, 0, {{Kind::Padto, cols, 16}, {Kind::Lane, cols, 16}});
    expect_same({a.matmul(b)}, 0, {{Kind::Padto, rows, 8}, {Kind::Upcast, rows, 8}});
    if (loops.size() == 2)
      expect_same({a.matmul(b)}, 0,
                  {{Kind::Padto, cols, 16}, {Kind::Lane, cols, 16}, {Kind::Padto, rows, 4}, {Kind::Upcast, rows, 4}});
    if (!reduces.empty()) expect_same({a.matmul(b)}, 0, {{Kind::Padto, reduces[0], 4}, {Kind::Unroll, reduces[0], 4}});
  }
}

TEST_F(OptsTest, PadtoSoftmaxOnEveryAxis) {
  Tensor x = input("x", {5, 13});
  // axes: 0 rows, 1 columns, 2 the max, 3 the sum
  expect_same({x.softmax(-1)}, 0, {{Kind::Padto, 1, 16}, {Kind::Lane, 1, 16}});
  expect_same({x.softmax(-1)}, 0, {{Kind::Padto, 0, 8}, {Kind::Upcast, 0, 8}});
  expect_same({x.softmax(-1)}, 0, {{Kind::Padto, 2, 16}, {Kind::Unroll, 2, 16}, {Kind::Padto, 3, 4}});
  expect_same({(x - 5).softmax(-1)}, 0, {{Kind::Padto, 2, 8}});  // every row negative: the max pads with -inf
}

TEST_F(OptsTest, PadtoASymbolicEnd) {
  const UOp* m = ctx.var("M", 1, 9);
  Tensor x = input("x", {m, 6});
  schedule::Schedule s = schedule_of({x.softmax(-1)});
  const UOp* padded = optimize(s, 0, {{Kind::Padto, 0, 4}});
  ASSERT_NE(padded, nullptr);
  EXPECT_EQ(range_ends(padded).at(0), -1);
  // the padded end is a multiple of 4: UPCAST can split it
  expect_same({x.softmax(-1)}, 0, {{Kind::Padto, 0, 4}, {Kind::Upcast, 0, 4}}, {{{"M", 1}}, {{"M", 5}}, {{"M", 9}}});
}

TEST_F(OptsTest, PadtoOfAMultipleChangesNothing) {
  Tensor x = input("x", {6, 16});
  schedule::Schedule s = schedule_of({x.sum({1})});
  const UOp* k = s.kernels[0].ast;
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Padto, 1, 16}), k);
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Padto, 1, 4}), k);
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Padto, 0, 3}), k);
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Padto, 0, 1}), k);
}

TEST_F(OptsTest, PadtoRefusals) {
  Tensor a = input("a", {5, 7}, dtypes::int32), b = input("b", {7}, dtypes::int32);
  schedule::Schedule s = schedule_of({a.idiv(b)});
  std::string why;
  // a padded iteration would divide by the 0 its gated load reads
  EXPECT_EQ(codegen::apply_opt(s.kernels[0].ast, {Kind::Padto, 1, 8}, &why), nullptr);
  EXPECT_NE(why.find("divisor"), std::string::npos) << why;
  EXPECT_EQ(codegen::apply_opt(s.kernels[0].ast, {Kind::Padto, 4, 8}, &why), nullptr);
  EXPECT_EQ(why, "no range with axis 4");
  // an inner piece of a split is not padded
  ins.clear();
  Tensor x = input("x", {5, 8});
  schedule::Schedule t = schedule_of({x * 2});
  const UOp* split = codegen::apply_opt(t.kernels[0].ast, {Kind::Upcast, 1, 4});
  ASSERT_NE(split, nullptr);
  int32_t inner = 0;
  for (const UOp* u : toposort(split))
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Upcast) inner = u->arg<RangeArg>().axis;
  EXPECT_EQ(codegen::apply_opt(split, {Kind::Padto, inner, 8}, &why), nullptr);
  EXPECT_EQ(why, "no range with axis " + std::to_string(inner));
  const UOp* threads = codegen::apply_opt(t.kernels[0].ast, {Kind::Thread, 0, 0});
  ASSERT_NE(threads, nullptr);
  EXPECT_EQ(codegen::apply_opt(threads, {Kind::Padto, 0, 8}, &why), nullptr);
  EXPECT_NE(why.find("thread range"), std::string::npos) << why;
}

// found by the tune_opts fuzz target (tests/fuzz): a tune database is input, and its amounts any int64
TEST_F(OptsTest, PadtoPastInt64IsRefused) {
  Tensor x = input("x", {700});
  schedule::Schedule s = schedule_of({x * 2});
  std::string why;
  // (700 + 2^63 - 2) / (2^63 - 1) * (2^63 - 1) was a signed overflow
  EXPECT_EQ(codegen::apply_opt(s.kernels[0].ast, {Kind::Padto, 0, std::numeric_limits<int64_t>::max()}, &why), nullptr);
  EXPECT_EQ(why,
            "PADTO(0, 9223372036854775807): the end of axis 0 padded to a multiple of 9223372036854775807 does "
            "not fit an int64");
  const int64_t largest = std::numeric_limits<int64_t>::max() - 699;  // 700 + largest - 1 is the int64 maximum
  const UOp* padded = codegen::apply_opt(s.kernels[0].ast, {Kind::Padto, 0, largest}, &why);
  ASSERT_NE(padded, nullptr) << why;
  EXPECT_EQ(range_ends(padded).at(0), largest);
}

// found by the tune_opts fuzz target: UPCAST(0,65536) of a loop of 2^20 did not finish compiling
TEST_F(OptsTest, ExpansionPastTheCapIsRefused) {
  Tensor x = input("x", {1 << 20});
  schedule::Schedule s = schedule_of({x * 2});
  const UOp* k = s.kernels[0].ast;
  std::string why;
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Upcast, 0, 65536}, &why), nullptr);
  EXPECT_EQ(why,
            "UPCAST(0, 65536): the loop nest's upcasts, unrolls and lanes would make more than 4096 copies of "
            "its body");
  // the copies multiply across opts: 16 * 16 * 16 is the cap, once more is past it
  for (int i = 0; i < 3; ++i) {
    k = codegen::apply_opt(k, {Kind::Upcast, 0, 16}, &why);
    ASSERT_NE(k, nullptr) << why;
  }
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Upcast, 0, 2}, &why), nullptr);
  EXPECT_NE(why.find("more than 4096 copies"), std::string::npos) << why;
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Lane, 0, 2}, &why), nullptr);
  // 1024 copies, the most an entry of tests/gen/dispatch.tunedb makes, apply
  EXPECT_NE(codegen::apply_opt(s.kernels[0].ast, {Kind::Lane, 0, 1024}, &why), nullptr) << why;
}

TEST_F(OptsTest, PaddedKernelsTakeTheHeuristicsToo) {
  // the CPU heuristics on top of PADTO: the cpu target's tile of 6 rows of 8 lanes on the padded 8
  // rows and 32 columns of a 7x13x29 matmul (its last 2 rows a cleanup nest)
  Tensor a = input("a", {7, 13}), b = input("b", {13, 29});
  schedule::Schedule s = schedule_of({a.matmul(b)});
  const UOp* padded = optimize(s, 0, {{Kind::Padto, 1, 16}, {Kind::Padto, 0, 8}});
  ASSERT_NE(padded, nullptr);
  const UOp* tuned = padded;
  std::vector<Opt> chosen = codegen::hand_coded_optimizations(tuned);
  ASSERT_GE(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].str(), "LANES(1, 8)");
  EXPECT_EQ(chosen[1].str(), "UPCAST(0, 6)");
  s.kernels[0].ast = padded;
  std::string src = codegen::compile_to_c(padded, s.vars).source;
  crun::Library lib = crun::Library::compile(render::c_preamble() + src, {"-Wall", "-Wextra", "-Werror"});
  std::mt19937_64 rng(3);
  std::vector<std::vector<double>> inputs{random_input(dtypes::float32, 7 * 13, rng),
                                          random_input(dtypes::float32, 13 * 29, rng)};
  oracle::Bindings bind;
  bind.inputs[0] = inputs[0];
  bind.inputs[1] = inputs[1];
  std::vector<double> want = oracle::evaluate(a.matmul(b).uop(), bind).doubles();
  for (int64_t cores : {1, 3}) {
    std::vector<interp::Output> got = crun::run_schedule(s, lib, {{".cores", cores}}, inputs);
    EXPECT_EQ(differs(got[0].values, want, dtypes::float32), "") << cores << " cores\n" << src;
  }
}

// ---------------------------------------------------------------- SWAP

TEST_F(OptsTest, SwapReordersTheOutputLoops) {
  Tensor x = input("x", {3, 4, 5});
  schedule::Schedule s = schedule_of({x * 2});
  const UOp* swapped = optimize(s, 0, {{Kind::Swap, 0, 2}});
  ASSERT_NE(swapped, nullptr);
  codegen::PipelineOptions as_given;
  as_given.optimize = false;
  EXPECT_EQ(loop_axes(codegen::compile_to_c(s.kernels[0].ast, s.vars, as_given).source), (std::vector<int>{0, 1, 2}));
  std::string c = codegen::compile_to_c(swapped, s.vars, as_given).source;
  EXPECT_EQ(loop_axes(c), (std::vector<int>{2, 1, 0})) << c;
  // swapping back restores the kernel, node for node
  EXPECT_EQ(codegen::apply_opt(swapped, {Kind::Swap, 2, 0}), s.kernels[0].ast);
}

TEST_F(OptsTest, SwapKeepsWhatKernelsCompute) {
  Tensor x = input("x", {3, 4, 5});
  expect_same({x.exp() + x.sum({2}, true)}, 0, {{Kind::Swap, 0, 1}});
  expect_same({x.sum({1})}, 0, {{Kind::Swap, 0, 1}, {Kind::Padto, 1, 8}, {Kind::Lane, 1, 8}});
  ins.clear();
  Tensor a = input("a", {7, 13}), b = input("b", {13, 29});
  expect_same({a.matmul(b)}, 0, {{Kind::Swap, 0, 1}, {Kind::Padto, 0, 8}, {Kind::Lane, 0, 8}});
  ins.clear();
  Tensor y = input("y", {5, 13});
  expect_same({y.softmax(-1)}, 0, {{Kind::Swap, 1, 0}, {Kind::Padto, 3, 16}});
}

TEST_F(OptsTest, SwapRefusals) {
  Tensor a = input("a", {7, 13}), b = input("b", {13, 29});
  schedule::Schedule s = schedule_of({a.matmul(b)});
  const UOp* k = s.kernels[0].ast;
  std::string why;
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Swap, 0, 2}, &why), nullptr);
  EXPECT_EQ(why, "SWAP(0, 2): SWAP reorders output loops, axis 2 is a reduce range");
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Swap, 1, 1}, &why), nullptr);
  EXPECT_EQ(why, "SWAP(1, 1): SWAP needs two different axes");
  EXPECT_EQ(codegen::apply_opt(k, {Kind::Swap, 0, 5}, &why), nullptr);
  EXPECT_EQ(why, "no range with axis 5");
}

// ---------------------------------------------------------------- through the pipeline (kiln tune's path)

namespace {

// The program with kernel k taking `t` through PipelineOptions::tuned, as kiln gen applies kiln
// tune's (after the pipeline's own stages before "apply opts", softmax's stored term first), the
// other kernels the heuristics'; run natively against the oracle at every binding of the vars.
void expect_tuned(ProgramInputs& p, const std::vector<Tensor>& outs, size_t k, const codegen::TunedOpts& t,
                  const std::vector<std::map<std::string, int64_t>>& bindings = {{}}) {
  schedule::Schedule s = schedule::schedule(p.ins, outs, "t" + std::to_string(p.programs++));
  std::string src;
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    codegen::PipelineOptions po;
    po.require_proven_bounds = false;  // as kiln gen: these test the values, not the prover
    if (i == k) po.tuned = t;
    src += codegen::compile_to_c(s.kernels[i].ast, s.vars, po).source;
  }
  crun::Library lib = crun::Library::compile(render::c_preamble() + src, {"-Wall", "-Wextra", "-Werror"});
  for (auto vars : bindings)
    for (int64_t cores : {1, 3}) {
      vars[".cores"] = cores;
      std::mt19937_64 rng(5);
      oracle::Bindings b;
      b.vars = vars;
      std::vector<std::vector<double>> inputs = random_inputs(p.ins, b, rng);
      std::vector<interp::Output> native = crun::run_schedule(s, lib, vars, inputs);
      for (size_t i = 0; i < outs.size(); ++i)
        EXPECT_EQ(differs(native[i].values, oracle::evaluate(outs[i].uop(), b).doubles(), native[i].dtype), "")
            << "output " << i << ", " << cores << " cores\n"
            << src;
    }
}

// the axes of a kernel as the opts see it (after "simplify ranges", softmax's term stored)
std::vector<int32_t> axes_before_opts(const UOp* ast) {
  const UOp* sink0 = nullptr;
  codegen::PipelineOptions po;
  po.after_stage = [&](std::string_view stage, const UOp* s) {
    if (stage == "simplify ranges") sink0 = s;
  };
  codegen::full_rewrite_to_sink(ast, po);
  if (const UOp* stored = codegen::store_shared_term(sink0)) sink0 = stored;
  std::set<int32_t> axes;
  for (const UOp* u : toposort(sink0))
    if (u->op == Op::RANGE) axes.insert(u->arg<RangeArg>().axis);
  return {axes.begin(), axes.end()};
}

}  // namespace

TEST_F(OptsTest, TunedPadtoOfEveryLoopOfSoftmaxWithItsStoredTerm) {
  // the loop that stores softmax's exp(x - max) ends before the loop that reads it back: padding
  // it gated that loop's store too, on a range outside its END (the linearizer recursed forever)
  Tensor x = input("x", {4, 3});
  schedule::Schedule s = schedule_of({x.softmax(-1)});
  std::vector<int32_t> axes = axes_before_opts(s.kernels[0].ast);
  ASSERT_GT(axes.size(), 3u) << "no stored term (else this test checks nothing)";
  for (int32_t a : axes) expect_tuned(*this, {x.softmax(-1)}, 0, {{{Kind::Padto, a, 8}}, 0});
}

TEST_F(OptsTest, TunedUpcastOfAPaddedDimKeepsItsOtherLoops) {
  // the copy of the row 3 of PADTO(0, 16) UPCAST(0, 4) UPCAST(0, 4) is gated by 3 < N, so N is 4
  // there: simplifying its index under that gate made the column loop's end N a 4, another loop
  // that no END closed
  Tensor x = input("x", {5, ctx.var("N", 3, 4), ctx.var("N", 3, 4)});
  std::vector<Tensor> outs{(x * 3).max({0})};
  expect_tuned(*this, outs, 0, {{{Kind::Padto, 0, 16}, {Kind::Upcast, 0, 4}, {Kind::Upcast, 0, 4}}, 0},
               {{{"N", 3}}, {{"N", 4}}});
}

TEST_F(OptsTest, UpcastAndLanesRefuseALoopAroundAnotherLoop) {
  // softmax's row loop encloses the loop that stores its term: copies of it would each close that
  // one loop (the linearizer: "range closed twice")
  Tensor x = input("x", {4, 6});
  schedule::Schedule s = schedule_of({x.softmax(-1)});
  for (Kind k : {Kind::Upcast, Kind::Lane}) {
    codegen::PipelineOptions po;
    po.tuned = codegen::TunedOpts{{{k, 0, 2}}, 0};
    try {
      codegen::compile_to_c(s.kernels[0].ast, s.vars, po);
      ADD_FAILURE() << Opt{k, 0, 2}.str() << " applied";
    } catch (const codegen::OptError& e) {
      EXPECT_NE(std::string(e.what()).find("axis 0 encloses another loop"), std::string::npos) << e.what();
    }
  }
  // the inner loops still split
  expect_tuned(*this, {x.softmax(-1)}, 0, {{{Kind::Upcast, 1, 2}}, 0});
}

// ---------------------------------------------------------------- what the CPU target lacks

TEST_F(OptsTest, LocalGroupAndTensorCoresAreRefusedWithAReason) {
  Tensor a = input("a", {16, 16}), b = input("b", {16, 16});
  schedule::Schedule s = schedule_of({a.matmul(b)});
  const UOp* k = s.kernels[0].ast;
  auto reason = [&](Opt o) {
    std::string why;
    EXPECT_EQ(codegen::apply_opt(k, o, &why), nullptr) << o.str();
    return why;
  };
  EXPECT_EQ(reason({Kind::Local, 0, 4}), "LOCAL needs a GPU target's work groups; the CPU target has none");
  EXPECT_EQ(reason({Kind::Group, 2, 4}),
            "GROUP needs a target with local memory to combine partial reductions; the CPU target has none");
  EXPECT_EQ(reason({Kind::GroupTop, 2, 4}),
            "GROUPTOP needs a target with local memory to combine partial reductions; the CPU target has none");
  EXPECT_EQ(reason({Kind::Tc, 0, 0}), "TC needs a target with tensor cores; the CPU target has none");
  EXPECT_EQ(reason({Kind::Upcast, 0, 5}), "UPCAST(0, 5): 5 does not divide the end of axis 0 (PADTO it first)");
}

TEST(OptsNames, PrintLikeTinygrad) {
  EXPECT_EQ((Opt{Kind::Padto, 1, 16}).str(), "PADTO(1, 16)");
  EXPECT_EQ((Opt{Kind::Swap, 0, 2}).str(), "SWAP(0, 2)");
  EXPECT_EQ((Opt{Kind::Local, 0, 4}).str(), "LOCAL(0, 4)");
  EXPECT_EQ((Opt{Kind::GroupTop, 2, 16}).str(), "GROUPTOP(2, 16)");
  EXPECT_EQ((Opt{Kind::Thread, 0, 0}).str(), "THREAD(0)");
  EXPECT_EQ((Opt{Kind::Lane, 1, 16}).str(), "LANES(1, 16)");
}
