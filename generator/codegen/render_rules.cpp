// renderer rules: what each renderer prefers to the IR's own ops (its extra rules in the final
// rewrite, as the seeds' renderers bring an extra_matcher). Index math divides with floor
// semantics; C's `/` and `%` and LLVM's sdiv and srem truncate. Where the dividend is never
// negative and the divisor always positive the two agree, so such a FLOORDIV/FLOORMOD becomes
// CDIV/CMOD: one instruction (or a multiply by a constant) instead of the sign-fixing sequence.
// LLVM's arithmetic shift is defined for negative values, and floor division by 2^k is exactly
// `x >> k` and floor modulo `x & (2^k - 1)` in two's complement, whatever the sign: the LLVM
// renderer gets those too. C leaves >> of a negative value to the implementation, so the C
// renderer keeps its helper where the dividend may be negative.
#include "generator/codegen/passes.h"

namespace kiln::codegen {

namespace {

bool signed_index(DType d) { return is_int(d) && !is_unsigned(d) && d != dtypes::weakint; }

const UOp* truncating(const UOp* u) {
  if (!signed_index(u->dtype)) return nullptr;
  if (u->src(0)->vmin().i < 0 || u->src(1)->vmin().i <= 0) return nullptr;
  return u->ctx().make(u->op == Op::FLOORDIV ? Op::CDIV : Op::CMOD, u->dtype, u->src());
}

const UOp* shifted(const UOp* u) {
  const UOp* d = u->src(1);
  if (!signed_index(u->dtype) || d->op != Op::CONST) return nullptr;
  int64_t c = d->ival();
  if (c < 2 || (c & (c - 1)) != 0) return nullptr;
  Context& ctx = u->ctx();
  if (u->op == Op::FLOORMOD) return ctx.make(Op::AND, u->dtype, {u->src(0), ctx.cint(c - 1, u->dtype)});
  int k = 0;
  while ((int64_t(1) << k) < c) ++k;
  return ctx.make(Op::SHR, u->dtype, {u->src(0), ctx.cint(k, u->dtype)});
}

}  // namespace

const PatternMatcher& pm_renderer_rules(const target::Target& t) {
  static const PatternMatcher c_rules(
      {Rule(UPat::op({Op::FLOORDIV, Op::FLOORMOD}), [](const Match& m) { return truncating(m.root); })});
  static const PatternMatcher llvm_rules({Rule(UPat::op({Op::FLOORDIV, Op::FLOORMOD}), [](const Match& m) {
    const UOp* u = truncating(m.root);
    return u ? u : shifted(m.root);
  })});
  return t.output == target::Output::Object ? llvm_rules : c_rules;
}

}  // namespace kiln::codegen
