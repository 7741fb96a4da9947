// The casts every renderer is checked on in lane loops (test_codegen_c.cpp, test_llvm.cpp):
// int <-> float, float32 <-> float64, narrowing and widening ints, each with the values where
// the conversion shows (rounding, truncation toward zero, wrapping, sign and zero extension, NaN,
// infinities and overflow where the cast defines them), spliced among random non-zero inputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "generator/ir/dtype.h"
#include "tests/unit/random_program.h"

namespace kiln::cast_cases {

struct CastCase {
  DType from, to;
  // exactly representable in `from`, defined for the cast, and (the test runner passes values as
  // doubles through int64) below 2^63
  std::vector<double> edges;
};

inline std::vector<CastCase> cases() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double i32_min = -2147483648.0, i32_max = 2147483647.0;
  return {
      // int -> float: rounding to nearest (2^24 + 1 has no float32), the extremes, signs
      {dtypes::int32, dtypes::float32, {i32_max, i32_min, 16777217, -16777217, 123456789, -1, 1}},
      {dtypes::int32, dtypes::float64, {i32_max, i32_min, 16777217, -16777217, -1}},
      {dtypes::uint32, dtypes::float32, {4294967295.0, 2147483648.0, 2147483649.0, 16777217}},
      {dtypes::int64, dtypes::float64, {0x1p62, -0x1p63, 0x1p53 + 2, -(0x1p53 + 2), -1}},
      {dtypes::int8, dtypes::float32, {-128, 127, -1}},
      {dtypes::uint8, dtypes::float32, {255, 128, 0}},
      {dtypes::int16, dtypes::float32, {-32768, 32767}},
      {dtypes::uint64, dtypes::float64, {0x1p63 - 1024, 0x1p62 + 0x1p61, 0x1p53 + 2, 1}},
      // float -> int: truncation toward zero (halves both ways), the largest values that fit
      {dtypes::float32, dtypes::int32, {2.5, -2.5, 1.5, -1.5, 0.5, -0.5, 0x1.fffffep30, i32_min, 16777216, -0.0}},
      {dtypes::float64, dtypes::int32, {2147483647.75, -2147483648.75, 2.5, -2.5, -0.5, 0.999999}},
      {dtypes::float64, dtypes::int64, {0x1p62, -0x1p63, 2.5, -2.5, 9007199254740991.0}},
      {dtypes::float32, dtypes::int8, {127.75, -128.75, 2.5, -2.5, 100.5}},
      {dtypes::float32, dtypes::uint8, {255.75, 0.5, 2.5, 128.0}},
      {dtypes::float32, dtypes::uint32, {4294967040.0, 2147483648.0, 2.5, 0.75}},
      {dtypes::float32, dtypes::int16, {32767.5, -32768.5, -2.5}},
      {dtypes::float64, dtypes::uint64, {0x1p62 + 0x1p61, 0x1p53 + 2, 2.5, 0.5}},
      // float32 <-> float64: NaN, infinities, -0, denormals, overflow and underflow, rounding
      {dtypes::float32,
       dtypes::float64,
       {nan, inf, -inf, -0.0, 0x1p-149, 0x1.fffffep127, -0x1.fffffep127, 0x1.555556p-2}},
      {dtypes::float64,
       dtypes::float32,
       {nan, inf, -inf, -0.0, 1e300, -1e300, 1e-300, 0x1.fffffefp127, 1.0 / 3, 16777217.0, 0x1.0000003p0}},
      // ints of one width: the same bits, read the other way
      {dtypes::int32, dtypes::uint32, {-1, i32_min, i32_max}},
      {dtypes::uint32, dtypes::int32, {4294967295.0, 2147483648.0, 2147483647.0}},
      {dtypes::int8, dtypes::uint8, {-1, -128, 127}},
      {dtypes::uint16, dtypes::int16, {65535, 32768}},
      // narrowing ints: wrap modulo 2^bits
      {dtypes::int32, dtypes::int8, {300, -129, 255, 128, -128, 127, 65535}},
      {dtypes::int32, dtypes::uint8, {-1, 256, 511, 255}},
      {dtypes::int32, dtypes::int16, {40000, -40000, 32768, -32769}},
      {dtypes::int64, dtypes::int32, {0x1p32 + 5, -0x1p31 - 1, 0x1p40, -0x1p40 - 7}},
      {dtypes::uint32, dtypes::uint8, {4294967295.0, 257}},
      {dtypes::int16, dtypes::int8, {-32768, 200, -200}},
      // widening ints: sign extension of signed, zero extension of unsigned
      {dtypes::int8, dtypes::int32, {-128, 127, -1}},
      {dtypes::uint8, dtypes::int32, {255, 128}},
      {dtypes::int16, dtypes::int64, {-32768, 32767, -1}},
      {dtypes::uint16, dtypes::int32, {65535, 32768}},
      {dtypes::int32, dtypes::int64, {i32_min, i32_max, -1}},
      {dtypes::uint32, dtypes::int64, {4294967295.0, 2147483648.0}},
      {dtypes::int8, dtypes::int16, {-128, -1}},
  };
}

inline std::string name(const CastCase& c) { return to_string(c.from) + " -> " + to_string(c.to); }

// n random non-zero values of the case's source (magnitudes only where the target is unsigned
// and the source a float: a negative float has no unsigned value), the edges spread over them
// (at lane 0, in the middle of a vector and in the last lanes)
inline std::vector<double> inputs(const CastCase& c, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v = testing_programs::random_input(c.from, n, rng);
  if (is_float(c.from) && is_unsigned(c.to))
    for (double& x : v) x = std::abs(x);
  for (size_t i = 0; i < c.edges.size(); ++i) {
    v[(i * 37) % n] = c.edges[i];
    v[n - 1 - (i * 13) % n] = c.edges[i];
  }
  return v;
}

// f(T{}) for the C type of a dtype of the cases (no float16: C has none)
template <class F> auto with_c_type(DType d, F f) {
  switch (d.scalar) {
    case Scalar::Int8:
      return f(int8_t{});
    case Scalar::Uint8:
      return f(uint8_t{});
    case Scalar::Int16:
      return f(int16_t{});
    case Scalar::Uint16:
      return f(uint16_t{});
    case Scalar::Int32:
      return f(int32_t{});
    case Scalar::Uint32:
      return f(uint32_t{});
    case Scalar::Int64:
      return f(int64_t{});
    case Scalar::Uint64:
      return f(uint64_t{});
    case Scalar::Float32:
      return f(float{});
    case Scalar::Float64:
      return f(double{});
    default:
      throw std::runtime_error("cast_cases: no C type for " + to_string(d));
  }
}

// What the C gives for x.cast(to) * 2 where x is `x` in `from`, exactly: the conversion of the
// host's compiler (defined for every input above), then the product in `to` (wrapping ints).
// The float64 oracle keeps float32 values in double, so this is the bit-exact check beside it.
inline double native_cast_times_two(const CastCase& c, double x) {
  return with_c_type(c.from, [&](auto from) {
    using From = decltype(from);
    From v = static_cast<From>(x);
    return with_c_type(c.to, [&](auto to) -> double {
      using To = decltype(to);
      To t = static_cast<To>(v);
      if constexpr (std::is_floating_point_v<To>) {
        return double(To(t * To(2)));
      } else {
        return double(To(uint64_t(t) * 2u));  // modulo 2^64, then to the width of To
      }
    });
  });
}

}  // namespace kiln::cast_cases
