// UPat: patterns over UOps. They match op sets, dtype sets, args, sources (ordered, any
// permutation for commutative ops, one pattern repeated over all sources, or a prefix), and bind
// named captures. Operators build patterns that read like algebra: `x * 1`, `(x + c0) + c1`.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "generator/ir/uop.h"

namespace kiln {

inline constexpr int kMaxCaptures = 48;

class UPat;

// The captures of one match; index with the pattern that named them: m[x], m[c0].
class Match {
 public:
  const UOp* operator[](const UPat& p) const;
  const UOp* get(int slot) const { return slots_[slot]; }
  int64_t ival(const UPat& p) const { return (*this)[p]->ival(); }  // an integer CONST capture's value
  const UOp* root = nullptr;                                        // the node the rule matched
  std::array<const UOp*, kMaxCaptures> slots_{};
};

struct PatNode;

class UPat {
 public:
  enum class SrcMode : uint8_t { None, Ordered, Permute, Repeat };

  UPat();  // matches anything
  // a named wildcard; names map to capture slots shared by all patterns
  static UPat var(std::string_view name, std::vector<DType> dtypes = {});
  static UPat cvar(std::string_view name, std::vector<DType> dtypes = {});  // a named CONST
  static UPat cnst(int64_t v);  // a CONST equal to v (numerically: 0 matches 0, 0.0 and false)
  static UPat cnst_f(double v);
  static UPat cbool(bool v);
  static UPat invalid();
  static UPat op(OpSet ops, std::vector<UPat> src = {}, SrcMode mode = SrcMode::Ordered);
  static UPat any_of(std::vector<UPat> alternatives);  // the first alternatives that match, in order

  UPat named(std::string_view name) const;
  UPat dtype(std::vector<DType> dts) const;
  UPat arg(Arg a) const;
  UPat allow_any_len() const;                        // sources are a prefix
  UPat or_casted(std::string_view name = {}) const;  // this, or CAST(this)
  UPat cast(std::vector<DType> dts = {}) const;      // CAST(this)
  UPat where(const UPat& t, const UPat& f) const;
  UPat logical_not() const;  // (this != true)
  UPat ne(const UPat& o) const;
  UPat maximum(const UPat& o) const;
  UPat alu(Op op, const UPat& o) const;  // permutations for commutative ops
  UPat fold() const;                     // on a right-hand-side template: constant-fold after building

  int capture() const;  // capture slot or -1
  const PatNode& node() const { return *n_; }
  // For rules as data: instantiate this pattern as a template with the captures of `m`.
  const UOp* build(const Match& m) const;

 private:
  explicit UPat(std::shared_ptr<const PatNode> n) : n_(std::move(n)) {}
  std::shared_ptr<const PatNode> n_;
  friend struct PatNode;
};

struct PatNode {
  OpSet ops;                  // empty: any op
  std::vector<DType> dtypes;  // empty: any dtype
  std::optional<Arg> arg;
  std::optional<ConstValue> const_num;  // numeric CONST match
  int capture = -1;
  UPat::SrcMode mode = UPat::SrcMode::None;
  bool any_len = false;
  bool fold = false;
  std::vector<UPat> src;
  std::vector<UPat> alternatives;  // non-empty: an any_of node
  OpSet early_reject;              // ops that must occur among the direct sources
  // the same as a short list, for the hot path (no scan over every op)
  std::array<Op, 8> reject_ops{};
  uint8_t n_reject = 0;
  int16_t single_op = -1;  // the op when `ops` holds exactly one
  // `dtypes` inline when they are few (kManyDtypes: read `dtypes`), and whether the rare checks
  // (const_num, arg, reject_ops) apply, so the common head check reads one cache line
  static constexpr uint8_t kManyDtypes = 0xff;
  uint8_t ndt = 0;
  std::array<DType, 4> dt{};
  bool rare_checks = false;
  bool leaf = true;  // no sources and no alternatives: matched by its head and capture alone
};

// The capture slot for a name (a process-wide table, fixed once patterns are built).
int capture_slot(std::string_view name);
std::string_view capture_name(int slot);

// Calls `on_match` for every way `p` matches `u` (permutations and alternatives in order)
// until it returns true. No allocation.
template <class F> bool match_each(const UPat& p, const UOp* u, Match& m, F&& on_match);
bool match_first(const UPat& p, const UOp* u, Match& m);  // any match at all

UPat operator+(const UPat& a, const UPat& b);
UPat operator*(const UPat& a, const UPat& b);
UPat operator/(const UPat& a, const UPat& b);  // FLOORDIV
UPat operator%(const UPat& a, const UPat& b);  // FLOORMOD
UPat operator<(const UPat& a, const UPat& b);
UPat operator!=(const UPat& a, const UPat& b);
UPat operator&(const UPat& a, const UPat& b);
UPat operator|(const UPat& a, const UPat& b);
UPat operator^(const UPat& a, const UPat& b);
UPat operator<<(const UPat& a, const UPat& b);
UPat operator>>(const UPat& a, const UPat& b);
UPat operator+(const UPat& a, int64_t b);
UPat operator*(const UPat& a, int64_t b);
UPat operator/(const UPat& a, int64_t b);
UPat operator%(const UPat& a, int64_t b);
UPat operator<(const UPat& a, int64_t b);
UPat operator!=(const UPat& a, int64_t b);
UPat operator&(const UPat& a, int64_t b);
UPat operator|(const UPat& a, int64_t b);
UPat operator^(const UPat& a, int64_t b);
UPat operator+(int64_t a, const UPat& b);
UPat operator*(int64_t a, const UPat& b);

// Predeclared captures: wildcards and constants, so rules read like algebra.
namespace pat {
extern const UPat x, y, z, w, a, b, c, d;
extern const UPat c0, c1, c2, c3;
}  // namespace pat

// ----- implementation of the matcher
// A non-owning reference to a `bool()` continuation: the matcher is written in continuation-
// passing style (each matched node calls "match the rest"), so backtracking needs no allocation.
class Cont {
 public:
  template <class F> Cont(F& f) : obj_(&f), call_([](void* o) { return (*static_cast<F*>(o))(); }) {}  // NOLINT
  bool operator()() const { return call_(obj_); }

 private:
  void* obj_;
  bool (*call_)(void*);
};

namespace detail {
bool match_rec(const UPat& p, const UOp* u, Match& m, Cont k);
// what a node must be for `p` to match it, its sources and captures aside (for any_of: one of the alternatives)
bool head_matches(const PatNode& p, const UOp* u);
}  // namespace detail

template <class F> bool match_each(const UPat& p, const UOp* u, Match& m, F&& on_match) {
  m.root = u;
  auto k = [&]() { return on_match(m); };
  return detail::match_rec(p, u, m, Cont(k));
}

}  // namespace kiln
