// pack_shared_operand: the operand a tiled reduction's rows share, copied block by block into a
// scratch buffer laid out as the tiles read it (see opts.h).
#include <algorithm>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/passes.h"
#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

namespace {

bool has_range_type(const UOp* r, AxisType t) { return r->op == Op::RANGE && r->arg<RangeArg>().type == t; }

}  // namespace

const UOp* pack_shared_operand(const UOp* sink) {
  // tile_reduction's kernel: SINK(the first nest (zeros, or the steps past the last block),
  // END(STORE(out, out + REDUCE(body, step)), block, rows..., columns, lanes))
  if (sink->nsrc() < 2 || sink->src(1)->op != Op::END || sink->src(1)->nsrc() < 5) return nullptr;
  const UOp* rmw = sink->src(1);
  const UOp *st = rmw->src(0), *block = rmw->src(1);
  if (st->op != Op::STORE || st->nsrc() != 2 || !has_range_type(block, AxisType::Loop)) return nullptr;
  std::vector<const UOp*> outs(rmw->src().begin() + 2, rmw->src().end());
  const UOp *lane = outs.back(), *col = outs[outs.size() - 2];
  std::vector<const UOp*> rows(outs.begin(), outs.end() - 2);
  if (!has_range_type(lane, AxisType::Lane) || lane->src(0)->op != Op::CONST || !has_range_type(col, AxisType::Loop))
    return nullptr;
  const UOp* red = nullptr;
  for (const UOp* s : st->src(1)->src())
    if (s->op == Op::REDUCE && s->nsrc() == 2) red = s;
  if (!red || red->src(1)->src(0)->op != Op::CONST) return nullptr;
  const UOp* step = red->src(1);
  // the shared read: one INDEX of an input that moves with the step and the columns, ungated, one
  // element per lane, and with no row
  const UOp* shared = nullptr;
  for (const UOp* u : toposort(red->src(0))) {
    if (u->op != Op::INDEX || u->src(0)->op != Op::PARAM || u->nsrc() != 2) continue;
    const UOp* addr = u->src(1);
    if (std::any_of(rows.begin(), rows.end(), [&](const UOp* r) { return contains(addr, r); })) continue;
    if (!contains(addr, step) || !contains(addr, col) || !contains(addr, lane)) continue;
    if (addr->op == Op::WHERE || (shared && shared != u)) return nullptr;
    shared = u;
  }
  if (!shared) return nullptr;
  const UOp* at = clone_range(lane, first_free_axis(sink));
  if (std::optional<int64_t> s = step_along(shared->src(1), lane, at); !s || *s != 1) return nullptr;

  Context& ctx = sink->ctx();
  int32_t axis = first_free_axis(sink), slot = 0;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::PARAM) slot = std::max(slot, u->arg<ParamArg>().slot + 1);
  const int64_t lanes = lane->src(0)->ival(), steps = step->src(0)->ival();
  const DType it = col->dtype;
  // one region a core: the panels of the block, each `steps` rows of `lanes` elements; regions
  // as far apart as the most panels the columns have (a constant: the bounds prover's arithmetic
  // stays linear in .core), the last one as long as these dims' panels
  Expr per_core = simplify(Expr(col->src(0)) * (steps * lanes));
  const int64_t panels_most = col->src(0)->imax();
  if (panels_most < 1 || panels_most > kPackElementsMost / (steps * lanes)) return nullptr;
  const int64_t stride = panels_most * steps * lanes;
  // where the cores share the rows (a Thread loop), each core copies the whole block for its rows:
  // a region of its own, `.core`'s (the runtime calls core 0 .. cores - 1)
  bool shared_rows = has_range_type(rows.front(), AxisType::Thread);
  Expr core = shared_rows ? Expr(ctx.var(kCoreVar, 0, kMaxCores - 1)) : Expr(ctx.cint(0, it));
  Expr cores = shared_rows ? Expr(ctx.var(kCoresVar, 1, kMaxCores)) : Expr(ctx.cint(1, it));
  const UOp* buf = ctx.make(Op::PARAM, shared->src(0)->dtype, {simplify((cores - 1) * stride + per_core)},
                            ParamArg{slot, -1, kPackBuffer});
  auto at_panel = [&](Expr panel, Expr k, Expr l) { return simplify(core * stride + (panel * steps + k) * lanes + l); };
  // the copy: none where the kernel has no rows of tiles (the cleanup nests do the work then), by
  // a loop that runs once or never around it (a product of the two ends would make the bounds
  // prover's arithmetic non-linear)
  const UOp* any_rows = ctx.make(Op::RANGE, it, {simplify(minimum(Expr(rows.front()->src(0)), Expr(ctx.cint(1, it))))},
                                 RangeArg{axis++, AxisType::Loop, 0});
  const UOp* panel = ctx.make(Op::RANGE, it, {col->src(0)}, RangeArg{axis++, AxisType::Loop, 0});
  const UOp* k = ctx.make(Op::RANGE, it, {ctx.cint(steps, it)}, RangeArg{axis++, AxisType::Loop, 0});
  const UOp* l = clone_range(lane, axis++);
  const UOp* value = substitute(shared, {{step, k}, {col, panel}, {lane, l}});
  const UOp* copy = ctx.make(
      Op::END, dtypes::void_,
      {ctx.make(Op::STORE, dtypes::void_, {ctx.make(Op::INDEX, shared->dtype, {buf, at_panel(panel, k, l)}), value}),
       any_rows, panel, k, l});
  const UOp* packed =
      ctx.make(Op::INDEX, shared->dtype, {ctx.make(Op::AFTER, buf->dtype, {buf, copy}), at_panel(col, step, lane)});
  std::vector<const UOp*> inner{substitute(st, shared, packed)};
  inner.insert(inner.end(), outs.begin(), outs.end());
  const UOp* tiles = ctx.make(Op::END, dtypes::void_, inner);
  const UOp* per_block = ctx.make(Op::END, dtypes::void_, {ctx.make(Op::GROUP, dtypes::void_, {copy, tiles}), block});
  return substitute(sink, rmw, per_block);
}

}  // namespace kiln::codegen
