#include "tests/unit/ref_alu.h"

#include <cmath>
#include <cstdint>

namespace kiln::ref {

namespace {

__extension__ using s128 = __int128;
__extension__ using u128 = unsigned __int128;

constexpr s128 kInt64Lo = -(s128(1) << 63), kInt64Hi = (s128(1) << 63) - 1;

bool weak_int(DType d) { return d.scalar == Scalar::WeakInt; }

// The exact value x brought to d's width: x mod 2^bits, read signed or unsigned.
s128 at_width(DType d, s128 x) {
  if (weak_int(d)) return x;
  int bits = bitsize(d);
  u128 m = u128(x) & ((u128(1) << bits) - 1);
  if (!is_unsigned(d) && m >= (u128(1) << (bits - 1))) return s128(m) - (s128(1) << bits);
  return s128(m);
}

// A carried int64 (uint64 from 2^63 up as its bit pattern) as the exact value at d's width.
s128 exact(DType d, int64_t carried) {
  if (d.scalar == Scalar::Uint64) return s128(u128(uint64_t(carried)));
  return at_width(d, carried);
}

std::optional<ConstValue> int_result(DType d, s128 x) {
  if (weak_int(d)) {
    if (x < kInt64Lo || x > kInt64Hi) return std::nullopt;
    return ConstValue::of_int(int64_t(x));
  }
  return ConstValue::of_int(int64_t(uint64_t(u128(at_width(d, x)))));  // uint64: its bits
}

// Floor division, from the quotient of the magnitudes.
s128 floor_div(s128 x, s128 y) {
  bool negative = (x < 0) != (y < 0);
  u128 ax = x < 0 ? u128(-x) : u128(x), ay = y < 0 ? u128(-y) : u128(y);
  u128 q = ax / ay;
  if (!negative) return s128(q);
  return -s128(q) - (ax % ay != 0 ? 1 : 0);
}
s128 trunc_div(s128 x, s128 y) {
  u128 ax = x < 0 ? u128(-x) : u128(x), ay = y < 0 ? u128(-y) : u128(y);
  s128 q = s128(ax / ay);
  return (x < 0) != (y < 0) ? -q : q;
}

// v rounded to a multiple of 2^e (to nearest, ties to even): scaling by a power of two is exact.
double round_to_quantum(double v, int e) { return std::ldexp(std::nearbyint(std::ldexp(v, -e)), e); }

double to_half(double v) {
  float f = float(v);  // kiln rounds to float16 through float32, as the kernels convert
  if (std::isnan(f) || std::isinf(f) || f == 0.0f) return f;
  int e = std::max(std::ilogb(f), -14);  // below 2^-14 the subnormals' quantum, 2^-24
  double r = round_to_quantum(f, e - 10);
  return std::fabs(r) >= 65536.0 ? std::copysign(INFINITY, r) : r;  // past 65504 + half a step
}

double to_bfloat16(double v) {
  float f = float(v);
  if (std::isnan(f) || std::isinf(f) || f == 0.0f) return f;
  int e = std::max(std::ilogb(f), -126);
  double r = round_to_quantum(f, e - 7);
  return std::fabs(r) >= 0x1p128 ? std::copysign(INFINITY, r) : r;
}

double round_float(DType d, double x) {
  if (d.scalar == Scalar::Float32) return double(float(x));
  if (d.scalar == Scalar::Float16) return to_half(x);
  if (d.scalar == Scalar::BFloat16) return to_bfloat16(x);
  return x;  // float64, weakfloat
}

bool nonzero(const ConstValue& v) { return v.is_float() ? !(v.f == 0.0) : v.i != 0; }

// A float to an int dtype: toward zero; NaN, infinities and what int64 (uint64: [0, 2^64)) cannot
// hold become 0, as kiln defines what C leaves undefined.
ConstValue float_to_int(DType d, double x) {
  if (!std::isfinite(x)) return ConstValue::of_int(0);
  double t = std::trunc(x);
  bool unsigned64 = d.scalar == Scalar::Uint64;
  if (t >= 0x1p64 || t < -0x1p63 || (!unsigned64 && t >= 0x1p63)) return ConstValue::of_int(0);
  if (unsigned64 && t >= 0x1p63) return ConstValue::of_int(int64_t(uint64_t(t)));
  return *int_result(d.scalar == Scalar::WeakInt ? dtypes::int64 : d, s128(int64_t(t)));
}

std::optional<double> float_op(Op op, std::span<const double> x) {
  switch (op) {
    case Op::NEG:
      return -x[0];
    case Op::EXP2:
      return std::exp2(x[0]);
    case Op::LOG2:
      return std::log2(x[0]);  // -inf at +-0, NaN below
    case Op::SIN:
      return std::sin(x[0]);  // NaN at the infinities
    case Op::SQRT:
      return std::sqrt(x[0]);
    case Op::RECIPROCAL:
      return 1.0 / x[0];  // IEEE: +-inf at +-0
    case Op::TRUNC:
      return std::trunc(x[0]);
    case Op::ADD:
      return x[0] + x[1];
    case Op::SUB:
      return x[0] - x[1];
    case Op::MUL:
      return x[0] * x[1];
    case Op::FDIV:
      return x[0] / x[1];
    case Op::MAX:  // kiln_maxf: (a > b || a != a) ? a : b
      return std::isnan(x[1]) ? x[1] : (x[0] > x[1] || std::isnan(x[0])) ? x[0] : x[1];
    case Op::POW:
      return std::pow(x[0], x[1]);
    case Op::MULACC:
      return x[0] * x[1] + x[2];
    default:
      return std::nullopt;
  }
}

std::optional<s128> int_op(Op op, DType d, std::span<const s128> v) {
  bool weak = weak_int(d);
  int width = weak ? 64 : bitsize(d);
  switch (op) {
    case Op::NEG:
      return 0 - v[0];
    case Op::TRUNC:
      return v[0];
    case Op::ADD:
      return v[0] + v[1];
    case Op::SUB:
      return v[0] - v[1];
    // modulo 2^128 (a uint64's square passes __int128), which keeps every bit a width of 64 or less
    // has, and weakint's exact value (an int64's square fits)
    case Op::MUL:
      return s128(u128(v[0]) * u128(v[1]));
    case Op::MULACC:
      return s128(u128(v[0]) * u128(v[1]) + u128(v[2]));
    case Op::MAX:
      return v[0] < v[1] ? v[1] : v[0];
    case Op::AND:
      return s128(u128(v[0]) & u128(v[1]));
    case Op::OR:
      return s128(u128(v[0]) | u128(v[1]));
    case Op::XOR:
      return s128(u128(v[0]) ^ u128(v[1]));
    case Op::SHL:  // a multiplication by 2^s; weakint's shifts stop short of its sign bit
      if (v[1] < 0 || v[1] >= (weak ? 63 : width)) return std::nullopt;
      return s128(u128(v[0]) << int(v[1]));
    case Op::SHR:  // arithmetic for signed values: the floor of the quotient by 2^s
      if (v[1] < 0 || v[1] >= width) return std::nullopt;
      return floor_div(v[0], s128(1) << int(v[1]));
    case Op::CDIV:
      if (v[1] == 0) return std::nullopt;
      return trunc_div(v[0], v[1]);
    case Op::CMOD:
      if (v[1] == 0) return std::nullopt;
      return v[0] - v[1] * trunc_div(v[0], v[1]);
    case Op::FLOORDIV:
      if (v[1] == 0) return std::nullopt;
      return floor_div(v[0], v[1]);
    case Op::FLOORMOD:
      if (v[1] == 0) return std::nullopt;
      return v[0] - v[1] * floor_div(v[0], v[1]);
    default:
      return std::nullopt;
  }
}

}  // namespace

ConstValue to_dtype(DType d, const ConstValue& v) {
  if (v.is_invalid()) return v;
  if (is_bool(d)) return ConstValue::of_bool(nonzero(v));
  if (is_float(d)) return ConstValue::of_float(round_float(d, v.is_float() ? v.f : double(v.i)));
  if (!is_int(d)) return v;
  if (v.is_float()) return float_to_int(d, v.f);
  return *int_result(d.scalar == Scalar::WeakInt ? dtypes::int64 : d, s128(v.i));
}

std::optional<ConstValue> alu(Op op, DType dtype, std::span<const ConstValue> in, DType operand) {
  if (operand == DType()) operand = dtype;
  size_t arity = op == Op::WHERE || op == Op::MULACC ? 3 : in_group(op, G_BINARY) ? 2 : 1;
  bool invalid = false, any_float = false;
  for (const ConstValue& v : in) invalid |= v.is_invalid(), any_float |= v.is_float();
  if (invalid) return in_group(op, G_BINARY) ? std::optional(ConstValue::invalid()) : std::nullopt;
  if (in.size() != arity) return std::nullopt;

  if (in_group(op, G_COMPARISON)) {
    int c;  // -1, 0, 1; 2 when unordered (a NaN)
    if (any_float) {
      double a = in[0].is_float() ? in[0].f : double(in[0].i), b = in[1].is_float() ? in[1].f : double(in[1].i);
      c = std::isnan(a) || std::isnan(b) ? 2 : a < b ? -1 : a > b ? 1 : 0;
    } else {
      // at the operands' dtype (a uint64 unsigned); a weak or bool operand as it is carried
      bool as_carried = weak_int(operand) || !is_int(operand);
      s128 a = as_carried ? s128(in[0].i) : exact(operand, in[0].i);
      s128 b = as_carried ? s128(in[1].i) : exact(operand, in[1].i);
      c = a < b ? -1 : a > b ? 1 : 0;
    }
    bool r = op == Op::CMPLT ? c == -1 : op == Op::CMPEQ ? c == 0 : c != 0;
    return ConstValue::of_bool(r);
  }
  if (op == Op::WHERE) return to_dtype(dtype, nonzero(in[0]) ? in[1] : in[2]);
  if (op == Op::CAST) {
    if (operand.scalar == Scalar::Uint64 && in[0].is_int() && is_float(dtype))
      return to_dtype(dtype, ConstValue::of_float(double(uint64_t(in[0].i))));
    return to_dtype(dtype, in[0]);
  }

  if (is_float(dtype)) {
    double x[3];
    for (size_t k = 0; k < arity; ++k) x[k] = in[k].is_float() ? in[k].f : double(in[k].i);
    std::optional<double> r = float_op(op, std::span<const double>(x, arity));
    if (!r) return std::nullopt;
    return ConstValue::of_float(round_float(dtype, *r));
  }
  if (is_bool(dtype)) {
    bool a = nonzero(in[0]), b = arity > 1 && nonzero(in[1]);
    if (op == Op::AND || op == Op::MUL) return ConstValue::of_bool(a && b);
    if (op == Op::OR || op == Op::ADD || op == Op::MAX) return ConstValue::of_bool(a || b);
    if (op == Op::XOR) return ConstValue::of_bool(a != b);
    if (op == Op::TRUNC) return ConstValue::of_bool(a);
    return std::nullopt;
  }
  if (!is_int(dtype) || any_float) return std::nullopt;
  s128 v[3];
  for (size_t k = 0; k < arity; ++k) v[k] = exact(dtype, in[k].i);
  std::optional<s128> r = int_op(op, dtype, std::span<const s128>(v, arity));
  if (!r) return std::nullopt;
  return int_result(dtype, *r);
}

}  // namespace kiln::ref
