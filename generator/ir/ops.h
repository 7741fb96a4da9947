// The op enum, its names and its groups, all generated from ops.def.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

enum OpGroup : uint32_t {
  G_UNARY = 1u << 0,
  G_BINARY = 1u << 1,
  G_TERNARY = 1u << 2,
  G_COMMUTATIVE = 1u << 3,
  G_ASSOCIATIVE = 1u << 4,
  G_IDEMPOTENT = 1u << 5,
  G_COMPARISON = 1u << 6,
  G_MOVEMENT = 1u << 7,
  G_IRREDUCIBLE = 1u << 8,
  G_ELEMENTWISE = 1u << 9,
};

enum class Op : uint8_t {
#define OP(name, groups) name,
#include "generator/ir/ops.def"
#undef OP
};

inline constexpr int kNumOps = 0
#define OP(name, groups) +1
#include "generator/ir/ops.def"
#undef OP
    ;

namespace detail {
inline constexpr uint32_t kOpGroups[] = {
#define OP(name, groups) (groups) | (((groups) & (G_UNARY | G_BINARY | G_TERNARY)) ? G_ELEMENTWISE : 0u),
#include "generator/ir/ops.def"
#undef OP
};
inline constexpr std::string_view kOpNames[] = {
#define OP(name, groups) #name,
#include "generator/ir/ops.def"
#undef OP
};
}  // namespace detail

constexpr uint32_t op_groups(Op op) { return detail::kOpGroups[static_cast<int>(op)]; }
constexpr bool in_group(Op op, uint32_t g) { return (op_groups(op) & g) != 0; }
constexpr bool is_alu(Op op) { return in_group(op, G_UNARY | G_BINARY | G_TERNARY); }
constexpr std::string_view op_name(Op op) { return detail::kOpNames[static_cast<int>(op)]; }
std::optional<Op> parse_op(std::string_view name);

// A set of ops as a bitset, for patterns and groups.
class OpSet {
 public:
  constexpr OpSet() = default;
  constexpr OpSet(Op op) { add(op); }  // NOLINT: a single op is a set
  constexpr OpSet(std::initializer_list<Op> ops) {
    for (Op o : ops) add(o);
  }
  static constexpr OpSet of_group(uint32_t g) {
    OpSet s;
    for (int i = 0; i < kNumOps; ++i)
      if (detail::kOpGroups[i] & g) s.add(static_cast<Op>(i));
    return s;
  }
  constexpr void add(Op op) { bits_[int(op) / 64] |= uint64_t(1) << (int(op) % 64); }
  constexpr bool has(Op op) const { return (bits_[int(op) / 64] >> (int(op) % 64)) & 1; }
  constexpr bool empty() const { return bits_[0] == 0 && bits_[1] == 0; }
  constexpr OpSet operator|(OpSet o) const {
    OpSet r = *this;
    r.bits_[0] |= o.bits_[0];
    r.bits_[1] |= o.bits_[1];
    return r;
  }
  constexpr OpSet operator-(OpSet o) const {
    OpSet r = *this;
    r.bits_[0] &= ~o.bits_[0];
    r.bits_[1] &= ~o.bits_[1];
    return r;
  }
  constexpr bool intersects(OpSet o) const { return (bits_[0] & o.bits_[0]) != 0 || (bits_[1] & o.bits_[1]) != 0; }
  template <class F> constexpr void for_each(F&& f) const {
    for (int i = 0; i < kNumOps; ++i)
      if (has(static_cast<Op>(i))) f(static_cast<Op>(i));
  }

 private:
  uint64_t bits_[2] = {0, 0};
};
static_assert(kNumOps <= 128, "OpSet holds 128 ops");

}  // namespace kiln
