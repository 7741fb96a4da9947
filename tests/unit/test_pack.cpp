// pack_shared_operand (generator/codegen/opt/pack.cpp): a tiled matmul's B copied block by block
// into a scratch buffer of one region per core. The kernel is called as the dispatch calls it:
// the schedule's buffers, then a scratch of exactly (cores - 1) * stride + one region's bytes
// (CKernel::scratch_*), once per core, against the float64 oracle on random inputs with the
// output poisoned first, at shapes around the tiles, the blocks (256 steps, and the steps past them),
// the column chunks and the regions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/passes.h"
#include "generator/codegen/pipeline.h"
#include "generator/ir/text.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "generator/symbolic/symbolic.h"
#include "generator/target/host.h"
#include "generator/target/target.h"
#include "tests/unit/c_runner.h"
#include "tests/unit/kernel_kinds.h"
#include "tests/unit/oracle.h"
#include "tests/unit/random_program.h"

using namespace kiln;

namespace {

int64_t at(const UOp* e, const std::map<std::string, int64_t>& vars) {
  std::unordered_map<const UOp*, const UOp*> map;
  for (const UOp* u : toposort(e))
    if (u->op == Op::DEFINE_VAR) map[u] = e->ctx().cint(vars.at(std::string(u->arg<VarArg>().name)), u->dtype);
  const UOp* v = simplify(substitute(e, map));
  EXPECT_EQ(v->op, Op::CONST) << print(v);
  return v->op == Op::CONST ? v->ival() : 0;
}

TEST(Pack, AMatmulsBlocksArePackedPerCoreAndExact) {
  Context ctx;
  auto [product, s] = kinds::symbolic_matmul(ctx);
  ASSERT_EQ(s.kernels.size(), 1u);
  for (const char* name : {"cpu", "x86_64-avx2", "x86_64-avx512"}) {
    const target::Target& t = *target::find(name);
    codegen::PipelineOptions po;
    po.target = &t;
    // without a caller that lays the scratch out, no scratch
    EXPECT_EQ(codegen::compile_to_c(s.kernels[0].ast, s.vars, po).scratch_slot, -1) << name;
    po.scratch = true;
    codegen::CKernel ck = codegen::compile_to_c(s.kernels[0].ast, s.vars, po, "packed");
    ASSERT_EQ(ck.scratch_slot, 3) << name << ": the slot after c, a and b";
    ASSERT_TRUE(ck.parallel) << name;
    // regions as far apart as the most panels a block has, 256 rows each: 80 columns' whole panels
    // of the lanes, or a chunk's where the target's L2 takes fewer (block_for_caches: a quarter of
    // it; x86_64-avx2's 256 KiB, 64 columns, so N = 70 and 80 run a chunk and a nest past it)
    int64_t lanes = t.vector_registers >= 32 ? 32 : 2 * t.vector_bytes / 4;
    int64_t panels = std::min<int64_t>(80 / lanes, t.l2_bytes / 4 / (256 * 4) / lanes);
    EXPECT_EQ(ck.scratch_stride, panels * lanes * 256 * 4) << name;
    EXPECT_NE(ck.source.find(".pack"), std::string::npos) << name;
    if (!target::runs_here(t)) continue;
    std::vector<std::string> flags = {"-Wall", "-Wextra", "-Werror"};
    flags.insert(flags.end(), t.c_flags.begin(), t.c_flags.end());
    crun::Library lib = crun::Library::compile(render::c_preamble() + ck.source, flags);
    crun::Library::KernelFn fn = lib.get("packed");
    std::mt19937_64 rng(7);
    for (auto [mm, nn, kk] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1},
                                                                                {6, 16, 128},
                                                                                {7, 33, 129},
                                                                                {8, 32, 256},
                                                                                {13, 17, 191},
                                                                                {40, 80, 700},
                                                                                {23, 70, 640},
                                                                                {9, 64, 511},
                                                                                {17, 79, 513}}) {
      std::map<std::string, int64_t> vars{{"M", mm}, {"N", nn}, {"K", kk}};
      oracle::Bindings bind;
      bind.vars = vars;
      std::vector<double> a64 = testing_programs::random_input(dtypes::float32, size_t(mm * kk), rng);
      std::vector<double> b64 = testing_programs::random_input(dtypes::float32, size_t(kk * nn), rng);
      bind.inputs[0] = a64;
      bind.inputs[1] = b64;
      std::vector<double> want = oracle::evaluate(product.uop(), bind).doubles();
      std::vector<float> af(a64.begin(), a64.end()), bf(b64.begin(), b64.end());
      std::vector<int64_t> values;
      for (const UOp* v : s.vars) values.push_back(vars.at(std::string(v->arg<VarArg>().name)));
      for (int32_t cores : {1, 2, 3}) {
        std::vector<float> c(size_t(mm * nn), std::nanf(""));
        // the scratch the dispatch gives, and a canary past it that nothing may touch
        const size_t bytes = size_t((cores - 1) * ck.scratch_stride + at(ck.scratch_bytes, vars));
        std::vector<unsigned char> scratch(bytes + 256, 0xA5);
        void* bufs[] = {c.data(), af.data(), bf.data(), scratch.data()};
        for (int32_t core = 0; core < cores; ++core) fn(bufs, values.data(), core, cores);
        for (size_t i = bytes; i < scratch.size(); ++i)
          ASSERT_EQ(scratch[i], 0xA5) << name << " M=" << mm << " N=" << nn << " K=" << kk << " cores=" << cores
                                      << ": written past the scratch at byte " << i;
        for (size_t j = 0; j < want.size(); ++j)
          ASSERT_NEAR(c[j], want[j], 1e-4 * std::max(1.0, std::abs(want[j])))
              << name << " M=" << mm << " N=" << nn << " K=" << kk << " cores=" << cores << " at " << j;
      }
    }
  }
}

TEST(Pack, ADatabasesBlockOf256IsTheHeuristicsBlocks) {
  // a database entry with the heuristics' opts and their block (256) makes the heuristics' kernel:
  // the same chunks of the columns, the same packed blocks (kiln tune then starts its search there)
  Context ctx;
  const UOp* k = ctx.var("K", 1, 4096);
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {ctx.cint(48), k});  // 48: whole tiles of 6 and 8 rows
  Tensor b = Tensor::input(ctx, "b", dtypes::float32, {k, ctx.cint(1024)});
  std::vector<Tensor> ins{a, b}, outs{a.matmul(b)};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  for (const char* name : {"x86_64-avx2", "x86_64-avx512"}) {
    const target::Target& t = *target::find(name);
    const UOp *before = nullptr, *heuristic = nullptr;
    std::vector<std::string> applied;
    codegen::PipelineOptions po;
    po.target = &t;
    po.scratch = true;
    po.applied_opts = &applied;
    po.after_stage = [&](std::string_view stage, const UOp* sink) {
      if (stage == "simplify ranges") before = sink;
      if (stage == "apply opts") heuristic = sink;
    };
    codegen::full_rewrite_to_sink(s.kernels[0].ast, po);
    ASSERT_NE(heuristic, nullptr);
    codegen::TunedOpts tuned{{}, codegen::kCacheBlock};
    for (const std::string& o : applied) tuned.opts.push_back(*codegen::parse_opt(o));
    std::string why;
    EXPECT_EQ(codegen::apply_tuned_opts(before, tuned, &why, true, t.l2_bytes), heuristic) << name << why;
    // over all 1024 columns (one chunk of all of them): another kernel
    EXPECT_NE(codegen::apply_tuned_opts(before, tuned, &why, true, 1024 * 256 * 4 * 4 * 2), heuristic) << name;
  }
}

}  // namespace
