// Microbenchmarks of the IR core and the symbolic simplifier:
//   Make*            interning: a fresh node, and a node that already exists (a hit)
//   SymIndexSum      sym() on large random index expressions (sums of 64..1024 terms)
//   RewriteChain     graph_rewrite of a 1,000,000-node ADD chain with one simple rule
//   SimplifyExamples the `kiln simplify` path (parse, sym, print, bounds) on examples/simplify.txt
// Run: kiln_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "generator/ir/text.h"
#include "generator/ir/uop.h"
#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"

namespace kiln {
namespace {

// deterministic on every standard library: mt19937_64 with a hand-written uniform draw
class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) {
    uint64_t n = uint64_t(hi) - uint64_t(lo) + 1;
    uint64_t reject_below = (0 - n) % n;
    uint64_t r;
    do r = g_();
    while (r < reject_below);
    return int64_t(uint64_t(lo) + r % n);
  }

 private:
  std::mt19937_64 g_;
};

// Wall time of the timed part of each iteration, for per-item counters.
class Stopwatch {
 public:
  void start() { t0_ = std::chrono::steady_clock::now(); }
  void stop() { us_ += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count(); }
  double us() const { return us_; }

 private:
  std::chrono::steady_clock::time_point t0_;
  double us_ = 0;
};

// ---------------------------------------------------------------- (a) interning

// Fresh CONSTs: one probe that misses, one allocation, sometimes a rehash. The context is
// replaced (untimed) every 2^18 nodes so memory stays bounded.
void BM_MakeFreshConst(benchmark::State& state) {
  auto ctx = std::make_unique<Context>();
  int64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ctx->make(Op::CONST, dtypes::weakint, {}, ConstValue::of_int(i)));
    if ((++i & ((1 << 18) - 1)) == 0) {
      state.PauseTiming();
      ctx = std::make_unique<Context>();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MakeFreshConst);

// Fresh ADDs over 1024 leaves: every (leaf, leaf) pair once.
void BM_MakeFreshBinary(benchmark::State& state) {
  constexpr int kLeaves = 1024;
  std::unique_ptr<Context> ctx;
  std::vector<const UOp*> leaves;
  auto reset = [&] {
    ctx = std::make_unique<Context>();
    leaves.clear();
    for (int k = 0; k < kLeaves; ++k) leaves.push_back(ctx->var("v" + std::to_string(k), 0, k));
  };
  reset();
  uint32_t i = 0;
  for (auto _ : state) {
    const UOp* src[2] = {leaves[i % kLeaves], leaves[(i / kLeaves) % kLeaves]};
    benchmark::DoNotOptimize(ctx->make(Op::ADD, dtypes::weakint, src));
    if (++i == kLeaves * kLeaves / 4) {
      state.PauseTiming();
      reset();
      i = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MakeFreshBinary);

// Hits: the node exists. Arg 1 asks for the same node every time (hot in cache); the larger
// args cycle over that many existing nodes, so the table and the nodes miss in cache.
void BM_MakeHit(benchmark::State& state) {
  const int64_t distinct = state.range(0);
  Context ctx;
  const UOp* a = ctx.var("a", 0, 100);
  std::vector<const UOp*> consts;
  for (int64_t k = 0; k < distinct; ++k) {
    consts.push_back(ctx.cint(k));
    ctx.make(Op::ADD, dtypes::weakint, {a, consts.back()});
  }
  int64_t i = 0;
  for (auto _ : state) {
    const UOp* src[2] = {a, consts[size_t(i)]};
    benchmark::DoNotOptimize(ctx.make(Op::ADD, dtypes::weakint, src));
    if (++i == distinct) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MakeHit)->Arg(1)->Arg(1 << 16)->Arg(1 << 20);

// ---------------------------------------------------------------- (b) sym() on index sums

// A sum of `terms` index terms over 8 loop ranges and 2 variables: r*c, r//c, r%c,
// (r*c + r')//c', (r + c)%c' with mixed constants. Returns the root; `nodes` gets the graph size.
const UOp* index_sum(Context& ctx, int terms, uint64_t seed, size_t* nodes) {
  Rng rng(seed);
  std::vector<const UOp*> leaves;
  for (int k = 0; k < 8; ++k) leaves.push_back(ctx.range(rng.uniform(2, 64), k));
  leaves.push_back(ctx.var("n", 1, 512));
  leaves.push_back(ctx.var("m", 0, 1024, dtypes::weakint, 4));
  auto leaf = [&] { return Expr(leaves[size_t(rng.uniform(0, int64_t(leaves.size()) - 1))]); };
  std::vector<const UOp*> parts;
  for (int t = 0; t < terms; ++t) {
    Expr x = leaf();
    int64_t c = rng.uniform(1, 16), c2 = rng.uniform(2, 64);
    switch (rng.uniform(0, 5)) {
      case 0:
        parts.push_back(x * c);
        break;
      case 1:
        parts.push_back(x / c2);
        break;
      case 2:
        parts.push_back(x % c2);
        break;
      case 3: {
        Expr y = leaf();
        parts.push_back((x * c + y) / c2);
        break;
      }
      case 4:
        parts.push_back((x + c) % c2 * c);
        break;
      default:
        parts.push_back(x * c * c2 + leaf() * c);
        break;
    }
  }
  const UOp* root = usum(parts, ctx.cint(0));
  *nodes = toposort(root).size();
  return root;
}

void BM_SymIndexSum(benchmark::State& state) {
  const int terms = int(state.range(0));
  size_t nodes = 0, total_nodes = 0;
  uint64_t seed = 1;
  Stopwatch sw;
  for (auto _ : state) {
    state.PauseTiming();  // building is not the simplifier's cost
    auto ctx = std::make_unique<Context>();
    const UOp* e = index_sum(*ctx, terms, seed++ % 8, &nodes);
    total_nodes += nodes;
    state.ResumeTiming();
    sw.start();
    benchmark::DoNotOptimize(graph_rewrite(e, sym()));
    sw.stop();
    state.PauseTiming();
    ctx.reset();
    state.ResumeTiming();
  }
  state.counters["nodes"] = double(total_nodes) / double(state.iterations());
  state.counters["nodes/s"] = double(total_nodes) / (sw.us() * 1e-6);
  state.counters["us/expr"] = sw.us() / double(state.iterations());
}
// 1024 terms once only: sym() is far from linear in the length of an ADD chain
BENCHMARK(BM_SymIndexSum)->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SymIndexSum)->Arg(1024)->Iterations(1)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- (c) a 1,000,000-node chain

const PatternMatcher& pm_fold_adds() {
  using pat::c0, pat::c1, pat::x;
  static const PatternMatcher pm({rw((x + c0) + c1, x + (c0 + c1).fold())});
  return pm;
}
// matches every ADD, never rewrites: the cost of the walk and the matcher alone
const PatternMatcher& pm_match_only() {
  using pat::c0, pat::x;
  static const PatternMatcher pm({Rule(x + c0, [](const Match&) -> const UOp* { return nullptr; })});
  return pm;
}

void BM_RewriteChain(benchmark::State& state) {
  constexpr int kChain = 1'000'000;
  const bool fold = state.range(0) == 1, bottom_up = state.range(1) == 1;
  Stopwatch sw;
  for (auto _ : state) {
    state.PauseTiming();
    auto ctx = std::make_unique<Context>();
    const UOp* one = ctx->cint(1);
    const UOp* u = ctx->var("x", 0, 10);
    for (int i = 0; i < kChain; ++i) u = u->alu(Op::ADD, one);
    RewriteOptions opts;
    opts.bottom_up = bottom_up;
    state.ResumeTiming();
    sw.start();
    benchmark::DoNotOptimize(graph_rewrite(u, fold ? pm_fold_adds() : pm_match_only(), nullptr, opts));
    sw.stop();
    state.PauseTiming();
    ctx.reset();
    state.ResumeTiming();
  }
  state.counters["ms"] = sw.us() * 1e-3 / double(state.iterations());
  state.counters["nodes/s"] = double(kChain) * double(state.iterations()) / (sw.us() * 1e-6);
}
// one iteration each: a single rewrite of the chain takes most of a second
BENCHMARK(BM_RewriteChain)
    ->ArgNames({"fold", "bottom_up"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- (d) kiln simplify

// examples/simplify.txt, embedded (a benchmark has no path to the source tree)
const char* const kExamples[] = {
    "(ADD:weakint (MUL:weakint (VAR:weakint a 0 7) (CONST:weakint 4)) (FLOORMOD:weakint (VAR:weakint b 0 3) "
    "(CONST:weakint 4)))",
    "(FLOORDIV:weakint (ADD:weakint (MUL:weakint (VAR:weakint x 0 15) (CONST:weakint 4)) (VAR:weakint y 0 3)) "
    "(CONST:weakint 4))",
    "(ADD:weakint (VAR:weakint x 0 15) (MUL:weakint (VAR:weakint x 0 15) (CONST:weakint 3)))",
    "(CMPLT:bool (VAR:weakint i 0 9) (CONST:weakint 10))",
    "(WHERE:weakint (CMPLT:bool (CONST:weakint 1) (CONST:weakint 2)) (VAR:weakint a 0 7) (CONST:weakint 0))",
    "(FLOORMOD:weakint (FLOORMOD:weakint (VAR:weakint x 0 100) (CONST:weakint 8)) (CONST:weakint 4))",
    "(ADD:weakint (MUL:weakint (FLOORDIV:weakint (VAR:weakint i 0 63) (CONST:weakint 4)) (CONST:weakint 4)) "
    "(FLOORMOD:weakint (VAR:weakint i 0 63) (CONST:weakint 4)))",
    "(FLOORMOD:weakint (ADD:weakint (VAR:weakint x -8 -1) (CONST:weakint 8)) (CONST:weakint 8))",
    "(MAX:weakint (VAR:weakint x 2 9) (CONST:weakint 0))",
};
constexpr int kNumExamples = int(sizeof kExamples / sizeof kExamples[0]);

// Parsing alone, each line into a fresh context: subtract it from SimplifyExamples.
void BM_ParseExamples(benchmark::State& state) {
  for (auto _ : state) {
    for (const char* text : kExamples) {
      Context ctx;
      benchmark::DoNotOptimize(parse(ctx, text));
    }
  }
  state.counters["exprs/s"] = benchmark::Counter(kNumExamples, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ParseExamples)->Unit(benchmark::kMicrosecond);

// What `kiln simplify` does per line: a fresh context, parse, sym + pm_cast_weak, print, bounds.
void BM_SimplifyExamples(benchmark::State& state) {
  static const PatternMatcher pm = sym() + pm_cast_weak();
  for (auto _ : state) {
    for (const char* text : kExamples) {
      Context ctx;
      const UOp* s = graph_rewrite(parse(ctx, text), pm);
      std::string out = print(s);
      benchmark::DoNotOptimize(out);
      benchmark::DoNotOptimize(s->vmin());
      benchmark::DoNotOptimize(s->vmax());
    }
  }
  state.counters["exprs/s"] = benchmark::Counter(kNumExamples, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimplifyExamples)->Unit(benchmark::kMicrosecond);

// simplify() (symbolic) of the same expressions in one warm context: the rules alone
void BM_SimplifyExamplesWarm(benchmark::State& state) {
  Context ctx;
  std::vector<const UOp*> exprs;
  for (const char* text : kExamples) exprs.push_back(parse(ctx, text));
  for (auto _ : state)
    for (const UOp* e : exprs) benchmark::DoNotOptimize(simplify(e));
  state.counters["exprs/s"] = benchmark::Counter(kNumExamples, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimplifyExamplesWarm)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kiln
