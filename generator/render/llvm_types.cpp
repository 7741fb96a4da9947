#include "generator/render/llvm_types.h"

#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "generator/ir/uop.h"

namespace kiln::render::llvm_text {

namespace {

std::string hex64(uint64_t bits) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016" PRIX64, bits);
  return b;
}

}  // namespace

std::string num(int64_t v) { return std::to_string(v); }

// a scalar's LLVM type: bfloat16 is computed in float (and rounded after every op), as the C does
std::string_view scalar_type(DType d) {
  switch (d.scalar) {
    case Scalar::Bool:
      return "i1";
    case Scalar::Int8:
    case Scalar::Uint8:
      return "i8";
    case Scalar::Int16:
    case Scalar::Uint16:
      return "i16";
    case Scalar::Int32:
    case Scalar::Uint32:
      return "i32";
    case Scalar::Int64:
    case Scalar::Uint64:
      return "i64";
    case Scalar::Float16:
      return "half";
    case Scalar::BFloat16:
    case Scalar::Float32:
      return "float";
    case Scalar::Float64:
      return "double";
    default:
      throw InternalError("render LLVM: no LLVM type for " + to_string(d) + " (commit weak / lower index first)");
  }
}

// the type in memory: bool as a byte (C's bool), bfloat16 as its 16 bits
std::string_view scalar_mem_type(DType d) {
  if (is_bool(d)) return "i8";
  if (d.scalar == Scalar::BFloat16) return "i16";
  return scalar_type(d);
}

std::string vector_of(int n, std::string_view t) {
  if (n == 1) return std::string(t);
  return "<" + num(n) + " x " + std::string(t) + ">";
}
std::string ty(DType d) { return vector_of(d.count, scalar_type(d)); }
std::string mem_ty(DType d) { return vector_of(d.count, scalar_mem_type(d)); }

// a scalar literal as a value of a (vector) type: vectors take a splat
std::string splat(int count, std::string_view elem, const std::string& lit) {
  if (count == 1) return lit;
  return "splat (" + std::string(elem) + " " + lit + ")";
}

// LLVM spells float constants as the double of the same value (exact for float and half)
std::string float_literal(double v, DType d) {
  double x = v;
  if (d.scalar == Scalar::Float32 || d.scalar == Scalar::BFloat16)
    x = double(float(v));                                                        // as the C's literal: float(v)
  if (d.scalar == Scalar::Float16) x = double(static_cast<_Float16>(float(v)));  // (_Float16)float(v)
  if (std::isnan(x)) return hex64(0x7ff8000000000000ull);                        // C's NAN: the quiet NaN
  return hex64(std::bit_cast<uint64_t>(x));
}

std::string int_literal(int64_t v, DType d) {
  if (is_bool(d)) return v ? "true" : "false";
  int bits = bitsize(d);
  if (bits < 64) {  // the value's bit pattern read as a signed integer of the width
    uint64_t m = (uint64_t(1) << bits) - 1, u = uint64_t(v) & m;
    if (u >> (bits - 1)) u |= ~m;
    v = int64_t(u);
  }
  return num(v);
}

std::string zero_of(DType d) {
  if (d.count > 1) return "zeroinitializer";
  if (is_bool(d)) return "false";
  return is_float(d) ? "0.0" : "0";
}

// an intrinsic's type suffix: f32, v8f32, i64, v4i1
std::string suffix(DType d) {
  std::string_view t = scalar_type(d);
  std::string e = t == "half" ? "f16" : t == "float" ? "f32" : t == "double" ? "f64" : std::string(t);
  return d.count > 1 ? "v" + num(d.count) + e : e;
}

std::string escaped(std::string_view s) {
  std::string e;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '"' && c != '\\') {
      e += c;
      continue;
    }
    char b[4];
    std::snprintf(b, sizeof b, "\\%02X", u);
    e += b;
  }
  return e;
}

}  // namespace kiln::render::llvm_text
