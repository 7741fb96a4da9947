// Range analysis: [vmin, vmax] of every node, cached on the node, computed bottom-up without
// recursion. Sound for fixed-width integers: a result that could wrap gets the dtype's range.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "generator/ir/uop.h"

namespace kiln {

namespace {

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

ConstValue default_min(DType d) {
  if (is_bool(d)) return ConstValue::of_bool(false);
  if (is_float(d)) return ConstValue::of_float(-INFINITY);
  if (is_int(d)) return ConstValue::of_int(int_min(d));
  return ConstValue::of_int(kI64Min);
}
ConstValue default_max(DType d) {
  if (is_bool(d)) return ConstValue::of_bool(true);
  if (is_float(d)) return ConstValue::of_float(INFINITY);
  if (is_int(d)) return ConstValue::of_int(carried_value(d, exact_max(d)));
  return ConstValue::of_int(kI64Max);
}

// products of exact bounds: two uint64 bounds can pass what int128 holds
std::optional<i128> mul(i128 a, i128 b) {
  i128 r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

i128 fdiv(i128 a, i128 b) {
  i128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
i128 fmod_(i128 a, i128 b) { return a - fdiv(a, b) * b; }
i128 cdiv(i128 a, i128 b) { return a / b; }

}  // namespace

struct BoundsImpl {
  static i128 lo(const UOp* u) { return exact_value(u->dtype, u->vmin_.i); }
  static i128 hi(const UOp* u) { return exact_value(u->dtype, u->vmax_.i); }

  static inline thread_local bool clamped = false;  // set by ints() for the node being computed

  static void compute(const UOp* u) {
    clamped = false;
    auto [lo, hi] = bounds(u);
    u->vmin_ = lo;
    u->vmax_ = hi;
    u->saturated_ = clamped;
    u->saturated_below_ = clamped;
    for (const UOp* s : u->src()) u->saturated_below_ = u->saturated_below_ || s->saturated_below_;
    u->bounds_done_ = true;
  }

  // integer result from 128-bit bounds: fixed-width dtypes fall back to their full range when the
  // value could leave it; the index type saturates at the int64 carrier.
  static std::pair<ConstValue, ConstValue> ints(DType d, i128 lo, i128 hi) {
    if (lo > hi)
      return {ConstValue::of_int(int64_t(std::max<i128>(lo, kI64Min))),
              ConstValue::of_int(int64_t(std::min<i128>(hi, kI64Max)))};
    if (d.scalar == Scalar::WeakInt || !is_int(d)) {
      clamped = clamped || lo < kI64Min || hi > kI64Max;
      return {ConstValue::of_int(int64_t(std::clamp<i128>(lo, kI64Min, kI64Max))),
              ConstValue::of_int(int64_t(std::clamp<i128>(hi, kI64Min, kI64Max)))};
    }
    if (!fits(d, lo) || !fits(d, hi)) return {default_min(d), default_max(d)};
    return {ConstValue::of_int(carried_value(d, lo)), ConstValue::of_int(carried_value(d, hi))};
  }
  static std::pair<ConstValue, ConstValue> bools(bool lo, bool hi) {
    return {ConstValue::of_bool(lo), ConstValue::of_bool(hi)};
  }

  static std::pair<ConstValue, ConstValue> bounds(const UOp* u) {
    DType d = u->dtype;
    Op op = u->op;
    if (in_group(op, G_BINARY) && !is_float(d) && u->nsrc() == 2) {
      const UOp* s0 = u->src(0);
      const UOp* s1 = u->src(1);
      bool fl = is_float(s0->dtype) || is_float(s1->dtype);
      if (op == Op::CMPLT) {
        if (fl)
          return bools(s0->vmax_.as_double() < s1->vmin_.as_double(), s0->vmin_.as_double() < s1->vmax_.as_double());
        return bools(hi(s0) < lo(s1), lo(s0) < hi(s1));
      }
      if (op == Op::CMPNE || op == Op::CMPEQ) {
        bool disjoint, same_point;
        if (fl) {
          double a0 = s0->vmin_.as_double(), a1 = s0->vmax_.as_double(), b0 = s1->vmin_.as_double(),
                 b1 = s1->vmax_.as_double();
          disjoint = a1 < b0 || b1 < a0;
          same_point = a0 == a1 && a1 == b0 && b0 == b1;
        } else {
          i128 a0 = lo(s0), a1 = hi(s0), b0 = lo(s1), b1 = hi(s1);
          disjoint = a1 < b0 || b1 < a0;
          same_point = a0 == a1 && a1 == b0 && b0 == b1;
        }
        if (op == Op::CMPNE) return bools(disjoint, !same_point);
        return bools(same_point, !disjoint);
      }
      if (is_bool(d)) {
        bool a0 = s0->vmin_.i, a1 = s0->vmax_.i, b0 = s1->vmin_.i, b1 = s1->vmax_.i;
        if (op == Op::OR || op == Op::ADD || op == Op::MAX) return bools(a0 || b0, a1 || b1);
        if (op == Op::AND || op == Op::MUL) return bools(a0 && b0, a1 && b1);
        return {default_min(d), default_max(d)};
      }
      if (fl || !is_int(d)) return {default_min(d), default_max(d)};
      i128 a0 = lo(s0), a1 = hi(s0), b0 = lo(s1), b1 = hi(s1);
      switch (op) {
        case Op::ADD:
          return ints(d, a0 + b0, a1 + b1);
        case Op::SUB:
          return ints(d, a0 - b1, a1 - b0);
        case Op::MUL: {
          auto p0 = mul(a0, b0), p1 = mul(a0, b1), p2 = mul(a1, b0), p3 = mul(a1, b1);
          if (!p0 || !p1 || !p2 || !p3) break;
          i128 v[4] = {*p0, *p1, *p2, *p3};
          return ints(d, *std::min_element(v, v + 4), *std::max_element(v, v + 4));
        }
        case Op::AND:
          if (b0 == b1 && b0 >= 0) return ints(d, 0, a0 < 0 ? b1 : std::min(a1, b1));
          if (a0 == a1 && a0 >= 0) return ints(d, 0, b0 < 0 ? a1 : std::min(b1, a1));
          if (a0 >= 0 && b0 >= 0) return ints(d, 0, std::min(a1, b1));
          break;
        case Op::OR:
          if (a0 >= 0 && b0 >= 0) {
            i128 m = std::max(a1, b1), p = 1;
            while (p <= m) p <<= 1;
            return ints(d, std::max(a0, b0), p - 1);
          }
          break;
        case Op::SHL:
          if (b0 == b1 && b0 >= 0 && b0 < 63) return ints(d, a0 * (i128(1) << int(b0)), a1 * (i128(1) << int(b0)));
          break;
        case Op::SHR:
          if (b0 == b1 && b0 >= 0 && b0 < 64) return ints(d, a0 >> int(b0), a1 >> int(b0));
          break;
        case Op::CMOD:
          if (b0 == b1 && b0 > 0) {
            i128 c = b0;
            return ints(d, a0 > 0 ? 0 : (a0 > -c ? a0 : -(c - 1)), a1 < 0 ? 0 : (a1 < c ? a1 : c - 1));
          }
          if (b0 > 0)
            return a0 >= 0 ? ints(d, 0, b1 - 1) : a1 <= 0 ? ints(d, -(b1 - 1), 0) : ints(d, -(b1 - 1), b1 - 1);
          if (b1 < 0)
            return a0 >= 0 ? ints(d, 0, -b0 - 1) : a1 <= 0 ? ints(d, -(-b0 - 1), 0) : ints(d, -(-b0 - 1), -b0 - 1);
          break;
        case Op::CDIV:
          if ((b0 > 0 && b1 > 0) || (b0 < 0 && b1 < 0)) {  // the divisor's range excludes 0
            i128 v[4] = {cdiv(a0, b0), cdiv(a0, b1), cdiv(a1, b0), cdiv(a1, b1)};
            return ints(d, *std::min_element(v, v + 4), *std::max_element(v, v + 4));
          }
          break;
        case Op::FLOORDIV:
          if (a0 > a1) return ints(d, 0, 0);
          if ((b0 > 0 && b1 > 0) || (b0 < 0 && b1 < 0)) {
            i128 v[4] = {fdiv(a0, b0), fdiv(a0, b1), fdiv(a1, b0), fdiv(a1, b1)};
            return ints(d, *std::min_element(v, v + 4), *std::max_element(v, v + 4));
          }
          break;
        case Op::FLOORMOD:
          if (a0 > a1) return ints(d, 0, 0);
          if (b0 == b1 && b0 > 0) {
            i128 c = b0;
            if (fdiv(a0, c) == fdiv(a1, c)) return ints(d, fmod_(a0, c), fmod_(a1, c));
            return ints(d, 0, c - 1);
          }
          if (b0 == b1 && b0 < 0) {
            i128 c = b0;
            if (fdiv(a0, c) == fdiv(a1, c)) return ints(d, fmod_(a0, c), fmod_(a1, c));
            return ints(d, c + 1, 0);
          }
          if (b0 > 0) return ints(d, 0, b1 - 1);
          if (b1 < 0) return ints(d, b0 + 1, 0);
          break;
        case Op::XOR:
          if (b0 == b1 && b0 == -1) return ints(d, ~a1, ~a0);
          if (a0 == a1 && a0 == -1) return ints(d, ~b1, ~b0);
          if (a0 >= 0 && b0 >= 0) {  // no bit above the larger maximum's highest is set
            i128 m = std::max(a1, b1), p = 1;
            while (p <= m) p <<= 1;
            return ints(d, 0, p - 1);
          }
          break;
        case Op::MAX:
          return ints(d, std::max(a0, b0), std::max(a1, b1));
        default:
          break;
      }
      return {default_min(d), default_max(d)};
    }
    switch (op) {
      case Op::WHERE:
        if (is_int(d)) {
          const UOp* t = u->src(1);
          const UOp* f = u->src(2);
          if (t->is_invalid()) return {f->vmin_, f->vmax_};
          if (f->is_invalid()) return {t->vmin_, t->vmax_};
          return ints(d, std::min(lo(t), lo(f)), std::max(hi(t), hi(f)));
        }
        break;
      case Op::DEFINE_VAR: {
        const auto& v = u->arg<VarArg>();
        if (is_float(d)) return {ConstValue::of_float(v.fmin), ConstValue::of_float(v.fmax)};
        if (is_int(d)) return ints(d, exact_value(d, v.min), exact_value(d, v.max));
        return {ConstValue::of_int(v.min), ConstValue::of_int(v.max)};
      }
      case Op::RANGE:
      case Op::SPECIAL:
        if (d != dtypes::void_ && u->nsrc() > 0 && is_int(u->src(0)->dtype)) return ints(d, 0, hi(u->src(0)) - 1);
        break;
      case Op::AFTER:
      case Op::INDEX:
        if (u->nsrc() > 0) return {u->src(0)->vmin_, u->src(0)->vmax_};
        break;
      case Op::STACK: {
        if (u->nsrc() == 0) break;
        if (d.scalar == Scalar::Uint64) {  // the lanes' exact bounds (an Invalid lane counts as its bool's)
          i128 l = lo(u->src(0)), h = hi(u->src(0));
          for (const UOp* s : u->src()) {
            if (is_float(s->dtype)) return {default_min(d), default_max(d)};
            l = std::min(l, lo(s)), h = std::max(h, hi(s));
          }
          return ints(d.base(), l, h);
        }
        ConstValue l = u->src(0)->vmin_, h = u->src(0)->vmax_;
        for (const UOp* s : u->src()) {
          if (s->vmin_.as_double() < l.as_double() || (!s->vmin_.is_float() && s->vmin_.i < l.i)) l = s->vmin_;
          if (s->vmax_.as_double() > h.as_double() || (!s->vmax_.is_float() && s->vmax_.i > h.i)) h = s->vmax_;
        }
        return {l, h};
      }
      case Op::CONST:
        if (!u->cval().is_invalid()) return {u->cval(), u->cval()};
        break;
      case Op::CAST: {
        const UOp* s = u->src(0);
        if (s->vmin_.is_invalid() || s->vmax_.is_invalid()) break;
        // the source's bounds as numbers (uint64 read unsigned)
        auto num = [&](const ConstValue& v) { return v.is_float() ? v.f : double(exact_value(s->dtype, v.i)); };
        if (is_int(d)) {
          // truncation toward zero is monotone
          auto to_int = [&](const ConstValue& v) -> std::optional<i128> {
            if (!v.is_float()) return exact_value(s->dtype, v.i);
            if (!std::isfinite(v.f) || std::fabs(v.f) > 9.2e18) return std::nullopt;
            return i128(static_cast<int64_t>(std::trunc(v.f)));
          };
          auto l = to_int(s->vmin_), h = to_int(s->vmax_);
          if (!l || !h) break;
          // a value out of range wraps (a float out of range is undefined in C): the full range then
          if (fits(d, *l) && fits(d, *h)) return ints(d, *l, *h);
          break;
        }
        if (is_float(d)) {
          return {truncate_to(d, ConstValue::of_float(num(s->vmin_))),
                  truncate_to(d, ConstValue::of_float(num(s->vmax_)))};
        }
        if (is_bool(d)) {
          bool can_be_zero = num(s->vmin_) <= 0 && num(s->vmax_) >= 0;
          bool all_zero = num(s->vmin_) == 0 && num(s->vmax_) == 0;
          return bools(!can_be_zero, !all_zero);
        }
        break;
      }
      default:
        break;
    }
    return {default_min(d), default_max(d)};
  }
};

void UOp::compute_bounds() const {
  if (std::all_of(src().begin(), src().end(), [](const UOp* s) { return s->bounds_done_; })) {
    BoundsImpl::compute(this);  // the common case: only this node is missing
    return;
  }
  // iterative post-order over the nodes whose bounds are missing; the stack is kept per thread
  // (from `base` up: this call's part, should a node's bounds ever ask for others')
  thread_local std::vector<std::pair<const UOp*, uint32_t>> stack;
  const size_t base = stack.size();
  stack.push_back({this, 0});
  while (stack.size() > base) {
    auto [u, i] = stack.back();
    if (u->bounds_done_) {
      stack.pop_back();
      continue;
    }
    if (i < u->nsrc()) {
      const UOp* s = u->src(i);
      ++stack.back().second;
      if (!s->bounds_done_) stack.push_back({s, 0});
      continue;
    }
    stack.pop_back();
    BoundsImpl::compute(u);
  }
}

const ConstValue& UOp::vmin() const {
  if (!bounds_done_) compute_bounds();
  return vmin_;
}
const ConstValue& UOp::vmax() const {
  if (!bounds_done_) compute_bounds();
  return vmax_;
}

}  // namespace kiln
