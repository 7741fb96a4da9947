// decompositions: ops the C target should not call a library for. EXP2 on float32 becomes a
// polynomial and exponent-bit arithmetic with no branches and no float-to-int conversion, so
// loops over it vectorize (libm's exp2f is a scalar call per element):
//   x = clamp(x, -150, 128); r = x + 1.5 * 2^23 rounds x to the integer n in r's low bits;
//   t = r - 1.5 * 2^23 (= n); f = x - t in [-0.5, 0.5]
//   2^f = sum_k (f ln2)^k / k!, k <= 8 (truncation error < 1e-9 relative)
//   2^n = 2^(n/2) * 2^(n - n/2), each built from exponent bits, so results that are subnormal
//   or overflow to infinity come out right; NaN passes through.
#include <cmath>

#include "generator/codegen/passes.h"

namespace kiln::codegen {

namespace {

const UOp* pow2_bits(Context& ctx, Expr n) {  // 2^n for n in [-126, 127], as float32
  Expr bits = (n + 127) << 23;
  return ctx.make(Op::BITCAST, dtypes::float32, {bits});
}

const UOp* exp2_f32(const Match& m) {
  const UOp* u = m.root;
  if (u->dtype != dtypes::float32) return nullptr;
  Context& ctx = u->ctx();
  auto f32 = [&](double v) { return Expr(ctx.cfloat(v, dtypes::float32)); };
  Expr x = u->src(0);
  Expr nan = ctx.make(Op::CMPNE, dtypes::bool_, {x, x});
  Expr xs = where(nan, f32(0), x);
  Expr xc = maximum(minimum(xs, f32(128)), f32(-150));
  constexpr double kRound = 12582912.0;  // 1.5 * 2^23: adding it rounds to an integer
  Expr r = xc + f32(kRound);
  Expr t = r - f32(kRound);
  Expr f = xc - t;
  // Horner over c_k = ln2^k / k!
  double c[9];
  for (int k = 0; k < 9; ++k) c[k] = std::pow(std::log(2.0), k) / std::tgamma(k + 1.0);
  Expr p = f32(c[8]);
  for (int k = 7; k >= 0; --k) p = p * f + f32(c[k]);
  Expr bits = ctx.make(Op::BITCAST, dtypes::int32, {r});
  Expr n = bits - Expr(ctx.cint(0x4B400000, dtypes::int32));  // the bits of 1.5 * 2^23
  Expr n1 = cdiv(n, Expr(ctx.cint(2, dtypes::int32)));
  Expr n2 = n - n1;
  Expr out = p * Expr(pow2_bits(ctx, n1)) * Expr(pow2_bits(ctx, n2));
  return where(nan, x, out);
}

}  // namespace

const PatternMatcher& pm_decompositions() {
  static const PatternMatcher pm({Rule(UPat::op({Op::EXP2}, {UPat()}), exp2_f32)});
  return pm;
}

}  // namespace kiln::codegen
