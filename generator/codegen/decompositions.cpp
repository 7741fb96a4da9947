// decompositions: math as arithmetic, where the target should not or cannot call a library for it.
// The rewrite's context is the target (target::Target::math_ops: the math it may leave to the
// renderer). EXP2 and LOG2 on float32 are decomposed on every target: the polynomials have no
// branch and no float/int conversion, so loops over them vectorize, where libm's exp2f and log2f
// are one scalar call per element. On a target without the op in its math_ops (a freestanding one,
// no libm) float64 EXP2 and LOG2 and every float TRUNC are decomposed too; float16 and bfloat16
// compute in float32. SIN, SQRT and POW have no decomposition yet: a target without them gets a
// MathError naming the op, not a call it cannot link.
//
// The formats are float32 (int32 bits) and float64 (int64 bits), each written once:
//   exp2(x): x = clamp(x, lo, hi); r = x + 1.5 * 2^mant rounds x to the integer n in r's low bits;
//     f = x - n in [-0.5, 0.5]; 2^f = sum_k (f ln2)^k / k! (truncation below 1e-9 relative for
//     float32, 1e-17 for float64); 2^n = 2^(n/2) * 2^(n - n/2), each from exponent bits, so results
//     that are subnormal or overflow to infinity come out right; NaN passes through.
//   log2(x): x = m * 2^e from its bits (subnormals scaled up first), m moved into [sqrt(1/2),
//     sqrt(2)); log2(m) = 2/ln2 * atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, as an odd series
//     in s; e + log2(m). Zero gives -inf, negatives NaN, +inf +inf, NaN itself.
//   trunc(x): |x| < 2^mant: r = (|x| + 2^mant) - 2^mant rounds |x| to an integer; one less where
//     that rounded up; the sign of x put back (so -0.5 gives -0); larger |x|, inf and NaN are x.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "generator/codegen/passes.h"
#include "generator/codegen/pipeline.h"

namespace kiln::codegen {

namespace {

struct Format {
  DType f, i;      // the float and the integer of its width
  int mant, bias;  // mantissa bits, exponent bias
  int ebits;       // exponent bits
  int terms_exp2, terms_log2;
};

const Format* format_of(DType d) {
  static const Format f32{dtypes::float32, dtypes::int32, 23, 127, 8, 8, 5};
  static const Format f64{dtypes::float64, dtypes::int64, 52, 1023, 11, 14, 10};
  return d == dtypes::float32 ? &f32 : d == dtypes::float64 ? &f64 : nullptr;
}

class Math {
 public:
  Math(Context& ctx, const Format& fm) : ctx_(ctx), fm_(fm) {}

  Expr f(double v) const { return ctx_.cfloat(v, fm_.f); }
  Expr i(int64_t v) const { return ctx_.cint(v, fm_.i); }
  Expr bits(Expr x) const { return ctx_.make(Op::BITCAST, fm_.i, {x}); }
  Expr as_float(Expr b) const { return ctx_.make(Op::BITCAST, fm_.f, {b}); }
  Expr round_const() const { return f(1.5 * std::ldexp(1.0, fm_.mant)); }  // adding it rounds to an integer
  int64_t round_bits() const { return (int64_t(fm_.bias + fm_.mant) << fm_.mant) | (int64_t(1) << (fm_.mant - 1)); }
  Expr pow2(Expr n) const { return as_float((n + i(fm_.bias)) << i(fm_.mant)); }  // 2^n, n a normal exponent
  Expr sign_bit() const { return i(std::numeric_limits<int64_t>::min() >> (64 - bitsize(fm_.i))); }
  Expr abs_mask() const { return i(int64_t(uint64_t(std::numeric_limits<int64_t>::max()) >> (64 - bitsize(fm_.i)))); }
  Expr nan(Expr x) const { return ctx_.make(Op::CMPNE, dtypes::bool_, {x, x}); }

  Expr exp2(Expr x) const {
    Expr isnan = nan(x);
    Expr xc = maximum(minimum(where(isnan, f(0), x), f(fm_.bias + 1)), f(-(fm_.bias + fm_.mant)));
    Expr r = xc + round_const();
    Expr frac = xc - (r - round_const());
    Expr p = f(coefficient_exp2(fm_.terms_exp2));
    for (int k = fm_.terms_exp2 - 1; k >= 0; --k) p = p * frac + f(coefficient_exp2(k));
    Expr n = bits(r) - i(round_bits());
    Expr n1 = cdiv(n, i(2));
    return where(isnan, x, p * pow2(n1) * pow2(n - n1));
  }

  Expr log2(Expr x) const {
    const int shift = fm_.f == dtypes::float32 ? 64 : 128;  // lifts every subnormal into the normals
    Expr tiny = x < f(std::ldexp(1.0, 1 - fm_.bias));
    Expr b = bits(where(tiny, x * f(std::ldexp(1.0, shift)), x));
    Expr e = ((b >> i(fm_.mant)) & i((1 << fm_.ebits) - 1)) - i(fm_.bias) - where(tiny, i(shift), i(0));
    Expr m = as_float((b & i((int64_t(1) << fm_.mant) - 1)) | i(int64_t(fm_.bias) << fm_.mant));  // [1, 2)
    Expr big = f(std::sqrt(2.0)) < m;
    m = where(big, m * f(0.5), m);
    e = e + where(big, i(1), i(0));
    Expr s = ctx_.make(Op::FDIV, fm_.f, {m - f(1), m + f(1)});
    Expr z = s * s;
    Expr p = f(coefficient_log2(fm_.terms_log2));
    for (int k = fm_.terms_log2 - 1; k >= 0; --k) p = p * z + f(coefficient_log2(k));
    Expr ef = as_float(e + i(round_bits())) - round_const();  // e as a float, exactly
    Expr r = ef + s * p;
    const double inf = std::numeric_limits<double>::infinity();
    // comparisons of x only (no comparison of masks), so the vectorizer keeps the loop
    return where(nan(x), x, where(x < f(0), f(std::nan("")), where(x != f(0), where(x != f(inf), r, x), f(-inf))));
  }

  Expr trunc(Expr x) const {
    Expr ax = as_float(bits(x) & abs_mask());
    Expr big = f(std::ldexp(1.0, fm_.mant));
    Expr r = (ax + big) - big;
    r = where(ax < r, r - f(1), r);
    Expr t = where(ax < big, r, ax);
    return as_float(bits(t) | (bits(x) & sign_bit()));
  }

 private:
  static double coefficient_exp2(int k) { return std::pow(std::log(2.0), k) / std::tgamma(k + 1.0); }
  static double coefficient_log2(int k) { return 2.0 / std::log(2.0) / (2 * k + 1); }

  Context& ctx_;
  const Format& fm_;
};

bool supports(const target::Target& t, std::string_view op) {
  return std::find(t.math_ops.begin(), t.math_ops.end(), op) != t.math_ops.end();
}

std::string lower_name(Op op) {
  std::string n(op_name(op));
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return n;
}

const UOp* decompose(const Match& m, void* ctx) {
  const UOp* u = m.root;
  const auto& t = *static_cast<const target::Target*>(ctx);
  if (!is_float(u->dtype) || u->dtype.count != 1) return nullptr;
  const bool vectorizes = u->dtype == dtypes::float32 && (u->op == Op::EXP2 || u->op == Op::LOG2);
  if (!vectorizes && supports(t, lower_name(u->op))) return nullptr;
  if (u->op != Op::EXP2 && u->op != Op::LOG2 && u->op != Op::TRUNC)
    throw MathError(
        "target '" + t.name + "' cannot compute " + lower_name(u->op) + " on " + to_string(u->dtype) +
        ": it calls no library for it (it is freestanding or lacks it) and kiln has no decomposition of it");
  Context& c = u->ctx();
  const Format* fm = format_of(u->dtype);
  if (!fm) {  // float16, bfloat16: in float32, which this rewrite then decomposes
    const UOp* wide = c.make(u->op, dtypes::float32, {c.make(Op::CAST, dtypes::float32, {u->src(0)})});
    return c.make(Op::CAST, u->dtype, {wide});
  }
  Math math(c, *fm);
  Expr x = u->src(0);
  return u->op == Op::EXP2 ? math.exp2(x) : u->op == Op::LOG2 ? math.log2(x) : math.trunc(x);
}

}  // namespace

const PatternMatcher& pm_decompositions() {
  static const PatternMatcher pm(
      {Rule(UPat::op({Op::EXP2, Op::LOG2, Op::TRUNC, Op::SIN, Op::SQRT, Op::POW}), decompose)});
  return pm;
}

}  // namespace kiln::codegen
