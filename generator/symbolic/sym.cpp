// sym: the complete symbolic (the seeds' phase 3: symbolic + valid simplification + the
// opinionated term rules), and pm_cast_weak (a concrete CAST over weak math commits its width).
#include <vector>

#include "generator/symbolic/symbolic.h"

namespace kiln {

namespace {

using namespace pat;  // NOLINT: rules read like algebra

const UOp* noop(const UOp* like) { return like->ctx().make(Op::NOOP, dtypes::void_); }
const UOp* recip(const UOp* x) { return x->ctx().make(Op::RECIPROCAL, x->dtype, {x}); }

// A weak value committed at dt: a CONST takes dt directly, anything else is cast.
const UOp* commit_weak(const UOp* s, DType dt) {
  if (s->is_invalid()) return s;
  return s->is_const() ? s->ctx().cconst(s->cval(), dt) : s->cast(dt);
}

// A gated index: cond.where(idx, Invalid).
const UOp* valid_index(const UOp* idx, const UOp* cond) {
  return idx->ctx().make(Op::WHERE, idx->dtype, {cond, idx, idx->ctx().invalid()});
}
const UOp* reindex(const UOp* index, const UOp* gated_idx) {
  return index->ctx().make(Op::INDEX, index->dtype, {index->src(0), gated_idx});
}
const UOp* store(const UOp* index, const UOp* val) { return index->ctx().make(Op::STORE, dtypes::void_, {index, val}); }

const UOp* product(const std::vector<const UOp*>& v) {
  Expr r = v[0];
  for (size_t i = 1; i < v.size(); ++i) r = r * Expr(v[i]);
  return r;
}

// Factors of a reduced product that do not depend on the reduce ranges move after the REDUCE.
const UOp* reduce_mul_chain(const UOp* r) {
  Op rop = r->arg<ReduceArg>().op;
  if (rop != Op::ADD && rop != Op::MAX) return nullptr;
  if (r->dtype != r->src(0)->dtype) return nullptr;
  std::vector<const UOp*> inside, outside;
  for (const UOp* m : r->src(0)->split(Op::MUL)) {
    bool indep = true;
    for (size_t i = 1; i < r->nsrc(); ++i) indep = indep && !contains(m, r->src(i));
    // MAX only commutes with a non-negative factor
    bool sign_ok = rop != Op::MAX || (m->vmin().is_float() ? m->vmin().f >= 0 : m->vmin().i >= 0);
    (indep && sign_ok ? outside : inside).push_back(m);
  }
  if (outside.empty()) return nullptr;
  std::vector<const UOp*> s(r->src().begin(), r->src().end());
  s[0] = inside.empty() ? r->src(0)->const_like(int64_t(1)) : product(inside);
  return (Expr(r->with_src(s)) * Expr(product(outside))).get();
}

// the seeds' default width for a weak node: float32, or int32 unless its range needs int64
DType default_dtype(const UOp* u) {
  if (u->dtype.scalar == Scalar::WeakFloat) return dtypes::float32;
  bool fits = u->imin() >= int_min(dtypes::int32) && u->imax() <= int_max(dtypes::int32);
  return fits ? dtypes::int32 : dtypes::int64;
}

// A concrete CAST over weak math states the width that math lives at (a floor, never a narrowing).
const UOp* cast_weak_srcs(const UOp* c, const UOp* u) {
  if (is_weak(c->dtype) || weak_of(c->dtype.base()) != u->dtype.base()) return nullptr;
  DType dt = least_upper_dtype(c->dtype.base(), default_dtype(u));
  std::vector<const UOp*> s;
  for (const UOp* x : u->src()) s.push_back(is_weak(x->dtype) ? commit_weak(x, dt) : x);
  DType out = u->op == Op::SHL || u->op == Op::SHR ? s[0]->dtype : dt.vec(u->dtype.count);
  if (u->dtype.count == 1) out = out.base();
  return u->ctx().make(u->op, out, s, u->arg())->cast(c->dtype);
}

PatternMatcher make_sym_rules() {
  UPat xw = UPat::var("x", {dtypes::weakint});
  UPat s = UPat::var("s"), cst = UPat::var("cast"), alu = UPat::var("alu"), r = UPat::var("r");
  UPat gate = UPat::var("gate"), alt = UPat::var("alt"), val = UPat::var("val"), cond = UPat::var("cond");
  UPat index = UPat::op(Op::INDEX).named("index"), inv = UPat::invalid();
  UPat dd = UPat::var("d");
  auto rcp = [](const UPat& p) { return UPat::op(Op::RECIPROCAL, {p}); };
  auto load = [](const UPat& p) { return UPat::op(Op::LOAD, {p}); };
  auto st = [](const UPat& p, const UPat& q) { return UPat::op(Op::STORE, {p, q}); };
  OpSet alus = OpSet::of_group(G_UNARY | G_BINARY | G_TERNARY);

  return PatternMatcher({
      // ALU of two broadcasts is a broadcast of the ALU
      Rule(UPat::op(alus,
                    {UPat::op(Op::STACK, {x}, UPat::SrcMode::Repeat), UPat::op(Op::STACK, {y}, UPat::SrcMode::Repeat)})
               .named("alu"),
           [=](const Match& m) -> const UOp* {
             const UOp* u = m[alu];
             size_t n = u->src(0)->nsrc();
             if (n == 0 || u->src(1)->nsrc() != n) return nullptr;
             const UOp* e = m[x]->alu(u->op, m[y]);
             std::vector<const UOp*> lanes(n, e);
             return u->ctx().make(Op::STACK, e->dtype.vec(int(n)), lanes);
           }),
      // ** where: a cast moves into the branches
      Rule(s.where(a, b).cast().named("cast"),
           [=](const Match& m) -> const UOp* {
             DType dt = m[cst]->dtype;
             const UOp *ta = commit_weak(m[a], dt), *fb = commit_weak(m[b], dt);
             return m.root->ctx().make(Op::WHERE, dt, {m[s], ta, fb});
           }),
      // ** pow: xpow comes with the transcendental decompositions of the codegen
      // ** load/store folding
      Rule(st(index, load(index)), [](const Match& m) { return noop(m.root); }),
      Rule(st(index, gate.where(alt, load(index))),
           [=](const Match& m) -> const UOp* {
             const UOp* ix = m[UPat::var("index")];
             if (ix->nsrc() < 2) return nullptr;
             return store(reindex(ix, valid_index(ix->src(1), m[gate])), m[alt]);
           }),
      Rule(UPat::op(Op::STORE, {UPat(), inv}), [](const Match& m) { return noop(m.root); }),
      Rule(UPat::op(Op::STORE, {index, cond.where(val, inv)}),
           [=](const Match& m) -> const UOp* {
             const UOp* ix = m[UPat::var("index")];
             if (ix->nsrc() < 2) return nullptr;
             return store(reindex(ix, valid_index(ix->src(1), m[cond])), m[val]);
           }),
      // ** reciprocals
      Rule(rcp(x * x), [](const Match& m) { return (Expr(recip(m[x])) * Expr(recip(m[x]))).get(); }),
      Rule(rcp((x * x) * x),
           [](const Match& m) { return (Expr(recip(m[x])) * Expr(recip(m[x])) * Expr(recip(m[x]))).get(); }),
      Rule(rcp(x * c0), [](const Match& m) { return (Expr(recip(m[x])) * Expr(recip(m[c0]))).get(); }),
      // x/(1+x) -> 1-1/(1+x)
      Rule(x * rcp(1 + x).named("d"), [=](const Match& m) { return (1 - Expr(m[dd])).get(); }),
      Rule(x * (rcp(1 + x).named("d") * y), [=](const Match& m) { return (Expr(m[y]) * (1 - Expr(m[dd]))).get(); }),
      Rule(x * (rcp(1 + x).named("d") + y),
           [=](const Match& m) { return ((1 - Expr(m[dd])) + Expr(m[x]) * Expr(m[y])).get(); }),
      // a constant factor moves after an ADD reduce
      Rule(UPat::op(Op::REDUCE, {x * c0}).allow_any_len().named("r"),
           [=](const Match& m) -> const UOp* {
             const UOp* rr = m[r];
             if (rr->arg<ReduceArg>().op != Op::ADD) return nullptr;
             std::vector<const UOp*> srcs(rr->src().begin(), rr->src().end());
             srcs[0] = m[x];
             const UOp* k = m[c0];
             const UOp* wk = k->is_invalid() ? k : k->ctx().cconst(k->cval(), weak_of(k->dtype.base()));
             return (Expr(rr->with_src(srcs)) * Expr(wk)).get();
           }),
      Rule(UPat::op(Op::REDUCE, {UPat::op(Op::MUL)}).allow_any_len().named("r"),
           [=](const Match& m) { return reduce_mul_chain(m[r]); }),
      // ** combine terms (opinionated)
      Rule((x + y) * -1, [](const Match& m) { return ((-Expr(m[x])) + (-Expr(m[y]))).get(); }),
      // (x+y)*c -> x*c+y*c, only for index math (floats have inf*0=nan)
      Rule((xw + y) * c0, [](const Match& m) { return (Expr(m[x]) * Expr(m[c0]) + Expr(m[y]) * Expr(m[c0])).get(); }),
  });
}

// SINK and GROUP absorb the sources of nested SINK/GROUP/STACK and drop NOOPs
PatternMatcher make_clean_up_group_sink() {
  UPat root = UPat::op({Op::SINK, Op::GROUP}).named("root");
  return PatternMatcher({
      rw(UPat::op(Op::GROUP, {x}), x),
      Rule(root,
           [=](const Match& m) -> const UOp* {
             const UOp* u = m[root];
             const OpSet flat{Op::NOOP, Op::STACK, Op::SINK, Op::GROUP};
             std::vector<const UOp*> srcs;
             bool any = false;
             for (const UOp* s : u->src()) {
               if (!flat.has(s->op)) {
                 srcs.push_back(s);
                 continue;
               }
               any = true;
               for (const UOp* t : s->src()) srcs.push_back(t);
             }
             return any ? u->ctx().make(u->op, u->dtype, srcs, u->arg()) : nullptr;
           }),
  });
}

PatternMatcher make_cast_weak() {
  UPat c = UPat::op(Op::CAST, {UPat::op(OpSet::of_group(G_UNARY | G_BINARY | G_TERNARY)).named("u")}).named("c");
  UPat u = UPat::var("u"), cc = UPat::var("c");
  return PatternMatcher({
      Rule(c,
           [=](const Match& m) -> const UOp* {
             if (!is_weak(m[u]->dtype)) return nullptr;
             return cast_weak_srcs(m[cc], m[u]);
           }),
      Rule(UPat::op(Op::CAST, {UPat::op(Op::CONST).named("u")}),
           [=](const Match& m) -> const UOp* {
             if (!is_weak(m[u]->dtype)) return nullptr;
             return commit_weak(m[u], m.root->dtype);
           }),
  });
}

}  // namespace

const PatternMatcher& sym() {
  static const PatternMatcher pm =
      (symbolic() + pm_simplify_valid() + make_sym_rules() + make_clean_up_group_sink()).remember_fixed_points();
  return pm;
}

const PatternMatcher& pm_cast_weak() {
  static const PatternMatcher pm = make_cast_weak();
  return pm;
}

}  // namespace kiln
