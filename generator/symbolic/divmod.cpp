// Folding of floor division and floor modulo on index (weakint) math: the quotient's range,
// nested div/mod, congruence of the numerator modulo the divisor, common factors and remainders.
// Every rule keeps the value wherever the original is defined; a divisor that is the constant 0
// is left alone, and symbolic divisors are only divided by exact common factors.
#include "generator/ir/int_math.h"
#include "generator/symbolic/symbolic.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <numeric>
#include <unordered_map>
#include <vector>

namespace kiln {

namespace {

// Python's // and %: round toward -inf, the remainder takes the divisor's sign.
template <class T> T floor_div(T a, T b) {
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <class T> T floor_mod(T a, T b) {
  if (b == -1) return 0;  // INT64_MIN % -1 traps
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

bool is_int_const(const UOp* u) { return u->is_const() && u->cval().is_int(); }

// x + k stays inside the int64 that carries weakint for every value of x
bool sum_fits(const UOp* x, i128 k) { return fits(x->dtype, x->exact_lo() + k) && fits(x->dtype, x->exact_hi() + k); }

// u == factor * term, with factor = u's const_factor when that division is exact.
std::pair<const UOp*, int64_t> decompose(const UOp* u) {
  int64_t f = u->const_factor();
  if (const UOp* t = u->divides(f)) return {t, f};
  return {u, 1};
}

// The seeds build sums with Python's sum(): a leading 0, then each term added in order.
Expr sum_from_zero(const std::vector<const UOp*>& terms, const UOp* like) {
  Expr acc = lift(like, 0);
  for (const UOp* t : terms) acc = acc + Expr(t);
  return acc;
}

Expr scaled(int64_t k, const UOp* t) { return Expr(lift(t, k)) * Expr(t); }  // k * t, const first

size_t slice_size(const UOp* u) { return toposort(u).size(); }

// (n + k)//c for a var n with multiple_of m: every rewrite through n//gcd(m, c) except the closed
// congruence form merges straight back, (n//g + k/g)//(c/g) -> (n + k)//c, and would loop.
bool lone_var_quotient(const UOp* x_peeled, const UOp* y, bool mod) {
  return !mod && y->is_const() && x_peeled->op == Op::DEFINE_VAR;
}

// Results of fold_general for one top-level fold (nest_by_factor revisits the same quotients).
// Looked up only, never iterated, so pointer keys cannot leak into the output.
using Memo = std::unordered_map<const UOp*, const UOp*>;

const UOp* fold_general(const UOp* d, Memo& memo);

// Numerator x = sum(factor_i * term_i) + cst, divisor the constant c > 0.
struct ConstDivisor {
  const UOp* d;
  const UOp* x;
  const UOp* y;
  int64_t c;
  const UOp* x_peeled;
  int64_t cst;
  std::vector<const UOp*> xs;
  bool mod;
};

const UOp* nested_div_or_mod(const ConstDivisor& k) {
  // (a % (m*c)) // c -> (a // c) % m, for m > 0
  if (!k.mod && k.x->op == Op::FLOORMOD) {
    const UOp* m = k.x->src(1)->divides(k.c);
    if (m != nullptr && m->imin() > 0) return (Expr(k.x->src(0)) / Expr(k.y)) % Expr(m);
  }
  // (a % (m*c) + b) % c -> (a + b) % c
  if (k.mod) {
    std::vector<const UOp*> nx;
    bool changed = false;
    for (const UOp* u : k.xs) {
      if (u->op == Op::FLOORMOD && u->src(1)->divides(k.c) != nullptr) {
        u = u->src(0);
        changed = true;
      }
      nx.push_back(u);
    }
    if (changed) return (usum(nx, k.x) + Expr(lift(k.x, k.cst))) % Expr(k.y);
  }
  return nullptr;
}

// x is congruent (mod c) to sum(r_i * term_i) + cst%c for r_i == factor_i (mod c); when that
// remainder expression stays within one period, both the quotient and the remainder are linear.
const UOp* fold_congruence(const ConstDivisor& k, const std::vector<const UOp*>& terms,
                           const std::vector<int64_t>& factors) {
  const int64_t c = k.c;
  const size_t n = terms.size();
  // a lone term, or an exact half-period tie, tries both signs; otherwise the smaller remainder
  std::vector<std::array<int64_t, 2>> choices(n);
  std::vector<int> nchoice(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t r = floor_mod(factors[i], c);
    if (r == c - r || n == 1) {  // not 2 * r: r may be past half of int64
      choices[i] = {r, r - c};
      nchoice[i] = 2;
    } else {
      choices[i] = {std::llabs(r) <= std::llabs(r - c) ? r : r - c, 0};
      nchoice[i] = 1;
    }
  }
  const int64_t cst_rem = floor_mod(k.cst, c);
  std::vector<int> pick(n, 0);
  constexpr int kMaxCombos = 1 << 12;  // ties double the search; past this it stops trying
  for (int combo = 0; combo < kMaxCombos; ++combo) {
    i128 lo = cst_rem, hi = cst_rem;
    for (size_t i = 0; i < n; ++i) {
      i128 r = choices[i][pick[i]];
      i128 a = r * terms[i]->imin(), b = r * terms[i]->imax();
      lo += std::min(a, b);
      hi += std::max(a, b);
    }
    bool in_carrier = lo >= INT64_MIN && hi <= INT64_MAX;
    if (in_carrier && floor_div<i128>(lo, c) == floor_div<i128>(hi, c)) {
      std::vector<const UOp*> parts;
      for (size_t i = 0; i < n; ++i) parts.push_back(scaled(choices[i][pick[i]], terms[i]));
      // exact arithmetic: a factor near the int64 limits minus its remainder can pass them
      i128 base = floor_div<i128>(lo, c);
      if (k.mod) {
        if (!fits(dtypes::weakint, base * c)) return nullptr;
        Expr rem = sum_from_zero(parts, k.x) + Expr(lift(k.x, cst_rem));
        return rem - Expr(lift(k.x, int64_t(base * c)));
      }
      std::vector<const UOp*> quo;
      for (size_t i = 0; i < n; ++i) {
        i128 q = floor_div<i128>(i128(factors[i]) - choices[i][pick[i]], c);
        if (!fits(dtypes::weakint, q)) return nullptr;
        quo.push_back(scaled(int64_t(q), terms[i]));
      }
      return sum_from_zero(quo, k.x) + Expr(lift(k.x, floor_div(k.cst, c))) + Expr(lift(k.x, int64_t(base)));
    }
    // next combination, the last term's choice varying fastest
    size_t i = n;
    while (i > 0 && ++pick[i - 1] == nchoice[i - 1]) pick[--i] = 0;
    if (i == 0) break;
  }
  return nullptr;
}

// g = gcd(factors, c) > 1: (g*X + cst) // (g*C) -> (X + (cst//g)%C) // C + cst//c
const UOp* fold_common_factor(const ConstDivisor& k, const std::vector<int64_t>& factors) {
  int64_t g = k.c;
  for (int64_t f : factors) g = safe_gcd(g, f);
  if (g <= 1) return nullptr;
  const UOp* xq = k.x_peeled->divides(g);
  if (xq == nullptr) return nullptr;
  const int64_t cg = k.c / g;
  Expr new_x = Expr(simplify(xq)) + Expr(lift(k.x, floor_mod(floor_div(k.cst, g), cg)));
  if (new_x->imin() < 0) return nullptr;
  if (k.mod) return (new_x % cg) * g + Expr(lift(k.x, floor_mod(k.cst, g)));
  return new_x / cg + Expr(lift(k.x, floor_div(k.cst, k.c)));
}

// x//c -> (x//f)//(c/f) and x%c -> ((x//f) % (c/f))*f + x%f, for a factor f of some term
// dividing c, when x//f folds; the smallest result wins (ties: the smallest f).
const UOp* nest_by_factor(const ConstDivisor& k, const std::vector<const UOp*>& terms,
                          const std::vector<int64_t>& factors, Memo& memo) {
  std::vector<int64_t> divs;
  for (size_t i = 0; i < k.xs.size(); ++i) {
    int64_t f = factors[i], af = f == INT64_MIN ? 0 : std::llabs(f);
    if (k.xs[i]->op != Op::CONST && 1 < af && af < k.c && k.c % f == 0) divs.push_back(af);
  }
  std::sort(divs.begin(), divs.end());
  divs.erase(std::unique(divs.begin(), divs.end()), divs.end());
  const UOp* best = nullptr;
  size_t best_size = 0;
  for (int64_t div : divs) {
    const UOp* newxs = fold_general(Expr(k.x) / div, memo);
    if (newxs == nullptr) continue;
    const UOp* cand = nullptr;
    size_t size = 0;
    if (!k.mod) {
      size = slice_size(newxs);
      cand = Expr(newxs) / (k.c / div);
    } else if (k.x->imin() >= 0 && newxs->imin() >= 0) {
      std::vector<const UOp*> parts;
      for (size_t i = 0; i < terms.size(); ++i)
        if (int64_t r = floor_mod(factors[i], div)) parts.push_back(scaled(r, terms[i]));
      if (int64_t r = floor_mod(k.cst, div)) parts.push_back(lift(k.x, r));
      const UOp* b = usum(parts, k.x);
      if (b->imin() < 0 || b->imax() >= div) continue;
      cand = (Expr(newxs) % (k.c / div)) * div + Expr(b);
      size = slice_size(cand);
    }
    if (cand != nullptr && (best == nullptr || size < best_size)) {
      best = cand;
      best_size = size;
    }
  }
  return best;
}

const UOp* fold_const_divisor(const ConstDivisor& k, Memo& memo) {
  if (const UOp* r = nested_div_or_mod(k)) return r;
  std::vector<const UOp*> terms;
  std::vector<int64_t> factors;
  for (const UOp* u : k.xs) {
    auto [t, f] = decompose(u);
    terms.push_back(t);
    factors.push_back(f);
  }
  if (const UOp* r = fold_congruence(k, terms, factors)) return r;
  if (lone_var_quotient(k.x_peeled, k.y, k.mod)) return nullptr;
  if (const UOp* r = fold_common_factor(k, factors)) return r;
  return nest_by_factor(k, terms, factors, memo);
}

// Rules that also hold for a symbolic divisor: divide out a common factor, or split off the
// terms that are whole multiples of the divisor.
const UOp* fold_any_divisor(const UOp* d, const UOp* x, const UOp* y, bool mod) {
  if (lone_var_quotient(x->pop_const().first, y, mod)) return nullptr;
  std::vector<const UOp*> all = x->split(Op::ADD);
  std::vector<const UOp*> with_y = all;
  with_y.push_back(y);
  const UOp* g = simplify(gcd(with_y));
  if (!(is_int_const(g) && g->ival() == 1)) {
    const UOp* xq = x->divide_exact(g);
    const UOp* yq = y->divide_exact(g);
    if (xq == nullptr || yq == nullptr) return nullptr;
    const UOp* ret = binop(d->op, xq, yq);
    return mod ? Expr(ret) * Expr(g) : Expr(ret);
  }
  if (y->imin() < 0 || x->imin() < 0) return nullptr;
  const bool yc = is_int_const(y);
  std::vector<const UOp*> quo, rem;
  for (const UOp* u : all) {
    if (const UOp* q = u->divide_exact(y)) {
      quo.push_back(q);
      continue;
    }
    int64_t cf = yc ? u->const_factor() : 0;
    const UOp* t = yc && floor_mod(cf, y->ival()) != cf ? u->divides(cf) : nullptr;
    if (t == nullptr) {
      rem.push_back(u);
      continue;
    }
    rem.push_back(Expr(t) * floor_mod(cf, y->ival()));
    quo.push_back(mod ? u->const_like(int64_t(0)) : (Expr(t) * floor_div(cf, y->ival())).get());
  }
  if (quo.empty()) return nullptr;
  Expr new_x = sum_from_zero(rem, x) + Expr(x->const_like(int64_t(0)));
  if (new_x->imin() < 0) return nullptr;
  if (mod) return new_x % Expr(y);
  return new_x / Expr(y) + sum_from_zero(quo, x);
}

const UOp* fold_general_uncached(const UOp* d, Memo& memo) {
  const UOp* x = d->src(0);
  const UOp* y = d->src(1);
  const bool mod = d->op == Op::FLOORMOD;
  if (x->is_invalid() || y->is_invalid()) return nullptr;
  if (y->imin() == 0 && y->imax() == 0) return nullptr;  // division by zero stays as written
  // the quotient has one value over the whole range
  const UOp* xdiv = Expr(x) / Expr(y);
  if (xdiv->imin() == xdiv->imax()) {
    int64_t q = xdiv->imin();
    return mod ? Expr(x) - Expr(lift(y, q)) * Expr(y) : Expr(xdiv->const_like(q));
  }
  const bool yc = is_int_const(y);
  // a var that is a multiple of the divisor: the quotient is irreducible, the remainder 0
  if (x->op == Op::DEFINE_VAR && yc && floor_mod(x->arg<VarArg>().multiple_of, y->ival()) == 0)
    return mod ? d->const_like(int64_t(0)) : nullptr;

  auto [x_peeled, cv] = x->pop_const();
  if (!cv.is_int()) return nullptr;
  if (yc && y->ival() > 0) {
    ConstDivisor k{d, x, y, y->ival(), x_peeled, cv.i, x_peeled->split(Op::ADD), mod};
    if (const UOp* r = fold_const_divisor(k, memo)) return r;
  }
  return fold_any_divisor(d, x, y, mod);
}

const UOp* fold_general(const UOp* d, Memo& memo) {
  if (auto it = memo.find(d); it != memo.end()) return it->second;
  const UOp* r = fold_general_uncached(d, memo);
  memo.emplace(d, r);
  return r;
}

bool int_consts(const Match& m, std::initializer_list<const UPat*> ps) {
  for (const UPat* p : ps)
    if (!m[*p]->cval().is_int()) return false;
  return true;
}

}  // namespace

// The seeds' UOp.gcd: the common symbolic factors of all terms times the gcd of their constant
// factors, in the order the factors appear in the first term.
const UOp* gcd(std::span<const UOp* const> terms) {
  if (terms.empty()) throw InternalError("gcd of no terms");
  std::vector<std::pair<const UOp*, int64_t>> common;  // factor, count
  int64_t g = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto [t, f] = decompose(terms[i]);
    g = safe_gcd(g, f);
    std::vector<std::pair<const UOp*, int64_t>> here;
    for (const UOp* p : t->split(Op::MUL)) {
      auto it = std::find_if(here.begin(), here.end(), [&](const auto& e) { return e.first == p; });
      if (it == here.end())
        here.emplace_back(p, 1);
      else
        ++it->second;
    }
    if (i == 0) {
      common = std::move(here);
      continue;
    }
    std::vector<std::pair<const UOp*, int64_t>> kept;
    for (auto& [p, n] : common) {
      auto it = std::find_if(here.begin(), here.end(), [&](const auto& e) { return e.first == p; });
      int64_t k = it == here.end() ? 0 : std::min(n, it->second);
      if (k > 0) kept.emplace_back(p, k);
    }
    common = std::move(kept);
  }
  const UOp* gc = terms[0]->const_like(g);
  std::vector<const UOp*> factors;
  for (auto& [p, n] : common)
    for (int64_t j = 0; j < n; ++j) factors.push_back(p);
  if (factors.empty()) return gc;
  return uprod(factors, gc) * Expr(gc);
}

const PatternMatcher& div_and_mod_symbolic() {
  using namespace pat;
  static const UPat xw = UPat::var("x", {dtypes::weakint});
  static const PatternMatcher pm({
      // (x//c0 + c1)//c2 -> (x + c1*c0)//(c0*c2) for c2 > 0
      Rule((xw / c0 + c1) / c2,
           [](const Match& m) -> const UOp* {
             if (!int_consts(m, {&c0, &c1, &c2})) return nullptr;
             int64_t cc = m.ival(c0), a = m.ival(c1), dd = m.ival(c2), shift, div;
             if (cc == 0 || dd <= 0) return nullptr;
             // a fold past int64 does not fire: neither the constants nor x + c1*c0 may leave it
             if (__builtin_mul_overflow(a, cc, &shift) || __builtin_mul_overflow(cc, dd, &div)) return nullptr;
             if (!sum_fits(m[xw], shift)) return nullptr;
             return (Expr(m[xw]) + shift) / div;
           }),
      // (x+c0)//c1 -> (x + c0%c1)//c1 + c0//c1 and (x+c0)%c1 -> (x + c0%c1)%c1: move whole periods out
      Rule(UPat::op({Op::FLOORDIV, Op::FLOORMOD}, {xw + c0, c1}),
           [](const Match& m) -> const UOp* {
             if (!int_consts(m, {&c0, &c1})) return nullptr;
             int64_t cv = m.ival(c0), dv = m.ival(c1);
             // x // -1 is -x elsewhere; here INT64_MIN // -1 would trap
             if (dv == 0 || dv == -1 || floor_mod(cv, dv) == cv || !sum_fits(m[xw], floor_mod(cv, dv))) return nullptr;
             Expr shifted = Expr(m[xw]) + floor_mod(cv, dv);
             if (m.root->op == Op::FLOORMOD) return shifted % Expr(m[c1]);
             return shifted / Expr(m[c1]) + floor_div(cv, dv);
           }),
      Rule(UPat::op({Op::FLOORDIV, Op::FLOORMOD}).dtype({dtypes::weakint}),
           [](const Match& m) -> const UOp* {
             Memo memo;
             return fold_general(m.root, memo);
           }),
  });
  return pm;
}

}  // namespace kiln
