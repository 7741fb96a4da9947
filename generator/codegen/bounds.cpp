#include "generator/codegen/bounds.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "generator/codegen/bounds_poly.h"
#include "generator/codegen/passes.h"
#include "generator/ir/text.h"

namespace kiln::codegen {

namespace bounds_detail {

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
    // the runtime calls core 0 .. cores - 1: where p falls as .core grows (a core's region of a
    // scratch of .cores regions), .core is at most .cores - 1
    {
      uint32_t core = ~0u, cores = ~0u;
      for (const auto& [m, c] : p.t)
        for (uint32_t a : m)
          if (atoms_[a].kind == Atom::Dim && atoms_[a].node->op == Op::DEFINE_VAR) {
            std::string_view n = atoms_[a].node->arg<VarArg>().name;
            if (n == kCoreVar) core = a;
            if (n == kCoresVar) cores = a;
          }
      bool falls = core != ~0u && cores != ~0u;
      for (const auto& [m, c] : p.t)
        if (std::count(m.begin(), m.end(), core) > 0) falls = falls && m.size() == 1 && c < 0;
      if (falls && depth > 0)
        return above_minus_one(substitute(p, core, add(monomial(cores), konst(1), -1)), depth - 1);
    }
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
  if (ap.how == AccessProof::How::Unproven && solver_proves(addr, gate, size, per, ap.lanes))
    ap.how = AccessProof::How::Solver;
  return ap;
}

}  // namespace bounds_detail

std::vector<AccessProof> prove_bounds(const UOp* sink) {
  bounds_detail::Prover p;
  std::vector<AccessProof> out;
  for (const UOp* u : toposort(sink))
    if ((u->op == Op::LOAD || u->op == Op::STORE) && u->src(0)->op == Op::INDEX) out.push_back(p.prove(u));
  return out;
}

const AccessProof* first_unproven(const std::vector<AccessProof>& proofs) {
  for (const AccessProof& a : proofs)
    if (a.how == AccessProof::How::Unproven) return &a;
  return nullptr;
}

std::string describe(const AccessProof& a) {
  return std::string("the ") + (a.store ? "store to" : "load from") + " buffer " + a.buffer + " at index " + a.index +
         (a.lanes > 1 ? " (" + std::to_string(a.lanes) + " lanes)" : std::string()) + ", found in " + a.found +
         ", is not proven inside its " + a.size + " elements";
}

void check_bounds(std::string_view kernel, const std::vector<AccessProof>& proofs, const UOp* sink) {
  if (const AccessProof* a = first_unproven(proofs))
    throw InternalError("stage 'prove bounds': kernel " + std::string(kernel) + ": " + describe(*a) + "\n" +
                        print_graph(sink));
}

std::string_view how_name(AccessProof::How h) {
  switch (h) {
    case AccessProof::How::Ranges:
      return "proved by ranges";
    case AccessProof::How::Gate:
      return "proved by ranges under its gate";
    case AccessProof::How::Solver:
      return "proved by Z3";
    case AccessProof::How::Unproven:
      return "UNPROVEN";
  }
  return "UNPROVEN";
}

std::string index_text(const UOp* u) { return bounds_detail::expr_text(u); }

}  // namespace kiln::codegen
