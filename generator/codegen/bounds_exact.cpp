// The bounds prover's exact forms of nodes as polynomials over atoms, and each node's candidate
// bounds (bounds_poly.h has the Prover).
#include "generator/codegen/bounds_poly.h"

namespace kiln::codegen::bounds_detail {

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
  // (a node's first visit numbers its atoms: operands are visited in order, never as two arguments
  // of one call, whose order C++ leaves to the compiler: GCC's right to left gave atoms other numbers
  // than Clang's, other candidate bounds, and a proof where Clang's kiln found none)
  auto exact_both = [&](const UOp* v) -> std::pair<const Poly&, const Poly&> {
    const Poly& a = exact(v->src(0));
    return {a, exact(v->src(1))};
  };
  switch (u->op) {
    case Op::ADD: {
      auto [a, b] = exact_both(u);
      return add(a, b);
    }
    case Op::SUB: {
      auto [a, b] = exact_both(u);
      return add(a, b, -1);
    }
    case Op::MUL: {
      auto [a, b] = exact_both(u);
      return mul(a, b);
    }
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
    if (is_remainder(u)) {
      auto [x, y] = exact_both(u);
      const Poly& quotient = exact(q);
      return add(x, mul(y, quotient), -1);
    }
    if (q != u) return exact(q);
  }
  int64_t d = floor_divisor(u);
  const UOp* x = d ? u->src(0) : nullptr;
  // (x // y) % c of a dim expression y: (x // y) - c * (x // (y * c)), which cancels against the
  // rest of an unflattened index; any other remainder keeps its bounds [0, c - 1] as an atom
  if (x && !dims_only(x) && is_remainder(u) && u->op != Op::AND && !u->saturated_below() && symbolic_quotient(x) == x) {
    Op div = u->op == Op::FLOORMOD ? Op::FLOORDIV : Op::CDIV;
    const UOp* q = u->ctx().make(div, u->dtype, {x, u->src(1)});
    const Poly& dividend = exact(x);
    return add(dividend, exact(q), -d);
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
    if (u->op == Op::RANGE || u->op == Op::SPECIAL) {  // a loop or a work-item id: 0 .. end - 1
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

}  // namespace kiln::codegen::bounds_detail
