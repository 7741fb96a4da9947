#include "generator/codegen/opt/opts.h"

#include "generator/codegen/passes.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

std::string Opt::str() const {
  if (kind == Kind::Thread) return "THREAD(" + std::to_string(axis) + ")";
  const char* name = kind == Kind::Upcast ? "UPCAST" : kind == Kind::Unroll ? "UNROLL" : "LANES";
  return std::string(name) + "(" + std::to_string(axis) + ", " + std::to_string(amount) + ")";
}

const UOp* apply_opt(const UOp* sink, const Opt& opt) {
  const UOp* r = nullptr;
  int32_t next_axis = 0;
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::RANGE) continue;
    next_axis = std::max(next_axis, u->arg<RangeArg>().axis + 1);
    AxisType t = u->arg<RangeArg>().type;
    if (u->arg<RangeArg>().axis == opt.axis && t != AxisType::Upcast && t != AxisType::Unroll && t != AxisType::Lane)
      r = u;
  }
  if (!r || opt.amount < 2) return nullptr;
  // the end must be a multiple of the amount: a constant, or a dim declared as a multiple
  const UOp* outer_end = r->src(0)->divides(opt.amount);
  if (!outer_end) return nullptr;
  outer_end = simplify(outer_end);
  bool whole = outer_end->op == Op::CONST && outer_end->ival() == 1;
  bool reduce = r->arg<RangeArg>().type == AxisType::Reduce;
  if ((opt.kind == Opt::Kind::Unroll) != reduce) return nullptr;  // UPCAST splits outputs, UNROLL reductions
  Context& ctx = sink->ctx();
  AxisType inner_type = opt.kind == Opt::Kind::Upcast   ? AxisType::Upcast
                        : opt.kind == Opt::Kind::Unroll ? AxisType::Unroll
                                                        : AxisType::Lane;
  RangeArg inner_arg{next_axis, inner_type, -1};
  const UOp* inner = ctx.make(Op::RANGE, r->dtype, {ctx.cint(opt.amount, r->dtype)}, inner_arg);
  RangeReplacement sr{inner, {inner}};
  if (!whole) {
    RangeArg outer_arg = r->arg<RangeArg>();
    outer_arg.sub = 0;
    const UOp* outer = ctx.make(Op::RANGE, r->dtype, {outer_end}, outer_arg);
    sr.expr =
        ctx.make(Op::ADD, r->dtype, {ctx.make(Op::MUL, r->dtype, {outer, ctx.cint(opt.amount, r->dtype)}), inner});
    sr.pieces = {outer, inner};
  }
  return replace_ranges(sink, {{r, std::move(sr)}});
}

const UOp* tile_reduction(const UOp* sink, int64_t tile) {
  if (sink->nsrc() != 1 || sink->src(0)->op != Op::END) return nullptr;
  const UOp* end = sink->src(0);
  const UOp* st = end->src(0);
  if (st->op != Op::STORE || st->src(0)->op != Op::INDEX || st->src(0)->src(0)->op != Op::PARAM) return nullptr;
  const UOp* red = st->src(1);
  if (red->op != Op::REDUCE || red->nsrc() != 2 || red->arg<ReduceArg>().op != Op::ADD) return nullptr;
  const UOp* k = red->src(1);
  if (k->src(0)->op != Op::CONST || tile < 2) return nullptr;
  int64_t n = k->src(0)->ival();
  if (n % tile != 0 || n / tile < 2) return nullptr;
  Context& ctx = sink->ctx();
  int32_t next_axis = first_free_axis(sink);
  const UOp* idx = st->src(0);
  const UOp* out = idx->src(0);
  // the output, zeroed over its own copy of the output loops
  std::unordered_map<const UOp*, const UOp*> clones;
  std::vector<const UOp*> init_src{nullptr};
  for (const UOp* r : end->src().subspan(1)) init_src.push_back(clones[r] = clone_range(r, next_axis++));
  const UOp* zero = is_float(red->dtype) ? ctx.cfloat(0.0, red->dtype) : ctx.cint(0, red->dtype);
  init_src[0] = ctx.make(Op::STORE, dtypes::void_, {substitute(idx, clones), zero});
  const UOp* init = ctx.make(Op::END, dtypes::void_, init_src);
  // k = block * tile + step; each block adds its partial sum to what the output holds
  RangeArg block_arg = k->arg<RangeArg>();
  block_arg.type = AxisType::Loop;
  block_arg.sub = 0;
  const UOp* block = ctx.make(Op::RANGE, k->dtype, {ctx.cint(n / tile, k->dtype)}, block_arg);
  const UOp* step =
      ctx.make(Op::RANGE, k->dtype, {ctx.cint(tile, k->dtype)}, RangeArg{next_axis++, AxisType::Reduce, -1});
  const UOp* kk = ctx.make(Op::ADD, k->dtype, {ctx.make(Op::MUL, k->dtype, {block, ctx.cint(tile, k->dtype)}), step});
  const UOp* partial = ctx.make(Op::REDUCE, red->dtype, {substitute(red->src(0), {{k, kk}}), step}, red->arg());
  // the read of what earlier blocks stored is ordered after the zeroing and inside the block loop
  const UOp* before =
      ctx.make(Op::INDEX, idx->dtype, {ctx.make(Op::AFTER, out->dtype, {out, init, block}), idx->src(1)});
  const UOp* sum = ctx.make(Op::ADD, red->dtype, {before, partial});
  std::vector<const UOp*> rmw_src{ctx.make(Op::STORE, dtypes::void_, {idx, sum}), block};
  rmw_src.insert(rmw_src.end(), end->src().begin() + 1, end->src().end());
  return ctx.make(Op::SINK, dtypes::void_, {init, ctx.make(Op::END, dtypes::void_, rmw_src)}, sink->arg());
}

namespace {

struct LaneSplit {
  int64_t width;
  int32_t next_axis;
};

const UOp* split_lanes(const Match& m, void* vctx) {
  const UOp* red = m.root;
  auto& ls = *static_cast<LaneSplit*>(vctx);
  if (red->nsrc() != 2) return nullptr;
  const UOp* k = red->src(1);
  const RangeArg& ka = k->arg<RangeArg>();
  if (ka.type != AxisType::Reduce || ka.sub >= 0 || k->src(0)->op != Op::CONST) return nullptr;
  int64_t n = k->src(0)->ival();
  if (n % ls.width != 0 || n / ls.width < 2) return nullptr;
  // a lane loop the body is inside of (not one an inner reduction runs over) already vectorizes it
  auto body = toposort(red->src(0));
  std::unordered_set<const UOp*> bound;
  for (const UOp* u : body)
    if (u->op == Op::REDUCE)
      for (const UOp* r : u->src().subspan(1)) bound.insert(r);
  for (const UOp* u : body)
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Lane && !bound.contains(u)) return nullptr;
  Context& ctx = red->ctx();
  RangeArg outer_arg = ka;
  outer_arg.sub = 0;  // split: not split again
  const UOp* outer = ctx.make(Op::RANGE, k->dtype, {ctx.cint(n / ls.width, k->dtype)}, outer_arg);
  const UOp* lane =
      ctx.make(Op::RANGE, k->dtype, {ctx.cint(ls.width, k->dtype)}, RangeArg{ls.next_axis++, AxisType::Lane, 0});
  const UOp* kk =
      ctx.make(Op::ADD, k->dtype, {ctx.make(Op::MUL, k->dtype, {outer, ctx.cint(ls.width, k->dtype)}), lane});
  const UOp* inner = ctx.make(Op::REDUCE, red->dtype, {substitute(red->src(0), {{k, kk}}), outer}, red->arg());
  return ctx.make(Op::REDUCE, red->dtype, {inner, lane}, red->arg());
}

}  // namespace

const UOp* split_reduce_lanes(const UOp* sink, int64_t width) {
  LaneSplit ls{width, first_free_axis(sink)};
  static const PatternMatcher pm({Rule(UPat::op({Op::REDUCE}).allow_any_len(), split_lanes)});
  RewriteOptions o;
  o.name = "apply opts";
  return graph_rewrite(sink, pm, &ls, o);
}

const UOp* mark_thread_axis(const UOp* sink) {
  if (sink->nsrc() != 1 || sink->src(0)->op != Op::END) return nullptr;
  const UOp* r = sink->src(0)->src(1);  // the outermost output loop
  if (r->op != Op::RANGE || r->arg<RangeArg>().type != AxisType::Loop) return nullptr;
  if (r->src(0)->op == Op::CONST && r->src(0)->ival() < 2) return nullptr;
  RangeArg a = r->arg<RangeArg>();
  a.type = AxisType::Thread;
  return substitute(sink, {{r, sink->ctx().make(Op::RANGE, r->dtype, r->src(), a)}});
}

std::vector<Opt> hand_coded_optimizations(const UOp*& sink) {
  std::vector<Opt> applied;
  if (sink->nsrc() != 1 || sink->src(0)->op != Op::END) return applied;
  bool reduces = false;
  for (const UOp* u : toposort(sink)) reduces |= u->op == Op::REDUCE;
  // the output axes, outermost first
  const UOp* end = sink->src(0);
  std::vector<const UOp*> axes(end->src().begin() + 1, end->src().end());
  auto try_opt = [&](const UOp* r, Opt::Kind kind, std::initializer_list<int64_t> amounts) {
    for (int64_t amt : amounts) {
      Opt o{kind, r->arg<RangeArg>().axis, amt};
      if (const UOp* s = apply_opt(sink, o)) {
        sink = s;
        applied.push_back(o);
        return;
      }
    }
  };
  if (reduces) {
    // lanes of columns (4 AVX-512 vectors of floats at most), then unrolled rows
    if (!axes.empty()) try_opt(axes.back(), Opt::Kind::Lane, {64, 32, 16, 8, 4});
    if (axes.size() >= 2) try_opt(axes[axes.size() - 2], Opt::Kind::Upcast, {8, 4, 2});
  }
  // the outermost loop (after tiling: over tiles) is shared among the cores
  if (const UOp* s = mark_thread_axis(sink)) {
    sink = s;
    applied.push_back({Opt::Kind::Thread, sink->src(0)->src(1)->arg<RangeArg>().axis, 0});
  }
  if (!reduces) return applied;
  // long reductions in blocks, so a block of the operands stays in cache across output tiles
  if (const UOp* s = tile_reduction(sink, 256); s && !applied.empty()) sink = s;
  // reductions that no output lane vectorizes: 64 partial results side by side (4 AVX-512 registers)
  sink = split_reduce_lanes(sink, 64);
  return applied;
}

}  // namespace kiln::codegen
