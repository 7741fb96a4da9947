// split ends: an END closing several ranges becomes nested ENDs of one range each, the last
// (innermost) range closed first, so every loop has exactly one closing node.
#include "generator/codegen/passes.h"

namespace kiln::codegen {

const PatternMatcher& pm_split_ends() {
  static const PatternMatcher pm({Rule(UPat::op({Op::END}).allow_any_len(), [](const Match& m) -> const UOp* {
    const UOp* e = m.root;
    if (e->nsrc() <= 2) return nullptr;
    Context& ctx = e->ctx();
    const UOp* cur = e->src(0);
    for (size_t i = e->nsrc(); i-- > 1;) cur = ctx.make(Op::END, dtypes::void_, {cur, e->src(i)});
    return cur;
  })});
  return pm;
}

}  // namespace kiln::codegen
