// renderer rules: what the C renderer prefers to the IR's own ops. Index math divides with floor
// semantics; C's `/` and `%` truncate. Where the dividend is never negative and the divisor
// always positive the two agree, so such a FLOORDIV/FLOORMOD becomes C's own (CDIV/CMOD): one
// instruction (or a multiply by a constant) instead of the sign-fixing helper.
#include "generator/codegen/passes.h"

namespace kiln::codegen {

const PatternMatcher& pm_renderer_rules() {
  static const PatternMatcher pm({Rule(UPat::op({Op::FLOORDIV, Op::FLOORMOD}), [](const Match& m) -> const UOp* {
    const UOp* u = m.root;
    if (!is_int(u->dtype) || is_unsigned(u->dtype) || u->dtype == dtypes::weakint) return nullptr;
    if (u->src(0)->vmin().i < 0 || u->src(1)->vmin().i <= 0) return nullptr;
    return u->ctx().make(u->op == Op::FLOORDIV ? Op::CDIV : Op::CMOD, u->dtype, u->src());
  })});
  return pm;
}

}  // namespace kiln::codegen
