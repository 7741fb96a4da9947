// Exact scalar semantics of every ALU op: constant folding and the interpreters use this.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "generator/ir/uop.h"

namespace kiln {

namespace {

__extension__ using u128 = unsigned __int128;

float round_to_half(double v) {
  // IEEE binary16, round to nearest even, through float32 bits
  float f = static_cast<float>(v);
  if (std::isnan(f) || std::isinf(f)) return f;
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = x & 0x80000000u;
  float a = std::fabs(f);
  if (a >= 65520.0f) return sign ? -INFINITY : INFINITY;
  if (a < 6.103515625e-05f) {  // subnormal half: quantum 2^-24
    double q = std::nearbyint(double(a) * 16777216.0) / 16777216.0;
    return static_cast<float>(sign ? -q : q);
  }
  uint32_t ax = x & 0x7fffffffu;
  uint32_t lsb = (ax >> 13) & 1u;
  ax += 0x0fffu + lsb;
  ax &= ~0x1fffu;
  ax |= sign;
  float r;
  std::memcpy(&r, &ax, 4);
  return r;
}

float round_to_bfloat16(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return f;
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  x &= 0xffff0000u;
  float r;
  std::memcpy(&r, &x, 4);
  return r;
}

int64_t wrap(DType d, int64_t v) {
  if (d.scalar == Scalar::WeakInt || bitsize(d) >= 64) return v;
  int b = bitsize(d);
  uint64_t mask = (uint64_t(1) << b) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (!is_unsigned(d) && (u >> (b - 1)) & 1) u |= ~mask;
  return int64_t(u);
}

bool truthy(const ConstValue& v) { return v.is_float() ? v.f != 0.0 : v.i != 0; }

}  // namespace

ConstValue truncate_to(DType d, const ConstValue& v) {
  if (v.is_invalid()) return v;
  if (is_bool(d)) return ConstValue::of_bool(truthy(v));
  if (is_float(d)) {
    double x = v.as_double();
    switch (d.scalar) {
      case Scalar::Float32:
        x = static_cast<float>(x);
        break;
      case Scalar::Float16:
        x = round_to_half(x);
        break;
      case Scalar::BFloat16:
        x = round_to_bfloat16(x);
        break;
      default:
        break;
    }
    return ConstValue::of_float(x);
  }
  if (is_int(d)) {
    if (v.is_float()) {
      double x = std::trunc(v.f);
      // uint64 takes [2^63, 2^64) too; what C leaves undefined (out of range, nan) becomes 0
      if (d.scalar == Scalar::Uint64 && x >= 0x1p63 && x < 0x1p64) return ConstValue::of_int(int64_t(uint64_t(x)));
      if (!std::isfinite(x) || x >= 0x1p63 || x < -0x1p63) return ConstValue::of_int(0);
      return ConstValue::of_int(wrap(d, static_cast<int64_t>(x)));
    }
    return ConstValue::of_int(wrap(d, v.i));
  }
  return v;
}

ConstValue convert(DType to, DType from, const ConstValue& v) {
  // a uint64 from 2^63 up is carried negative: as a float it is its unsigned value
  if (from.scalar == Scalar::Uint64 && v.is_int() && is_float(to))
    return truncate_to(to, ConstValue::of_float(double(uint64_t(v.i))));
  return truncate_to(to, v);
}

DType operand_dtype(const UOp* u) {
  if (in_group(u->op, G_COMPARISON) && u->nsrc() == 2)
    return least_upper_dtype(u->src(0)->dtype.base(), u->src(1)->dtype.base());
  if ((u->op == Op::CAST || u->op == Op::BITCAST) && u->nsrc() == 1) return u->src(0)->dtype.base();
  return u->dtype.base();
}

std::optional<ConstValue> exec_alu(Op op, DType dtype, std::span<const ConstValue> in, DType operand) {
  if (operand == DType()) operand = dtype;
  for (const auto& v : in)
    if (v.is_invalid()) {
      if (in_group(op, G_BINARY)) return ConstValue::invalid();
      return std::nullopt;
    }
  auto n = in.size();
  auto need = [&](size_t k) { return n == k; };
  bool any_float = false;
  for (const auto& v : in) any_float |= v.is_float();

  // comparisons and WHERE don't use the result dtype for their inputs
  if (op == Op::CMPLT || op == Op::CMPNE || op == Op::CMPEQ) {
    if (!need(2)) return std::nullopt;
    bool r;
    if (any_float) {
      double a = in[0].as_double(), b = in[1].as_double();
      r = op == Op::CMPLT ? a < b : op == Op::CMPNE ? a != b : a == b;
    } else {
      // operands are seen at their dtype's width (a weak literal next to a uint64 is one)
      bool weak_operand = operand.scalar == Scalar::WeakInt || !is_int(operand);
      auto at = [&](const ConstValue& x) { return exact_value(operand, weak_operand ? x.i : wrap(operand, x.i)); };
      i128 a = at(in[0]), b = at(in[1]);
      r = op == Op::CMPLT ? a < b : op == Op::CMPNE ? a != b : a == b;
    }
    return ConstValue::of_bool(r);
  }
  if (op == Op::WHERE) {
    if (!need(3)) return std::nullopt;
    return truncate_to(dtype, truthy(in[0]) ? in[1] : in[2]);
  }
  if (op == Op::CAST) {
    if (!need(1)) return std::nullopt;
    return convert(dtype, operand, in[0]);
  }

  if (is_float(dtype)) {
    auto x = [&](size_t i) { return in[i].as_double(); };
    double r;
    switch (op) {
      case Op::NEG:
        r = -x(0);
        break;
      case Op::EXP2:
        r = std::exp2(x(0));
        break;
      case Op::LOG2:
        r = x(0) > 0 ? std::log2(x(0)) : x(0) == 0 ? -INFINITY : NAN;
        break;
      case Op::SIN:
        r = std::isinf(x(0)) ? NAN : std::sin(x(0));
        break;
      case Op::SQRT:
        r = x(0) >= 0 ? std::sqrt(x(0)) : NAN;
        break;
      case Op::RECIPROCAL:
        r = x(0) != 0 ? 1.0 / x(0) : std::copysign(INFINITY, x(0));
        break;
      case Op::TRUNC:
        r = std::isfinite(x(0)) ? std::trunc(x(0)) : x(0);
        break;
      case Op::ADD:
        r = x(0) + x(1);
        break;
      case Op::SUB:
        r = x(0) - x(1);
        break;
      case Op::MUL:
        r = x(0) * x(1);
        break;
      case Op::FDIV:
        r = x(0) / x(1);
        break;
      case Op::MAX:
        // as the kernels compute it (kiln_maxf, the LLVM renderer's): of two equal values the
        // second, so max(-0, +0) is +0 and max(+0, -0) is -0
        r = std::isnan(x(0)) || std::isnan(x(1)) ? NAN : x(0) > x(1) ? x(0) : x(1);
        break;
      case Op::POW:
        r = std::pow(x(0), x(1));
        break;
      case Op::MULACC:
        r = x(0) * x(1) + x(2);
        break;
      default:
        return std::nullopt;
    }
    return truncate_to(dtype, ConstValue::of_float(r));
  }

  if (is_bool(dtype)) {
    auto b = [&](size_t i) { return truthy(in[i]); };
    switch (op) {
      case Op::AND:
      case Op::MUL:
        return ConstValue::of_bool(b(0) && b(1));
      case Op::OR:
      case Op::ADD:
      case Op::MAX:
        return ConstValue::of_bool(b(0) || b(1));
      case Op::XOR:
        return ConstValue::of_bool(b(0) != b(1));
      case Op::TRUNC:
        return ConstValue::of_bool(b(0));
      default:
        return std::nullopt;
    }
  }

  if (!is_int(dtype)) return std::nullopt;
  if (any_float) return std::nullopt;
  bool weak = dtype.scalar == Scalar::WeakInt;
  bool uns = is_unsigned(dtype);
  int bits = bitsize(dtype);
  auto a = [&](size_t i) { return in[i].i; };
  auto done = [&](i128 r) -> std::optional<ConstValue> {
    if (weak) {  // the index type never wraps: refuse to fold what int64 cannot hold
      if (r > std::numeric_limits<int64_t>::max() || r < std::numeric_limits<int64_t>::min()) return std::nullopt;
      return ConstValue::of_int(int64_t(r));
    }
    return ConstValue::of_int(wrap(dtype, int64_t(uint64_t(static_cast<u128>(r)))));
  };
  // operands of fixed-width ops are first seen at the dtype's width
  auto v = [&](size_t i) -> i128 {
    int64_t x = weak ? a(i) : wrap(dtype, a(i));
    if (uns && bits == 64) return i128(uint64_t(x));
    return x;
  };
  switch (op) {
    case Op::NEG:
      return done(-v(0));
    case Op::TRUNC:
      return done(v(0));
    case Op::ADD:
      return done(v(0) + v(1));
    case Op::SUB:
      return done(v(0) - v(1));
    case Op::MUL: {
      i128 x = v(0), y = v(1);
      if (weak && x != 0 &&
          (y > (i128(1) << 64) || y < -(i128(1) << 64) || x > (i128(1) << 64) || x < -(i128(1) << 64)))
        return std::nullopt;
      if (!weak) return done(i128(int64_t(uint64_t(x) * uint64_t(y))));
      return done(x * y);
    }
    case Op::MAX:
      return done(std::max(v(0), v(1)));
    case Op::XOR:
      return done(v(0) ^ v(1));
    case Op::OR:
      return done(v(0) | v(1));
    case Op::AND:
      return done(v(0) & v(1));
    case Op::SHL: {
      i128 s = v(1);
      if (s < 0 || s >= (weak ? 63 : bits)) return std::nullopt;
      if (weak) {
        i128 r = v(0) << int(s);
        return done(r);
      }
      return done(i128(int64_t(uint64_t(v(0)) << int(s))));
    }
    case Op::SHR: {
      i128 s = v(1);
      if (s < 0 || s >= (weak ? 64 : bits)) return std::nullopt;
      return done(v(0) >> int(s));
    }
    case Op::CDIV:
    case Op::CMOD:
    case Op::FLOORDIV:
    case Op::FLOORMOD: {
      i128 x = v(0), y = v(1);
      if (y == 0) return std::nullopt;
      i128 q = x / y, r = x % y;  // truncating
      if (op == Op::CDIV) return done(q);
      if (op == Op::CMOD) return done(r);
      if (r != 0 && ((r < 0) != (y < 0))) {
        q -= 1;
        r += y;
      }
      return done(op == Op::FLOORDIV ? q : r);
    }
    case Op::MULACC:
      if (!weak) return done(i128(int64_t(uint64_t(v(0)) * uint64_t(v(1)) + uint64_t(v(2)))));
      return done(v(0) * v(1) + v(2));
    default:
      return std::nullopt;
  }
}

}  // namespace kiln
