// gpu dims: launch dimensions become indices. On the CPU the launch dimension is the core: a
// kernel is called once per core with (core, cores), and each Thread loop (marked by the opts)
// becomes that core's share of it, rows [core*n/cores, (core+1)*n/cores). The DEFINE_VARs
// ".core" and ".cores" (names no spec can spell) stand for the two arguments.
#include "generator/codegen/passes.h"

#include <map>

#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

const UOp* add_gpudims(const UOp* sink) {
  // by axis: the same rows on every pass over them (a zeroing loop and its update loop)
  std::map<int32_t, const UOp*> threads;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Thread) threads[u->arg<RangeArg>().axis] = u;
  if (threads.empty()) return sink;
  Context& ctx = sink->ctx();
  Expr core = ctx.var(kCoreVar, 0, kMaxCores - 1), cores = ctx.var(kCoresVar, 1, kMaxCores);
  std::unordered_map<const UOp*, RangeReplacement> with;
  for (const auto& [axis, r] : threads) {
    Expr n = r->src(0);
    // clamped to n (a no-op: core < cores) so range analysis bounds them by n, outside the loop
    // core * n / cores, or where core * n may pass int64 (a dim up to 2^53) the same row as
    // n / cores * core + n % cores * core / cores, which stays below n * 256
    auto first_row = [&](Expr c) -> Expr {
      Expr whole = c * n;
      return whole->saturated() ? n / cores * c + n % cores * c / cores : whole / cores;
    };
    Expr lo = minimum(first_row(core), n), hi = minimum(first_row(core + 1), n);
    const UOp* share = ctx.make(Op::RANGE, r->dtype, {simplify(hi - lo)}, r->arg());
    with[r] = {lo + share, {share}};
  }
  return replace_ranges(sink, with);
}

}  // namespace kiln::codegen
