// expander: ranges an opt marked Upcast (in an END) or Unroll (in a REDUCE) are unrolled. The
// body is copied once per value of the range; the copies share every node that does not depend
// on it (hash-consing), and remove reduces gives each copied reduction its own accumulator in
// one shared loop. So a 4x16 output tile is 64 independent accumulations per step of K.
#include "generator/codegen/passes.h"

namespace kiln::codegen {

namespace {

const UOp* unrolled_range(const UOp* u, AxisType type) {
  for (const UOp* s : u->src().subspan(1))
    if (s->op == Op::RANGE && s->arg<RangeArg>().type == type) return s;
  return nullptr;
}

std::vector<const UOp*> copies(const UOp* body, const UOp* r) {
  std::vector<const UOp*> out;
  Context& ctx = body->ctx();
  int64_t n = r->src(0)->ival();
  for (int64_t v = 0; v < n; ++v) out.push_back(substitute(body, r, ctx.cint(v, r->dtype)));
  return out;
}

std::vector<const UOp*> without(std::span<const UOp* const> ranges, const UOp* r) {
  std::vector<const UOp*> out;
  for (const UOp* s : ranges)
    if (s != r) out.push_back(s);
  return out;
}

const UOp* expand_end(const Match& m) {
  const UOp* e = m.root;
  const UOp* r = unrolled_range(e, AxisType::Upcast);
  if (!r) return nullptr;
  Context& ctx = e->ctx();
  const UOp* group = ctx.make(Op::GROUP, dtypes::void_, copies(e->src(0), r));
  std::vector<const UOp*> rest = without(e->src().subspan(1), r);
  if (rest.empty()) return group;
  rest.insert(rest.begin(), group);
  return ctx.make(Op::END, dtypes::void_, rest);
}

const UOp* expand_reduce(const Match& m) {
  const UOp* red = m.root;
  const UOp* r = unrolled_range(red, AxisType::Unroll);
  if (!r) return nullptr;
  Context& ctx = red->ctx();
  Op op = red->arg<ReduceArg>().op;
  std::vector<const UOp*> parts = copies(red->src(0), r);
  const UOp* acc = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) acc = ctx.make(op, red->dtype, {acc, parts[i]});
  std::vector<const UOp*> rest = without(red->src().subspan(1), r);
  if (rest.empty()) return acc;
  rest.insert(rest.begin(), acc);
  return ctx.make(Op::REDUCE, red->dtype, rest, red->arg());
}

}  // namespace

const PatternMatcher& pm_expander() {
  static const PatternMatcher pm({Rule(UPat::op({Op::END}).allow_any_len(), expand_end),
                                  Rule(UPat::op({Op::REDUCE}).allow_any_len(), expand_reduce)});
  return pm;
}

}  // namespace kiln::codegen
