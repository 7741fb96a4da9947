// Differential property tests of the symbolic simplifier and of the text form.
//
// SymbolicFuzz: random weakint/bool expression trees over bounded variables are simplified by
// sym() and by symbolic(), then both sides are evaluated exactly (toposort + ref::alu, not the generator's exec_alu) at
// random points and at every corner of the variables' box. The promises defended: the value never changes, every value
// lies inside the [vmin, vmax] of its node (original and simplified), and a second pass changes nothing. Failures are
// counted, shrunk to a minimal expression and printed. Three generators: random trees, index math at the carriers'
// edges, and sums whose remainder terms reach exactly the divisor or a factor of it (checked at every point of their
// box).
//
// TextFuzz: random graphs of every dtype and arg kind survive print -> parse and
// print_graph -> parse as the very same interned pointer.
//
// Randomness is std::mt19937_64 (its output is fixed by the standard) with hand-written
// distributions, so every standard library draws the same cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "generator/frontend/shape.h"
#include "generator/ir/text.h"
#include "generator/ir/uop.h"
#include "generator/ir/verify.h"
#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"
#include "tests/unit/ref_alu.h"

namespace kiln {
namespace {

// ---------------------------------------------------------------- deterministic randomness

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  uint64_t bits() { return g_(); }
  // uniform in [lo, hi]: rejection sampling, the same numbers on every standard library
  int64_t uniform(int64_t lo, int64_t hi) {
    uint64_t n = uint64_t(hi) - uint64_t(lo) + 1;  // 0 means the full 2^64 range
    if (n == 0) return int64_t(bits());
    uint64_t reject_below = (0 - n) % n;  // 2^64 mod n
    uint64_t r;
    do r = bits();
    while (r < reject_below);
    return int64_t(uint64_t(lo) + r % n);
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }
  // an index drawn with the given relative weights
  size_t weighted(std::initializer_list<int> weights) {
    int total = 0;
    for (int w : weights) total += w;
    int64_t r = uniform(0, total - 1);
    size_t i = 0;
    for (int w : weights) {
      if (r < w) return i;
      r -= w;
      ++i;
    }
    return i - 1;
  }
  template <class T> const T& pick(const std::vector<T>& v) { return v[size_t(uniform(0, int64_t(v.size()) - 1))]; }

 private:
  std::mt19937_64 g_;
};

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// ---------------------------------------------------------------- exact evaluation

struct Var {
  const UOp* u;
  int64_t lo, hi, mul;
};
using Point = std::vector<int64_t>;  // a value per Var, in order

// `nrandom` points drawn by `sample`, then every corner of the variables' box
template <class Sample> std::vector<Point> box_points(const std::vector<Var>& vars, int nrandom, Sample sample) {
  std::vector<Point> out;
  for (int k = 0; k < nrandom; ++k) {
    Point p;
    for (const Var& v : vars) p.push_back(sample(v));
    out.push_back(p);
  }
  for (uint32_t corner = 0; corner < (1u << vars.size()); ++corner) {
    Point p;
    for (size_t i = 0; i < vars.size(); ++i) p.push_back(corner >> i & 1 ? vars[i].hi : vars[i].lo);
    out.push_back(p);
  }
  return out;
}

// A graph flattened once (toposort), evaluated at many points. Undefined values (division by
// zero, weakint overflow) are nullopt and make their users undefined.
class Program {
 public:
  Program(const UOp* root, const std::vector<Var>& vars) : order_(toposort(root)) {
    std::unordered_map<const UOp*, int> at;
    for (size_t i = 0; i < order_.size(); ++i) at[order_[i]] = int(i);
    srcs_.resize(order_.size());
    var_of_.assign(order_.size(), -1);
    for (size_t i = 0; i < order_.size(); ++i) {
      for (const UOp* s : order_[i]->src()) srcs_[i].push_back(at.at(s));
      for (size_t v = 0; v < vars.size(); ++v)
        if (order_[i] == vars[v].u) var_of_[i] = int(v);
    }
  }
  const std::vector<const UOp*>& nodes() const { return order_; }

  std::vector<std::optional<ConstValue>> run(const Point& p) const {
    std::vector<std::optional<ConstValue>> val(order_.size());
    std::vector<ConstValue> ops;
    for (size_t i = 0; i < order_.size(); ++i) {
      const UOp* u = order_[i];
      if (u->op == Op::CONST) {
        val[i] = u->cval();
        continue;
      }
      if (u->op == Op::DEFINE_VAR) {
        if (var_of_[i] < 0) continue;  // a variable this case does not know: undefined
        val[i] = ConstValue::of_int(p[size_t(var_of_[i])]);
        continue;
      }
      ops.clear();
      bool ok = true;
      for (int s : srcs_[i]) {
        if (!val[size_t(s)])
          ok = false;
        else
          ops.push_back(*val[size_t(s)]);
      }
      if (ok) val[i] = ref::alu(u->op, u->dtype, ops, operand_dtype(u));
    }
    return val;
  }

 private:
  std::vector<const UOp*> order_;
  std::vector<std::vector<int>> srcs_;
  std::vector<int> var_of_;
};

std::string point_str(const std::vector<Var>& vars, const Point& p) {
  std::string s;
  for (size_t i = 0; i < vars.size(); ++i)
    s += (i ? " " : "") + std::string(vars[i].u->arg<VarArg>().name) + "=" +
         to_string(ConstValue::of_int(p[i]), vars[i].u->dtype);
  return s;
}

std::string value_str(const std::optional<ConstValue>& v, const UOp* like) {
  return v ? to_string(*v, like->dtype) : std::string("undefined");
}

// ---------------------------------------------------------------- the property

enum class Kind { Ok, Exception, NotIdempotent, Undefined, Mismatch, RootOutOfBounds, NodeOutOfBounds };
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Ok:
      return "ok";
    case Kind::Exception:
      return "exception";
    case Kind::NotIdempotent:
      return "not idempotent";
    case Kind::Undefined:
      return "simplified is undefined where the original is defined";
    case Kind::Mismatch:
      return "value mismatch";
    case Kind::RootOutOfBounds:
      return "root value outside [vmin, vmax]";
    case Kind::NodeOutOfBounds:
      return "inner node value outside its [vmin, vmax]";
  }
  return "?";
}

struct Verdict {
  Kind kind = Kind::Ok;
  const UOp* simplified = nullptr;
  std::string detail;
};

// exact values: a uint64 from 2^63 up is carried negative
bool in_bounds(const UOp* u, const ConstValue& v) {
  if (v.is_float() || u->vmin().is_float() || u->vmax().is_float()) return false;
  i128 x = exact_value(u->dtype, v.i);
  return u->exact_lo() <= x && x <= u->exact_hi();
}

std::string bounds_str(const UOp* u) {
  return "[" + to_string(u->vmin(), u->dtype) + ", " + to_string(u->vmax(), u->dtype) + "]";
}

// The first node of `prog` (sources first) whose value at `val` leaves its bounds.
std::optional<std::string> node_out_of_bounds(const Program& prog, const std::vector<std::optional<ConstValue>>& val) {
  for (size_t i = 0; i < val.size(); ++i) {
    const UOp* u = prog.nodes()[i];
    if (!val[i] || in_bounds(u, *val[i])) continue;
    return print(u) + " = " + value_str(val[i], u) + " not in " + bounds_str(u);
  }
  return std::nullopt;
}

Verdict check(const UOp* e, const PatternMatcher& pm, const std::vector<Var>& vars, const std::vector<Point>& points) {
  Verdict v;
  // these graphs have at most a few hundred nodes: a loop shows long before the default cap
  RewriteOptions opts;
  opts.max_rewrites = 20'000;
  try {
    v.simplified = graph_rewrite(e, pm, nullptr, opts);
    // the rewrite must leave well-formed IR (the verifier runs after every stage in tests)
    if (auto bad = verify(v.simplified)) {
      v.kind = Kind::Exception;
      v.detail = "verifier: " + *bad;
      return v;
    }
    const UOp* again = graph_rewrite(v.simplified, pm, nullptr, opts);
    if (again != v.simplified) {
      v.kind = Kind::NotIdempotent;
      v.detail = "second pass: " + print(again);
      return v;
    }
  } catch (const std::exception& ex) {
    v.kind = Kind::Exception;
    v.detail = ex.what();
    return v;
  }
  const UOp* s = v.simplified;
  Program pe(e, vars), ps(s, vars);
  for (const Point& p : points) {
    auto ve = pe.run(p);
    const std::optional<ConstValue>& want = ve.back();
    if (!want) continue;  // the original divides by zero (or overflows) here
    auto vs = ps.run(p);
    const std::optional<ConstValue>& got = vs.back();
    auto fail = [&](Kind k, std::string what) {
      v.kind = k;
      v.detail = "at " + point_str(vars, p) + ": original = " + value_str(want, e) +
                 ", simplified = " + value_str(got, s) + "; " + what;
      return v;
    };
    if (!got) return fail(Kind::Undefined, "");
    if (got->i != want->i || got->is_float() || want->is_float()) return fail(Kind::Mismatch, "");
    if (!in_bounds(s, *want) || !in_bounds(s, *got))
      return fail(Kind::RootOutOfBounds, "simplified bounds " + bounds_str(s));
    if (!in_bounds(e, *want)) return fail(Kind::RootOutOfBounds, "original bounds " + bounds_str(e));
    if (auto m = node_out_of_bounds(pe, ve)) return fail(Kind::NodeOutOfBounds, "in the original: " + *m);
    if (auto m = node_out_of_bounds(ps, vs)) return fail(Kind::NodeOutOfBounds, "in the simplified: " + *m);
  }
  return v;
}

// Greedy shrinking while the same kind of failure remains, restarting after every success: first
// the smallest subexpression that fails alone becomes the root, then a node is replaced by one of
// its sources or by a small constant.
const UOp* shrink(const UOp* e, const PatternMatcher& pm, const std::vector<Var>& vars,
                  const std::vector<Point>& points, Kind kind) {
  Context& ctx = e->ctx();
  for (int round = 0; round < 200; ++round) {
    bool progress = false;
    std::vector<const UOp*> order = toposort(e);
    for (const UOp* n : order) {
      if (n == e || n->op == Op::CONST || check(n, pm, vars, points).kind != kind) continue;
      e = n;
      progress = true;
      break;
    }
    if (progress) continue;
    for (size_t i = order.size(); i-- > 0 && !progress;) {  // big cuts first: from the root down
      const UOp* n = order[i];
      std::vector<const UOp*> cands;
      if (n->op == Op::DEFINE_VAR) {
        const VarArg& va = n->arg<VarArg>();
        cands.push_back(n->const_like(va.min));
        if (exact_value(n->dtype, va.min) < 0 && exact_value(n->dtype, va.max) > 0)
          cands.push_back(n->const_like(int64_t(0)));
      }
      for (const UOp* x : n->src())
        if (x->dtype == n->dtype) cands.push_back(x);
      if (is_bool(n->dtype)) {
        cands.push_back(ctx.cbool(false));
        cands.push_back(ctx.cbool(true));
      } else if (n->op != Op::CONST && n->op != Op::DEFINE_VAR) {
        cands.push_back(n->const_like(int64_t(0)));
        cands.push_back(n->const_like(int64_t(1)));
      } else if (n->op == Op::CONST && n->cval().is_int() && (n->ival() > 1 || n->ival() < -1)) {
        for (int64_t c : {int64_t(1), int64_t(-1), n->ival() / 2, n->ival() - (n->ival() > 0 ? 1 : -1)})
          if (c != 0) cands.push_back(n->const_like(c));
      }
      for (const UOp* c : cands) {
        if (c == n) continue;
        const UOp* smaller = substitute(e, {{n, c}});
        if (smaller == e || check(smaller, pm, vars, points).kind != kind) continue;
        e = smaller;
        progress = true;
        break;
      }
    }
    if (!progress) break;
  }
  return e;
}

// ---------------------------------------------------------------- random index expressions

class ExprGen {
 public:
  ExprGen(Rng& rng, Context& ctx) : rng_(rng), ctx_(ctx) {
    static const char* const kNames[] = {"a", "b", "c", "d"};
    int n = int(rng_.uniform(1, 4));
    for (int i = 0; i < n; ++i) vars_.push_back(make_var(kNames[i]));
  }
  const std::vector<Var>& vars() const { return vars_; }

  const UOp* root() {
    int depth = int(rng_.uniform(1, 6));
    return rng_.chance(15) ? gen_bool(depth) : gen_int(depth);
  }

  // random points, then every corner of the box (at most 16)
  std::vector<Point> points(int nrandom) {
    return box_points(vars_, nrandom, [this](const Var& v) { return sample(v); });
  }

 private:
  Var make_var(const char* name) {
    int64_t lo = 0, hi = 0;
    switch (rng_.weighted({3, 2, 2, 3, 1, 1})) {
      case 0:  // non-negative
        lo = 0, hi = rng_.uniform(0, 24);
        break;
      case 1:  // positive
        lo = rng_.uniform(1, 6), hi = lo + rng_.uniform(0, 30);
        break;
      case 2:  // negative
        hi = -rng_.uniform(1, 10), lo = hi - rng_.uniform(0, 20);
        break;
      case 3:  // crosses zero
        lo = -rng_.uniform(1, 20), hi = rng_.uniform(1, 20);
        break;
      case 4:  // wide
        lo = -rng_.uniform(0, 1000), hi = rng_.uniform(0, 1000);
        break;
      default:  // a single value
        lo = hi = rng_.uniform(-5, 5);
        break;
    }
    int64_t mul = 1;
    if (rng_.chance(10)) {
      mul = rng_.uniform(2, 4);
      lo = floor_div(lo, mul) * mul;
      hi = std::max(lo, floor_div(hi, mul) * mul);
    }
    return {ctx_.var(name, lo, hi, dtypes::weakint, mul), lo, hi, mul};
  }

  int64_t sample(const Var& v) {
    if (rng_.chance(15)) {  // values where floor division and modulo change behaviour
      int64_t special = rng_.pick(std::vector<int64_t>{0, -1, 1, v.lo + v.mul, v.hi - v.mul});
      if (special >= v.lo && special <= v.hi && (special - v.lo) % v.mul == 0) return special;
    }
    return v.lo + rng_.uniform(0, (v.hi - v.lo) / v.mul) * v.mul;
  }

  const UOp* var() { return rng_.pick(vars_).u; }
  const UOp* small_const() {
    if (rng_.chance(10)) return ctx_.cint(rng_.uniform(-1000, 1000));
    return ctx_.cint(rng_.uniform(-8, 8));
  }
  const UOp* divisor() {
    std::vector<const UOp*> positive;
    for (const Var& v : vars_)
      if (v.lo >= 1) positive.push_back(v.u);
    if (!positive.empty() && rng_.chance(12)) return rng_.pick(positive);
    switch (rng_.weighted({12, 3, 3})) {
      case 0:
        return ctx_.cint(rng_.uniform(1, 9));
      case 1:
        return ctx_.cint(rng_.uniform(10, 64));
      default:
        return ctx_.cint(-rng_.uniform(1, 9));
    }
  }

  const UOp* gen_int(int depth) {
    if (depth <= 0 || rng_.chance(12)) return rng_.chance(75) ? var() : small_const();
    int d = depth - 1;
    // every draw is its own statement: operand evaluation order is unspecified in C++
    size_t kind = rng_.weighted({16, 8, 14, 3, 4, 12, 12, 6, 6, 7, 2});
    if (kind == 9) {
      const UOp* c = gen_bool(d);
      const UOp* t = gen_int(d);
      return where(c, t, gen_int(d));
    }
    if (kind == 10) return gen_bool(d)->cast(dtypes::weakint);
    Expr x = gen_int(d);
    switch (kind) {
      case 0:
        return x + Expr(gen_int(d));
      case 1:
        return x + Expr(small_const());
      case 2:
        return x * rng_.uniform(-6, 8);
      case 3:
        return x * Expr(gen_int(d - 1));
      case 4:
        return x - Expr(gen_int(d));
      case 5:
        return x / Expr(divisor());
      case 6:
        return x % Expr(divisor());
      case 7:
        return maximum(x, gen_int(d));
      default:
        return minimum(x, gen_int(d));
    }
  }

  const UOp* gen_bool(int depth) {
    if (depth <= 0) {
      if (!rng_.chance(95)) return ctx_.cbool(rng_.chance(50));
      Expr v = var();
      return v < Expr(small_const());
    }
    int d = depth - 1;
    size_t kind = rng_.weighted({18, 8, 12, 6, 10, 10, 7, 8, 2});
    if (kind == 7) return !Expr(gen_bool(d));
    if (kind == 8) return ctx_.cbool(rng_.chance(50));
    if (kind >= 4) {
      Expr x = gen_bool(d);
      Expr y = gen_bool(d);
      return kind == 4 ? x & y : kind == 5 ? x | y : x ^ y;
    }
    Expr x = gen_int(d);
    Expr y = kind == 0 || kind == 2 ? Expr(gen_int(d)) : Expr(small_const());
    return kind <= 1 ? x < y : x != y;
  }

  Rng& rng_;
  Context& ctx_;
  std::vector<Var> vars_;
};

// ---------------------------------------------------------------- expressions at the carriers' edges

// Index math where the int64 carrier shows: uint64 (wraps mod 2^64, carried from 2^63 up as a
// negative int64), int64 and 32-bit ints (wrap), and weakint (never wraps: past int64 a value is
// undefined) with variables and constants near the limits.
class WideExprGen {
 public:
  WideExprGen(Rng& rng, Context& ctx) : rng_(rng), ctx_(ctx) {
    static const DType kDtypes[] = {dtypes::uint64, dtypes::weakint, dtypes::int64, dtypes::uint32, dtypes::int32};
    dt_ = kDtypes[rng_.weighted({5, 5, 2, 1, 1})];
    lo_ = exact_min(dt_), hi_ = exact_max(dt_);
    static const char* const kNames[] = {"a", "b", "c"};
    int n = int(rng_.uniform(1, 3));
    for (int i = 0; i < n; ++i) vars_.push_back(make_var(kNames[i]));
  }
  const std::vector<Var>& vars() const { return vars_; }

  const UOp* root() {
    int depth = int(rng_.uniform(1, 5));
    return rng_.chance(20) ? gen_bool(depth) : gen_int(depth);
  }

  // random points (many near the ends of each range and at the carriers' edges), then the corners
  std::vector<Point> points(int nrandom) {
    return box_points(vars_, nrandom, [this](const Var& v) { return sample(v); });
  }

 private:
  i128 clip(i128 v) const { return std::clamp(v, lo_, hi_); }
  int64_t carried(i128 v) const { return carried_value(dt_, clip(v)); }
  i128 exact(int64_t v) const { return exact_value(dt_, v); }

  // a value where the carriers change behaviour: the dtype's ends, 2^31, 2^32, 2^62, 2^63, +-0..2
  i128 edge() {
    static const i128 kEdges[] = {0, i128(1) << 31, i128(1) << 32, i128(1) << 62, i128(1) << 63, i128(1) << 64};
    i128 k = rng_.uniform(-2, 2);
    switch (rng_.weighted({3, 3, 4})) {
      case 0:
        return clip(lo_ + (k < 0 ? -k : k));
      case 1:
        return clip(hi_ - (k < 0 ? -k : k));
      default: {
        i128 e = kEdges[rng_.uniform(0, 5)];
        return clip((rng_.chance(lo_ < 0 ? 50 : 0) ? -e : e) + k);
      }
    }
  }
  i128 value() {
    switch (rng_.weighted({4, 4, 2})) {
      case 0:
        return clip(rng_.uniform(lo_ < 0 ? -20 : 0, 20));
      case 1:
        return edge();
      default:
        return exact(rng_.uniform(carried_value(dt_, lo_), carried_value(dt_, hi_)));
    }
  }

  Var make_var(const char* name) {
    i128 a = value(), b;
    switch (rng_.weighted({3, 3, 1})) {
      case 0:  // a short range at a random or edge value
        b = clip(a + rng_.uniform(0, 40));
        break;
      case 1:
        b = value();
        break;
      default:  // the dtype's whole range
        a = lo_, b = hi_;
        break;
    }
    if (b < a) std::swap(a, b);
    int64_t lo = carried(a), hi = carried(b);
    return {ctx_.var(name, lo, hi, dt_), lo, hi, 1};
  }

  int64_t sample(const Var& v) {
    i128 lo = exact(v.lo), hi = exact(v.hi);
    switch (rng_.weighted({3, 2, 2, 1})) {
      case 0:
        return rng_.uniform(v.lo, v.hi);  // uniform over the carried range, uint64 included
      case 1:
        return carried(std::min(hi, lo + rng_.uniform(0, 3)));
      case 2:
        return carried(std::max(lo, hi - rng_.uniform(0, 3)));
      default: {
        i128 e = edge();
        return carried(e >= lo && e <= hi ? e : lo);
      }
    }
  }

  const UOp* cst() { return ctx_.cint(carried(value()), dt_); }
  const UOp* divisor() {
    std::vector<const UOp*> positive;
    for (const Var& v : vars_)
      if (exact(v.lo) >= 1) positive.push_back(v.u);
    if (!positive.empty() && rng_.chance(10)) return rng_.pick(positive);
    i128 d = rng_.chance(60) ? clip(rng_.uniform(1, 9)) : value();
    if (d == 0) d = 1;
    if (lo_ < 0 && rng_.chance(15)) d = clip(-d);
    return ctx_.cint(carried(d), dt_);
  }
  const UOp* var() { return rng_.pick(vars_).u; }

  const UOp* gen_int(int depth) {
    if (depth <= 0 || rng_.chance(10)) return rng_.chance(70) ? var() : cst();
    int d = depth - 1;
    // every draw is its own statement: operand evaluation order is unspecified in C++
    size_t kind = rng_.weighted({12, 12, 8, 8, 4, 10, 10, 5, 5, 5, 5, 3, 3, 4});
    if (kind == 13) {  // through another integer dtype and back: wraps, or not
      static const std::vector<DType> kVia = {dtypes::uint64, dtypes::int64, dtypes::uint32, dtypes::int32,
                                              dtypes::uint8,  dtypes::int8,  dtypes::weakint};
      return gen_int(d)->cast(rng_.pick(kVia))->cast(dt_);
    }
    if (kind == 9) {
      const UOp* c = gen_bool(d);
      const UOp* t = gen_int(d);
      return where(c, t, gen_int(d));
    }
    if (kind == 10) return gen_bool(d)->cast(dt_);
    Expr x = gen_int(d);
    switch (kind) {
      case 0:
        return x + Expr(gen_int(d));
      case 1:
        return x + Expr(cst());
      case 2:
        return x * Expr(cst());
      case 3:
        return x * rng_.uniform(-3, 4);
      case 4:
        return x - Expr(gen_int(d));
      case 5:
        return x / Expr(divisor());
      case 6:
        return x % Expr(divisor());
      case 7:
        return maximum(x, gen_int(d));
      case 8:
        return minimum(x, gen_int(d));
      case 11: {
        Op op = rng_.pick(std::vector<Op>{Op::AND, Op::OR, Op::XOR});
        return binop(op, x, cst());
      }
      case 12: {
        Op op = rng_.chance(50) ? Op::SHL : Op::SHR;
        return binop(op, x, ctx_.cint(rng_.uniform(0, bitsize(dt_) - 2), dt_));
      }
      default:
        return x;
    }
  }

  const UOp* gen_bool(int depth) {
    if (depth <= 0) return Expr(var()) < Expr(cst());
    int d = depth - 1;
    size_t kind = rng_.weighted({10, 8, 8, 4, 4, 3});
    if (kind == 5) return !Expr(gen_bool(d));
    if (kind >= 3) {
      Expr x = gen_bool(d);
      Expr y = gen_bool(d);
      return kind == 3 ? x & y : x | y;
    }
    Expr x = gen_int(d);
    Expr y = kind == 0 ? Expr(gen_int(d)) : Expr(cst());
    return kind <= 1 ? x < y : x != y;
  }

  Rng& rng_;
  Context& ctx_;
  DType dt_;
  i128 lo_ = 0, hi_ = 0;
  std::vector<Var> vars_;
};

// ---------------------------------------------------------------- remainders at the divisor

// Sums of scaled variables divided or reduced by a constant d with a factor g (1 < g < d where d
// has one), where each variable's range is chosen so that its term's maximum lands on a boundary:
// g - 1, g, g + 1, d - 1, d or d + 1 (the rules that split a sum by g or by d hold or fail right
// there; (2a + b) % 4 with b in [0, 2] is one). The box is small: every point is checked.
class BoundaryExprGen {
 public:
  BoundaryExprGen(Rng& rng, Context& ctx) : rng_(rng), ctx_(ctx) {
    static const int64_t kDivisors[] = {2, 3, 4, 6, 8, 9, 12, 16};
    d_ = kDivisors[rng_.uniform(0, 7)];
    std::vector<int64_t> factors;
    for (int64_t f = 2; f < d_; ++f)
      if (d_ % f == 0) factors.push_back(f);
    g_ = factors.empty() ? d_ : rng_.pick(factors);
    static const char* const kNames[] = {"a", "b", "c"};
    int n = int(rng_.uniform(2, 3));
    for (int i = 0; i < n; ++i) {
      // a term in whole multiples of g, or a remainder term whose maximum is at a boundary
      int64_t coef = rng_.chance(50) ? g_ * rng_.uniform(1, 3) : rng_.uniform(1, std::max<int64_t>(1, g_ - 1));
      int64_t target = rng_.pick(std::vector<int64_t>{g_ - 1, g_, g_, g_ + 1, d_ - 1, d_, d_, d_ + 1, 2 * d_, d_ * g_});
      int64_t hi = std::max<int64_t>(0, target / coef), lo = rng_.chance(20) ? -rng_.uniform(1, 3) : 0;
      if (rng_.chance(15)) lo = hi = target / coef;  // a single value
      vars_.push_back({ctx_.var(kNames[i], lo, hi), lo, hi, 1});
      coefs_.push_back(coef);
    }
  }
  const std::vector<Var>& vars() const { return vars_; }

  const UOp* root() {
    Expr num = Expr(vars_[0].u) * coefs_[0];
    for (size_t i = 1; i < vars_.size(); ++i) num = num + Expr(vars_[i].u) * coefs_[i];
    if (rng_.chance(30)) num = num + rng_.uniform(-d_, d_);
    switch (rng_.weighted({4, 3, 1, 1, 1})) {
      case 0:
        return num % d_;
      case 1:
        return num / d_;
      case 2:
        return (num % d_) / g_;
      case 3:
        return (num / g_) % std::max<int64_t>(1, d_ / g_);
      default:
        return (num % d_) * 2 + Expr(num / d_);
    }
  }

  // every point of the box
  std::vector<Point> points(int) const {
    std::vector<Point> out{Point(vars_.size())};
    for (size_t i = 0; i < vars_.size(); ++i) {
      std::vector<Point> next;
      for (const Point& p : out)
        for (int64_t v = vars_[i].lo; v <= vars_[i].hi; ++v) {
          next.push_back(p);
          next.back()[i] = v;
        }
      out = std::move(next);
    }
    return out;
  }

 private:
  Rng& rng_;
  Context& ctx_;
  int64_t d_ = 1, g_ = 1;
  std::vector<Var> vars_;
  std::vector<int64_t> coefs_;
};

struct Matcher {
  const char* name;
  const PatternMatcher& pm;
};

struct FuzzResult {
  int failures = 0, changed = 0, evaluated_points = 0;
  std::string summary, report;
};

// kCases random expressions of Gen, each simplified by sym() and symbolic() and checked at its points
template <class Gen> FuzzResult fuzz(uint64_t seed, int cases, int random_points) {
  constexpr int kShrinkAtMost = 40;  // shrink and print the first failures; count all of them
  const Matcher matchers[] = {{"sym", sym()}, {"symbolic", symbolic()}};
  Rng rng(seed);
  std::map<std::pair<std::string, Kind>, int> counts;
  std::set<std::string> repros;
  FuzzResult r;
  for (int iter = 0; iter < cases; ++iter) {
    Context ctx;
    Gen gen(rng, ctx);
    const UOp* e = gen.root();
    std::vector<Point> points = gen.points(random_points);
    r.evaluated_points += int(points.size());
    for (const Matcher& m : matchers) {
      Verdict v = check(e, m.pm, gen.vars(), points);
      r.changed += v.simplified != nullptr && v.simplified != e;
      if (v.kind == Kind::Ok) continue;
      ++r.failures;
      ++counts[{m.name, v.kind}];
      if (r.failures > kShrinkAtMost) continue;
      const UOp* small = shrink(e, m.pm, gen.vars(), points, v.kind);
      Verdict sv = check(small, m.pm, gen.vars(), points);
      std::string repro = print(small);
      bool fresh = repros.insert(std::string(m.name) + " " + repro).second;
      r.report += "\n[case " + std::to_string(iter) + ", " + m.name + "] " + kind_name(v.kind) +
                  "\n  expression: " + print(e) + "\n  simplified: " + (v.simplified ? print(v.simplified) : "-") +
                  "\n  " + v.detail;
      if (!fresh) {
        r.report += "\n  (minimal reproduction already reported above)\n";
        continue;
      }
      r.report += "\n  minimal reproduction: " + repro +
                  "\n  simplifies to:        " + (sv.simplified ? print(sv.simplified) : "-") + "\n  " + sv.detail +
                  "\n";
    }
  }
  for (const auto& [key, n] : counts)
    r.summary += "\n  " + key.first + ": " + std::to_string(n) + " x " + kind_name(key.second);
  r.summary += "\nFirst failures (at most " + std::to_string(kShrinkAtMost) + ", shrunk):";
  return r;
}

TEST(SymbolicFuzz, DifferentialAgainstExactEvaluation) {
  constexpr int kCases = 10'000;
  constexpr int kRandomPoints = 10;
  FuzzResult r = fuzz<ExprGen>(0x6b696c6e'66757a7aull, kCases, kRandomPoints);  // "kilnfuzz"
  EXPECT_EQ(r.failures, 0) << r.failures << " failing (case, matcher) pairs out of " << 2 * kCases << ":" << r.summary
                           << r.report;
  // the generator must keep producing work for the simplifier, and every case must be checked
  EXPECT_GT(r.changed, kCases / 2);
  EXPECT_GE(r.evaluated_points, kCases * (kRandomPoints + 2));
}

// The same promises (values, bounds of every node, idempotence, no exception) for uint64, int64,
// 32-bit ints and weakint near the int64 limits (issue 19: wrong values, unsound bounds, aborts).
TEST(SymbolicFuzz, CarrierEdgesAgainstExactEvaluation) {
  constexpr int kCases = 8'000;
  constexpr int kRandomPoints = 12;
  FuzzResult r = fuzz<WideExprGen>(0x77696465'66757a7aull, kCases, kRandomPoints);  // "widefuzz"
  EXPECT_EQ(r.failures, 0) << r.failures << " failing (case, matcher) pairs out of " << 2 * kCases << ":" << r.summary
                           << r.report;
  EXPECT_GT(r.changed, kCases / 3);
  EXPECT_GE(r.evaluated_points, kCases * (kRandomPoints + 2));
}

// The same promises where a remainder term's maximum is exactly the divisor, a factor of it, or one
// off (the shapes the random trees rarely draw), at every point of each box.
TEST(SymbolicFuzz, RemaindersAtTheDivisorAgainstExactEvaluation) {
  constexpr int kCases = 3'000;
  FuzzResult r = fuzz<BoundaryExprGen>(0x626f756e'64617279ull, kCases, 0);  // "boundary"
  EXPECT_EQ(r.failures, 0) << r.failures << " failing (case, matcher) pairs out of " << 2 * kCases << ":" << r.summary
                           << r.report;
  EXPECT_GT(r.changed, kCases / 2);
  EXPECT_GE(r.evaluated_points, kCases * 4);
}

// ---------------------------------------------------------------- text round trip

class GraphGen {
 public:
  GraphGen(Rng& rng, Context& ctx) : rng_(rng), ctx_(ctx) {}

  const UOp* gen(int depth) {
    const UOp* u = node(depth);
    if (rng_.chance(8)) u = u->with_tag(int32_t(rng_.uniform(-3, 40)));
    if (u->tag == 0 || rng_.chance(50)) pool_.push_back(u);
    return u;
  }

 private:
  DType scalar() { return DType(Scalar(rng_.uniform(1, kNumScalars - 1))); }  // never void
  DType any_dtype() {
    DType d = scalar();
    if (rng_.chance(10)) d = d.vec(int(rng_.pick(std::vector<int64_t>{2, 3, 4, 8, 16, 255})));
    if (rng_.chance(10))
      d = d.as_ptr(rng_.pick(std::vector<AddrSpace>{AddrSpace::Global, AddrSpace::Local, AddrSpace::Reg}));
    return d;
  }
  DType int_dtype() {
    static const std::vector<DType> kInts = {dtypes::int8,   dtypes::uint8,  dtypes::int16,
                                             dtypes::uint16, dtypes::int32,  dtypes::uint32,
                                             dtypes::int64,  dtypes::uint64, dtypes::weakint};
    return rng_.pick(kInts);
  }
  std::string ident() {
    static const char kFirst[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";
    static const char kRest[] = "abcdefghijklmnopqrstuvwxyz0123456789_.";
    std::string s(1, kFirst[rng_.uniform(0, sizeof kFirst - 2)]);
    for (int64_t n = rng_.uniform(0, 6); n > 0; --n) s += kRest[rng_.uniform(0, sizeof kRest - 2)];
    return s;
  }
  double any_double() {
    switch (rng_.weighted({3, 3, 1, 1, 1, 1, 1, 1, 2})) {
      case 0:
        return double(rng_.uniform(-100, 100)) / 8.0;
      case 1: {  // any bit pattern that is not a NaN
        uint64_t b = rng_.bits();
        double d;
        std::memcpy(&d, &b, sizeof d);
        return std::isnan(d) ? 1.5 : d;
      }
      case 2:
        return std::numeric_limits<double>::quiet_NaN();
      case 3:
        return std::numeric_limits<double>::infinity();
      case 4:
        return -std::numeric_limits<double>::infinity();
      case 5:
        return -0.0;
      case 6:
        return std::numeric_limits<double>::denorm_min();
      case 7:
        return -std::numeric_limits<double>::max();
      default:
        return 0.1 * double(rng_.uniform(-1'000'000, 1'000'000));
    }
  }
  const UOp* constant() {
    DType d = scalar();
    if (rng_.chance(8)) d = d.vec(4);
    if (is_bool(d)) return ctx_.make(Op::CONST, d, {}, ConstValue::of_bool(rng_.chance(50)));
    if (is_float(d)) {
      if (rng_.chance(50)) return ctx_.cfloat(any_double(), d);  // rounded to the dtype
      return ctx_.make(Op::CONST, d, {}, ConstValue::of_float(any_double()));
    }
    int64_t lo = int_min(d), hi = int_max(d);
    // uint64 is carried in int64: values from 2^63 up (constant folding makes them) are negative
    if (d.scalar == Scalar::Uint64 && rng_.chance(20)) return ctx_.cint(int64_t(rng_.bits() | (uint64_t(1) << 63)), d);
    switch (rng_.weighted({4, 1, 1, 1})) {
      case 0:
        return ctx_.cint(rng_.uniform(std::max<int64_t>(lo, -20), std::min<int64_t>(hi, 20)), d);
      case 1:
        return ctx_.cint(lo, d);
      case 2:
        return ctx_.cint(hi, d);
      default:
        return ctx_.cint(rng_.uniform(lo, hi), d);
    }
  }
  const UOp* leaf() {
    switch (rng_.weighted({6, 3, 2, 1, 1})) {
      case 0:
        return constant();
      case 1: {
        DType d = int_dtype();
        int64_t lo = rng_.uniform(std::max<int64_t>(int_min(d), -1000), std::min<int64_t>(int_max(d), 1000));
        int64_t hi = rng_.chance(5) ? int_max(d) : lo + rng_.uniform(0, 100);
        int64_t mul = rng_.chance(15) ? rng_.uniform(2, 16) : 1;
        if (rng_.chance(5)) lo = int_min(d);
        std::string name = ident();
        return ctx_.var(name, lo, hi, d, mul);
      }
      case 2: {
        ParamArg a{int32_t(rng_.uniform(-1, 8)), rng_.chance(50) ? -1 : rng_.uniform(0, 1 << 20), ""};
        if (rng_.chance(50)) a.name = ctx_.intern(ident());
        Op op = rng_.chance(50) ? Op::PARAM : Op::BUFFER;
        return ctx_.make(op, any_dtype(), {}, a);
      }
      case 3:
        return ctx_.invalid();
      default: {
        DType d = any_dtype();
        Arg a = rng_.chance(50) ? Arg(Name{ctx_.intern(ident())}) : Arg(rng_.uniform(-99, 99));
        return ctx_.make(Op::CUSTOM, d, {}, a);
      }
    }
  }
  const UOp* src(int depth) {
    if (!pool_.empty() && rng_.chance(25)) return rng_.pick(pool_);  // sharing
    return gen(depth - 1);
  }
  const UOp* boolean(int depth) {
    Op op = rng_.chance(50) ? Op::CMPLT : Op::CMPNE;
    return ctx_.make(op, dtypes::bool_, {src(depth), src(depth)});
  }

  const UOp* node(int depth) {
    if (depth <= 0 || rng_.chance(15)) return leaf();
    static const std::vector<Op> kUnary = {Op::EXP2, Op::LOG2, Op::SIN, Op::SQRT, Op::RECIPROCAL, Op::NEG, Op::TRUNC};
    static const std::vector<Op> kBinary = {Op::ADD,  Op::MUL, Op::SHL,      Op::SHR,     Op::CDIV,     Op::MAX,
                                            Op::CMOD, Op::XOR, Op::OR,       Op::AND,     Op::THREEFRY, Op::SUB,
                                            Op::FDIV, Op::POW, Op::FLOORDIV, Op::FLOORMOD};
    static const std::vector<Op> kOther = {Op::INDEX, Op::LOAD,    Op::STORE, Op::STACK, Op::AFTER,
                                           Op::GROUP, Op::BARRIER, Op::END,   Op::NOOP,  Op::GETTUPLE};
    size_t kind = rng_.weighted({3, 2, 6, 3, 2, 3, 1, 1, 2, 2});
    switch (kind) {
      case 0: {
        const UOp* end = src(depth);
        RangeArg a{int32_t(rng_.uniform(0, 40)), AxisType(rng_.uniform(0, int(AxisType::Loop))),
                   rng_.chance(30) ? int32_t(rng_.uniform(0, 5)) : -1};
        std::vector<const UOp*> s{end};
        if (rng_.chance(10)) s.push_back(src(depth));
        DType d = rng_.chance(80) ? dtypes::weakint : int_dtype();
        return ctx_.make(Op::RANGE, d, s, a);
      }
      case 1: {
        const UOp* end = src(depth);
        std::string name = rng_.pick(std::vector<std::string>{"gidx0", "lidx1", "core_id", ident()});
        return ctx_.special(end, name);
      }
      case 5:
        return boolean(depth);
      case 8: {
        std::vector<const UOp*> s;
        for (int64_t n = rng_.uniform(1, 4); n > 0; --n) s.push_back(src(depth));
        if (rng_.chance(50)) return ctx_.sink(s);
        static const std::vector<Op> kReduce = {Op::ADD, Op::MUL, Op::MAX};
        ReduceArg a{rng_.pick(kReduce), int32_t(rng_.uniform(0, 2))};
        return ctx_.make(Op::REDUCE, any_dtype(), s, a);
      }
      case 9: {
        Op op = rng_.pick(kOther);
        std::vector<const UOp*> s;
        for (int64_t n = rng_.uniform(0, 3); n > 0; --n) s.push_back(src(depth));
        Arg a;
        if (rng_.chance(30))
          a = Name{ctx_.intern(ident())};
        else if (rng_.chance(30))
          a = rng_.uniform(-1000, 1000);
        return ctx_.make(op, any_dtype(), s, a);
      }
      default: {  // ALU ops and casts: draw op and dtype first, then the sources in order
        Op op = kind == 2   ? rng_.pick(kBinary)
                : kind == 3 ? rng_.pick(kUnary)
                : kind == 4 ? (rng_.chance(50) ? Op::CAST : Op::BITCAST)
                : kind == 6 ? Op::WHERE
                            : Op::MULACC;
        DType d = any_dtype();
        std::vector<const UOp*> s;
        if (op == Op::WHERE) s.push_back(boolean(depth));
        size_t n = in_group(op, G_BINARY) ? 2 : op == Op::MULACC ? 3 : op == Op::WHERE ? 2 : 1;
        while (s.size() < n + (op == Op::WHERE)) s.push_back(src(depth));
        return ctx_.make(op, d, s);
      }
    }
  }

  Rng& rng_;
  Context& ctx_;
  std::vector<const UOp*> pool_;
};

// The first node (sources first) whose own tree text does not parse back to it.
std::string first_bad_node(Context& ctx, const UOp* root) {
  for (const UOp* u : toposort(root)) {
    ParseError err;
    const UOp* back = parse(ctx, print(u), &err);
    if (back == u) continue;
    return print(u) + "\n    parses as " +
           (back ? print(back) : "<error at " + std::to_string(err.offset) + ": " + err.message + ">");
  }
  return "<every node round-trips alone>";
}

// fold_int_constants() folds an integer tree of CONSTs without the rewrite (shapes are such
// trees, simplify_dim() folds them so); where it folds, the rewrite by symbolic() must give the
// very same node, and where it does not (x // 0), simplify_dim() gives what simplify() gives.
TEST(SymbolicFuzz, ConstantTreesFoldAsTheRewriteFoldsThem) {
  constexpr int kCases = 3'000;
  Rng rng(0x636f6e7374667a7aull);  // "constfzz"
  const Op int_ops[] = {Op::ADD, Op::MUL, Op::FLOORDIV, Op::FLOORMOD, Op::MAX,
                        Op::AND, Op::OR,  Op::XOR,      Op::SHL,      Op::SHR};
  const DType int_dtypes[] = {dtypes::weakint, dtypes::int32, dtypes::int64, dtypes::uint8, dtypes::int8};
  int folded = 0, unfolded = 0;
  for (int iter = 0; iter < kCases; ++iter) {
    Context ctx;
    DType d = int_dtypes[rng.uniform(0, 4)];
    std::function<const UOp*(int)> gen = [&](int depth) -> const UOp* {
      if (depth == 0 || rng.chance(30)) {
        int64_t v = rng.chance(20) ? rng.uniform(-2, 2) : rng.uniform(-300, 300);
        return ctx.cconst(ConstValue::of_int(v), d);
      }
      const UOp* a = gen(depth - 1);
      if (rng.chance(10)) return (-Expr(a)).get();
      const UOp* b = gen(depth - 1);
      return a->alu(int_ops[rng.uniform(0, 9)], b);
    };
    const UOp* e = gen(int(rng.uniform(1, 4)));
    if (rng.chance(25)) e = e->alu(rng.chance(50) ? Op::CMPLT : Op::CMPNE, gen(2));  // a bool root
    RewriteOptions opts;
    opts.name = "reference";
    const UOp* want = graph_rewrite(e, symbolic(), nullptr, opts);
    const UOp* fold = fold_int_constants(e);
    if (fold != nullptr) {
      ASSERT_EQ(fold, want) << print(e) << "\n  fold:    " << print(fold) << "\n  rewrite: " << print(want);
    }
    const UOp* dim = simplify_dim(e);
    ASSERT_EQ(dim, want) << print(e) << "\n  simplify_dim: " << print(dim) << "\n  rewrite: " << print(want);
    (fold != nullptr ? folded : unfolded) += 1;
  }
  // both kinds occur: folded trees, and trees with a step that cannot fold
  EXPECT_GT(folded, kCases / 2);
  EXPECT_GT(unfolded, 10);
}

TEST(TextFuzz, PrintParseRoundTripIsTheSamePointer) {
  constexpr int kCases = 1'000;
  Rng rng(0x7465787466757a7aull);  // "textfuzz"
  int failures = 0;
  std::set<std::string> culprits;
  std::string report;
  for (int iter = 0; iter < kCases; ++iter) {
    Context ctx;
    GraphGen gen(rng, ctx);
    const UOp* root = gen.gen(int(rng.uniform(0, 6)));
    std::string tree = print(root), graph = print_graph(root);
    std::string what;
    if (parse(ctx, tree) != root) what += " print->parse";
    if (parse(ctx, graph) != root) what += " print_graph->parse";
    // into a fresh context: the same text comes back out
    Context other;
    const UOp* copy = parse(other, graph);
    if (copy == nullptr || print(copy) != tree || print_graph(copy) != graph) what += " new-context";
    if (what.empty()) continue;
    ++failures;
    std::string culprit = first_bad_node(ctx, root);
    if (culprits.insert(culprit).second && culprits.size() <= 12)
      report += "\n[case " + std::to_string(iter) + "]" + what + "\n  smallest culprit: " + culprit;
  }
  EXPECT_EQ(failures, 0) << failures << " failures out of " << kCases << "; distinct culprits:" << report;
}

}  // namespace
}  // namespace kiln
