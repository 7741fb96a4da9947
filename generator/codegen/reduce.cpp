// remove reduces: a REDUCE over ranges becomes an accumulator register (a BUFFER in the Reg
// address space, one element), set to the op's identity inside the ranges the value depends on,
// updated inside the reduce ranges, and read after them:
//   acc = BUFFER:T*reg(1);  STORE(AFTER(acc, outer ranges...), identity)
//   END(STORE(AFTER(acc, init, ranges...), op(LOAD(that), value)), ranges...)
//   result = LOAD(AFTER(acc, init, END))
// AFTER orders the accesses; the linearizer places each at the depth of the ranges it uses.
#include "generator/codegen/passes.h"
#include "generator/symbolic/symbolic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace kiln::codegen {

const UOp* reduce_identity(Context& ctx, Op op, DType d) {
  switch (op) {
    case Op::ADD:
      return is_float(d) ? ctx.cfloat(0.0, d) : is_bool(d) ? ctx.cbool(false) : ctx.cint(0, d);
    case Op::MUL:
      return is_float(d) ? ctx.cfloat(1.0, d) : is_bool(d) ? ctx.cbool(true) : ctx.cint(1, d);
    case Op::MAX:
      return is_float(d)  ? ctx.cfloat(-std::numeric_limits<double>::infinity(), d)
             : is_bool(d) ? ctx.cbool(false)
                          : ctx.cint(int_min(d), d);
    default:
      throw InternalError("no identity for a reduction by " + std::string(op_name(op)));
  }
}

namespace {

const UOp* reduce_with_lanes(const UOp* r, ReduceContext& rc, std::vector<const UOp*> outer, const UOp* lane) {
  Context& ctx = r->ctx();
  Op op = r->arg<ReduceArg>().op;
  auto ranges = r->src().subspan(1);
  int64_t width = lane->src(0)->ival();
  const UOp* acc =
      ctx.make(Op::BUFFER, r->dtype.as_ptr(AddrSpace::Reg), {ctx.cint(width)}, ParamArg{rc.acc_num++, width, {}});
  outer.erase(std::find(outer.begin(), outer.end(), lane));
  outer[0] = acc;
  const UOp* l_init = clone_range(lane, rc.next_axis++);
  const UOp* init_at = ctx.make(Op::INDEX, r->dtype, {ctx.make(Op::AFTER, acc->dtype, outer), l_init});
  const UOp* init =
      ctx.make(Op::END, dtypes::void_,
               {ctx.make(Op::STORE, dtypes::void_, {init_at, reduce_identity(ctx, op, r->dtype)}), l_init});
  std::vector<const UOp*> in_src{acc, init};
  in_src.insert(in_src.end(), ranges.begin(), ranges.end());
  const UOp* acc_in = ctx.make(Op::AFTER, acc->dtype, in_src);
  const UOp* l_upd = clone_range(lane, rc.next_axis++);
  const UOp* at = ctx.make(Op::INDEX, r->dtype, {acc_in, l_upd});
  const UOp* body = substitute(r->src(0), lane, l_upd);
  const UOp* upd =
      ctx.make(Op::STORE, dtypes::void_, {at, ctx.make(op, r->dtype, {ctx.make(Op::LOAD, r->dtype, {at}), body})});
  std::vector<const UOp*> end_src{ctx.make(Op::END, dtypes::void_, {upd, l_upd})};
  end_src.insert(end_src.end(), ranges.begin(), ranges.end());
  const UOp* end = ctx.make(Op::END, dtypes::void_, end_src);
  // after the init too: an update that folds away (max(acc, 0) on unsigned) leaves the read its init
  const UOp* out_at = ctx.make(Op::INDEX, r->dtype, {ctx.make(Op::AFTER, acc->dtype, {acc, init, end}), lane});
  return ctx.make(Op::LOAD, r->dtype, {out_at});
}

// A reduction over a GroupReduce range g (GROUP's, one per work item of a work group), as
// tinygrad's fix_group_for_reduce makes it: each work item reduces the rest of the ranges into a
// partial and stores it in a local buffer at g (gpu dims makes g the item's id). The group's n
// partials are then combined in halving steps, each after the last (the barriers are the stage
// "implicit barriers"'s): of w partials, the items below w - h (h = w - w / 2) add the one h
// further on into their own, leaving h; after the last step every item reads the result from
// element 0. log2(n) steps of one load pair each, not n loads by each of n items (a softmax row's
// two reductions of 256 items each read 512 partials back, 8x a 4096-row's share):
//   temp = BUFFER:T*local(n);  t0 = AFTER(temp, END(STORE(INDEX(temp, g), REDUCE(x, rest...)), g))
//   t1 = AFTER(temp, END(STORE(INDEX(t0, g if g < w-h), LOAD(t0[g]) op LOAD(t0[g+h] if g < w-h)), g)) ...
//   LOAD(INDEX(t_last, 0))
// The items above a step's count store nothing and read nothing past the buffer (their loads and
// stores are gated); every item reaches every barrier.
const UOp* group_to_local(const UOp* r, ReduceContext& rc, const UOp* g) {
  Context& ctx = r->ctx();
  std::vector<const UOp*> rest{r->src(0)};
  for (const UOp* x : r->src().subspan(1))
    if (x != g) {
      if (x->op == Op::RANGE && x->arg<RangeArg>().type == AxisType::GroupReduce)
        throw InternalError("remove reduces: a reduction over two group ranges");
      rest.push_back(x);
    }
  if (g->src(0)->op != Op::CONST) throw InternalError("remove reduces: a group range of symbolic size");
  const int64_t n = g->src(0)->ival();
  const Op op = r->arg<ReduceArg>().op;
  const UOp* partial = rest.size() == 1 ? r->src(0) : r->with_src(rest);
  const UOp* temp =
      ctx.make(Op::BUFFER, r->dtype.as_ptr(AddrSpace::Local), {ctx.cint(n)}, ParamArg{rc.local_num++, n, {}});
  auto at = [&](const UOp* buf, const UOp* i) { return ctx.make(Op::INDEX, r->dtype, {buf, i}); };
  const UOp* done = ctx.make(Op::END, dtypes::void_, {ctx.make(Op::STORE, dtypes::void_, {at(temp, g), partial}), g});
  for (int64_t w = n; w > 1; w -= w / 2) {
    const int64_t h = w - w / 2;
    const UOp* cur = ctx.make(Op::AFTER, temp->dtype, {temp, done});
    const UOp* active = Expr(g) < (w - h);
    const UOp* mine = ctx.make(Op::LOAD, r->dtype, {at(cur, g)});
    const UOp* other = ctx.make(Op::LOAD, r->dtype, {gate_index(at(cur, Expr(g) + h), active)});
    const UOp* store =
        ctx.make(Op::STORE, dtypes::void_, {gate_index(at(cur, g), active), ctx.make(op, r->dtype, {mine, other})});
    done = ctx.make(Op::END, dtypes::void_, {store, g});
  }
  return ctx.make(Op::LOAD, r->dtype, {at(ctx.make(Op::AFTER, temp->dtype, {temp, done}), ctx.cint(0, g->dtype))});
}

const UOp* reduce_to_acc(const Match& m, void* vctx) {
  const UOp* r = m.root;
  if (r->nsrc() < 2) return nullptr;
  auto& rc = *static_cast<ReduceContext*>(vctx);
  Context& ctx = r->ctx();
  for (const UOp* x : r->src().subspan(1))
    if (x->op == Op::RANGE && x->arg<RangeArg>().type == AxisType::GroupReduce) return group_to_local(r, rc, x);
  Op op = r->arg<ReduceArg>().op;
  auto ranges = r->src().subspan(1);
  // the ranges the value lives in besides its own: the accumulator is reset once per point of them
  std::unordered_set<const UOp*> own(ranges.begin(), ranges.end()), ended;
  auto topo = toposort(r->src(0));
  for (const UOp* u : topo)
    if (u->op == Op::END)
      for (const UOp* e : u->src().subspan(1)) ended.insert(e);
  std::vector<const UOp*> outer{nullptr};
  for (const UOp* u : topo)
    if (u->op == Op::RANGE && !own.contains(u) && !ended.contains(u)) outer.push_back(u);
  // a value that depends on a lane loop of the output keeps one accumulator per lane, and the
  // reduction loop runs outside a loop over the lanes: for k { for lane { acc[lane] op= ... } }
  const UOp* lane = nullptr;
  for (size_t i = 1; i < outer.size(); ++i)
    if (outer[i]->arg<RangeArg>().type == AxisType::Lane && outer[i]->src(0)->op == Op::CONST && !lane) lane = outer[i];
  if (lane) return reduce_with_lanes(r, rc, outer, lane);
  const UOp* acc = ctx.make(Op::BUFFER, r->dtype.as_ptr(AddrSpace::Reg), {ctx.cint(1)}, ParamArg{rc.acc_num++, 1, {}});
  outer[0] = acc;
  const UOp* init =
      ctx.make(Op::STORE, dtypes::void_, {ctx.make(Op::AFTER, acc->dtype, outer), reduce_identity(ctx, op, r->dtype)});
  std::vector<const UOp*> in_src{acc, init};
  in_src.insert(in_src.end(), ranges.begin(), ranges.end());
  const UOp* acc_in = ctx.make(Op::AFTER, acc->dtype, in_src);
  const UOp* cur = ctx.make(Op::LOAD, r->dtype, {acc_in});
  const UOp* upd = ctx.make(Op::STORE, dtypes::void_, {acc_in, ctx.make(op, r->dtype, {cur, r->src(0)})});
  std::vector<const UOp*> end_src{upd};
  end_src.insert(end_src.end(), ranges.begin(), ranges.end());
  const UOp* end = ctx.make(Op::END, dtypes::void_, end_src);
  return ctx.make(Op::LOAD, r->dtype, {ctx.make(Op::AFTER, acc->dtype, {acc, init, end})});
}

}  // namespace

const PatternMatcher& pm_remove_reduces() {
  static const PatternMatcher pm({Rule(UPat::op({Op::REDUCE}).allow_any_len(), reduce_to_acc)});
  return pm;
}

const UOp* merge_reduce_ends(const UOp* sink) {
  // an accumulator's END: END(STORE(AFTER(acc, init, ranges...), v), ranges...). ENDs closing
  // the same ranges share one loop when their accumulators are reset in the same place (the
  // outer ranges of their init); a copy reset elsewhere gets its own clone of the ranges, since a
  // loop closed twice has no place.
  // the accumulator's AFTER a store writes through (a scalar register, or an INDEX of a lane array)
  auto acc_after = [](const UOp* store) -> const UOp* {
    if (store->op != Op::STORE) return nullptr;
    const UOp* a = store->src(0);
    if (a->op == Op::INDEX) a = a->src(0);
    return a->op == Op::AFTER && a->src(0)->op == Op::BUFFER ? a : nullptr;
  };
  auto inner_store = [](const UOp* u) {
    while (u->op == Op::END) u = u->src(0);
    return u;
  };
  auto is_acc_end = [&](const UOp* u) { return u->op == Op::END && acc_after(inner_store(u->src(0))) != nullptr; };
  using Key = std::vector<const UOp*>;
  std::map<Key, std::map<Key, std::vector<const UOp*>>> by_ranges;  // ranges -> reset place -> ENDs
  std::map<Key, std::vector<Key>> place_order;
  std::vector<Key> range_order;
  int32_t next_axis = first_free_axis(sink);
  for (const UOp* u : toposort(sink)) {
    if (!is_acc_end(u)) continue;
    Key ranges(u->src().begin() + 1, u->src().end()), place;
    const UOp* after = acc_after(inner_store(u->src(0)));
    if (after->nsrc() < 2) continue;  // not an update: the final read's AFTER has only the END
    if (const UOp* init_after = acc_after(inner_store(after->src(1))))
      place.assign(init_after->src().begin() + 1, init_after->src().end());
    auto& places = by_ranges[ranges];
    if (places.empty()) range_order.push_back(ranges);
    auto& ends = places[place];
    if (ends.empty()) place_order[ranges].push_back(place);
    ends.push_back(u);
  }
  std::unordered_map<const UOp*, const UOp*> merged;
  Context& ctx = sink->ctx();
  for (const Key& ranges : range_order) {
    const auto& places = place_order[ranges];
    if (places.size() == 1 && by_ranges[ranges][places[0]].size() == 1) continue;
    for (size_t pi = 0; pi < places.size(); ++pi) {
      std::vector<const UOp*> ends = by_ranges[ranges][places[pi]];
      Key rs = ranges;
      if (pi > 0) {  // a reset place of its own: its own copy of the loops
        std::unordered_map<const UOp*, const UOp*> clone;
        for (const UOp*& r : rs) r = clone[r] = clone_range(r, next_axis++);
        ends = substitute(ends, clone);  // one walk over what the copies share
      }
      const UOp* end = ends[0];
      if (ends.size() > 1) {
        std::vector<const UOp*> stores;
        for (const UOp* e : ends) stores.push_back(e->src(0));
        std::vector<const UOp*> src{ctx.make(Op::GROUP, dtypes::void_, stores)};
        src.insert(src.end(), rs.begin(), rs.end());
        end = ctx.make(Op::END, dtypes::void_, src);
      }
      for (const UOp* e : by_ranges[ranges][places[pi]]) merged[e] = end;
    }
  }
  return merged.empty() ? sink : substitute(sink, merged);
}

}  // namespace kiln::codegen
