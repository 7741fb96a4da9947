// lower index dtype: index math is weakint (unbounded) until here. A kernel whose index values
// all fit in int32 (range analysis over the dims' declared bounds) computes them in int32,
// otherwise in int64; one width per kernel, so no index expression mixes widths.
#include <limits>
#include <vector>

#include "generator/codegen/passes.h"

namespace kiln::codegen {

// A weakint CONST as source i of an ALU op next to a value of a concrete dtype (x * 2 on uint8) is
// a literal of the value math, not index math: it stays weak for commit weak to give it x's dtype.
static bool value_literal(const UOp* u, size_t i) {
  const UOp* s = u->src(i);
  if (!is_alu(u->op) || s->op != Op::CONST || s->dtype != dtypes::weakint || s->is_invalid()) return false;
  for (size_t j = u->op == Op::WHERE ? 1 : 0; j < u->nsrc(); ++j)
    if (j != i && !is_weak(u->src(j)->dtype) && (is_int(u->src(j)->dtype) || is_float(u->src(j)->dtype))) return true;
  return false;
}

const UOp* lower_index_dtype(const UOp* sink) {
  std::vector<const UOp*> order = toposort(sink);
  bool fits = true;
  for (const UOp* u : order) {
    if (u->dtype != dtypes::weakint || u->is_invalid()) continue;
    fits &= u->vmin().i >= std::numeric_limits<int32_t>::min() && u->vmax().i <= std::numeric_limits<int32_t>::max();
  }
  DType to = fits ? DType(dtypes::int32) : DType(dtypes::int64);
  // one pass, sources first: every weakint node (but Invalid) takes the width, the rest their new sources
  Context& ctx = sink->ctx();
  std::vector<const UOp*>& done = node_table(sink);  // what each node of `order` became, by id
  std::vector<const UOp*> src;
  for (const UOp* u : order) {
    src.clear();
    bool changed = false;
    for (size_t i = 0; i < u->nsrc(); ++i) {
      const UOp* s = u->src(i);
      src.push_back(value_literal(u, i) ? s : done[s->id]);
      changed |= src.back() != s;
    }
    const UOp* r = u;
    if (u->dtype == dtypes::weakint && !u->is_invalid())
      r = u->op == Op::CONST ? ctx.cint(u->ival(), to) : ctx.make(u->op, to, src, u->arg(), u->tag);
    else if (changed)
      r = u->with_src(src);
    done[u->id] = r;
  }
  return done[sink->id];
}

}  // namespace kiln::codegen
