// commit weak: a weak constant (a Python-scalar literal of the tensor program) takes the dtype of
// the op it feeds: the op's own dtype, or for a comparison the other operand's.
#include <algorithm>

#include "generator/codegen/passes.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

namespace {

ConstValue convert(DType to, const ConstValue& v) {
  if (is_float(to)) return truncate_to(to, ConstValue::of_float(v.as_double()));
  if (is_bool(to)) return ConstValue::of_bool(v.as_double() != 0);
  return truncate_to(to, ConstValue::of_int(v.is_float() ? int64_t(v.f) : v.i));
}

bool weak_literal(const UOp* s) { return s->op == Op::CONST && is_weak(s->dtype) && !s->is_invalid(); }

const UOp* commit(const Match& m) {
  const UOp* u = m.root;
  if (std::none_of(u->src().begin(), u->src().end(), weak_literal)) return nullptr;  // most ops: no copy
  std::vector<const UOp*> src(u->src().begin(), u->src().end());
  bool changed = false;
  for (size_t i = 0; i < src.size(); ++i) {
    const UOp* s = src[i];
    if (!weak_literal(s)) continue;
    DType to = u->dtype;
    if (in_group(u->op, G_COMPARISON)) to = src[1 - i]->dtype;
    if (u->op == Op::WHERE && i == 0) continue;
    if (u->op == Op::STORE) to = src[0]->dtype.elem();
    if (u->op == Op::CAST || u->op == Op::BITCAST) to = is_float(s->dtype) ? DType(dtypes::float64) : dtypes::int64;
    if (is_weak(to)) continue;
    src[i] = u->ctx().make(Op::CONST, to, {}, convert(to, s->cval()));
    changed = true;
  }
  return changed ? u->with_src(src) : nullptr;
}

// CAST:T(CAST:weakfloat(x)) -> CAST:T(x) for a float T: a weak float cast (a dim in float math,
// 0.5 * N) has the width of the concrete float cast over it
const UOp* commit_weak_cast(const Match& m) {
  const UOp *c = m.root, *w = c->src(0);
  if (w->dtype != dtypes::weakfloat || !is_float(c->dtype) || is_weak(c->dtype)) return nullptr;
  return w->src(0)->cast(c->dtype);
}

}  // namespace

const PatternMatcher& pm_commit_weak() {
  // with the seeds' pm_cast_weak: weak math under a concrete CAST takes that CAST's width
  static const PatternMatcher pm =
      PatternMatcher(
          {Rule(UPat::op(OpSet::of_group(G_UNARY | G_BINARY | G_TERNARY) | OpSet{Op::CAST, Op::BITCAST, Op::STORE})
                    .allow_any_len(),
                commit),
           Rule(UPat::op(Op::CAST, {UPat::op(Op::CAST)}), commit_weak_cast)}) +
      pm_cast_weak();
  return pm;
}

}  // namespace kiln::codegen
