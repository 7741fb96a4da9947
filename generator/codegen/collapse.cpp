// load collapse: indexing a tensor by another tensor, written the tensor way, is a sum over a
// one-hot mask: out = sum over v of (v == idx ? table[v] : 0). Only the term v == idx is not
// zero, so the sum is that term: idx in range ? table[idx] : 0, with the read gated to the
// range. A loop over the whole table becomes one load (an embedding lookup reads one row, not V).
#include "generator/codegen/passes.h"

namespace kiln::codegen {

namespace {

bool is_zero(const UOp* u) { return u->op == Op::CONST && !u->is_invalid() && u->cval().as_double() == 0.0; }

// the side of `cmp` that is the range (or a cast of it), and the other side; nullptr if neither
std::pair<const UOp*, const UOp*> range_and_other(const UOp* cmp, const UOp* r) {
  for (int s = 0; s < 2; s++) {
    const UOp *a = cmp->src(s), *b = cmp->src(1 - s);
    // a cast of r that keeps every value of r (one that wraps would match several v)
    if (a->op == Op::CAST && is_int(a->dtype) && a->src(0) == r && a->imin() == r->imin() && a->imax() == r->imax())
      a = r;
    if (a == r && !contains(b, r)) return {a, b};
  }
  return {nullptr, nullptr};
}

const UOp* collapse(const Match& m) {
  const UOp* red = m.root;
  if (red->nsrc() != 2 || red->arg<ReduceArg>().op != Op::ADD) return nullptr;
  const UOp *r = red->src(1), *w = red->src(0);
  if (w->op != Op::WHERE) return nullptr;
  // (r != idx).where(0, x) or (r == idx).where(x, 0)
  const UOp *cmp = w->src(0), *x = nullptr;
  if (cmp->op == Op::CMPNE && is_zero(w->src(1))) x = w->src(2);
  if (cmp->op == Op::CMPEQ && is_zero(w->src(2))) x = w->src(1);
  if (!x) return nullptr;
  auto [range, idx] = range_and_other(cmp, r);
  if (!range) return nullptr;
  Context& ctx = red->ctx();
  Expr i = ctx.make(Op::CAST, r->dtype, {idx});
  Expr valid = (i >= 0) & (i < Expr(r->src(0)));
  // every read that depended on r now reads at idx, and only where idx is in range
  std::unordered_map<const UOp*, const UOp*> with{{r, i}};
  for (const UOp* u : toposort(x))
    if (u->op == Op::INDEX && contains(u, r))
      with[u] = gate_index(u->with_src({{u->src(0), substitute(u->src(1), {{r, i}})}}), valid);
  const UOp* zero = is_float(red->dtype) ? ctx.cfloat(0.0, red->dtype) : ctx.cint(0, red->dtype);
  return ctx.make(Op::WHERE, red->dtype, {valid, substitute(x, with), zero});
}

}  // namespace

const PatternMatcher& pm_load_collapse() {
  static const PatternMatcher pm({Rule(UPat::op({Op::REDUCE}).allow_any_len(), collapse)});
  return pm;
}

}  // namespace kiln::codegen
