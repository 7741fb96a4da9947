#include "generator/ir/dtype.h"

#include <array>
#include <limits>
#include <vector>

namespace kiln {

namespace {
struct ScalarInfo {
  std::string_view name;
  int bits;
};
constexpr std::array<ScalarInfo, kNumScalars> kInfo = {{
    {"void", 0},
    {"bool", 1},
    {"char", 8},
    {"uchar", 8},
    {"short", 16},
    {"ushort", 16},
    {"int", 32},
    {"uint", 32},
    {"long", 64},
    {"ulong", 64},
    {"weakint", 64},
    {"half", 16},
    {"bfloat16", 16},
    {"float", 32},
    {"double", 64},
    {"weakfloat", 64},
}};

// The seeds' promotion lattice: each type's direct parents.
std::vector<Scalar> parents(Scalar s) {
  using S = Scalar;
  switch (s) {
    case S::Bool:
      return {S::WeakInt};
    case S::WeakInt:
      return {S::Int8, S::Uint8};
    case S::Int8:
      return {S::Int16};
    case S::Int16:
      return {S::Int32};
    case S::Int32:
      return {S::Int64};
    case S::Int64:
      return {S::WeakFloat};
    case S::Uint8:
      return {S::Int16, S::Uint16};
    case S::Uint16:
      return {S::Int32, S::Uint32};
    case S::Uint32:
      return {S::Int64, S::Uint64};
    case S::Uint64:
      return {S::WeakFloat};
    case S::WeakFloat:
      return {S::Float16, S::BFloat16};
    case S::Float16:
      return {S::Float32};
    case S::BFloat16:
      return {S::Float32};
    case S::Float32:
      return {S::Float64};
    case S::Float64:
      return {};
    case S::Void:
      return {};
  }
  return {};
}

uint32_t ancestors_of(Scalar s) {
  uint32_t m = 1u << int(s);
  for (Scalar p : parents(s)) m |= ancestors_of(p);
  return m;
}

// bitmask over Scalar, including s; a table because promotion runs for every node built with binop()
uint32_t ancestors(Scalar s) {
  static const std::array<uint32_t, kNumScalars> table = [] {
    std::array<uint32_t, kNumScalars> t{};
    for (int i = 0; i < kNumScalars; ++i) t[i] = ancestors_of(Scalar(i));
    return t;
  }();
  return table[int(s)];
}
}  // namespace

bool is_int(DType d) {
  auto s = d.scalar;
  return s >= Scalar::Int8 && s <= Scalar::WeakInt;
}
bool is_unsigned(DType d) {
  auto s = d.scalar;
  return s == Scalar::Uint8 || s == Scalar::Uint16 || s == Scalar::Uint32 || s == Scalar::Uint64;
}
bool is_float(DType d) { return d.scalar >= Scalar::Float16; }
bool is_bool(DType d) { return d.scalar == Scalar::Bool; }
bool is_weak(DType d) { return d.scalar == Scalar::WeakInt || d.scalar == Scalar::WeakFloat; }
int bitsize(DType d) { return kInfo[int(d.scalar)].bits; }
int itemsize(DType d) { return d.ptr ? 8 : (bitsize(d) + 7) / 8 * d.count; }

int64_t int_min(DType d) {
  if (is_bool(d) || is_unsigned(d)) return 0;
  if (d.scalar == Scalar::WeakInt) return std::numeric_limits<int64_t>::min();
  int b = bitsize(d);
  return b >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (b - 1));
}
int64_t int_max(DType d) {
  if (is_bool(d)) return 1;
  if (d.scalar == Scalar::WeakInt || d.scalar == Scalar::Int64 || d.scalar == Scalar::Uint64)
    return std::numeric_limits<int64_t>::max();
  int b = bitsize(d);
  return is_unsigned(d) ? (int64_t(1) << b) - 1 : (int64_t(1) << (b - 1)) - 1;
}
uint64_t uint_max(DType d) { return d.scalar == Scalar::Uint64 ? ~uint64_t(0) : uint64_t(int_max(d)); }
i128 exact_min(DType d) { return int_min(d); }
i128 exact_max(DType d) { return d.scalar == Scalar::Uint64 ? i128(~uint64_t(0)) : i128(int_max(d)); }
bool fits(DType d, i128 v) { return exact_min(d) <= v && v <= exact_max(d); }

DType least_upper_dtype(DType a, DType b) {
  if (a.scalar == b.scalar) return a;
  uint32_t common = ancestors(a.scalar) & ancestors(b.scalar);
  // the least element of the common ancestors: the one whose own ancestors contain all others
  for (int i = 0; i < kNumScalars; ++i) {
    if (!(common >> i & 1)) continue;
    if ((ancestors(Scalar(i)) & common) == common) {
      DType r = a.count >= b.count ? a : b;
      r.scalar = Scalar(i);
      return r;
    }
  }
  return dtypes::float64;
}

bool can_lossless_cast(DType from, DType to) {
  if (from == to || (from.scalar == Scalar::Bool && from.count == to.count)) return true;
  if (from.count != to.count || from.ptr || to.ptr) return false;
  using S = Scalar;
  auto in = [f = from.scalar](std::initializer_list<S> l) {
    for (S s : l)
      if (s == f) return true;
    return false;
  };
  switch (to.scalar) {
    case S::WeakInt:
      return is_int(from) && from.scalar != S::WeakInt;
    case S::Float64:
      return in({S::Float32, S::Float16, S::BFloat16, S::Uint32, S::Uint16, S::Uint8, S::Int32, S::Int16, S::Int8});
    case S::Float32:
      return in({S::Float16, S::BFloat16, S::Uint16, S::Uint8, S::Int16, S::Int8});
    case S::Float16:
      return in({S::Uint8, S::Int8});
    case S::Uint64:
      return in({S::Uint32, S::Uint16, S::Uint8});
    case S::Uint32:
      return in({S::Uint16, S::Uint8});
    case S::Uint16:
      return in({S::Uint8});
    case S::Int64:
      return in({S::Uint32, S::Uint16, S::Uint8, S::Int32, S::Int16, S::Int8});
    case S::Int32:
      return in({S::Uint16, S::Uint8, S::Int16, S::Int8});
    case S::Int16:
      return in({S::Uint8, S::Int8});
    default:
      return false;
  }
}

DType strong(DType d) {
  if (d.scalar == Scalar::WeakInt)
    d.scalar = Scalar::Int32;
  else if (d.scalar == Scalar::WeakFloat)
    d.scalar = Scalar::Float32;
  return d;
}
DType weak_of(DType d) {
  if (is_float(d))
    d.scalar = Scalar::WeakFloat;
  else if (is_int(d))
    d.scalar = Scalar::WeakInt;
  return d;
}

std::string to_string(DType d) {
  std::string s(kInfo[int(d.scalar)].name);
  if (d.count != 1) s += "." + std::to_string(d.count);
  if (d.ptr) {
    s += "*";
    if (d.addrspace == AddrSpace::Local) s += "local";
    if (d.addrspace == AddrSpace::Reg) s += "reg";
  }
  return s;
}

std::optional<DType> parse_dtype(std::string_view s) {
  DType d;
  bool ptr = false;
  AddrSpace as = AddrSpace::None;
  if (auto star = s.find('*'); star != std::string_view::npos) {
    std::string_view space = s.substr(star + 1);
    if (space.empty() || space == "global")
      as = AddrSpace::Global;
    else if (space == "local")
      as = AddrSpace::Local;
    else if (space == "reg")
      as = AddrSpace::Reg;
    else
      return std::nullopt;
    ptr = true;
    s = s.substr(0, star);
  }
  int count = 1;
  if (auto dot = s.find('.'); dot != std::string_view::npos) {
    std::string_view n = s.substr(dot + 1);
    if (n.empty() || n.size() > 3) return std::nullopt;
    count = 0;
    for (char c : n) {
      if (c < '0' || c > '9') return std::nullopt;
      count = count * 10 + (c - '0');
    }
    if (count < 1 || count > 255) return std::nullopt;
    s = s.substr(0, dot);
  }
  static constexpr std::pair<std::string_view, Scalar> kAliases[] = {
      {"i8", Scalar::Int8},          {"int8", Scalar::Int8},           {"u8", Scalar::Uint8},
      {"uint8", Scalar::Uint8},      {"i16", Scalar::Int16},           {"int16", Scalar::Int16},
      {"u16", Scalar::Uint16},       {"uint16", Scalar::Uint16},       {"i32", Scalar::Int32},
      {"int32", Scalar::Int32},      {"u32", Scalar::Uint32},          {"uint32", Scalar::Uint32},
      {"i64", Scalar::Int64},        {"int64", Scalar::Int64},         {"u64", Scalar::Uint64},
      {"uint64", Scalar::Uint64},    {"f16", Scalar::Float16},         {"float16", Scalar::Float16},
      {"bf16", Scalar::BFloat16},    {"f32", Scalar::Float32},         {"float32", Scalar::Float32},
      {"f64", Scalar::Float64},      {"float64", Scalar::Float64},     {"index", Scalar::WeakInt},
      {"signed char", Scalar::Int8}, {"unsigned char", Scalar::Uint8}, {"__bf16", Scalar::BFloat16},
  };
  bool found = false;
  for (int i = 0; i < kNumScalars && !found; ++i)
    if (kInfo[i].name == s) d.scalar = Scalar(i), found = true;
  for (const auto& [name, sc] : kAliases)
    if (!found && name == s) d.scalar = sc, found = true;
  if (!found) return std::nullopt;
  d.count = uint8_t(count);
  d.ptr = ptr;
  d.addrspace = as;
  return d;
}

}  // namespace kiln
