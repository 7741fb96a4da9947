// Simplification under a valid (a gate): inside cond.where(x, Invalid) and inside a chain of
// AND-ed conditions, every clause is known true, which bounds the expressions it compares.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "generator/symbolic/symbolic.h"

namespace kiln {

namespace {

using namespace pat;  // NOLINT: rules read like algebra

struct Bound {
  const UOp* expr;
  bool upper;  // expr <= c when true, expr >= c when false
  int64_t c;
};

// the bounds below are signed int64: uint64 (carried as its bit pattern from 2^63 up) is left alone
bool signed_carried(const UOp* u) { return is_int(u->dtype) && u->dtype.scalar != Scalar::Uint64; }

// Reads one clause as a bound on an integer expression, or nothing.
std::optional<Bound> parse_valid(const UOp* v) {
  // !(X < c) is X >= c
  if (v->op == Op::CMPNE && v->src(1)->is_const() && !v->src(1)->is_invalid() && v->src(1)->cval().as_double() == 1 &&
      v->src(0)->op == Op::CMPLT && signed_carried(v->src(0)->src(0)) && signed_carried(v->src(0)->src(1))) {
    const UOp* s0 = v->src(0);
    return Bound{s0->src(0), false, s0->src(1)->imin()};
  }
  if (v->op == Op::CMPLT && signed_carried(v->src(0)) && signed_carried(v->src(1))) {
    int64_t c;
    // c < X is X >= c+1
    if (v->src(0)->is_const()) {
      if (__builtin_add_overflow(v->src(0)->ival(), 1, &c)) return std::nullopt;
      return Bound{v->src(1), false, c};
    }
    // X < c is X <= c-1
    if (__builtin_sub_overflow(v->src(1)->imax(), 1, &c)) return std::nullopt;
    return Bound{v->src(0), true, c};
  }
  return std::nullopt;
}

const UOp* and_all(const std::vector<const UOp*>& v) {
  Expr r = v[0];
  for (size_t i = 1; i < v.size(); ++i) r = r & Expr(v[i]);
  return r;
}

// A stand-in variable for an expression within known bounds. The name cannot come from a spec.
const UOp* stand_in(const UOp* like, size_t i, int64_t lo, int64_t hi) {
  std::string name = "valid#" + std::to_string(i);
  return like->ctx().var(like->ctx().intern(name), lo, hi, like->dtype.base());
}

// whether `to` has a range or a launch id that `from` does not: a loop is one node wherever it is
// used, so an end that the valid simplified (RANGE(N) where the valid says N is 4) would be another
// loop, which no END closes; and an id (SPECIAL(N) "idx0") would be a second declaration of
// idx0, whose end the launch might take
bool makes_a_range(const UOp* from, const UOp* to) {
  auto loop_or_id = [](const UOp* r) { return r->op == Op::RANGE || r->op == Op::SPECIAL; };
  std::unordered_set<const UOp*> had;
  for (const UOp* r : toposort(from))
    if (loop_or_id(r)) had.insert(r);
  for (const UOp* r : toposort(to))
    if (loop_or_id(r) && !had.contains(r)) return true;
  return false;
}

const UOp* given_valid(const UOp* valid, const UOp* u, bool try_simplex);

}  // namespace

const UOp* uop_given_valid(const UOp* valid, const UOp* u, bool try_simplex) {
  const UOp* r = given_valid(valid, u, try_simplex);
  return r != u && makes_a_range(u, r) ? u : r;
}

namespace {

const UOp* given_valid(const UOp* valid, const UOp* u, bool try_simplex) {
  // the clauses as [lower, upper] bounds per expression, in first-seen order
  struct Bounds {
    const UOp* expr;
    std::optional<int64_t> lo, hi;
  };
  std::vector<Bounds> bounds;
  for (const UOp* stmt : valid->split(Op::AND)) {
    auto res = parse_valid(stmt);
    if (!res) continue;
    auto it = std::find_if(bounds.begin(), bounds.end(), [&](const Bounds& b) { return b.expr == res->expr; });
    if (it == bounds.end()) it = bounds.insert(bounds.end(), Bounds{res->expr, {}, {}});
    (res->upper ? it->hi : it->lo) = res->c;
  }

  std::vector<std::pair<const UOp*, const UOp*>> all;
  for (size_t i = 0; i < bounds.size(); ++i) {
    const UOp* expr = bounds[i].expr;
    int64_t v0 = bounds[i].lo.value_or(expr->imin()), v1 = bounds[i].hi.value_or(expr->imax());
    // an unsatisfiable valid leaves the value unconstrained: nothing to learn from it
    if (v0 > v1) continue;
    all.emplace_back(expr, stand_in(expr, i, v0, v1));
    if (!try_simplex) continue;

    // every candidate is a set of substitutions; when all of them simplify u to one result, u is that result
    std::vector<std::vector<std::pair<const UOp*, const UOp*>>> candidates{{all.back()}};
    // X0 + X1 + ... >= 1 over irreducible Xi: try each Xi >= 1 alone
    std::vector<const UOp*> terms = expr->split(Op::ADD);
    if (expr->op == Op::ADD && v0 == 1 &&
        std::all_of(terms.begin(), terms.end(), [](const UOp* t) { return in_group(t->op, G_IRREDUCIBLE); })) {
      std::vector<std::pair<const UOp*, const UOp*>> cand;
      bool ok = true;
      for (const UOp* t : terms) {
        if (t->is_invalid() || t->imax() < 1)
          ok = false;
        else
          cand.emplace_back(t, stand_in(t, i, 1, t->imax()));
      }
      if (ok) candidates.push_back(std::move(cand));
    }
    for (const auto& cand : candidates) {
      if (std::any_of(cand.begin(), cand.end(), [&](const auto& p) { return !contains(u, p.first); })) continue;
      bool pair = u->op == Op::STACK && u->nsrc() == 2;
      std::vector<const UOp*> outs;
      for (const auto& [X, nX] : cand) {
        outs.push_back(simplify(substitute(simplify(substitute(u, X, nX)), nX, X)));
        // the rest cannot change u: an output equal to u keeps every part of u, and outputs that
        // differ change only a pair, per element where all of them agree
        if (outs.back() == u || (!pair && outs.back() != outs[0])) break;
      }
      if (outs.size() < cand.size()) continue;
      bool same = std::all_of(outs.begin(), outs.end(), [&](const UOp* o) { return o == outs[0]; });
      if (same) {
        u = outs[0];
      } else if (pair) {
        for (size_t k = 0; k < 2; ++k) {
          if (!std::all_of(outs.begin(), outs.end(), [&](const UOp* o) { return o->src(k) == outs[0]->src(k); }))
            continue;
          std::vector<const UOp*> s(u->src().begin(), u->src().end());
          s[k] = outs[0]->src(k);
          u = u->with_src(s);
        }
      }
    }
  }

  // all the clauses together (whole expressions only): the expressions are distinct, and so are
  // their stand-ins (one name each)
  if (all.empty()) return u;
  const UOp* s = substitute(u, std::span<const std::pair<const UOp*, const UOp*>>(all));
  if (s == u) return u;
  std::vector<std::pair<const UOp*, const UOp*>> back;
  back.reserve(all.size());
  for (const auto& [X, nX] : all) back.emplace_back(nX, X);
  return simplify(substitute(simplify(s), std::span<const std::pair<const UOp*, const UOp*>>(back)));
}

const UOp* simplify_valid(const UOp* valid) {
  // only for index math: a valid over loaded data is left alone
  if (in_backward_slice(valid, Op::INDEX)) return nullptr;
  std::vector<const UOp*> valids = valid->split(Op::AND);
  // a clause whose expression appears in other clauses goes first, so that it can simplify them
  auto priority = [&](const UOp* v) {
    auto res = parse_valid(v);
    if (!res) return 0;
    int p = 0;
    for (const UOp* o : valids) p -= contains(o, res->expr) ? 1 : 0;
    return p;
  };
  std::vector<std::pair<int, const UOp*>> keyed;
  for (const UOp* v : valids) keyed.emplace_back(priority(v), v);
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& p, const auto& q) { return p.first < q.first; });
  std::vector<const UOp*> sorted;
  for (const auto& kv : keyed) sorted.push_back(kv.second);

  std::vector<const UOp*> ret, seen;
  for (const UOp* stmt : sorted) {
    if (std::find(seen.begin(), seen.end(), stmt) != seen.end()) continue;
    seen.push_back(stmt);
    if (!ret.empty()) stmt = uop_given_valid(and_all(ret), stmt);
    ret.push_back(stmt);
  }
  return ret != sorted ? and_all(ret) : nullptr;
}

// pure index math only: a LOAD under the gate runs even where the gate is false
const UOp* gated_given_valid(const UOp* root, const UOp* cond, const UOp* x, const UOp* inv) {
  if (x->dtype != dtypes::weakint || in_backward_slice(x, Op::INDEX)) return nullptr;
  const UOp* nx = uop_given_valid(cond, x, false);
  if (nx == x) return nullptr;
  return root->ctx().make(Op::WHERE, nx->dtype, {cond, nx, inv});
}

PatternMatcher make_simplify_valid() {
  UPat cond = UPat::var("cond"), inv = UPat::invalid().named("i");
  return PatternMatcher({
      Rule(UPat::op(Op::AND).dtype({dtypes::bool_}), [](const Match& m) { return simplify_valid(m.root); }),
      Rule(cond.where(x, inv), [=](const Match& m) { return gated_given_valid(m.root, m[cond], m[x], m[inv]); }),
  });
}

}  // namespace

const PatternMatcher& pm_simplify_valid() {
  static const PatternMatcher pm = make_simplify_valid();
  return pm;
}

}  // namespace kiln
