// Lane splits (opts.h): a reduction's or a store loop's steps as rows of `width` lanes, the
// partial results side by side in a loop the C compiler vectorizes.
#include <unordered_map>
#include <unordered_set>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/passes.h"
#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

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
  if (ka.type != AxisType::Reduce || ka.sub >= 0) return nullptr;
  // at least two full rows of lanes (for a symbolic length: at its largest)
  const UOp* n = k->src(0);
  if (n->imax() < 2 * ls.width) return nullptr;
  bool whole = n->op == Op::CONST && n->ival() % ls.width == 0;
  // a lane loop the body is inside of (not one an inner reduction runs over) already vectorizes it;
  // what an AFTER waits for is not the body (softmax's sum reads the row a lane loop stored)
  std::vector<const UOp*> body, stack{red->src(0)};
  for (std::unordered_set<const UOp*> seen; !stack.empty();) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    body.push_back(u);
    if (u->op == Op::AFTER)
      stack.push_back(u->src(0));
    else
      stack.insert(stack.end(), u->src().begin(), u->src().end());
  }
  std::unordered_set<const UOp*> bound;
  for (const UOp* u : body)
    if (u->op == Op::REDUCE)
      for (const UOp* r : u->src().subspan(1)) bound.insert(r);
  for (const UOp* u : body)
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Lane && !bound.contains(u)) return nullptr;
  Context& ctx = red->ctx();
  RangeArg outer_arg = ka;
  outer_arg.sub = 0;  // split: not split again
  Expr rows = simplify(Expr(n) / ls.width);
  const UOp* outer = ctx.make(Op::RANGE, k->dtype, {rows}, outer_arg);
  const UOp* lane =
      ctx.make(Op::RANGE, k->dtype, {ctx.cint(ls.width, k->dtype)}, RangeArg{ls.next_axis++, AxisType::Lane, 0});
  const UOp* inner =
      ctx.make(Op::REDUCE, red->dtype, {substitute(red->src(0), k, Expr(outer) * ls.width + lane), outer}, red->arg());
  const UOp* lanes = ctx.make(Op::REDUCE, red->dtype, {inner, lane}, red->arg());
  if (whole) return lanes;
  // the n % width steps past the last full row, reduced on their own and combined with the rest
  // (one step is no loop)
  const UOp* left = simplify(Expr(n) % ls.width);
  const UOp* tail = nullptr;
  if (left->op == Op::CONST && left->ival() == 1) {
    tail = substitute(red->src(0), k, rows * ls.width);
    if (tail->dtype != red->dtype) tail = ctx.make(Op::CAST, red->dtype, {tail});
  } else {
    const UOp* rest = ctx.make(Op::RANGE, k->dtype, {left}, RangeArg{ls.next_axis++, AxisType::Reduce, 0});
    tail = ctx.make(Op::REDUCE, red->dtype, {substitute(red->src(0), k, rows * ls.width + rest), rest}, red->arg());
  }
  return ctx.make(red->arg<ReduceArg>().op, red->dtype, {lanes, tail});
}

}  // namespace

const UOp* split_reduce_lanes(const UOp* sink, int64_t width) {
  LaneSplit ls{width, first_free_axis(sink)};
  static const PatternMatcher pm({Rule(UPat::op({Op::REDUCE}).allow_any_len(), split_lanes)});
  RewriteOptions o;
  o.name = "apply opts";
  return graph_rewrite(sink, pm, &ls, o);
}

namespace {

struct StoreLanes {
  int32_t next_axis;
};

const UOp* store_lanes(const Match& m, void* vctx) {
  const UOp* end = m.root;
  auto& sl = *static_cast<StoreLanes*>(vctx);
  const UOp* st = end->src(0);
  const UOp* r = end->src(end->nsrc() - 1);
  if (st->op != Op::STORE || st->nsrc() != 2 || st->src(0)->op != Op::INDEX || r->op != Op::RANGE) return nullptr;
  const RangeArg& ra = r->arg<RangeArg>();
  if ((ra.type != AxisType::Loop && ra.type != AxisType::Thread) || ra.sub >= 0) return nullptr;
  DType d = st->src(0)->dtype;
  if (!is_float(d) && !is_int(d)) return nullptr;
  int size = itemsize(d);
  if (size != 4 && size != 8) return nullptr;  // the vector element sizes of the C renderer
  int64_t width = 256 / size;                  // four AVX-512 vectors
  const UOp* n = r->src(0);
  if (n->imax() < 2 * width) return nullptr;
  // the store moves one element along r; every read moves one element or stays
  const UOp* at = clone_range(r, sl.next_axis++);  // r's stand-in, for r + 1
  const UOp* addr = st->src(0)->src(1);
  if (addr->op == Op::WHERE) return nullptr;  // a gated store: the renderer keeps such loops scalar
  if (step_along(addr, r, at) != 1) return nullptr;
  for (const UOp* u : toposort(st->src(1))) {
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Lane) return nullptr;
    // a reduction per element (matmul's) gets an accumulator per lane; a statistic of the whole row
    // (softmax's max) stays out of the split, and so does the row's loop
    if (u->op == Op::REDUCE && !contains(u, r)) return nullptr;
    if (u->op != Op::INDEX || !contains(u, r)) continue;
    std::optional<int64_t> step = step_along(u->src(1), r, at);
    if (step != 1) return nullptr;
  }
  Context& ctx = end->ctx();
  bool whole = n->divides(width) != nullptr;
  RangeArg outer_arg = ra;
  outer_arg.sub = 0;  // split: not split again
  Expr rows = simplify(Expr(n) / width);
  const UOp* outer = ctx.make(Op::RANGE, r->dtype, {rows}, outer_arg);
  const UOp* lane =
      ctx.make(Op::RANGE, r->dtype, {ctx.cint(width, r->dtype)}, RangeArg{sl.next_axis++, AxisType::Lane, -1});
  auto closed = [&](const UOp* body, std::vector<const UOp*> ranges) {
    ranges.insert(ranges.begin(), body);
    return ctx.make(Op::END, dtypes::void_, ranges);
  };
  std::vector<const UOp*> outer_loops(end->src().begin() + 1, end->src().end() - 1);
  // an unrolled outer range would copy the two inner loops once per row, each closing the same lanes
  for (const UOp* o : outer_loops)
    if (!whole && o->arg<RangeArg>().type == AxisType::Upcast) return nullptr;
  const UOp* main_st = substitute(st, r, Expr(outer) * width + lane);
  if (whole) {
    outer_loops.insert(outer_loops.end(), {outer, lane});
    return closed(main_st, outer_loops);
  }
  // the n % width elements past the last full row, one at a time (shared among the cores as the
  // rows are), in the same body of the outer loops
  const UOp* left = simplify(Expr(n) % width);
  const UOp* tail = nullptr;
  if (left->op == Op::CONST && left->ival() == 1) {
    // one element is no loop (symbolic folds a range of one iteration, and with it a Thread
    // loop's share): where the cores share r, core 0 alone stores it
    tail = substitute(st, r, rows * width);
    if (ra.type == AxisType::Thread)
      tail = ctx.make(Op::STORE, dtypes::void_,
                      {gate_index(tail->src(0), Expr(ctx.var(kCoreVar, 0, kMaxCores - 1)) < 1), tail->src(1)});
  } else {
    const UOp* rest = ctx.make(Op::RANGE, r->dtype, {left}, RangeArg{sl.next_axis++, ra.type, 0});
    tail = closed(substitute(st, r, rows * width + rest), {rest});
  }
  const UOp* both = ctx.make(Op::GROUP, dtypes::void_, {closed(main_st, {outer, lane}), tail});
  return outer_loops.empty() ? both : closed(both, outer_loops);
}

}  // namespace

const UOp* split_store_lanes(const UOp* sink) {
  StoreLanes sl{first_free_axis(sink)};
  static const PatternMatcher pm({Rule(UPat::op({Op::END}).allow_any_len(), store_lanes)});
  RewriteOptions o;
  o.name = "apply opts";
  return graph_rewrite(sink, pm, &sl, o);
}

NestSplit split_tail(const UOp* sink, const UOp* r, int64_t f, bool pieces) {
  if (sink->nsrc() != 1 || sink->src(0)->op != Op::END || f < 2) return {nullptr, nullptr};
  const UOp* end = sink->src(0);
  if (std::find(end->src().begin() + 1, end->src().end(), r) == end->src().end()) return {nullptr, nullptr};
  if (r->op != Op::RANGE || r->arg<RangeArg>().type != AxisType::Loop || (r->arg<RangeArg>().sub >= 0 && !pieces))
    return {nullptr, nullptr};
  const UOp* n = r->src(0);
  if (n->divides(f) || n->imax() < f) return {nullptr, nullptr};
  Context& ctx = sink->ctx();
  // n / f * f, kept a product so that f is seen to divide it
  const UOp* whole = n->op == Op::CONST ? ctx.cint(n->ival() / f * f, r->dtype)
                                        : ctx.make(Op::MUL, r->dtype, {simplify(Expr(n) / f), ctx.cint(f, r->dtype)});
  const UOp* left = n->op == Op::CONST ? ctx.cint(n->ival() % f, r->dtype) : simplify(Expr(n) % f);
  RangeArg rest_arg = r->arg<RangeArg>();
  rest_arg.axis = first_free_axis(sink);
  const UOp* main_r = ctx.make(Op::RANGE, r->dtype, {whole}, r->arg());
  const UOp* rest_r = ctx.make(Op::RANGE, r->dtype, {left}, rest_arg);
  const UOp* first = replace_ranges(sink, {{r, RangeReplacement{main_r, {main_r}}}});
  if (left->op == Op::CONST && left->ival() == 1) {
    // one iteration past the tiles is no loop (symbolic would fold a range of one): r is `whole`
    // there, and a nest left without ranges is its store
    const UOp* rest = replace_ranges(sink, {{r, RangeReplacement{whole, {}}}});
    if (rest->src(0)->nsrc() == 1) {
      const UOp* store = rest->src(0)->src(0);
      rest = rest->with_src(std::span<const UOp* const>(&store, 1));
    }
    return {first, rest};
  }
  if (left->imax() < 2) return {nullptr, nullptr};  // a symbolic rest of at most one iteration
  const UOp* rest = replace_ranges(sink, {{r, RangeReplacement{Expr(whole) + rest_r, {rest_r}}}});
  return {first, rest};
}

}  // namespace kiln::codegen
