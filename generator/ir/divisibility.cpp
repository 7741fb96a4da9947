// Syntactic divisibility facts about index expressions: what integer is known to divide a node,
// and the quotient when the division is exact by construction. These never look at value
// ranges; they only read the shape of the expression (consts, sums, products, var multiples).
#include "generator/ir/int_math.h"
#include "generator/ir/uop.h"

#include <cmath>
#include <numeric>

namespace kiln {

static int64_t abs_gcd(int64_t a, int64_t b) { return safe_gcd(a, b); }

// Python's floor semantics: the remainder has the divisor's sign.
static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 traps
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static bool is_int_const(const UOp* u) { return u->is_const() && u->cval().is_int(); }

int64_t UOp::const_factor() const {
  switch (op) {
    case Op::CONST:
      return cval().is_int() ? ival() : 1;
    case Op::STACK: {
      int64_t g = 0;
      for (const UOp* s : src()) g = abs_gcd(g, s->const_factor());
      return g;
    }
    case Op::ADD: {
      // over the leaves of the sum, without recursion: long sums must not overflow the stack
      int64_t g = 0;
      for (const UOp* t : split(Op::ADD)) g = abs_gcd(g, t->const_factor());
      return g;
    }
    case Op::MUL:
      if (is_int_const(src(0))) return src(0)->ival();
      if (is_int_const(src(1))) return src(1)->ival();
      return 1;
    case Op::DEFINE_VAR:
      return arg<VarArg>().multiple_of;
    default:
      return 1;
  }
}

// Sums deeper than this are "not sure": the quotient is built recursively, and giving up is
// always a sound answer for these facts.
static constexpr int kMaxSumDepth = 2000;
static thread_local int g_depth = 0;
namespace {
struct DepthGuard {
  DepthGuard() { ++g_depth; }
  ~DepthGuard() { --g_depth; }
  bool too_deep() const { return g_depth > kMaxSumDepth; }
};
}  // namespace

const UOp* UOp::divides(int64_t v) const {
  DepthGuard guard;
  if (guard.too_deep()) return nullptr;
  if (v == 1) return this;
  if (v == 0) return nullptr;  // nothing is "exactly" divided by zero
  switch (op) {
    case Op::CONST:
      if (!cval().is_int() || floor_mod(ival(), v) != 0) return nullptr;
      if (v == -1 && ival() == INT64_MIN) return nullptr;  // 2^63 is no int64
      return const_like(floor_div(ival(), v));
    case Op::STACK: {
      std::vector<const UOp*> parts;
      parts.reserve(nsrc());
      for (const UOp* s : src()) {
        const UOp* q = s->divides(v);
        if (q == nullptr) return nullptr;
        parts.push_back(q);
      }
      return with_src(parts);
    }
    case Op::ADD: {
      const UOp* d0 = src(0)->divides(v);
      if (d0 == nullptr) return nullptr;
      const UOp* d1 = src(1)->divides(v);
      if (d1 == nullptr) return nullptr;
      return Expr(d0) + Expr(d1);
    }
    case Op::MUL:
      if (const UOp* d0 = src(0)->divides(v)) return Expr(d0) * Expr(src(1));
      if (const UOp* d1 = src(1)->divides(v)) return Expr(src(0)) * Expr(d1);
      return nullptr;
    case Op::FLOORDIV: {
      // (x // c) / v is x / (c * v) where c * v divides x: a dim of a multiple of 64 split by 4
      // (N // 4) is still a multiple of 16
      if (!src(1)->is_const() || !src(1)->cval().is_int() || src(1)->ival() <= 0 || v < 0) return nullptr;
      int64_t cv = 0;
      if (__builtin_mul_overflow(src(1)->ival(), v, &cv)) return nullptr;
      return src(0)->divides(cv);
    }
    case Op::DEFINE_VAR:
      if (floor_mod(arg<VarArg>().multiple_of, v) != 0) return nullptr;
      return Expr(this) / v;  // stays a FLOORDIV: the var's multiple_of makes it exact
    default:
      return nullptr;
  }
}

std::pair<const UOp*, ConstValue> UOp::pop_const(Op sep) const {
  if (op == sep && nsrc() == 2 && src(1)->is_const()) return {src(0), src(1)->cval()};
  auto ident = [&](int64_t iv, double fv) {
    if (is_float(dtype)) return ConstValue::of_float(fv);
    if (is_bool(dtype)) return ConstValue::of_bool(iv != 0);
    return ConstValue::of_int(iv);
  };
  switch (sep) {
    case Op::ADD:
      return {this, ident(0, 0.0)};
    case Op::MUL:
      return {this, ident(1, 1.0)};
    case Op::MAX:
      return {this, ident(is_bool(dtype) ? 0 : int_min(dtype), -HUGE_VAL)};
    default:
      throw InternalError("pop_const: no identity element for " + std::string(op_name(sep)));
  }
}

void UOp::split(Op sep, std::vector<const UOp*>& out) const {
  if (op != sep) {  // the common case: a single leaf
    out.push_back(this);
    return;
  }
  // left-to-right leaves of the `sep` chain; an explicit stack so long chains cannot overflow,
  // kept per thread so a split allocates nothing (from `base` up: this call's part)
  thread_local std::vector<const UOp*> stack;
  const size_t base = stack.size();
  stack.push_back(this);
  while (stack.size() > base) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op != sep) {
      out.push_back(u);
      continue;
    }
    for (size_t i = u->nsrc(); i-- > 0;) stack.push_back(u->src(i));
  }
}

std::vector<const UOp*> UOp::split(Op sep) const {
  std::vector<const UOp*> out;
  split(sep, out);
  return out;
}

const UOp* UOp::divide_exact(const UOp* v) const {
  DepthGuard guard;
  if (guard.too_deep()) return nullptr;
  if (this == v) return const_like(int64_t(1));
  if (v->is_const()) return v->cval().is_int() ? divides(v->ival()) : nullptr;
  if (op == Op::ADD) {
    const UOp* s0 = src(0)->divide_exact(v);
    if (s0 == nullptr) return nullptr;
    const UOp* s1 = src(1)->divide_exact(v);
    if (s1 == nullptr) return nullptr;
    return Expr(s0) + Expr(s1);
  }
  if (op != Op::MUL) return nullptr;
  auto [fac, cst] = pop_const(Op::MUL);
  auto [div_fac, div_cst] = v->pop_const(Op::MUL);
  if (!cst.is_int() || !div_cst.is_int() || div_cst.i == 0 || floor_mod(cst.i, div_cst.i) != 0) return nullptr;
  if (div_cst.i == -1 && cst.i == INT64_MIN) return nullptr;
  // multiset difference of the factors, kept in first-appearance order for a deterministic product
  std::vector<std::pair<const UOp*, int64_t>> count;
  auto slot = [&](const UOp* f) -> int64_t& {
    for (auto& [k, n] : count)
      if (k == f) return n;
    return count.emplace_back(f, 0).second;
  };
  for (const UOp* f : fac->split(Op::MUL)) ++slot(f);
  for (const UOp* f : div_fac->split(Op::MUL)) --slot(f);
  for (auto& [f, n] : count)
    if (n < 0) return nullptr;
  Expr ret = const_like(floor_div(cst.i, div_cst.i));
  for (auto& [f, n] : count)
    for (int64_t i = 0; i < n; ++i) ret = ret * Expr(f);
  return ret;
}

}  // namespace kiln
