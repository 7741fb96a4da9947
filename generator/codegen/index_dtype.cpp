// lower index dtype: index math is weakint (unbounded) until here. A kernel whose index values
// all fit in int32 (range analysis over the dims' declared bounds) computes them in int32,
// otherwise in int64; one width per kernel, so no index expression mixes widths.
#include <limits>

#include "generator/codegen/passes.h"

namespace kiln::codegen {

namespace {

struct IndexWidth {
  DType to;
};

const UOp* retype(const Match& m, void* vctx) {
  const UOp* u = m.root;
  if (u->dtype != dtypes::weakint) return nullptr;
  DType to = static_cast<IndexWidth*>(vctx)->to;
  Context& ctx = u->ctx();
  if (u->op == Op::CONST) return u->is_invalid() ? nullptr : ctx.cint(u->ival(), to);
  return ctx.make(u->op, to, u->src(), u->arg(), u->tag);
}

}  // namespace

const UOp* lower_index_dtype(const UOp* sink) {
  bool fits = true;
  for (const UOp* u : toposort(sink)) {
    if (u->dtype != dtypes::weakint || u->is_invalid()) continue;
    fits &= u->vmin().i >= std::numeric_limits<int32_t>::min() && u->vmax().i <= std::numeric_limits<int32_t>::max();
  }
  IndexWidth w{fits ? DType(dtypes::int32) : DType(dtypes::int64)};
  static const PatternMatcher pm({Rule(UPat(), retype)});
  RewriteOptions o;
  o.name = "lower index dtype";
  return graph_rewrite(sink, pm, &w, o);
}

}  // namespace kiln::codegen
