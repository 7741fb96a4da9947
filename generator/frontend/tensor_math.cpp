// Elementwise ops and reductions, composed from the primitive ALU ops the way tinygrad does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "generator/frontend/tensor.h"

namespace kiln {

Tensor Tensor::scalar(double v) const { return Tensor(ctx_, ctx_->cfloat(v), {}); }
Tensor Tensor::scalar(int64_t v) const { return Tensor(ctx_, ctx_->cint(v), {}); }

Tensor Tensor::cast(DType d) const {
  if (d == dtype()) return *this;
  return make_tensor(Op::CAST, d, {*this});
}
Tensor Tensor::bitcast(DType d) const {
  if (d == dtype()) return *this;
  if (itemsize(d) != itemsize(dtype()))
    throw ShapeError("bitcast: expected a dtype of " + std::to_string(itemsize(dtype())) + " bytes like " +
                     to_string(dtype()) + ", got " + to_string(d));
  return make_tensor(Op::BITCAST, d, {*this});
}

Tensor Tensor::unary(Op op) const { return make_tensor(op, dtype(), {*this}); }
Tensor Tensor::float_t() const { return is_float(dtype()) ? *this : cast(dtypes::float32); }

static Tensor binary(Op op, const Tensor& a, const Tensor& b) {
  auto [x, y] = broadcasted(a, b);
  return make_tensor(op, in_group(op, G_COMPARISON) ? dtypes::bool_ : x.dtype(), {x, y});
}

Tensor Tensor::add(const Tensor& o) const { return binary(Op::ADD, *this, o); }
Tensor Tensor::mul(const Tensor& o) const { return binary(Op::MUL, *this, o); }
Tensor Tensor::sub(const Tensor& o) const {
  auto [x, y] = broadcasted(*this, o);
  return binary(Op::ADD, x, y.neg());
}
Tensor Tensor::div(const Tensor& o) const {
  auto [x, y] = broadcasted(*this, o);
  return x.float_t().mul(y.float_t().reciprocal());
}
// Floor division from the truncating ops: step the quotient down (and the remainder up by the
// divisor) when the remainder is non-zero and its sign differs from the divisor's.
static std::pair<Tensor, Tensor> floor_divmod(const Tensor& a, const Tensor& b) {
  auto [x, y] = broadcasted(a, b);
  if (!is_int(x.dtype()))
    throw ShapeError("idiv: expected integer operands, got " + to_string(a.dtype()) + " and " + to_string(b.dtype()));
  Tensor q = make_tensor(Op::CDIV, x.dtype(), {x, y}), r = make_tensor(Op::CMOD, x.dtype(), {x, y});
  Tensor fix = (r != 0).logical_and((r < 0) != (y < 0));
  return {fix.where(q - 1, q), fix.where(r + y, r)};
}
Tensor Tensor::idiv(const Tensor& o) const { return floor_divmod(*this, o).first; }
Tensor Tensor::div(const Tensor& o, std::string_view rounding_mode) const {
  if (rounding_mode.empty()) return div(o);
  auto [x, y] = broadcasted(*this, o);
  bool ints = is_int(x.dtype());
  if (rounding_mode == "trunc") return ints ? make_tensor(Op::CDIV, x.dtype(), {x, y}) : x.div(y).trunc();
  if (rounding_mode == "floor") return ints ? x.idiv(y) : x.div(y).floor();
  throw ShapeError("div: expected rounding_mode \"trunc\" or \"floor\", got \"" + std::string(rounding_mode) + "\"");
}
Tensor Tensor::mod(const Tensor& o) const { return floor_divmod(*this, o).second; }

Tensor Tensor::neg() const { return is_bool(dtype()) ? logical_not() : mul(lift(-1)); }
Tensor Tensor::lt(const Tensor& o) const { return binary(Op::CMPLT, *this, o); }
Tensor Tensor::gt(const Tensor& o) const { return binary(Op::CMPLT, o, *this); }
Tensor Tensor::le(const Tensor& o) const { return gt(o).logical_not(); }
Tensor Tensor::ge(const Tensor& o) const { return lt(o).logical_not(); }
Tensor Tensor::ne(const Tensor& o) const { return binary(Op::CMPNE, *this, o); }
Tensor Tensor::eq(const Tensor& o) const { return ne(o).logical_not(); }

static Tensor bitwise(Op op, const char* name, const Tensor& a, const Tensor& b) {
  auto [x, y] = broadcasted(a, b);
  bool shift = op == Op::SHL || op == Op::SHR;
  if (!is_int(x.dtype()) && !(is_bool(x.dtype()) && !shift))
    throw ShapeError(std::string(name) + ": expected " + (shift ? "integer" : "integer or bool") + " operands, got " +
                     to_string(a.dtype()) + " and " + to_string(b.dtype()));
  return make_tensor(op, x.dtype(), {x, y});
}
Tensor Tensor::bitwise_and(const Tensor& o) const { return bitwise(Op::AND, "bitwise_and", *this, o); }
Tensor Tensor::bitwise_or(const Tensor& o) const { return bitwise(Op::OR, "bitwise_or", *this, o); }
Tensor Tensor::bitwise_xor(const Tensor& o) const { return bitwise(Op::XOR, "bitwise_xor", *this, o); }
Tensor Tensor::lshift(const Tensor& o) const { return bitwise(Op::SHL, "lshift", *this, o); }
Tensor Tensor::rshift(const Tensor& o) const { return bitwise(Op::SHR, "rshift", *this, o); }

Tensor Tensor::logical_not() const { return binary(Op::CMPNE, cast(dtypes::bool_), lift(true)); }
Tensor Tensor::logical_and(const Tensor& o) const {
  return binary(Op::AND, cast(dtypes::bool_), o.cast(dtypes::bool_));
}
Tensor Tensor::logical_or(const Tensor& o) const { return binary(Op::OR, cast(dtypes::bool_), o.cast(dtypes::bool_)); }

Tensor Tensor::where(const Tensor& t, const Tensor& f) const {
  auto [x, y] = broadcasted(t, f);
  // two weak branches (where(c, 1.0, -1.0)) take the default dtype, as tinygrad's literals do
  if (is_weak(x.dtype())) x = x.cast(strong(x.dtype())), y = y.cast(strong(y.dtype()));
  Tensor c = cast(dtypes::bool_);
  Shape s = broadcast_shape(c.shape(), x.shape());
  return make_tensor(Op::WHERE, x.dtype(), {c.broadcast_to(s), x.broadcast_to(s), y.broadcast_to(s)});
}

Tensor Tensor::maximum(const Tensor& o) const { return binary(Op::MAX, *this, o); }

// The order-reversing map min is written with: -x for floats, ~x for ints, !x for bools.
static Tensor inverse(const Tensor& t) {
  if (is_float(t.dtype())) return t.neg();
  if (is_bool(t.dtype())) return t.logical_not();
  Tensor ones(&t.ctx(), t.ctx().cconst(truncate_to(t.dtype(), ConstValue::of_int(-1)), t.dtype().base()));
  return binary(Op::XOR, t, ones);
}

Tensor Tensor::bitwise_not() const {
  if (!is_int(dtype()) && !is_bool(dtype()))
    throw ShapeError("bitwise_not: expected an integer or bool operand, got " + to_string(dtype()));
  return inverse(*this);
}

Tensor Tensor::minimum(const Tensor& o) const {
  auto [x, y] = broadcasted(*this, o);
  return inverse(inverse(x).maximum(inverse(y)));
}

Tensor Tensor::exp2() const { return float_t().unary(Op::EXP2); }
Tensor Tensor::log2() const { return float_t().unary(Op::LOG2); }
Tensor Tensor::sin() const { return float_t().unary(Op::SIN); }
Tensor Tensor::sqrt() const { return float_t().unary(Op::SQRT); }
Tensor Tensor::reciprocal() const { return float_t().unary(Op::RECIPROCAL); }
Tensor Tensor::trunc() const { return is_float(dtype()) ? unary(Op::TRUNC) : *this; }
Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
Tensor Tensor::exp() const { return (float_t() * (1.0 / std::numbers::ln2)).exp2(); }
Tensor Tensor::log() const { return log2() * std::numbers::ln2; }
Tensor Tensor::cos() const { return ((std::numbers::pi / 2) - float_t()).sin(); }
Tensor Tensor::sigmoid() const { return (1.0 + (float_t() * (-1.0 / std::numbers::ln2)).exp2()).reciprocal(); }
Tensor Tensor::tanh() const { return 2.0 * (2.0 * float_t()).sigmoid() - 1.0; }
Tensor Tensor::relu() const { return (*this > 0).where(*this, lift(0)); }
Tensor Tensor::silu() const { return *this * sigmoid(); }
Tensor Tensor::gelu(std::string_view approximate) const {
  Tensor x = float_t();
  if (approximate == "tanh")
    return 0.5 * x * (1.0 + (std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)).tanh());
  if (approximate == "none") return x * 0.5 * (1.0 + (x / std::numbers::sqrt2).erf());
  throw ShapeError("gelu: expected approximate \"tanh\" or \"none\", got \"" + std::string(approximate) + "\"");
}
Tensor Tensor::sign() const {
  Tensor zero = lift(0).cast(dtype());
  return (*this != 0).where((*this < 0).where(lift(-1), lift(1)).cast(dtype()), zero);
}
// 1 - t * P(t) * exp(-x^2) with t = 1 / (1 + p|x|), odd in x; |error| < 1.5e-7.
Tensor Tensor::erf() const {
  Tensor x = float_t();
  Tensor t = (1.0 + 0.3275911 * x.abs()).reciprocal();
  Tensor p = t.lift(0.0);
  for (double c : {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}) p = p * t + c;
  return x.sign() * (1.0 - t * p * (-(x * x)).exp());
}
Tensor Tensor::abs() const {
  if (is_bool(dtype())) return *this;
  return (*this < 0).where(neg(), *this);
}
Tensor Tensor::floor() const {
  Tensor b = trunc();
  return (b > *this).where(b - 1, b);
}
Tensor Tensor::ceil() const {
  Tensor b = trunc();
  return (b < *this).where(b + 1, b);
}
Tensor Tensor::round() const {
  if (!is_float(dtype())) return *this;
  Tensor half = trunc() / 2.0;
  return (*this > 0).eq(half.trunc() == half).where((*this - 0.5).ceil(), (*this + 0.5).floor());
}

// x ** e = exp2(e * log2|x|), with the sign of an odd integer power of a negative base (or of
// -0.0: (-0.0) ** -1 is -inf), NaN for a negative base and a fractional power, and x ** 0 = 1. An
// integer to a non-negative integer literal stays an integer (as tinygrad's): repeated squaring.
Tensor Tensor::pow(const Tensor& e) const {
  const UOp* k = e.uop();
  if (is_int(dtype()) && k->op == Op::CONST && is_int(k->dtype) && k->ival() >= 0 && e.shape().empty()) {
    Tensor r = *this * 0 + 1, sq = *this;
    for (int64_t n = k->ival(); n > 0; n >>= 1, sq = n > 0 ? sq * sq : sq)
      if (n & 1) r = r * sq;
    return r;
  }
  auto [x0, y0] = broadcasted(*this, e);
  Tensor x = x0.float_t(), y = y0.float_t();
  Tensor mag = (y * x.abs().log2()).exp2();
  Tensor is_int = y.trunc() == y;
  Tensor odd = is_int.logical_and((y / 2.0).trunc() * 2.0 != y);
  Tensor nan = x.lift(std::numeric_limits<double>::quiet_NaN());
  Tensor neg_base = is_int.where(odd.where(-mag, mag), nan);
  Tensor neg_zero = (x == 0).logical_and(x.reciprocal() < 0).logical_and(odd);
  return (y == 0).where(x.lift(1.0), (x < 0).where(neg_base, neg_zero.where(-mag, mag)));
}

// ---------------------------------------------------------------- reductions

static DType acc_dtype(DType d) {
  switch (d.scalar) {
    case Scalar::Bool:
    case Scalar::Int8:
    case Scalar::Int16:
      return dtypes::int32;
    case Scalar::Uint8:
    case Scalar::Uint16:
      return dtypes::uint32;
    case Scalar::Float16:
    case Scalar::BFloat16:
      return dtypes::float32;
    default:
      return d;
  }
}

Tensor Tensor::reduce(Op op, const Axes& axes, bool keepdim) const {
  std::vector<int64_t> ax;
  if (axes.v.empty())
    for (size_t i = 0; i < ndim(); ++i) ax.push_back(int64_t(i));
  for (int64_t a : axes.v) ax.push_back(norm_axis(a, ndim()));
  std::sort(ax.begin(), ax.end());
  ax.erase(std::unique(ax.begin(), ax.end()), ax.end());
  if (ax.empty()) return *this;
  std::vector<const UOp*> s;
  for (int64_t a : ax) s.push_back(ctx_->cint(a));
  Tensor r = make_tensor(Op::REDUCE, dtype(), {*this}, {ctx_->make(Op::STACK, dtypes::void_, s)}, ReduceArg{op, 0});
  if (keepdim) return r;
  std::vector<Dim> out;
  for (size_t i = 0; i < ndim(); ++i)
    if (!std::binary_search(ax.begin(), ax.end(), int64_t(i))) out.push_back(shape_[i]);
  return r.reshape(out);
}

Tensor Tensor::sum(const Axes& axes, bool keepdim) const {
  DType acc = acc_dtype(dtype());
  Tensor r = cast(acc).reduce(Op::ADD, axes, keepdim);
  return is_float(dtype()) ? r.cast(dtype()) : r;
}
Tensor Tensor::prod(const Axes& axes, bool keepdim) const {
  DType acc = acc_dtype(dtype());
  Tensor r = cast(acc).reduce(Op::MUL, axes, keepdim);
  return is_float(dtype()) ? r.cast(dtype()) : r;
}
Tensor Tensor::max(const Axes& axes, bool keepdim) const { return reduce(Op::MAX, axes, keepdim); }
Tensor Tensor::min(const Axes& axes, bool keepdim) const { return inverse(inverse(*this).max(axes, keepdim)); }
Tensor Tensor::mean(const Axes& axes, bool keepdim) const {
  Tensor s = float_t().sum(axes, keepdim);
  std::vector<int> ax;
  for (int64_t a : axes.v) ax.push_back(norm_axis(a, ndim()));
  std::sort(ax.begin(), ax.end());
  ax.erase(std::unique(ax.begin(), ax.end()), ax.end());
  std::vector<const UOp*> reduced;
  if (axes.v.empty()) reduced = shape_;
  for (int a : ax) reduced.push_back(shape_[size_t(a)]);
  if (reduced.empty()) return s;
  const UOp* n = dim_product(reduced);
  if (n->op == Op::CONST) return s / double(n->ival());
  return s / Tensor(ctx_, n).cast(s.dtype());
}

// tinygrad's argmax: the largest of (n - i) over the maximal positions i gives the first one.
Tensor Tensor::argmax(std::optional<int64_t> axis, bool keepdim) const {
  if (!axis) return flatten().argmax(0);
  int ax = norm_axis(*axis, ndim());
  const UOp* n = shape_[size_t(ax)];
  std::vector<Dim> idx_shape{n};
  for (size_t i = size_t(ax) + 1; i < ndim(); ++i) idx_shape.push_back(int64_t(1));
  Tensor nt = n->op == Op::CONST ? lift(n->ival()) : Tensor(ctx_, n).cast(dtypes::int32);
  Tensor idx = (nt - iota(*ctx_, n)).reshape(idx_shape);
  Tensor m = (*this == max({ax}, true)).cast(dtypes::int32) * idx;
  return (nt - m.max({ax}, keepdim)).cast(dtypes::int32);
}

}  // namespace kiln

namespace kiln {

Tensor Tensor::argmin(std::optional<int64_t> axis, bool keepdim) const { return inverse(*this).argmax(axis, keepdim); }

}  // namespace kiln
