#include "generator/codegen/bounds.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "generator/ir/text.h"

namespace kiln::codegen {

namespace {

constexpr size_t kMaxCandidates = 16;  // bounds kept per node and side
constexpr size_t kMaxDegree = 6;       // of a monomial
constexpr int kRelaxDepth = 3;         // opaque dim expressions replaced by their bounds, nested
const i128 kHuge = i128(1) << 100;     // coefficients past this give up (sums stay in i128)

struct Overflow {};

i128 gcd(i128 a, i128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}
i128 floor_div(i128 a, i128 b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
i128 checked_mul(i128 a, i128 b) {
  i128 r;
  if (__builtin_mul_overflow(a, b, &r)) throw Overflow{};
  return r;
}

// A polynomial with rational coefficients (numerators over one denominator) in atoms: dims, dim
// expressions kiln keeps opaque, quotients of them by constants, and (before they are bounded) loops.
struct Poly {
  std::map<std::vector<uint32_t>, i128> t;  // monomial (atom ids, sorted, repeated for a power) -> numerator
  i128 den = 1;
  bool operator==(const Poly&) const = default;
};

void normalize(Poly& p) {
  for (auto it = p.t.begin(); it != p.t.end();) it = it->second == 0 ? p.t.erase(it) : std::next(it);
  if (p.den < 0) {
    p.den = -p.den;
    for (auto& [m, c] : p.t) c = -c;
  }
  i128 g = p.den;
  for (const auto& [m, c] : p.t) g = gcd(g, c);
  if (g > 1) {
    for (auto& [m, c] : p.t) c /= g;
    p.den /= g;
  }
  if (p.den > kHuge) throw Overflow{};
  for (const auto& [m, c] : p.t)
    if (c > kHuge || c < -kHuge) throw Overflow{};
}
Poly konst(i128 c) {
  Poly p;
  if (c) p.t[{}] = c;
  normalize(p);
  return p;
}
Poly monomial(uint32_t a) {
  Poly p;
  p.t[{a}] = 1;
  return p;
}
Poly add(const Poly& a, const Poly& b, i128 sb = 1) {  // a + sb * b
  i128 g = gcd(a.den, b.den);
  i128 fa = b.den / g, fb = a.den / g;
  Poly r;
  r.den = checked_mul(a.den, fa);
  for (const auto& [m, c] : a.t) r.t[m] += checked_mul(c, fa);
  for (const auto& [m, c] : b.t) r.t[m] += checked_mul(sb * c, fb);
  normalize(r);
  return r;
}
Poly mul(const Poly& a, const Poly& b) {
  Poly r;
  r.den = checked_mul(a.den, b.den);
  for (const auto& [ma, ca] : a.t)
    for (const auto& [mb, cb] : b.t) {
      std::vector<uint32_t> m(ma.size() + mb.size());
      std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), m.begin());
      if (m.size() > kMaxDegree) throw Overflow{};
      r.t[m] += checked_mul(ca, cb);
    }
  normalize(r);
  return r;
}
Poly scale(const Poly& a, i128 num, i128 den) {
  Poly r = a;
  for (auto& [m, c] : r.t) c = checked_mul(c, num);
  r.den = checked_mul(r.den, den);
  normalize(r);
  return r;
}

struct Bounds {
  std::vector<Poly> lo, hi;  // the value is at least every lo and at most every hi, at every point
};

void push(std::vector<Poly>& v, Poly p) {
  if (v.size() < kMaxCandidates && std::find(v.begin(), v.end(), p) == v.end()) v.push_back(std::move(p));
}

struct Atom {
  // Loop: depends on a loop, bounded before any proof; Digit: (node % divisor) // (divisor / m), in [0, m - 1]
  enum Kind { Dim, Quotient, Remainder, Digit, Loop } kind;
  const UOp* node;  // Dim and Loop: the node; Quotient and Remainder: the dividend
  int64_t divisor = 0;
  i128 lo = 0, hi = 0;
};

// an INDEX's comparison `x < y` (upper: x <= y - 1) or `!(x < y)` (x >= y)
struct Conjunct {
  const UOp* x;
  const UOp* y;
  bool upper;
};

bool const_int(const UOp* u, int64_t& v) {
  if (u->op != Op::CONST || !is_int(u->dtype)) return false;
  v = u->ival();
  return true;
}

// the divisor c of `x op c` when it is a positive constant and the op floors there
int64_t floor_divisor(const UOp* u) {
  int64_t c = 0;
  if (u->nsrc() != 2 || !const_int(u->src(1), c)) return 0;
  bool nonneg = u->src(0)->exact_lo() >= 0;
  switch (u->op) {
    case Op::FLOORDIV:
    case Op::FLOORMOD:
      return c > 0 ? c : 0;
    case Op::CDIV:
    case Op::CMOD:
      return c > 0 && nonneg ? c : 0;
    case Op::SHR:
      return c >= 0 && c < 62 && nonneg ? int64_t(1) << c : 0;
    case Op::AND:
      return c > 0 && (c & (c + 1)) == 0 && nonneg ? c + 1 : 0;
    default:
      return 0;
  }
}
bool is_quotient(const UOp* u) { return u->op == Op::FLOORDIV || u->op == Op::CDIV || u->op == Op::SHR; }
bool is_remainder(const UOp* u) { return u->op == Op::FLOORMOD || u->op == Op::CMOD || u->op == Op::AND; }

std::string expr_text(const UOp* u) {
  int64_t c = 0;
  if (const_int(u, c)) return std::to_string(c);
  if (u->op == Op::CONST && u->dtype == dtypes::bool_) return u->ival() ? "true" : "false";
  if (u->op == Op::DEFINE_VAR) return std::string(u->arg<VarArg>().name);
  if (u->op == Op::RANGE) return "r" + std::to_string(u->arg<RangeArg>().axis);
  if (u->op == Op::CAST) return expr_text(u->src(0));
  const char* sym = nullptr;
  switch (u->op) {
    case Op::ADD:
      sym = " + ";
      break;
    case Op::SUB:
      sym = " - ";
      break;
    case Op::MUL:
      sym = "*";
      break;
    case Op::CDIV:
      sym = " / ";
      break;
    case Op::FLOORDIV:
      sym = " // ";
      break;
    case Op::CMOD:
    case Op::FLOORMOD:
      sym = " % ";
      break;
    case Op::SHR:
      sym = " >> ";
      break;
    case Op::SHL:
      sym = " << ";
      break;
    case Op::AND:
      sym = " & ";
      break;
    case Op::XOR:
      sym = " ^ ";
      break;
    case Op::CMPLT:
      sym = " < ";
      break;
    default:
      break;
  }
  std::string out;
  auto operand = [&](const UOp* s) {
    bool leaf = s->op == Op::CONST || s->op == Op::DEFINE_VAR || s->op == Op::RANGE || s->op == u->op;
    return leaf ? expr_text(s) : "(" + expr_text(s) + ")";
  };
  if (sym && u->nsrc() == 2) return operand(u->src(0)) + sym + operand(u->src(1));
  out = std::string(op_name(u->op));
  std::transform(out.begin(), out.end(), out.begin(), [](char ch) { return char(std::tolower(ch)); });
  out += '(';
  for (size_t i = 0; i < u->nsrc(); ++i) out += (i ? ", " : "") + expr_text(u->src(i));
  return out + ')';
}

std::string num_text(i128 v) {
  if (v < 0) return "-" + num_text(-v);
  std::string s;
  do {
    s.insert(s.begin(), char('0' + int(v % 10)));
    v /= 10;
  } while (v);
  return s;
}

class Prover {
 public:
  AccessProof prove(const UOp* access);

 private:
  bool dims_only(const UOp* u);
  uint32_t atom(Atom::Kind k, const UOp* node, int64_t divisor = 0, int64_t m = 0);
  const Poly& exact(const UOp* u);
  Poly compute_exact(const UOp* u);
  const UOp* canonical(const UOp* u);
  const UOp* symbolic_quotient(const UOp* u);
  const Bounds& bounds(const UOp* u);
  Bounds op_bounds(const UOp* u);
  std::vector<Poly> bound_poly(const Poly& p, bool upper);
  std::vector<Poly> eliminate(const Poly& p, const std::vector<Conjunct>& cs, uint32_t used, bool upper);
  std::pair<i128, i128> range_of(const Poly& p);  // numerators over p.den
  int sign(const Poly& p);
  bool above_minus_one(const Poly& p, int depth);
  Poly substitute(const Poly& p, uint32_t a, const Poly& with);
  std::string text(const Poly& p);

  std::vector<Atom> atoms_;
  std::map<std::tuple<int, uint32_t, int64_t>, uint32_t> atom_of_;
  std::unordered_map<const UOp*, bool> dims_only_;
  std::unordered_map<const UOp*, Poly> exact_;
  std::unordered_map<const UOp*, Bounds> bounds_;
  // while a gated access is proven: bounds its comparisons give the values they compare
  std::vector<std::pair<Poly, Bounds>> gate_bounds_;
  // the first node of each op and operand polynomials (max(a, b) and max(b, a) are one atom), and
  // of each dividend polynomial
  std::map<std::tuple<int, int, std::vector<std::pair<std::map<std::vector<uint32_t>, i128>, i128>>>, const UOp*>
      by_op_;
  std::map<std::pair<std::map<std::vector<uint32_t>, i128>, i128>, const UOp*> by_poly_;
};

bool Prover::dims_only(const UOp* u) {
  if (auto it = dims_only_.find(u); it != dims_only_.end()) return it->second;
  bool r = true;
  switch (u->op) {
    case Op::CONST:
    case Op::DEFINE_VAR:
      break;
    case Op::RANGE:
    case Op::SPECIAL:
    case Op::LOAD:
    case Op::INDEX:
    case Op::PARAM:
    case Op::BUFFER:
    case Op::AFTER:
      r = false;
      break;
    default:
      for (const UOp* s : u->src()) r = r && dims_only(s);
  }
  dims_only_.emplace(u, r);
  return r;
}

uint32_t Prover::atom(Atom::Kind k, const UOp* node, int64_t divisor, int64_t m) {
  auto key = std::make_tuple(int(k), node->id, divisor);
  if (auto it = atom_of_.find(key); it != atom_of_.end()) return it->second;
  Atom a{k, node, divisor, node->exact_lo(), node->exact_hi()};
  if (k == Atom::Quotient) a.lo = floor_div(a.lo, divisor), a.hi = floor_div(a.hi, divisor);
  if (k == Atom::Remainder) a.lo = 0, a.hi = divisor - 1;
  if (k == Atom::Digit) a.lo = 0, a.hi = m - 1;
  atoms_.push_back(a);
  atom_of_.emplace(key, uint32_t(atoms_.size() - 1));
  return uint32_t(atoms_.size() - 1);
}

const Poly& Prover::exact(const UOp* u) {
  if (auto it = exact_.find(u); it != exact_.end()) return it->second;
  Poly p;
  try {
    p = compute_exact(u);
  } catch (const Overflow&) {
    p = monomial(atom(dims_only(u) ? Atom::Dim : Atom::Loop, u));
  }
  return exact_.emplace(u, std::move(p)).first->second;
}

// u as a polynomial, exactly: sums, products, negations (x ^ -1) and quotients of dim expressions
// by constants are expanded, everything else is an atom
Poly Prover::compute_exact(const UOp* u) {
  Atom::Kind leaf = dims_only(u) ? Atom::Dim : Atom::Loop;
  if (!is_int(u->dtype) || u->dtype.count != 1) return monomial(atom(leaf, u));
  // A sum or product that passes int64 in range analysis wraps (the renderers compute it so): mod
  // 2^64 it is still the polynomial, and the proof puts the polynomial inside the buffer. Any other
  // op over a value that may have wrapped is an atom bounded only by its dtype.
  // Narrower ints do not wrap mod 2^64: there a node range analysis gives its dtype's whole range
  // (what it gives one that may wrap) is an atom.
  bool ring = u->op == Op::ADD || u->op == Op::SUB || u->op == Op::MUL || u->op == Op::XOR || u->op == Op::SHL;
  auto may_wrap = [](const UOp* v) {
    return v->saturated() ||
           (bitsize(v->dtype) < 64 && v->imin() == int_min(v->dtype) && v->imax() == int_max(v->dtype));
  };
  if (ring ? bitsize(u->dtype) < 64 && may_wrap(u) : u->saturated_below()) return monomial(atom(leaf, u));
  int64_t c = 0;
  if (const_int(u, c)) return konst(c);
  switch (u->op) {
    case Op::ADD:
      return add(exact(u->src(0)), exact(u->src(1)));
    case Op::SUB:
      return add(exact(u->src(0)), exact(u->src(1)), -1);
    case Op::MUL:
      return mul(exact(u->src(0)), exact(u->src(1)));
    case Op::XOR:
      for (int i = 0; i < 2; ++i)
        if (const_int(u->src(size_t(i)), c) && c == -1) return add(konst(-1), exact(u->src(size_t(1 - i))), -1);
      break;
    case Op::SHL:
      if (const_int(u->src(1), c) && c >= 0 && c < 40) return scale(exact(u->src(0)), i128(1) << c, 1);
      break;
    case Op::CAST: {
      const UOp* s = u->src(0);
      // exact(s) is s's own value (an atom where s may have wrapped): a cast that keeps it is s
      if (is_int(s->dtype) && fits(u->dtype, s->exact_lo()) && fits(u->dtype, s->exact_hi())) return exact(s);
      break;
    }
    default:
      break;
  }
  if (const UOp* q = symbolic_quotient(u)) {
    if (is_remainder(u)) return add(exact(u->src(0)), mul(exact(u->src(1)), exact(q)), -1);
    if (q != u) return exact(q);
  }
  int64_t d = floor_divisor(u);
  const UOp* x = d ? u->src(0) : nullptr;
  // (x // y) % c of a dim expression y: (x // y) - c * (x // (y * c)), which cancels against the
  // rest of an unflattened index; any other remainder keeps its bounds [0, c - 1] as an atom
  if (x && !dims_only(x) && is_remainder(u) && u->op != Op::AND && !u->saturated_below() && symbolic_quotient(x) == x) {
    Op div = u->op == Op::FLOORMOD ? Op::FLOORDIV : Op::CDIV;
    const UOp* q = u->ctx().make(div, u->dtype, {x, u->src(1)});
    return add(exact(x), exact(q), -d);
  }
  // (x // y) // c of a dim expression y: x // (y * c)
  if (x && is_quotient(u) && u->op != Op::SHR && !u->saturated_below() && symbolic_quotient(x) == x) {
    const UOp* both = u->ctx().make(Op::MUL, u->dtype, {x->src(1), u->src(1)});
    if (!both->saturated() && fits(u->dtype, both->exact_hi()) && x->op == u->op)
      return exact(u->ctx().make(u->op, u->dtype, {x->src(0), both}));
  }
  if (x && dims_only(x) && (is_quotient(u) || is_remainder(u))) {
    bool exact_division = x->const_factor() % d == 0;
    if (exact_division) return is_quotient(u) ? scale(exact(x), 1, d) : konst(0);
    // one atom per dividend polynomial: (core * B) * 512 and (B * core) * 512 divide alike
    const UOp* same = by_poly_.emplace(std::make_pair(exact(x).t, exact(x).den), x).first->second;
    Poly quotient = monomial(atom(Atom::Quotient, same, d));
    // (y // a) // d and (y / a) // d (a exact division) are y // (a * d)
    const Poly& e = exact(x);
    if (e.t.size() == 1 && e.t.begin()->second == 1 && e.t.begin()->first.size() == 1) {
      const Atom inner = atoms_[e.t.begin()->first[0]];  // a copy: atom() below may grow atoms_
      int64_t ad = 0;
      if (e.den == 1 && inner.kind == Atom::Quotient && !__builtin_mul_overflow(inner.divisor, d, &ad))
        quotient = monomial(atom(Atom::Quotient, inner.node, ad));
      if (e.den > 1 && e.den < (i128(1) << 62) && inner.kind == Atom::Dim &&
          !__builtin_mul_overflow(int64_t(e.den), d, &ad)) {
        const Poly& y = exact(inner.node);
        quotient =
            monomial(atom(Atom::Quotient, by_poly_.emplace(std::make_pair(y.t, y.den), inner.node).first->second, ad));
      }
    }
    return is_quotient(u) ? quotient : add(exact(x), quotient, -d);
  }
  return monomial(atom(leaf, canonical(u)));
}

// For x / d or x % d by a dim expression d >= 1 (x >= 0 where the op truncates): the quotient
// node, (x // d1) // d made x // (d1 * d) (made in the Context where no node is it yet)
const UOp* Prover::symbolic_quotient(const UOp* u) {
  bool floors = u->op == Op::FLOORDIV || u->op == Op::FLOORMOD;
  if (!floors && u->op != Op::CDIV && u->op != Op::CMOD) return nullptr;
  const UOp *x = u->src(0), *d = u->src(1);
  if (d->op == Op::CONST || !dims_only(d) || d->exact_lo() < 1 || (!floors && x->exact_lo() < 0)) return nullptr;
  if (u->saturated_below()) return nullptr;
  Op div = floors ? Op::FLOORDIV : Op::CDIV;
  Context& ctx = u->ctx();
  const Poly& e = exact(x);
  if (e.den == 1 && e.t.size() == 1 && e.t.begin()->second == 1 && e.t.begin()->first.size() == 1) {
    const UOp* inner = atoms_[e.t.begin()->first[0]].node;
    if (inner->op == div && inner->dtype == u->dtype && inner->src(1)->op != Op::CONST && dims_only(inner->src(1)) &&
        inner->src(1)->exact_lo() >= 1) {
      const UOp* both = ctx.make(Op::MUL, u->dtype, {inner->src(1), d});
      if (!both->saturated() && fits(u->dtype, both->exact_hi())) return ctx.make(div, u->dtype, {inner->src(0), both});
    }
  }
  return u->op == div ? u : ctx.make(div, u->dtype, {x, d});
}

const UOp* Prover::canonical(const UOp* u) {
  if (u->nsrc() == 0 || !u->has_arg<std::monostate>() || u->op == Op::INDEX || u->op == Op::LOAD) return u;
  std::vector<std::pair<std::map<std::vector<uint32_t>, i128>, i128>> operands;
  for (const UOp* s : u->src()) {
    const Poly& e = exact(s);
    operands.emplace_back(e.t, e.den);
  }
  if (in_group(u->op, G_COMMUTATIVE)) std::sort(operands.begin(), operands.end());
  return by_op_.emplace(std::make_tuple(int(u->op), int(u->dtype.scalar), std::move(operands)), u).first->second;
}

const Bounds& Prover::bounds(const UOp* u) {
  if (auto it = bounds_.find(u); it != bounds_.end()) return it->second;
  Bounds b;
  const Poly& e = exact(u);
  bool leaf = e.den == 1 && e.t.size() == 1 && e.t.begin()->first.size() == 1 && e.t.begin()->second == 1 &&
              atoms_[e.t.begin()->first[0]].node == u && atoms_[e.t.begin()->first[0]].kind != Atom::Quotient;
  if (dims_only(u)) {
    b.lo = b.hi = {e};
  } else if (leaf) {
    b = op_bounds(u);
  } else {
    b.lo = bound_poly(e, false);
    b.hi = bound_poly(e, true);
  }
  for (const auto& [x, ob] : gate_bounds_)
    if (x == e) {
      b.lo.insert(b.lo.begin(), ob.lo.begin(), ob.lo.end());
      b.hi.insert(b.hi.begin(), ob.hi.begin(), ob.hi.end());
      b.lo.resize(std::min(b.lo.size(), kMaxCandidates));
      b.hi.resize(std::min(b.hi.size(), kMaxCandidates));
    }
  if (is_int(u->dtype) && !u->saturated()) {
    push(b.lo, konst(u->exact_lo()));
    push(b.hi, konst(u->exact_hi()));
  }
  return bounds_.emplace(u, std::move(b)).first->second;
}

// the bounds of a node kept as an atom, from its op
Bounds Prover::op_bounds(const UOp* u) {
  Bounds b;
  try {
    if (u->op == Op::RANGE) {
      b.lo.push_back(konst(0));
      for (const Poly& h : bounds(u->src(0)).hi) push(b.hi, add(h, konst(1), -1));
      return b;
    }
    if (u->op == Op::MAX) {  // at least either operand, at most what bounds both
      for (const UOp* s : u->src())
        for (const Poly& l : bounds(s).lo) push(b.lo, l);
      const Bounds &x = bounds(u->src(0)), &y = bounds(u->src(1));
      for (size_t i = 0; i < x.hi.size() && i < 3; ++i)
        for (size_t j = 0; j < y.hi.size() && j < 3; ++j) {
          const Poly &hx = x.hi[i], &hy = y.hi[j];
          Poly d = add(hx, hy, -1);
          auto [dlo, dhi] = range_of(d);
          if (dlo >= 0) push(b.hi, hx);
          if (dhi <= 0) push(b.hi, hy);
          push(b.hi, konst(std::max(floor_div(range_of(hx).second, hx.den), floor_div(range_of(hy).second, hy.den))));
        }
      return b;
    }
    if (u->op == Op::CAST && is_int(u->src(0)->dtype) && fits(u->dtype, u->src(0)->exact_lo()) &&
        fits(u->dtype, u->src(0)->exact_hi()))
      return bounds(u->src(0));
    if (int64_t d = floor_divisor(u)) {
      const Bounds& x = bounds(u->src(0));
      auto constant = [](const Poly& q) { return q.t.empty() || (q.t.size() == 1 && q.t.begin()->first.empty()); };
      auto value = [](const Poly& q) { return q.t.empty() ? i128(0) : q.t.begin()->second; };
      if (is_quotient(u)) {
        for (const Poly& l : x.lo)
          push(b.lo, constant(l) ? konst(floor_div(value(l), l.den * d)) : scale(add(l, konst(d - 1), -1), 1, d));
        for (const Poly& h : x.hi) push(b.hi, constant(h) ? konst(floor_div(value(h), h.den * d)) : scale(h, 1, d));
      } else {
        b.lo.push_back(konst(0));
        b.hi.push_back(konst(d - 1));
        if (u->src(0)->exact_lo() >= 0)
          for (const Poly& h : x.hi) push(b.hi, h);
      }
      return b;
    }
    // x / y of non-negative x and positive y: at most x, and below k where x < k * y
    if ((u->op == Op::CDIV || u->op == Op::FLOORDIV) && u->src(0)->exact_lo() >= 0 && u->src(1)->exact_lo() >= 1) {
      b.lo.push_back(konst(0));
      const Bounds& x = bounds(u->src(0));
      const Bounds& y = bounds(u->src(1));
      bool found = false;
      for (int64_t k = 1; k <= 4 && !found; ++k)
        for (size_t i = 0; i < x.hi.size() && i < 4 && !found; ++i)
          for (size_t j = 0; j < y.lo.size() && j < 2 && !found; ++j)
            if (above_minus_one(add(add(scale(y.lo[j], k, 1), konst(1), -1), x.hi[i], -1), 1)) {
              push(b.hi, konst(k - 1));
              found = true;
            }
      for (const Poly& h : x.hi) push(b.hi, h);
    }
  } catch (const Overflow&) {
  }
  return b;
}

std::pair<i128, i128> Prover::range_of(const Poly& p) {
  i128 lo = 0, hi = 0;
  for (const auto& [m, c] : p.t) {
    i128 mlo = 1, mhi = 1;
    for (uint32_t a : m) {
      i128 x[4] = {checked_mul(mlo, atoms_[a].lo), checked_mul(mlo, atoms_[a].hi), checked_mul(mhi, atoms_[a].lo),
                   checked_mul(mhi, atoms_[a].hi)};
      mlo = *std::min_element(x, x + 4);
      mhi = *std::max_element(x, x + 4);
    }
    i128 a = checked_mul(c, mlo), b = checked_mul(c, mhi);
    if (__builtin_add_overflow(lo, std::min(a, b), &lo) || __builtin_add_overflow(hi, std::max(a, b), &hi))
      throw Overflow{};
  }
  return {lo, hi};
}

int Prover::sign(const Poly& p) {
  auto [lo, hi] = range_of(p);
  return lo >= 0 ? 1 : hi <= 0 ? -1 : 0;
}

// p with the loop atoms replaced by their bounds (each must appear linearly, its coefficient of
// known sign): polynomials in the dims, all below p (upper = false) or all above it
std::vector<Poly> Prover::bound_poly(const Poly& p, bool upper) {
  std::vector<Poly> acc{konst(0)};
  try {
    for (const auto& [m, c] : p.t) {
      std::vector<uint32_t> rest;
      std::vector<uint32_t> loops;
      for (uint32_t a : m) (atoms_[a].kind == Atom::Loop ? loops : rest).push_back(a);
      Poly coef;
      coef.t[rest] = c;
      coef.den = p.den;
      normalize(coef);
      std::vector<Poly> term;
      if (loops.empty()) {
        term.push_back(coef);
      } else {
        int s = loops.size() == 1 ? sign(coef) : 0;
        if (s == 0) return {};
        const Bounds& lb = bounds(atoms_[loops[0]].node);
        for (const Poly& x : (s > 0) == upper ? lb.hi : lb.lo) push(term, mul(coef, x));
      }
      std::vector<Poly> next;
      for (const Poly& a : acc)
        for (const Poly& t : term) push(next, add(a, t));
      acc = std::move(next);
      if (acc.empty()) return {};
    }
  } catch (const Overflow&) {
    return {};
  }
  return acc;
}

// bounds of p that use the gate: where x < y holds and p = lam * x + rest (lam >= 0 in the dims),
// p <= lam * (y - 1) + (bounds of rest); and alike for x >= y, and from below
std::vector<Poly> Prover::eliminate(const Poly& p, const std::vector<Conjunct>& cs, uint32_t used, bool upper) {
  std::vector<Poly> out = bound_poly(p, upper);
  for (size_t i = 0; i < cs.size() && i < 32; ++i) {
    if (used >> i & 1) continue;
    try {
      const Poly& x = exact(cs[i].x);
      for (const auto& [xm, xc] : x.t) {
        if (xm.size() != 1 || atoms_[xm[0]].kind != Atom::Loop) continue;
        uint32_t r = xm[0];
        Poly q;
        q.den = p.den;
        bool linear = true;
        for (const auto& [m, c] : p.t) {
          auto n = std::count(m.begin(), m.end(), r);
          if (n > 1) linear = false;
          if (n != 1) continue;
          std::vector<uint32_t> rest;
          for (uint32_t a : m)
            if (a != r) rest.push_back(a);
          for (uint32_t a : rest) linear = linear && atoms_[a].kind != Atom::Loop;
          q.t[rest] = c;
        }
        normalize(q);
        if (!linear || q.t.empty()) continue;
        Poly lam = scale(q, x.den, xc);
        // lam * x bounded by the comparison's side of x: from above by x <= y - 1 where lam >= 0, by
        // x >= y where lam <= 0; from below the other way round
        int s = sign(lam);
        if (s == 0 || (s > 0) != (cs[i].upper == upper)) continue;
        Poly rest = add(p, mul(lam, x), -1);
        std::vector<Poly> ys;
        if (cs[i].upper)
          for (const Poly& h : bounds(cs[i].y).hi) push(ys, add(h, konst(1), -1));
        else
          ys = bounds(cs[i].y).lo;
        for (const Poly& s : eliminate(rest, cs, used | (uint32_t(1) << i), upper))
          for (const Poly& y : ys) push(out, add(mul(lam, y), s));
      }
    } catch (const Overflow&) {
    }
  }
  return out;
}

Poly Prover::substitute(const Poly& p, uint32_t a, const Poly& with) {
  Poly out = konst(0);
  for (const auto& [m, c] : p.t) {
    Poly term;
    std::vector<uint32_t> rest;
    int n = 0;
    for (uint32_t b : m) {
      if (b == a)
        ++n;
      else
        rest.push_back(b);
    }
    term.t[rest] = c;
    term.den = p.den;
    for (int k = 0; k < n; ++k) term = mul(term, with);
    out = add(out, term);
  }
  return out;
}

// p > -1 at every point of the dims' ranges: so p >= 0 where p is an integer expression's bound
bool Prover::above_minus_one(const Poly& p, int depth) {
  try {
    if (range_of(p).first > -p.den) return true;
    // a dim d beside d // c: d = c * (d // c) + d % c, with the remainder in [0, c - 1]; again for
    // the quotients of what that leaves (K % 256 // 64 once K is 256 * (K // 256) + K % 256)
    Poly q = p;
    struct Sub {
      uint32_t first;  // the atom replaced
      Poly second;     // by this
      uint32_t third;  // the quotient it was replaced through
    };
    std::vector<Sub> subs;
    std::vector<uint32_t> done;
    for (bool changed = true; changed && done.size() < 8;) {
      changed = false;
      std::vector<uint32_t> quotients;
      for (const auto& [m, c] : q.t)
        for (uint32_t a : m)
          if (atoms_[a].kind == Atom::Quotient && std::find(done.begin(), done.end(), a) == done.end())
            quotients.push_back(a);
      // the smallest divisor first: d = 64 * (d // 64) + d % 64 leaves d // 256 as (d // 64) // 4
      std::stable_sort(quotients.begin(), quotients.end(),
                       [&](uint32_t a, uint32_t b) { return atoms_[a].divisor < atoms_[b].divisor; });
      for (uint32_t a : quotients) {
        Poly x = exact(atoms_[a].node);
        // d // (c * m) beside d = c * (d // c) + d % c: it is (d // c) // m, so d // c = m * (d // (c * m)) + a digit
        if (x.den == 1 && x.t.size() == 1 && x.t.begin()->second == 1 && x.t.begin()->first.size() == 1) {
          uint32_t dim = x.t.begin()->first[0];
          auto by = std::find_if(subs.begin(), subs.end(), [&](const auto& sb) { return sb.first == dim; });
          if (by != subs.end() && by->second.t.size() >= 1) {
            uint32_t qc = by->third;
            int64_t c = atoms_[qc].divisor, dd = atoms_[a].divisor;
            if (qc != a && dd % c == 0) {
              done.push_back(a);
              Poly with = add(scale(monomial(a), dd / c, 1), monomial(atom(Atom::Digit, atoms_[a].node, dd, dd / c)));
              q = substitute(q, qc, with);
              subs.push_back({qc, with, a});
              changed = true;
              break;
            }
            continue;
          }
        }
        for (const auto& sb : subs) x = substitute(x, sb.first, sb.second);
        // the dividend: one atom plus a constant
        uint32_t dim = ~0u;
        i128 k = 0;
        for (const auto& [xm, xc] : x.t) {
          if (xm.empty())
            k = xc;
          else if (xm.size() == 1 && xc == x.den && dim == ~0u)
            dim = xm[0];
          else
            dim = ~1u;
        }
        if (x.den != 1 || dim >= ~1u) continue;
        done.push_back(a);
        Poly with = add(scale(monomial(a), atoms_[a].divisor, 1),
                        add(monomial(atom(Atom::Remainder, atoms_[a].node, atoms_[a].divisor)), konst(k), -1));
        q = substitute(q, dim, with);
        subs.push_back({dim, with, a});
        changed = true;
        break;
      }
    }
    if (!done.empty() && range_of(q).first > -q.den) return true;
    // every quotient x // c as (x - x % c) / c, its dividend's polynomial (7 * M - 64 * (7 * M // 64)
    // is the remainder)
    Poly e = p;
    for (int round = 0; round < 4; ++round) {
      std::vector<uint32_t> quotients;
      for (const auto& [m, c] : e.t)
        for (uint32_t a : m)
          if (atoms_[a].kind == Atom::Quotient && std::find(quotients.begin(), quotients.end(), a) == quotients.end())
            quotients.push_back(a);
      if (quotients.empty()) break;
      for (uint32_t a : quotients) {
        const Atom at = atoms_[a];  // a copy: atom() below may grow atoms_
        Poly x = add(exact(at.node), monomial(atom(Atom::Remainder, at.node, at.divisor)), -1);
        e = substitute(e, a, scale(x, 1, at.divisor));
      }
    }
    if (range_of(e).first > -e.den) return true;
    if (depth == 0) return false;
    // an opaque dim expression (a min, a max) replaced by one of its bounds, on the side that lowers p
    for (const Poly* cur : {&p, static_cast<const Poly*>(&q)}) {
      std::vector<uint32_t> seen;
      for (const auto& [m, c] : cur->t)
        for (uint32_t a : m) {
          if (atoms_[a].kind != Atom::Dim || atoms_[a].node->op == Op::DEFINE_VAR) continue;
          if (std::find(seen.begin(), seen.end(), a) != seen.end()) continue;
          seen.push_back(a);
          Poly coef;
          coef.den = cur->den;
          bool linear = true;
          for (const auto& [m2, c2] : cur->t) {
            auto n = std::count(m2.begin(), m2.end(), a);
            if (n > 1) linear = false;
            if (n != 1) continue;
            std::vector<uint32_t> rest;
            for (uint32_t b : m2)
              if (b != a) rest.push_back(b);
            coef.t[rest] = c2;
          }
          normalize(coef);
          int s = linear ? sign(coef) : 0;
          if (s == 0) continue;
          Bounds ob = op_bounds(atoms_[a].node);
          for (const Poly& w : s > 0 ? ob.lo : ob.hi)
            if (above_minus_one(substitute(*cur, a, w), depth - 1)) return true;
        }
      if (done.empty()) break;
    }
  } catch (const Overflow&) {
  }
  return false;
}

std::string Prover::text(const Poly& p) {
  std::string out;
  for (auto it = p.t.rbegin(); it != p.t.rend(); ++it) {
    const auto& [m, c] = *it;
    std::string mono;
    for (uint32_t a : m) {
      const Atom& at = atoms_[a];
      std::string s = expr_text(at.node);
      bool bare = at.node->op == Op::DEFINE_VAR || at.node->op == Op::RANGE || at.node->op == Op::CONST;
      if (!bare) s = "(" + s + ")";
      if (at.kind == Atom::Quotient) s += " // " + std::to_string(at.divisor);
      if (at.kind == Atom::Remainder) s += " % " + std::to_string(at.divisor);
      if (at.kind == Atom::Digit) s += " % " + std::to_string(at.divisor) + " // " + num_text(at.divisor / (at.hi + 1));
      if (at.kind != Atom::Dim && at.kind != Atom::Loop) s = "(" + s + ")";
      mono += (mono.empty() ? "" : "*") + s;
    }
    i128 mag = c < 0 ? -c : c;
    std::string term = mono.empty() ? num_text(mag) : mag == 1 ? mono : num_text(mag) + "*" + mono;
    out += out.empty() ? (c < 0 ? "-" + term : term) : (c < 0 ? " - " : " + ") + term;
  }
  if (out.empty()) out = "0";
  if (p.den != 1) out = "(" + out + ")/" + num_text(p.den);
  return out;
}

AccessProof Prover::prove(const UOp* access) {
  AccessProof ap;
  const UOp* idx = access->src(0);
  const UOp* buf = idx->src(0);
  while (buf->op == Op::AFTER) buf = buf->src(0);
  ap.store = access->op == Op::STORE;
  ap.lanes = ap.store ? access->src(1)->dtype.count : access->dtype.count;
  ap.buffer =
      buf->op == Op::PARAM ? std::string(buf->arg<ParamArg>().name) : "acc" + std::to_string(buf->arg<ParamArg>().slot);
  const UOp* addr = idx->src(1);
  const UOp* gate = nullptr;
  if (addr->op == Op::WHERE && addr->src(2)->is_invalid()) gate = addr->src(0), addr = addr->src(1);
  ap.index = expr_text(addr);
  if (gate) ap.index += " (where " + expr_text(gate) + ")";
  ap.found = "[" + num_text(addr->exact_lo()) + ", " + num_text(addr->exact_hi()) + "]";
  const UOp* size = buf->nsrc() ? buf->src(0) : nullptr;
  if (!size || !dims_only(size) || addr->dtype.count != 1) {
    ap.size = size ? expr_text(size) : "?";
    return ap;
  }
  int per = buf->dtype.elem().count;  // an accumulator of vectors counts vectors
  try {
    Poly n = scale(exact(size), per, 1);
    ap.size = text(n);
    Poly last = add(n, konst(ap.lanes), -1);  // the highest index the access may start at
    auto prove_side = [&](const std::vector<Poly>& cands, bool upper) -> const Poly* {
      for (const Poly& c : cands)
        if (above_minus_one(upper ? add(last, c, -1) : c, kRelaxDepth)) return &c;
      return nullptr;
    };
    const Bounds& b = bounds(addr);
    const Poly* lo = prove_side(b.lo, false);
    const Poly* hi = prove_side(b.hi, true);
    std::vector<Poly> glo, ghi;
    if (gate && (!lo || !hi)) {
      std::vector<Conjunct> cs;
      std::vector<const UOp*> todo{gate};
      while (!todo.empty()) {
        const UOp* g = todo.back();
        todo.pop_back();
        if (g->op == Op::AND) {
          todo.insert(todo.end(), g->src().begin(), g->src().end());
        } else if (g->op == Op::CMPLT) {
          cs.push_back({g->src(0), g->src(1), true});
        } else if ((g->op == Op::CMPNE || g->op == Op::XOR) && g->src(1)->op == Op::CONST && g->src(1)->ival() == 1 &&
                   g->src(0)->op == Op::CMPLT) {
          cs.push_back({g->src(0)->src(0), g->src(0)->src(1), false});
        }
      }
      // the comparisons as bounds of what they compare (x // 2015 below 64 where x < 128960), in a
      // memo of their own
      std::vector<std::pair<Poly, Bounds>> given;
      for (const Conjunct& c : cs) {
        Bounds ob;
        if (c.upper)
          for (const Poly& h : bounds(c.y).hi) push(ob.hi, add(h, konst(1), -1));
        else
          ob.lo = bounds(c.y).lo;
        given.emplace_back(exact(c.x), std::move(ob));
      }
      // the plain memo back however this ends: the gate's bounds hold for this access only
      struct Restore {
        Prover& p;
        std::unordered_map<const UOp*, Bounds> plain;
        ~Restore() {
          p.gate_bounds_.clear();
          p.bounds_ = std::move(plain);
        }
      } restore{*this, std::move(bounds_)};
      bounds_.clear();
      gate_bounds_ = std::move(given);
      const Bounds& gb = bounds(addr);
      glo = gb.lo;
      ghi = gb.hi;
      const Poly& e = exact(addr);
      for (Poly& c : eliminate(e, cs, 0, false)) push(glo, std::move(c));
      for (Poly& c : eliminate(e, cs, 0, true)) push(ghi, std::move(c));
      if (!lo) lo = prove_side(glo, false);
      if (!hi) hi = prove_side(ghi, true);
      if (lo && hi) ap.how = AccessProof::How::Gate;
    } else if (lo && hi) {
      ap.how = AccessProof::How::Ranges;
    }
    if (lo && hi) ap.found = "[" + text(*lo) + ", " + text(*hi) + "]";
  } catch (const Overflow&) {
    ap.how = AccessProof::How::Unproven;
  }
  return ap;
}

}  // namespace

std::vector<AccessProof> prove_bounds(const UOp* sink) {
  Prover p;
  std::vector<AccessProof> out;
  for (const UOp* u : toposort(sink))
    if ((u->op == Op::LOAD || u->op == Op::STORE) && u->src(0)->op == Op::INDEX) out.push_back(p.prove(u));
  return out;
}

void check_bounds(std::string_view kernel, const std::vector<AccessProof>& proofs, const UOp* sink) {
  for (const AccessProof& a : proofs) {
    if (a.how != AccessProof::How::Unproven) continue;
    throw InternalError("stage 'prove bounds': kernel " + std::string(kernel) + ": the " +
                        (a.store ? "store to" : "load from") + " buffer " + a.buffer + " at index " + a.index +
                        (a.lanes > 1 ? " (" + std::to_string(a.lanes) + " lanes)" : std::string()) + ", found in " +
                        a.found + ", is not proven inside its " + a.size + " elements\n" + print_graph(sink));
  }
}

std::string_view how_name(AccessProof::How h) {
  switch (h) {
    case AccessProof::How::Ranges:
      return "proved by ranges";
    case AccessProof::How::Gate:
      return "proved by ranges under its gate";
    case AccessProof::How::Unproven:
      return "UNPROVEN";
  }
  return "UNPROVEN";
}

}  // namespace kiln::codegen
