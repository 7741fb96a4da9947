// commutative (canonical operand order), symbolic (the seeds' phase 2: like terms, comparisons,
// where folding, casts) and simplify().
#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "generator/ir/int_math.h"
#include "generator/symbolic/symbolic.h"

namespace kiln {

namespace {

using namespace pat;  // NOLINT: rules read like algebra

const std::vector<DType> kInts = {dtypes::int8,  dtypes::uint8,  dtypes::int16, dtypes::uint16,
                                  dtypes::int32, dtypes::uint32, dtypes::int64, dtypes::uint64};
const std::vector<DType> kSInts = {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64};

int64_t py_floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// numeric order of two range-analysis values of dtype d (ints exactly, uint64 read unsigned; floats as doubles)
int cmp_cv(DType d, const ConstValue& a, const ConstValue& b) {
  if (!a.is_float() && !b.is_float()) {
    i128 x = exact_value(d, a.i), y = exact_value(d, b.i);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  double x = a.as_double(), y = b.as_double();
  return x < y ? -1 : x > y ? 1 : 0;
}
// the exact value of an integer CONST
i128 cint_value(const UOp* c) { return exact_value(c->dtype, c->ival()); }
bool int_const(const UOp* u) { return u->is_const() && (u->cval().is_int() || u->cval().is_bool()); }

// a CONST of value v in the promoted dtype of two constants (the seeds' c1-c0 on UOps)
const UOp* const_of(const UOp* p, const UOp* q, int64_t v) {
  return p->ctx().cconst(ConstValue::of_int(v), least_upper_dtype(p->dtype, q->dtype).base());
}

const UOp* sum_of(const std::vector<const UOp*>& terms) {
  Expr r = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) r = r + Expr(terms[i]);
  return r;
}

// x < c over a sum where the terms with a common factor d decide the result alone: the others
// add at least 0 and less than d.
const UOp* lt_folding(const UOp* x, int64_t c) {
  std::vector<const UOp*> p, np;
  for (const UOp* u : x->split(Op::ADD)) (u->const_factor() == 1 ? p : np).push_back(u);
  if (np.empty()) return nullptr;
  // a variable's multiple_of would divide it into var//d, which `x//d < c -> x < c*d` turns
  // straight back: no progress, so leave comparisons of such terms alone
  for (const UOp* u : np)
    if (u->op == Op::DEFINE_VAR) return nullptr;
  int64_t d = c;
  for (const UOp* u : np) d = safe_gcd(d, u->const_factor());
  if (d <= 1) return nullptr;
  int64_t lo = 0, hi = 0;
  for (const UOp* u : p)
    if (__builtin_add_overflow(lo, u->imin(), &lo) || __builtin_add_overflow(hi, u->imax(), &hi)) return nullptr;
  if (lo < 0 || hi >= d) return nullptr;
  const UOp* q = sum_of(np)->divides(d);
  if (q == nullptr) return nullptr;
  return (Expr(q) < c / d).get();
}

// (a0*x0 + a1*x1 + ...) >= 1 is x0 + x1 + ... >= 1 when every xi >= 0 and every ai > 0 (ints)
const UOp* canonicalize_simplex(const UOp* X) {
  bool changed = false;
  std::vector<const UOp*> ret;
  for (const UOp* u : X->split(Op::ADD)) {
    if (u->op == Op::MUL && u->src(1)->op == Op::CONST && int_const(u->src(1)) && u->src(1)->ival() > 0) {
      changed = true;
      u = u->src(0);
    }
    if (!in_group(u->op, G_IRREDUCIBLE) || u->is_invalid() || u->imin() < 0) return nullptr;
    ret.push_back(u);
  }
  return changed ? sum_of(ret) : nullptr;
}

// in cond.where(t, f), cond is true throughout t and false throughout f
const UOp* fold_where_closure(const UOp* root, const UOp* cond, const UOp* t, const UOp* f) {
  if (!contains(t, cond) && !contains(f, cond)) return nullptr;
  // INDEX gates belong to the valid and store-coalescing rules
  for (const UOp* u : {cond, t, f})
    if (in_backward_slice(u, Op::INDEX)) return nullptr;
  const UOp* nt = substitute(t, cond, root->ctx().cbool(true));
  const UOp* nf = substitute(f, cond, root->ctx().cbool(false));
  return root->ctx().make(Op::WHERE, root->dtype, {cond, nt, nf});
}

const UOp* drop_pure_after_deps(const UOp* x) {
  std::vector<const UOp*> srcs{x->src(0)};
  auto add = [&](const UOp* u) {
    if (std::find(srcs.begin() + 1, srcs.end(), u) == srcs.end()) srcs.push_back(u);
  };
  const OpSet effects{Op::RANGE, Op::STORE, Op::CALL, Op::FUNCTION, Op::BARRIER, Op::END, Op::LINEAR, Op::STAGE};
  for (size_t i = 1; i < x->nsrc(); ++i) {
    const UOp* y = x->src(i);
    if (effects.has(y->op))
      add(y);
    else
      for (const UOp* s : y->src()) add(s);
  }
  return x->with_src(srcs);
}

// int64 math that fits in int32 is done in int32; weak constants stay weak
const UOp* narrow_long_math(const UOp* u, const UOp* x, const UOp* y) {
  if (x->dtype != dtypes::int64 && y->dtype != dtypes::int64) return nullptr;
  auto fits = [](const UOp* v) {
    if (!is_int(v->dtype) && !is_bool(v->dtype)) return false;
    return v->imin() >= int_min(dtypes::int32) && v->imax() <= int_max(dtypes::int32);
  };
  if (!fits(u) || !fits(x) || !fits(y)) return nullptr;
  // an int32 shift takes amounts up to 31 only
  if ((u->op == Op::SHL || u->op == Op::SHR) && (y->imin() < 0 || y->imax() > 31)) return nullptr;
  auto narrow = [](const UOp* v) { return v->is_const() ? v->ctx().cint(v->ival()) : v->cast(dtypes::int32); };
  return narrow(x)->alu(u->op, narrow(y))->cast(u->dtype);
}

PatternMatcher make_commutative() {
  return PatternMatcher({
      // NOTE: only index math; flipping vector math could split otherwise mergeable ops
      Rule(UPat::op(OpSet::of_group(G_COMMUTATIVE)).dtype({dtypes::weakint}),
           [](const Match& m) -> const UOp* {
             const UOp* u = m.root;
             if (u->nsrc() != 2 || compare_structural(u->src(1), u->src(0)) >= 0) return nullptr;
             const UOp* s[2] = {u->src(1), u->src(0)};
             return u->with_src(s);
           }),
  });
}

PatternMatcher make_symbolic() {
  const std::vector<DType> ints_w = [] {
    auto v = kInts;
    v.push_back(dtypes::weakint);
    return v;
  }();
  UPat xb = UPat::var("x", {dtypes::bool_}), xw = UPat::var("x", {dtypes::weakint});
  UPat xi = UPat::var("x", ints_w);
  UPat cond = UPat::var("cond", {dtypes::bool_});
  UPat t = UPat::var("t"), f = UPat::var("f"), tt = UPat::var("tt"), ff = UPat::var("ff");
  UPat x2 = UPat::var("x2"), x3 = UPat::var("x3"), alu = UPat::var("alu"), end = UPat::var("end");
  UPat ca = UPat::cvar("a"), cb = UPat::cvar("b"), cc = UPat::cvar("c"), cd = UPat::cvar("d");
  UPat r = UPat::var("r"), cst = UPat::var("cast");
  auto recip = [](const UPat& p) { return UPat::op(Op::RECIPROCAL, {p}); };
  auto cwhere = [](const UOp* root, const UOp* cnd, const UOp* a, const UOp* b) {
    return root->ctx().make(Op::WHERE, a->dtype, {cnd, a, b});
  };

  std::vector<Rule> rules = {
      // ** boolean algebra
      Rule(xb | xb.logical_not(), [](const Match& m) { return m.root->const_like(int64_t(1)); }),
      // ** like terms
      rw(x * c0 + x * c1, x * (c0 + c1).fold()),
      rw((y + x * c0) + x * c1, y + x * (c0 + c1).fold()),
      rw(x + x * c0, x * (c0 + 1).fold()),
      rw((y + x) + x * c0, y + x * (c0 + 1).fold()),
      rw((y + x * c0) + x, y + x * (c0 + 1).fold()),
      rw(x + x, x * 2),
      rw((y + x) + x, y + x * 2),
      // (x/x2)/x3 -> x/(x2*x3), division being x*(1/y)
      Rule((x * recip(x2)) * recip(x3),
           [=](const Match& m) -> const UOp* {
             if (m[x2] == m[x3]) return nullptr;
             return (Expr(m[x]) / (Expr(m[x2]) * Expr(m[x3]))).get();
           }),
      rw((x + c0) * -1, x * -1 + (c0 * -1).fold()),
      rw(c1 * (xw + c0), c1 * x + (c1 * c0).fold()),

      // ** where folding
      Rule(cond.logical_not().where(t, f),
           [=](const Match& m) -> const UOp* {
             if (m[f]->is_invalid()) return nullptr;
             return cwhere(m.root, m[cond], m[f], m[t]);
           }),
      Rule(cond.where(t, f), [=](const Match& m) { return fold_where_closure(m.root, m[cond], m[t], m[f]); }),
      // two wheres on the same condition combine when a branch pair is constant
      Rule(UPat::op(OpSet::of_group(G_BINARY), {c.where(t, f), c.where(tt, ff)}).named("alu"),
           [=](const Match& m) -> const UOp* {
             bool tc = m[t]->is_const() && m[tt]->is_const(), fc = m[f]->is_const() && m[ff]->is_const();
             if (!tc && !fc) return nullptr;
             Op op = m[alu]->op;
             return m[c]->where(m[t]->alu(op, m[tt]), m[f]->alu(op, m[ff]));
           }),
      Rule((y + c.where(t, f)) + c.where(tt, ff),
           [=](const Match& m) -> const UOp* {
             bool tc = m[t]->is_const() && m[tt]->is_const(), fc = m[f]->is_const() && m[ff]->is_const();
             if (!tc && !fc) return nullptr;
             return (Expr(m[y]) + Expr(m[c]->where(Expr(m[t]) + Expr(m[tt]), Expr(m[f]) + Expr(m[ff])))).get();
           }),
      rw(c.where(t, UPat::cnst(0)) + c.where(UPat::cnst(0), f), c.where(t, f)),

      // ** a node whose range is one value is that value
      Rule(UPat::op(
               {Op::CMPLT, Op::CMPNE, Op::FLOORDIV, Op::FLOORMOD, Op::PARAM, Op::AFTER, Op::SPECIAL, Op::DEFINE_VAR}),
           [](const Match& m) -> const UOp* {
             const UOp* u = m.root;
             if (u->dtype.ptr || !(is_int(u->dtype) || is_bool(u->dtype))) return nullptr;
             return u->vmin() == u->vmax() ? u->const_like(u->vmin()) : nullptr;
           }),
      Rule(UPat::op(Op::RANGE, {UPat::op(Op::CONST)}),
           [](const Match& m) -> const UOp* {
             const UOp* u = m.root;
             return u->vmin() == u->vmax() ? u->const_like(u->vmin()) : nullptr;
           }),

      // ** max folding (not for floats: where() picks a side for NaN, MAX propagates it)
      Rule((ca < b).where(b, cc),
           [](const Match& m) -> const UOp* {
             if (is_float(m[b]->dtype)) return nullptr;
             return m[a]->cval() == m[c]->cval() ? maximum(m[a], m[b]).get() : nullptr;
           }),
      Rule((a < cb).where(cc, a),
           [](const Match& m) -> const UOp* {
             if (is_float(m[a]->dtype)) return nullptr;
             return m[b]->cval() == m[c]->cval() ? maximum(m[a], m[b]).get() : nullptr;
           }),
      Rule(x.maximum(y),
           [](const Match& m) -> const UOp* {
             DType d = m.root->dtype.base();
             if (cmp_cv(d, m[x]->vmin(), m[y]->vmax()) >= 0) return m[x];
             if (cmp_cv(d, m[x]->vmax(), m[y]->vmin()) <= 0) return m[y];
             return nullptr;
           }),
  };

  // ** two stage ALU folding
  for (Op op : {Op::ADD, Op::MUL, Op::AND, Op::OR, Op::MAX})
    rules.push_back(rw(x.alu(op, c1).alu(op, c2), x.alu(op, c1.alu(op, c2).fold())));

  std::vector<Rule> more = {
      // (x//c1)//c2 -> x//(c1*c2) for c2 > 0, c1*c2 in the dtype (and c1 > 0 where x//-1 can wrap)
      Rule((x / c1) / c2,
           [](const Match& m) -> const UOp* {
             if (!int_const(m[c1]) || !int_const(m[c2])) return nullptr;
             i128 a = cint_value(m[c1]), b = cint_value(m[c2]);
             DType d = least_upper_dtype(m[c1]->dtype, m[c2]->dtype).base();
             if (b <= 0 || a == 0 || (a < 0 && !is_weak(m.root->dtype))) return nullptr;
             i128 p;
             if (__builtin_mul_overflow(a, b, &p) || !fits(d, p) || !fits(m.root->dtype.base(), p)) return nullptr;
             return (Expr(m[x]) / Expr(const_of(m[c1], m[c2], carried_value(d, p)))).get();
           }),

      // ** lt
      // c0+x < c1 -> x < c1-c0, where c0+x does not wrap
      Rule((c0 + xi).named("a") < c1,
           [](const Match& m) -> const UOp* {
             if (!int_const(m[c0]) || !int_const(m[c1])) return nullptr;
             DType d = m[a]->dtype.base();
             i128 k = cint_value(m[c0]), v = cint_value(m[c1]) - k;
             // the sum's exact range: a fixed-width sum that could wrap keeps its comparison
             if (!is_weak(d) && !(fits(d, m[x]->exact_lo() + k) && fits(d, m[x]->exact_hi() + k))) return nullptr;
             DType cd = least_upper_dtype(m[c1]->dtype, m[c0]->dtype).base();
             if (!fits(cd, v) || !fits(d, v)) return nullptr;
             return (Expr(m[x]) < Expr(const_of(m[c1], m[c0], carried_value(cd, v)))).get();
           }),
      // c0*x < c1 -> sign(c0)*x < ceil(c1/|c0|)
      Rule((c0 * xw) < c1,
           [](const Match& m) -> const UOp* {
             if (!int_const(m[c0]) || !int_const(m[c1])) return nullptr;
             int64_t k = m[c0]->ival(), v = m[c1]->ival();
             if (k == INT64_MIN || v == INT64_MIN || (k > -2 && k < 2)) return nullptr;
             Expr lhs = k > 0 ? Expr(m[x]) : -Expr(m[x]);
             return (lhs < -py_floordiv(-v, k < 0 ? -k : k)).get();
           }),
      // x//d < c -> x < c*d for d > 0, c*d < x for d < 0
      Rule((xw / cd) < cc,
           [](const Match& m) -> const UOp* {
             if (!int_const(m[d]) || !int_const(m[c])) return nullptr;
             int64_t p, dv = m[d]->ival();
             if (dv == 0 || __builtin_mul_overflow(m[c]->ival(), dv, &p)) return nullptr;
             return dv > 0 ? (Expr(m[x]) < p).get() : (Expr(m[x]) > p).get();
           }),

      // ** constants move to the end of add and mul chains
      Rule((x + c1) + y,
           [](const Match& m) -> const UOp* {
             if (m[y]->is_const()) return nullptr;
             return ((Expr(m[x]) + Expr(m[y])) + Expr(m[c1])).get();
           }),
      Rule((x * c1) * y,
           [](const Match& m) -> const UOp* {
             if (m[y]->is_const()) return nullptr;
             return ((Expr(m[x]) * Expr(m[y])) * Expr(m[c1])).get();
           }),

      // ** generic lt folding
      Rule(xw < cc,
           [](const Match& m) -> const UOp* {
             if (!int_const(m[c]) || m[c]->ival() <= 0) return nullptr;
             return lt_folding(m[x], m[c]->ival());
           }),
      Rule((xw * -1) < (y * -1), [](const Match& m) { return (Expr(m[y]) < Expr(m[x])).get(); }),
      // a simplex with positive coefficients is positive iff its plain sum is. NOTE: !(x < 1) is x >= 1
      Rule((xw < 1).ne(UPat::cbool(true)),
           [](const Match& m) -> const UOp* {
             const UOp* nx = canonicalize_simplex(m[x]);
             return nx ? (Expr(nx) < 1)->logical_not() : nullptr;
           }),
      // a range modulo (or divided by) its own end
      rw(UPat::op(Op::RANGE, {end}).named("r") % end, r),
      Rule(UPat::op(Op::RANGE, {end}).named("r") / end, [=](const Match& m) { return m[r]->const_like(int64_t(0)); }),

      // ** casts
      // an intermediate cast that does not narrow is one cast
      Rule(x.cast().named("a").cast().named("b"),
           [](const Match& m) -> const UOp* {
             return can_lossless_cast(m[x]->dtype, m[a]->dtype) ? m[x]->cast(m[b]->dtype) : nullptr;
           }),
      Rule(xi.cast(ints_w).named("a").cast().named("b"),
           [](const Match& m) -> const UOp* {
             DType ad = m[a]->dtype;
             if (!fits(ad, m[x]->exact_lo()) || !fits(ad, m[x]->exact_hi())) return nullptr;
             return m[x]->cast(m[b]->dtype);
           }),
      Rule(UPat::op(OpSet::of_group(G_BINARY), {UPat::var("x", {dtypes::int64, dtypes::weakint}),
                                                UPat::var("y", {dtypes::int64, dtypes::weakint})}),
           [](const Match& m) { return narrow_long_math(m.root, m[x], m[y]); }),
      Rule((xw + cc).cast(kSInts).named("cast"),
           [=](const Match& m) -> const UOp* {
             const UOp* k = m[cst];
             return (Expr(m[x]->cast(k->dtype)) + Expr(k->const_like(m[c]->cval()))).get();
           }),

      // ** AFTER orders only after side effects; a plain value dependency is replaced by its sources
      Rule(UPat::op(Op::AFTER), [](const Match& m) { return drop_pure_after_deps(m.root); }),
      rw(UPat::op({Op::AFTER, Op::END}, {UPat::var("s")}), UPat::var("s")),
  };
  for (auto& rl : more) rules.push_back(std::move(rl));
  return PatternMatcher(std::move(rules));
}

}  // namespace

const PatternMatcher& commutative() {
  static const PatternMatcher pm = make_commutative();
  return pm;
}

const PatternMatcher& symbolic() {
  static const PatternMatcher pm =
      (symbolic_simple() + commutative() + make_symbolic() + div_and_mod_symbolic()).remember_fixed_points();
  return pm;
}

namespace {

const UOp* fold_int_consts(const UOp* u, int& budget) {
  if (u->op == Op::CONST) return u->is_invalid() || !(is_int(u->dtype) || is_bool(u->dtype)) ? nullptr : u;
  if (--budget < 0 || !is_alu(u->op) || u->op == Op::THREEFRY || u->nsrc() > 3 || u->dtype.count != 1 || u->dtype.ptr ||
      !(is_int(u->dtype) || is_bool(u->dtype)))
    return nullptr;
  for (const UOp* s : u->src())
    if (s->op != Op::CONST && !is_alu(s->op)) return nullptr;  // a RANGE, a variable: not a constant
  ConstValue vals[3];
  for (size_t i = 0; i < u->nsrc(); ++i) {
    const UOp* s = fold_int_consts(u->src(i), budget);
    if (s == nullptr) return nullptr;
    vals[i] = s->cval();
  }
  std::optional<ConstValue> r =
      exec_alu(u->op, u->dtype.base(), std::span<const ConstValue>(vals, u->nsrc()), operand_dtype(u));
  return r ? u->const_like(*r) : nullptr;
}

}  // namespace

const UOp* fold_int_constants(const UOp* u) {
  int budget = 16;  // a shape's arithmetic is small; a larger tree is left to simplify()
  return fold_int_consts(u, budget);
}

const UOp* simplify(const UOp* u) {
  if (u->op == Op::CONST) return u;
  if (u->op == Op::SINK && std::all_of(u->src().begin(), u->src().end(), [](const UOp* s) {
        return s->op == Op::CONST || (s->op == Op::STACK && s->nsrc() == 0);
      }))
    return u;
  RewriteOptions opts;
  opts.name = "simplify";
  return graph_rewrite(u, symbolic(), nullptr, opts);
}

std::optional<int64_t> step_along(const UOp* u, const UOp* r, const UOp* at) {
  const UOp* step = simplify(Expr(substitute(u, r, Expr(at) + 1)) - Expr(substitute(u, r, at)));
  if (step->op != Op::CONST) return std::nullopt;
  return step->ival();
}

}  // namespace kiln
