// Every codegen stage preserves what a kernel computes: random programs are scheduled, each kernel
// goes through the pipeline with every stage's sink captured, and the whole schedule is run by the
// kernel interpreter with every kernel replaced by its sink after one stage (then by its final
// linear program), against the run of the stage before. All runs are exact-dtype interpretations,
// so outputs must agree bit for bit; only the symbolic stages may round floats differently
// (they fold constants and factor loop-invariant operands out of reduces), within 1e-6, counted
// apart. Also the linear interpreter itself on hand-built programs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <iostream>
#include <sstream>
#include <tuple>
#include <unordered_set>

#include "generator/codegen/passes.h"
#include "generator/codegen/pipeline.h"
#include "generator/ir/text.h"
#include "generator/schedule/schedule.h"
#include "generator/symbolic/symbolic.h"
#include "generator/target/target.h"
#include "tests/unit/kernel_interp.h"
#include "tests/unit/kernel_testing.h"
#include "tests/unit/oracle.h"
#include "tests/unit/random_program.h"

using namespace kiln;
using namespace kiln::kernel_testing;
using namespace kiln::interp;
using namespace kiln::testing_programs;

namespace {

// ---------------------------------------------------------------- run_linear by hand

const UOp* param(Context& ctx, int32_t slot, DType elem, int64_t count, std::string_view name) {
  return ctx.make(Op::PARAM, elem.as_ptr(), {ctx.cint(count)}, ParamArg{slot, -1, ctx.intern(name)});
}
const UOp* at(const UOp* p, const UOp* idx) { return p->ctx().make(Op::INDEX, p->dtype.elem(), {p, idx}); }
const UOp* store(const UOp* dst, const UOp* v) { return v->ctx().make(Op::STORE, dtypes::void_, {dst, v}); }
const UOp* load(const UOp* src, DType d) { return src->ctx().make(Op::LOAD, d, {src}); }
const UOp* end(const UOp* body, const UOp* r) { return r->ctx().make(Op::END, dtypes::void_, {body, r}); }
const UOp* after(std::vector<const UOp*> src) { return src[0]->ctx().make(Op::AFTER, src[0]->dtype, src); }
const UOp* kernel(Context& ctx, std::string_view name, std::initializer_list<const UOp*> stmts) {
  return ctx.make(Op::SINK, dtypes::void_, stmts, Name{ctx.intern(name)});
}
const UOp* acc(Context& ctx, int32_t slot, DType d) {
  return ctx.make(Op::BUFFER, d.as_ptr(AddrSpace::Reg), {ctx.cint(1)}, ParamArg{slot, 1, {}});
}

void run(const UOp* sink, std::vector<Buf*> params, const Vars& vars = {}) {
  std::vector<const UOp*> lin = codegen::linearize(sink);
  run_linear(lin, params, vars);
}

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const InterpError& e) {
    return e.what();
  }
  return "";
}

// out[i] = sum_k x[i*4+k] with an accumulator: the form "remove reduces" makes
const UOp* row_sum(Context& ctx, const UOp* rows, int64_t cols) {
  const UOp *out = param(ctx, 0, dtypes::float32, 3, "out"), *x = param(ctx, 1, dtypes::float32, 3 * cols, "x");
  const UOp *r = ctx.range(rows, 0, AxisType::Loop, dtypes::int32), *k = ctx.range(cols, 1, AxisType::Reduce);
  const UOp* a = acc(ctx, 0, dtypes::float32);
  const UOp* init = store(after({a, r}), ctx.cfloat(0.0, dtypes::float32));
  const UOp* in = after({a, init, k});
  const UOp* i =
      ctx.make(Op::ADD, dtypes::int32,
               {ctx.make(Op::MUL, dtypes::int32, {r, ctx.cint(cols, dtypes::int32)}), k->cast(dtypes::int32)});
  const UOp* upd = store(in, Expr(load(in, dtypes::float32)) + load(at(x, i), dtypes::float32));
  const UOp* total = load(after({a, end(upd, k)}), dtypes::float32);
  return kernel(ctx, "rowsum", {end(store(at(out, r), total), r)});
}

TEST(PipelineStagesLinear, AccumulatorSumsEachRow) {
  Context ctx;
  const UOp* k = row_sum(ctx, ctx.cint(3, dtypes::int32), 4);
  Buf bo = poisoned(dtypes::float32, 3), bx = filled(dtypes::float32, {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{10, 26, -10}));
}

TEST(PipelineStagesLinear, EmptyLoopSkipsItsBody) {
  Context ctx;
  const UOp* n = ctx.var("N", 0, 3, dtypes::int32);
  const UOp* k = row_sum(ctx, n, 4);
  Buf bo = filled(dtypes::float32, {7, 7, 7}), bx = filled(dtypes::float32, std::vector<double>(12, 1.0));
  run(k, {&bo, &bx}, {{"N", 0}});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{7, 7, 7}));  // no row ran
  run(k, {&bo, &bx}, {{"N", 2}});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{4, 4, 7}));
  // an empty reduce loop leaves the identity
  Context c2;
  const UOp* k2 = row_sum(c2, c2.cint(3, dtypes::int32), 0);
  Buf b0 = poisoned(dtypes::float32, 3), bz(dtypes::float32, 0);
  run(k2, {&b0, &bz});
  EXPECT_EQ(b0.doubles(), (std::vector<double>{0, 0, 0}));
}

TEST(PipelineStagesLinear, NestedLoopsWithAHoistedValue) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::int32, 6, "out"), *x = param(ctx, 1, dtypes::int32, 2, "x");
  const UOp *r0 = ctx.range(2, 0), *r1 = ctx.range(3, 1);
  const UOp* row = Expr(load(at(x, r0), dtypes::int32)) * 10;  // depends on r0 only: hoisted out of r1
  const UOp* v = Expr(row) + r1->cast(dtypes::int32);
  const UOp* k = kernel(ctx, "nest", {end(end(store(at(out, Expr(r0) * 3 + r1), v), r1), r0)});
  std::vector<const UOp*> lin = codegen::linearize(k);
  auto pos = [&](const UOp* u) { return std::find(lin.begin(), lin.end(), u) - lin.begin(); };
  ASSERT_LT(pos(row), pos(r1));  // the multiply sits between the two loop heads
  ASSERT_GT(pos(row), pos(r0));
  Buf bo = poisoned(dtypes::int32, 6), bx = filled(dtypes::int32, {1, 2});
  run_linear(lin, std::vector<Buf*>{&bo, &bx}, {});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{10, 11, 12, 20, 21, 22}));
  // the same list with the hoisted value moved after the loop that reads it is rejected
  std::vector<const UOp*> bad = lin;
  bad.erase(bad.begin() + pos(row));
  bad.insert(bad.end() - 2, row);
  EXPECT_NE(error_of([&] {
              run_linear(bad, std::vector<Buf*>{&bo, &bx}, {});
            }).find("has not been evaluated"),
            std::string::npos);
}

TEST(PipelineStagesLinear, GatedStoreAndLoad) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::float32, 4, "out"), *x = param(ctx, 1, dtypes::float32, 2, "x");
  const UOp* r = ctx.range(4, 0);
  auto gated = [&](const UOp* cond, const UOp* i) { return ctx.make(Op::WHERE, i->dtype, {cond, i, ctx.invalid()}); };
  const UOp* in = gated(Expr(r) < 2, r);  // x[r] while r < 2, else 0
  const UOp* st = store(at(out, gated(Expr(r) < 3, r)), Expr(load(at(x, in), dtypes::float32)) + 1.0f);
  const UOp* k = kernel(ctx, "gated", {end(st, r)});
  Buf bo = filled(dtypes::float32, {9, 9, 9, 9}), bx = filled(dtypes::float32, {5, 6});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{6, 7, 1, 9}));  // out[3] not stored
}

TEST(PipelineStagesLinear, OutOfBoundsNamesKernelParamAndIndex) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::float32, 4, "out"), *x = param(ctx, 1, dtypes::float32, 4, "x");
  const UOp* r = ctx.range(4, 0);
  const UOp* k = kernel(ctx, "shift", {end(store(at(out, r), load(at(x, Expr(r) + 1), dtypes::float32)), r)});
  Buf bo = poisoned(dtypes::float32, 4), bx = filled(dtypes::float32, {1, 2, 3, 4});
  std::string e = error_of([&] { run(k, {&bo, &bx}); });
  EXPECT_NE(e.find("kernel shift"), std::string::npos) << e;
  EXPECT_NE(e.find("'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("index 4"), std::string::npos) << e;
  EXPECT_NE(e.find("axis0=3"), std::string::npos) << e;
  const UOp* k2 = kernel(ctx, "wide", {end(store(at(out, Expr(r) * 2), load(at(x, r), dtypes::float32)), r)});
  EXPECT_NE(error_of([&] { run(k2, {&bo, &bx}); }).find("'out'"), std::string::npos);
}

TEST(PipelineStagesLinear, AccumulatorReadBeforeSetIsAnError) {
  Context ctx;
  const UOp* out = param(ctx, 0, dtypes::float32, 1, "out");
  const UOp* a = acc(ctx, 0, dtypes::float32);
  const UOp* k = kernel(ctx, "unset", {store(at(out, ctx.cint(0)), load(a, dtypes::float32))});
  Buf bo = poisoned(dtypes::float32, 1);
  EXPECT_NE(error_of([&] { run(k, {&bo}); }).find("before it is set"), std::string::npos);
}

// ---------------------------------------------------------------- every stage of random programs

bool same_bits(const ConstValue& a, const ConstValue& b) {
  if (a.is_invalid() || b.is_invalid()) return a.is_invalid() && b.is_invalid();
  if (a.is_float() != b.is_float()) return false;
  if (!a.is_float()) return a.i == b.i;
  if (std::isnan(a.f) || std::isnan(b.f)) return std::isnan(a.f) && std::isnan(b.f);
  return std::bit_cast<uint64_t>(a.f) == std::bit_cast<uint64_t>(b.f);
}

// |a - b| relative to max(1, |a|, |b|): a float output's error, absolute near zero
double deviation(const ConstValue& a, const ConstValue& b) {
  if (!a.is_float() || !b.is_float() || std::isnan(a.f) || std::isnan(b.f) || std::isinf(a.f) || std::isinf(b.f))
    return INFINITY;
  return std::abs(a.f - b.f) / std::max({1.0, std::abs(a.f), std::abs(b.f)});
}

struct Counts {
  int exact = 0, rounded = 0, differ = 0;  // programs whose outputs are bit-exact / within kRounding / not
  double worst = 0;                        // the largest deviation seen
};

constexpr double kRounding = 1e-6;

// "" when `got` equals `want` bit for bit, or (where `rounding` is allowed) every float within
// kRounding of it; else what differed. Counts the program either way.
std::string compare(const std::vector<Output>& want, const std::vector<Output>& got, bool rounding, Counts& n) {
  if (want.size() != got.size()) return "a different number of outputs";
  bool rounded = false;
  for (size_t o = 0; o < want.size(); ++o) {
    if (want[o].exact.size() != got[o].exact.size()) return "output " + std::to_string(o) + ": size differs";
    for (size_t j = 0; j < want[o].exact.size(); ++j) {
      const ConstValue &w = want[o].exact[j], &g = got[o].exact[j];
      if (same_bits(w, g)) continue;
      double dev = is_float(want[o].dtype) ? deviation(w, g) : INFINITY;
      n.worst = std::max(n.worst, dev);
      if (rounding && dev <= kRounding) {
        rounded = true;
        continue;
      }
      ++n.differ;
      std::ostringstream os;
      os.precision(9);
      os << "output " << o << " at " << j << ": got " << got[o].values[j] << ", want " << want[o].values[j]
         << " (deviation " << dev << ")";
      return os.str();
    }
  }
  ++(rounded ? n.rounded : n.exact);
  return "";
}

TEST(PipelineStagesRandomPrograms, EveryStageComputesWhatTheKernelAstComputes) {
  constexpr int kPrograms = 500;
  std::vector<std::string> names;  // the stages, in order, then the linear program
  std::vector<Counts> counts;
  size_t kernels = 0, stage_runs = 0, registers = 0, vectors = 0;
  int failures = 0, skipped = 0;
  for (int seed = 0; seed < kPrograms; ++seed) {
    Context ctx;
    std::vector<Tensor> ins, outs;
    Vars vars;
    RandomProgram(uint64_t(seed)).build(ctx, ins, outs, vars);
    vars[".cores"] = 1 + seed % 3;  // kernels shared among cores run once per core, in turn
    schedule::Schedule s = schedule::schedule(ins, outs, "p" + std::to_string(seed));
    kernels += s.kernels.size();

    std::mt19937_64 rng(uint64_t(seed) * 7919 + 1);
    oracle::Bindings b;
    b.vars = vars;
    std::vector<std::vector<double>> inputs = random_inputs(ins, b, rng);

    // stages[k][i]: kernel k's sink after stage i
    std::vector<std::vector<const UOp*>> stages(s.kernels.size());
    std::vector<std::vector<const UOp*>> linear(s.kernels.size());
    // the targets in turn: vectorize at each vector width (16, 32, 64 bytes)
    // (one without a library for the program's math, cortex-m4's for sin, says so: cpu stands in)
    const target::Target* pick = target::cpu_targets()[size_t(seed) % target::cpu_targets().size()];
    for (size_t k = 0; pick->freestanding && k < s.kernels.size(); ++k) {
      const schedule::Kernel& kernel = s.kernels[k];
      codegen::PipelineOptions probe;
      probe.target = pick;
      try {
        codegen::full_rewrite_to_sink(kernel.ast, probe);
      } catch (const codegen::MathError&) {
        pick = target::find("cpu");
      }
    }
    const target::Target& t = *pick;
    for (size_t k = 0; k < s.kernels.size(); ++k) {
      codegen::PipelineOptions o;
      o.target = &t;
      std::vector<std::string> seen;
      o.after_stage = [&](std::string_view n, const UOp* sink) {
        seen.emplace_back(n);
        stages[k].push_back(sink);
      };
      const UOp* final_sink = codegen::full_rewrite_to_sink(s.kernels[k].ast, o);
      linear[k] = codegen::linearize(final_sink);
      for (const UOp* u : linear[k]) {
        registers += u->op == Op::BUFFER;
        vectors += u->op == Op::STORE && u->src(1)->dtype.count > 1;
      }
      if (names.empty()) {
        names = seen;
        names.push_back("linear program");
        counts.resize(names.size());
      }
      ASSERT_EQ(seen, std::vector<std::string>(names.begin(), names.end() - 1));
    }

    std::vector<Output> prev;
    try {
      prev = run_schedule(s, vars, inputs);
    } catch (const InterpError& e) {  // the program itself is undefined (e.g. an integer division by zero)
      ++skipped;
      continue;
    }
    // each stage against the one before it (the kernel ast: the scheduler's own ASTs, run_kernel)
    for (size_t i = 0; i < names.size(); ++i) {
      bool lin = i + 1 == names.size();
      std::string diff;
      std::vector<Output> got;
      try {
        got = run_schedule(s, vars, inputs, {}, [&](size_t k, std::span<Buf* const> params) {
          if (lin) return run_linear(linear[k], params, vars);
          run_stage(stages[k][i], params, vars);
        });
        // symbolic folds float constants and factors a REDUCE's loop-invariant operand out of it; the
        // decompositions compute exp2 by a polynomial (a few ulp from the exactly rounded value)
        bool rounding = names[i].find("symbolic") != std::string::npos || names[i] == "decompositions";
        diff = compare(prev, got, rounding, counts[i]);
      } catch (const InterpError& e) {
        ++counts[i].differ;
        diff = e.what();
      }
      ++stage_runs;
      if (!diff.empty() && ++failures <= 10)
        ADD_FAILURE() << "program " << seed << ", after stage '" << names[i] << "': " << diff;
      if (!got.empty() && !lin) prev = std::move(got);  // the next stage answers to this one
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(vectors, 0u);  // the vectorize stage had work
  std::cout << kPrograms << " random programs (" << skipped << " undefined, skipped), " << kernels << " kernels ("
            << registers << " accumulators, " << vectors << " vector stores), " << names.size() << " stages each, "
            << stage_runs << " stage runs checked\n";
  for (size_t i = 0; i < names.size(); ++i)
    std::cout << "  " << names[i] << ": " << counts[i].exact << " bit-exact, " << counts[i].rounded << " within 1e-6, "
              << counts[i].differ << " differ (largest deviation " << counts[i].worst << ")\n";
}

// PatternMatcher::rewrite tries a node's rules through a gate on its dtype and its sources' ops;
// it must pick what trying every rule in order picks. Every node of every stage of random
// programs, against the matchers the pipeline runs (with the context a target gives).
TEST(PipelineStagesRandomPrograms, GatedRuleListsPickWhatTryingEveryRulePicks) {
  constexpr int kPrograms = 150;
  const target::Target& cpu = *target::find("cpu");
  const target::Target& object = *target::find("x86_64-avx512");
  void* cpu_ctx = const_cast<target::Target*>(&cpu);
  const std::tuple<const char*, const PatternMatcher*, void*> matchers[] = {
      {"sym", &sym(), nullptr},
      {"symbolic_simple", &symbolic_simple(), nullptr},
      {"pm_load_collapse", &codegen::pm_load_collapse(), nullptr},
      {"pm_expander", &codegen::pm_expander(), nullptr},
      {"pm_add_loads", &codegen::pm_add_loads(), nullptr},
      {"pm_split_ends", &codegen::pm_split_ends(), nullptr},
      {"pm_decompositions", &codegen::pm_decompositions(), cpu_ctx},
      {"pm_renderer_rules (C)", &codegen::pm_renderer_rules(cpu), nullptr},
      {"pm_renderer_rules (LLVM)", &codegen::pm_renderer_rules(object), nullptr},
      {"pm_commit_weak", &codegen::pm_commit_weak(), nullptr},
      {"pm_cast_weak", &pm_cast_weak(), nullptr},
      {"pm_move_where_on_load", &pm_move_where_on_load(), nullptr},
  };
  size_t nodes = 0, rewritten = 0;
  int failures = 0;
  for (int seed = 0; seed < kPrograms; ++seed) {
    Context ctx;
    std::vector<Tensor> ins, outs;
    Vars vars;
    RandomProgram(uint64_t(seed) + 1000).build(ctx, ins, outs, vars);
    schedule::Schedule s = schedule::schedule(ins, outs, "g" + std::to_string(seed));
    std::vector<const UOp*> all;
    std::unordered_set<const UOp*> seen;
    for (const auto& k : s.kernels) {
      codegen::PipelineOptions o;
      o.after_stage = [&](std::string_view, const UOp* sink) {
        for (const UOp* u : toposort(sink))
          if (seen.insert(u).second) all.push_back(u);
      };
      codegen::full_rewrite_to_sink(k.ast, o);
    }
    nodes += all.size();
    for (const UOp* u : all) {
      for (const auto& [name, pm, rule_ctx] : matchers) {
        const UOp* want = nullptr;
        for (const Rule* r : pm->rules()) {
          Match m;
          match_each(r->pat, u, m, [&](const Match& mm) {
            const UOp* out = r->fn(mm, rule_ctx);
            if (out != nullptr && out != u) want = out;
            return want != nullptr;
          });
          if (want) break;
        }
        const UOp* got = pm->rewrite(u, rule_ctx);
        rewritten += got != nullptr;
        if (got != want && ++failures <= 10)
          ADD_FAILURE() << name << " on " << print(u) << "\n  gated: " << (got ? print(got) : "no rule")
                        << "\n  every rule: " << (want ? print(want) : "no rule");
      }
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(rewritten, nodes / 10);  // the rules do fire on these graphs
  std::cout << nodes << " nodes, " << rewritten << " rewrites agreed\n";
}

}  // namespace
