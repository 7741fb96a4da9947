// Data types of the IR: scalars, vectors, pointers with an address space, and the weak
// (untyped literal / index) int and float of the seeds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

__extension__ typedef __int128 i128;  // exact integer values of every dtype (uint64 and int64 alike)

// Scalar kinds in promotion-priority order. `weakint` is the index type: it behaves like an
// integer of unbounded width (we carry it in int64) and is what shapes and indices use.
enum class Scalar : uint8_t {
  Void,
  Bool,
  Int8,
  Uint8,
  Int16,
  Uint16,
  Int32,
  Uint32,
  Int64,
  Uint64,
  WeakInt,
  Float16,
  BFloat16,
  Float32,
  Float64,
  WeakFloat,
};
inline constexpr int kNumScalars = 16;

enum class AddrSpace : uint8_t { None, Global, Local, Reg };

// A DType is a small value: compare with ==, copy freely.
struct DType {
  Scalar scalar = Scalar::Void;
  uint8_t count = 1;  // vector width (1 for scalars)
  bool ptr = false;
  AddrSpace addrspace = AddrSpace::None;  // only for pointers

  constexpr DType() = default;
  constexpr DType(Scalar s) : scalar(s) {}  // NOLINT: scalars convert implicitly
  constexpr DType(Scalar s, uint8_t n, bool p, AddrSpace a) : scalar(s), count(n), ptr(p), addrspace(a) {}

  constexpr bool operator==(const DType&) const = default;
  constexpr DType base() const { return DType(scalar); }
  constexpr DType vec(int n) const { return DType(scalar, static_cast<uint8_t>(n), false, AddrSpace::None); }
  constexpr DType as_ptr(AddrSpace a = AddrSpace::Global) const { return DType(scalar, count, true, a); }
  constexpr DType elem() const { return DType(scalar, count, false, AddrSpace::None); }  // pointee of a pointer
  uint32_t key() const {
    return uint32_t(scalar) | (uint32_t(count) << 8) | (uint32_t(ptr) << 16) | (uint32_t(addrspace) << 17);
  }
};

namespace dtypes {
inline constexpr DType void_{Scalar::Void}, bool_{Scalar::Bool}, int8{Scalar::Int8}, uint8{Scalar::Uint8},
    int16{Scalar::Int16}, uint16{Scalar::Uint16}, int32{Scalar::Int32}, uint32{Scalar::Uint32}, int64{Scalar::Int64},
    uint64{Scalar::Uint64}, weakint{Scalar::WeakInt}, float16{Scalar::Float16}, bfloat16{Scalar::BFloat16},
    float32{Scalar::Float32}, float64{Scalar::Float64}, weakfloat{Scalar::WeakFloat};
}  // namespace dtypes

// Predicates look at the scalar only (a float vector is a float).
bool is_int(DType d);       // fixed-width ints and weakint (not bool)
bool is_unsigned(DType d);  // uint8..uint64
bool is_float(DType d);     // float16..float64 and weakfloat
bool is_bool(DType d);
bool is_weak(DType d);
int bitsize(DType d);   // scalar bits; weakint reports 64, its carrier
int itemsize(DType d);  // bytes of the whole (vector) value
// Value limits of the scalar type; weakint is carried as int64.
int64_t int_min(DType d);
int64_t int_max(DType d);  // for uint64 this is INT64_MAX: use exact_max for its real limit
uint64_t uint_max(DType d);
// Integers of every dtype are carried in int64; uint64 carries its values from 2^63 up as their bit
// pattern (negative). These convert between the carried int64 and the exact value.
inline i128 exact_value(DType d, int64_t carried) {  // uint64: the unsigned reading; others: the value itself
  return d.scalar == Scalar::Uint64 ? i128(uint64_t(carried)) : i128(carried);
}
inline int64_t carried_value(DType, i128 v) { return int64_t(uint64_t(v)); }  // the inverse, for v in the dtype
i128 exact_min(DType d);  // the dtype's limits as exact values (bool: 0, 1)
i128 exact_max(DType d);
bool fits(DType d, i128 v);  // exact_min(d) <= v <= exact_max(d)

// Least upper bound in the seeds' promotion lattice (bool < weakint < int8/uint8 < ... < weakfloat < half ...).
DType least_upper_dtype(DType a, DType b);
// Whether every value of `from` is representable in `to`.
bool can_lossless_cast(DType from, DType to);
// The strong dtype a weak dtype becomes by default (weakint -> int32, weakfloat -> float32).
DType strong(DType d);
// The weak dtype in the same family (float -> weakfloat, ints -> weakint, others unchanged).
DType weak_of(DType d);

std::string to_string(DType d);
// Parses the names printed by to_string plus common aliases (int32, i32, f32, float32, ...).
std::optional<DType> parse_dtype(std::string_view s);

}  // namespace kiln
