// symbolic_simple: the generic folding rules (the seeds' phase 1). Invalid propagation first,
// so that a poisoned operand is never folded away (0 * maybe_invalid must not become 0).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "generator/symbolic/symbolic.h"

namespace kiln {

namespace {

using namespace pat;  // NOLINT: rules read like algebra

const std::vector<DType> kInts = {dtypes::int8,  dtypes::uint8,  dtypes::int16, dtypes::uint16,
                                  dtypes::int32, dtypes::uint32, dtypes::int64, dtypes::uint64};
std::vector<DType> with(std::vector<DType> v, std::initializer_list<DType> more) {
  v.insert(v.end(), more);
  return v;
}

const UOp* noop(const UOp* like) { return like->ctx().make(Op::NOOP, dtypes::void_); }
// WHERE keeps the dtype of its value branch; the Invalid marker is a bool CONST of any width.
const UOp* gated(const UOp* cond, const UOp* t, const UOp* inv) {
  return cond->ctx().make(Op::WHERE, t->dtype, {cond, t, inv});
}

// ---------------------------------------------------------------- constant folding

// The lanes of a constant operand: a CONST is one lane (broadcast), a STACK of CONSTs is many.
// A STACK may hold Invalid lanes; a scalar Invalid is left to the Invalid rules.
bool const_lanes(const UOp* u, std::vector<ConstValue>& out) {
  out.clear();
  if (u->op == Op::CONST) {
    out.push_back(u->cval());
    return !u->is_invalid();
  }
  if (u->op != Op::STACK || u->nsrc() == 0) return false;
  for (const UOp* s : u->src()) {
    if (s->op != Op::CONST) return false;
    out.push_back(s->cval());
  }
  return true;
}

// All operands scalar CONSTs (the common case): the same fold as below, without the lanes' vectors.
const UOp* fold_scalar_alu(const UOp* a) {
  ConstValue ops[3];
  bool poisoned = false;
  for (size_t i = 0; i < a->nsrc(); ++i) {
    ops[i] = a->src(i)->cval();
    poisoned = poisoned || ops[i].is_invalid();
  }
  // a scalar Invalid is left to the Invalid rules
  if (poisoned) return nullptr;
  std::optional<ConstValue> r =
      exec_alu(a->op, a->dtype.base(), std::span<const ConstValue>(ops, a->nsrc()), operand_dtype(a));
  return r ? a->const_like(*r) : nullptr;
}

const UOp* fold_const_alu(const Match& m) {
  const UOp* a = m.root;
  if (a->nsrc() <= 3 && std::all_of(a->src().begin(), a->src().end(), [](const UOp* s) { return s->is_const(); }))
    return fold_scalar_alu(a);
  std::vector<std::vector<ConstValue>> vals(a->nsrc());
  size_t lanes = 1;
  bool any_stack = false;
  for (size_t i = 0; i < a->nsrc(); ++i) {
    if (!const_lanes(a->src(i), vals[i])) return nullptr;
    if (a->src(i)->op == Op::STACK) {
      if (any_stack && vals[i].size() != lanes) return nullptr;
      any_stack = true;
      lanes = vals[i].size();
    }
  }
  std::vector<const UOp*> out;
  std::vector<ConstValue> ops(a->nsrc());
  for (size_t l = 0; l < lanes; ++l) {
    bool poisoned = false;
    for (size_t i = 0; i < a->nsrc(); ++i) {
      ops[i] = vals[i].size() == 1 ? vals[i][0] : vals[i][l];
      poisoned = poisoned || ops[i].is_invalid();
    }
    // an Invalid lane poisons its lane of a binary op; other ops have no value for it
    if (poisoned && !in_group(a->op, G_BINARY)) return nullptr;
    if (poisoned) {
      out.push_back(a->ctx().invalid());
      continue;
    }
    std::optional<ConstValue> r = exec_alu(a->op, a->dtype.base(), ops, operand_dtype(a));
    if (!r) return nullptr;
    out.push_back(a->const_like(*r));
  }
  if (!any_stack) return out[0];
  return a->ctx().make(Op::STACK, a->dtype, out);
}

// Reinterprets the bits of a CONST; only the widths our constants carry exactly.
std::optional<uint64_t> const_bits(DType d, const ConstValue& v) {
  if (d.scalar == Scalar::Float32) {
    float f = static_cast<float>(v.as_double());
    return std::bit_cast<uint32_t>(f);
  }
  if (d.scalar == Scalar::Float64) return std::bit_cast<uint64_t>(v.as_double());
  if (is_int(d) || is_bool(d)) {
    int b = bitsize(d);
    uint64_t u = uint64_t(v.i);
    return b >= 64 ? u : u & ((uint64_t(1) << b) - 1);
  }
  return std::nullopt;
}
std::optional<ConstValue> const_from_bits(DType d, uint64_t bits) {
  if (d.scalar == Scalar::Float32) return ConstValue::of_float(std::bit_cast<float>(uint32_t(bits)));
  if (d.scalar == Scalar::Float64) return ConstValue::of_float(std::bit_cast<double>(bits));
  if (is_bool(d)) return ConstValue::of_bool(bits != 0);
  if (is_int(d)) {
    int b = bitsize(d);
    if (b < 64 && !is_unsigned(d) && ((bits >> (b - 1)) & 1)) bits |= ~((uint64_t(1) << b) - 1);
    return ConstValue::of_int(int64_t(bits));
  }
  return std::nullopt;
}

const UOp* fold_bitcast(const UOp* root, const UOp* c) {
  if (is_weak(c->dtype) || is_weak(root->dtype) || c->dtype.count != 1 || root->dtype.count != 1) return nullptr;
  if (itemsize(c->dtype) != itemsize(root->dtype) || c->is_invalid()) return nullptr;
  auto bits = const_bits(c->dtype, truncate_to(c->dtype, c->cval()));
  if (!bits) return nullptr;
  auto v = const_from_bits(root->dtype, *bits);
  return v ? root->const_like(*v) : nullptr;
}

// ---------------------------------------------------------------- pow

const UOp* un(Op op, const UOp* x) { return x->ctx().make(op, x->dtype, {x}); }
const UOp* pow_c(const UOp* x, double v) { return binop(Op::POW, x, x->ctx().cfloat(v, weak_of(x->dtype))); }

const UOp* simplify_pow(const UOp* x, const UOp* c) {
  if (c->is_invalid()) return nullptr;
  double v = c->cval().as_double();
  bool fl = is_float(x->dtype);
  if (v < 0) return fl ? pow_c(un(Op::RECIPROCAL, x), -v) : nullptr;
  if (v == 0) return x->const_like(int64_t(1));
  if (std::trunc(v - 0.5) + 0.5 == v) return fl ? (Expr(pow_c(x, v - 0.5)) * Expr(un(Op::SQRT, x))).get() : nullptr;
  if (std::trunc(v) == v) {
    Expr y = pow_c(x, std::floor(v / 2));
    Expr r = y * y;
    return std::fmod(v, 2.0) == 1.0 ? (r * Expr(x)).get() : (r * 1).get();
  }
  return nullptr;
}

// ---------------------------------------------------------------- (x%c)+(x//c)*c recombination

// The B with q == B//div and B%div == base%div, or nullptr. Canonicalization moves constants
// around freely, so q may be a merged quotient ((x//c + a)//div) or shifted by whole multiples.
const UOp* quotient_base(const UOp* q, const UOp* base, int64_t div) {
  auto [qq, s_cv] = q->pop_const();
  auto [num, a_cv] = base->pop_const();
  if (qq->op != Op::FLOORDIV || qq->src(1)->op != Op::CONST || !s_cv.is_int() || !a_cv.is_int()) return nullptr;
  // exact arithmetic: the constants may sit near the int64 limits
  i128 s = s_cv.i, a = a_cv.i, qd = qq->src(1)->ival(), D;
  if (div > 0 && num->op == Op::FLOORDIV && num->src(1)->op == Op::CONST && qd == num->src(1)->ival() * i128(div)) {
    i128 c = num->src(1)->ival();
    num = num->src(0);
    a *= c;
    D = c * div;
  } else if (qd == div) {
    D = div;
  } else {
    return nullptr;
  }
  if (D == 0) return nullptr;
  auto [x, xa] = num->pop_const();
  auto [p, pa] = qq->src(0)->pop_const();
  if (p != x || !xa.is_int() || !pa.is_int()) return nullptr;
  i128 t = xa.i + a - pa.i;
  i128 quo = t / D - (t % D != 0 && ((t < 0) != (D < 0)));
  if (t - quo * D != 0) return nullptr;
  i128 shift = -(quo - s) * div;
  if (shift == 0) return base;
  if (!fits(dtypes::weakint, shift)) return nullptr;
  return (Expr(base) + lift(base, int64_t(shift))).get();
}

// Pairs a scaled mod (base%div)*mul with a term q*(div*mul) carrying base's quotient. graph_rewrite
// reaches this ADD after both sources are at a fixed point, so pairs inside one source were already
// tried there: only pairs across the two sources are new. That keeps a long sum quadratic, not cubic.
// A term of the ADD tree below `u` (its sources, as split() gives them) is x % c or (x % c) * k:
// fold_add_divmod_recombine needs one, and most sums have none.
bool has_const_mod_term(const UOp* u) {
  for (const UOp* s = u;; s = s->src(0)) {
    const UOp* t = s->op == Op::ADD ? s->src(1) : s;
    if (t->op == Op::ADD) {
      if (has_const_mod_term(t)) return true;
    } else {
      if (t->op == Op::MUL && t->nsrc() == 2 && t->src(1)->is_const()) t = t->src(0);
      if (t->op == Op::FLOORMOD && t->src(1)->op == Op::CONST) return true;
    }
    if (s->op != Op::ADD) return false;
  }
}

const UOp* fold_add_divmod_recombine(const Match& m) {
  if (!has_const_mod_term(m.root)) return nullptr;
  std::vector<const UOp*> terms = m.root->src(0)->split(Op::ADD);
  const size_t nleft = terms.size();
  m.root->src(1)->split(Op::ADD, terms);
  std::vector<std::pair<const UOp*, ConstValue>> scaled;
  scaled.reserve(terms.size());
  for (const UOp* t : terms) scaled.push_back(t->pop_const(Op::MUL));
  for (size_t i = 0; i < terms.size(); ++i) {
    auto [mod, mul_cv] = scaled[i];
    if (mod->op != Op::FLOORMOD || mod->src(1)->op != Op::CONST || !mul_cv.is_int()) continue;
    const UOp* base = mod->src(0);
    int64_t div = mod->src(1)->ival(), mul = mul_cv.i, want, outer;
    if (__builtin_mul_overflow(div, mul, &want)) continue;
    // the partner comes from the other source
    size_t jb = i < nleft ? nleft : 0, je = i < nleft ? terms.size() : nleft;
    for (size_t j = jb; j < je; ++j) {
      auto [q, scale] = scaled[j];
      if (!scale.is_int() || scale.i != want) continue;
      auto finish = [&](const UOp* b) {
        Expr r = Expr(b) * mul;
        for (size_t k = 0; k < terms.size(); ++k)
          if (k != i && k != j) r = r + Expr(terms[k]);
        return r.get();
      };
      if (const UOp* b = quotient_base(q, base, div)) return finish(b);
      if (q->op == Op::FLOORMOD && q->src(1)->op == Op::CONST && q->src(1)->ival() > 0 &&
          !__builtin_mul_overflow(div, q->src(1)->ival(), &outer))
        if (const UOp* b = quotient_base(q->src(0), base, div)) return finish(Expr(b) % outer);
    }
  }
  return nullptr;
}

// ---------------------------------------------------------------- Invalid propagation

PatternMatcher make_data_invalid() {
  UPat inv = UPat::invalid().named("i");
  UPat cond = UPat::var("cond"), val = UPat::var("val");
  UPat ig = cond.where(x, inv);  // an index gated by cond
  OpSet unary_like = OpSet::of_group(G_UNARY) | OpSet({Op::CAST, Op::BITCAST});
  OpSet binary = OpSet::of_group(G_BINARY);
  OpSet binary_nocmp = binary - OpSet::of_group(G_COMPARISON);
  UPat opn = UPat::var("op"), alu = UPat::var("alu");
  auto I = [inv](const Match& m) { return m[inv]; };
  return PatternMatcher({
      Rule(UPat::op(Op::STACK, {inv}, UPat::SrcMode::Repeat), [=](const Match& m) { return I(m); }),
      Rule(UPat::op(unary_like, {inv}), [=](const Match& m) { return I(m); }),
      Rule(UPat::op(unary_like, {ig}).named("op"),
           [=](const Match& m) -> const UOp* {
             const UOp* xs[1] = {m[x]};
             return gated(m[cond], m[opn]->with_src(xs), I(m));
           }),
      // binary ops move inside the gate; Invalid stays in the false branch
      Rule(UPat::op(binary, {ig, y}).named("alu"),
           [=](const Match& m) -> const UOp* {
             const UOp* s[2] = {m[x], m[y]};
             return gated(m[cond], m[alu]->with_src(s), I(m));
           }),
      Rule(UPat::op(binary, {y, ig}).named("alu"),
           [=](const Match& m) -> const UOp* {
             const UOp* s[2] = {m[y], m[x]};
             return gated(m[cond], m[alu]->with_src(s), I(m));
           }),
      Rule(UPat::op(binary_nocmp, {inv, UPat()}, UPat::SrcMode::Permute), [=](const Match& m) { return I(m); }),
      // an Invalid condition poisons the where; a gated condition lifts its gate out
      Rule(inv.where(UPat(), UPat()), [=](const Match& m) { return I(m); }),
      Rule(ig.where(a, b), [=](const Match& m) -> const UOp* { return gated(m[cond], m[x]->where(m[a], m[b]), I(m)); }),
      // where(cond, Invalid, val) -> where(!cond, val, Invalid)
      Rule(cond.where(inv, val),
           [=](const Match& m) -> const UOp* {
             const UOp* v = m[val];
             if (v->is_invalid()) return I(m);
             return gated(m[cond]->logical_not(), v, I(m));
           }),
      // lift Invalid out of either branch
      Rule(a.where(ig, c),
           [=](const Match& m) -> const UOp* {
             if (m[c]->is_invalid()) return nullptr;
             Expr g = Expr(m[a]->logical_not()) | Expr(m[cond]);
             return gated(g, m[a]->where(m[x], m[c]), I(m));
           }),
      Rule(a.where(b, ig),
           [=](const Match& m) -> const UOp* {
             if (m[b]->is_invalid()) return nullptr;
             Expr g = Expr(m[a]) | Expr(m[cond]);
             return gated(g, m[a]->where(m[b], m[x]), I(m));
           }),
      // a LOAD or STORE through an Invalid index is gone
      Rule(UPat::op(Op::STORE, {UPat::op(Op::INDEX, {UPat(), inv}).allow_any_len().or_casted(), UPat()}),
           [](const Match& m) { return noop(m.root); }),
      Rule(UPat::op(Op::LOAD, {UPat::op(Op::INDEX, {UPat(), inv}).allow_any_len().or_casted()}).allow_any_len(),
           [](const Match& m) -> const UOp* {
             return m.root->nsrc() > 1 ? m.root->src(1) : m.root->const_like(int64_t(0));
           }),
  });
}

// ---------------------------------------------------------------- phase 1

PatternMatcher make_simple() {
  const std::vector<DType> ints_w = with(kInts, {dtypes::weakint});
  const std::vector<DType> ints_bw = with(kInts, {dtypes::weakint, dtypes::bool_});
  const std::vector<DType> all_strong =
      with(kInts, {dtypes::bool_, dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64});
  UPat xb = UPat::var("x", {dtypes::bool_}), yb = UPat::var("y", {dtypes::bool_});
  UPat cc = UPat::cvar("c"), root = UPat().named("root");
  UPat cfold = UPat::op({Op::CONST, Op::STACK});
  UPat nan_src = UPat::cvar("x");
  OpSet unary = OpSet::of_group(G_UNARY), binary = OpSet::of_group(G_BINARY) - Op::THREEFRY;
  OpSet ternary = OpSet::of_group(G_TERNARY);
  UPat base = UPat::var("base"), pmask = UPat::cvar("mask"), pk = UPat::cvar("k"), gate = UPat::cvar("gate");
  auto recip = [](const UPat& p) { return UPat::op(Op::RECIPROCAL, {p}); };
  auto fdiv = [&](const UPat& p, const UPat& q) { return p * recip(q); };  // the seeds' x/y is x*(1/y)
  UPat x2 = UPat::var("x2");

  return PatternMatcher({
      // ** self folding
      rw(UPat::op({Op::ADD, Op::XOR, Op::OR}, {x, UPat::cnst(0)}, UPat::SrcMode::Permute), x),
      rw(UPat::op({Op::SHL, Op::SHR}, {x, UPat::cnst(0)}), x),
      rw(x * 1, x),
      Rule(x / x, [](const Match& m) { return m[x]->const_like(int64_t(1)); }),
      rw(x / 1, x),
      Rule(x / -1, [](const Match& m) { return (-Expr(m[x])).get(); }),
      rw((x ^ y) ^ y, x),
      Rule((UPat() % y).named("base") % y, [base](const Match& m) { return m[base]; }),
      // variations of (x%c)+(x//c)*c = x
      Rule(UPat::op(Op::ADD).dtype({dtypes::weakint}), fold_add_divmod_recombine),
      Rule(xb & cc, [](const Match& m) { return m[c]->cval().i ? m[x] : m[c]; }),
      Rule(xb | cc, [](const Match& m) { return m[c]->cval().i ? m[c] : m[x]; }),
      rw(xb != UPat::cbool(false), x),
      rw(UPat::op(OpSet::of_group(G_IDEMPOTENT), {x, x}), x),
      rw(xb.logical_not().logical_not(), x),
      rw(xb.where(UPat::cbool(true), UPat::cbool(false)), x),
      Rule(xb.where(UPat::cbool(false), UPat::cbool(true)), [](const Match& m) { return m[x]->logical_not(); }),
      // CAST(bool) is 0 or 1, so comparing it with a constant is a function of the bool
      Rule(xb.cast(ints_w) != cc,
           [](const Match& m) -> const UOp* {
             if (m[c]->is_invalid()) return nullptr;
             double v = m[c]->cval().as_double();
             if (v == 0) return m[x];
             if (v == 1) return m[x]->logical_not();
             return m.root->const_like(int64_t(1));
           }),
      rw(UPat::op(Op::TRUNC, {UPat::var("x", ints_bw)}), x),

      // ** zero folding
      Rule(x < x, [](const Match& m) { return m.root->const_like(int64_t(0)); }),
      Rule(x % x, [](const Match& m) { return m[x]->const_like(int64_t(0)); }),
      Rule(x ^ x, [](const Match& m) { return m[x]->const_like(int64_t(0)); }),
      Rule(x & 0, [](const Match& m) { return m[x]->const_like(int64_t(0)); }),
      // (x&mask)>>k -> x>>k when the mask only clears bits below k
      Rule((x & pmask) >> pk,
           [=](const Match& m) -> const UOp* {
             int64_t mask = m[pmask]->ival(), k = m[pk]->ival();
             if (!m[pmask]->cval().is_int() || k < 0 || k > 62) return nullptr;
             if ((mask | ((int64_t(1) << k) - 1)) != -1) return nullptr;
             return (Expr(m[x]) >> k).get();
           }),
      Rule((x & pmask) / cc,
           [=](const Match& m) -> const UOp* {
             int64_t mask = m[pmask]->ival(), cv = m[c]->ival();
             if (!m[pmask]->cval().is_int() || !m[c]->cval().is_int() || cv <= 0 || (cv & (cv - 1)) != 0)
               return nullptr;
             if ((mask | (cv - 1)) != -1) return nullptr;
             return (Expr(m[x]) / cv).get();
           }),
      Rule(UPat::var("x", ints_bw) != x, [](const Match& m) { return m.root->const_like(int64_t(0)); }),

      // ** constant folding
      // a CAST to a concrete scalar dtype over a CONST is a value conversion, done at that width
      Rule(UPat::op(Op::CAST, {cc}).dtype(all_strong),
           [](const Match& m) -> const UOp* {
             if (m[c]->is_invalid()) return nullptr;
             return m.root->const_like(convert(m.root->dtype.base(), m[c]->dtype.base(), m[c]->cval()));
           }),
      Rule(UPat::op(unary, {cfold}), fold_const_alu),
      Rule(UPat::op(binary, {cfold, cfold}), fold_const_alu),
      Rule(UPat::op(ternary, {cfold, cfold, cfold}), fold_const_alu),
      // bool MUL is AND, ADD and MAX are OR (keeps other rules from misreading them)
      Rule(xb * yb, [](const Match& m) { return (Expr(m[x]) & Expr(m[y])).get(); }),
      Rule(xb + yb, [](const Match& m) { return (Expr(m[x]) | Expr(m[y])).get(); }),
      Rule(xb.maximum(yb), [](const Match& m) { return (Expr(m[x]) | Expr(m[y])).get(); }),

      // ** float division (x/y is x*(1/y) in the seeds)
      Rule(fdiv(UPat::cnst(0).named("x"), UPat::cnst(0)), [](const Match& m) { return m[x]->const_like(NAN); }),
      Rule(fdiv(x * 0, UPat::cnst(0)), [](const Match& m) { return m[x]->const_like(NAN); }),
      // NOTE: wrong when x is 0, as in the seeds
      Rule(fdiv(x, x), [](const Match& m) { return m[x]->const_like(int64_t(1)); }),
      rw(fdiv(x * x2, x2), x),
      // x*0 -> 0, but a NaN or inf constant stays poisoned. NOTE: wrong for a loaded NaN, as in the seeds
      Rule(x * 0,
           [](const Match& m) -> const UOp* {
             const UOp* u = m[x];
             if (u->is_const() && u->cval().is_float() && !std::isfinite(u->cval().f)) return u->const_like(NAN);
             return u->const_like(int64_t(0));
           }),

      // ** cast / bitcast
      Rule(UPat::op({Op::CAST, Op::BITCAST}, {x}),
           [](const Match& m) -> const UOp* { return m.root->dtype == m[x]->dtype ? m[x] : nullptr; }),
      Rule(UPat::op(Op::BITCAST, {cc}), [](const Match& m) { return fold_bitcast(m.root, m[c]); }),
      // x.cast(a).cast(b) -> x when b is x's dtype and a holds every value of it
      Rule(x.cast().named("a").cast().named("b"),
           [](const Match& m) -> const UOp* {
             const UOp *u = m[x], *ca = m[a], *cb = m[b];
             return u->dtype == cb->dtype && can_lossless_cast(cb->dtype, ca->dtype) ? u : nullptr;
           }),
      Rule(UPat::op(Op::BITCAST, {UPat::op(Op::BITCAST, {x})}),
           [](const Match& m) { return m[x]->bitcast(m.root->dtype); }),
      Rule(x.cast({dtypes::bool_}),
           [](const Match& m) -> const UOp* { return m[x]->ne(m[x]->const_like(int64_t(0))); }),

      // ** pow (transcendental decomposition of the rest comes with the codegen decompositions)
      Rule(x.alu(Op::POW, cc), [](const Match& m) { return simplify_pow(m[x], m[c]); }),
      Rule(cc.alu(Op::POW, x),
           [](const Match& m) -> const UOp* {
             if (m[c]->is_invalid() || m[x]->dtype != m.root->dtype) return nullptr;
             double v = m[c]->cval().as_double();
             if (v == 1) return m[c];
             if (!(v > 0)) return nullptr;
             const UOp* e = (Expr(m[x]) * Expr(m[x]->ctx().cfloat(std::log2(v), weak_of(m[x]->dtype)))).get();
             return e->ctx().make(Op::EXP2, e->dtype, {e});
           }),
      // unpack a uint64 packed from two uint32 (threefry)
      rw(((UPat().dtype({dtypes::uint64}) << UPat::cnst(32)) | UPat::var("y", {dtypes::uint32}).cast({dtypes::uint64}))
             .cast({dtypes::uint32}),
         y),
      Rule(((UPat::var("x", {dtypes::uint32}).cast({dtypes::uint64}) << UPat::cnst(32)) |
            UPat().dtype({dtypes::uint32}).cast({dtypes::uint64})) >>
               UPat::cnst(32),
           [](const Match& m) { return m[x]->cast(dtypes::uint64); }),

      // ** simple where folding
      rw(UPat().where(UPat::var("val"), UPat::var("val")), UPat::var("val")),
      Rule(gate.where(a, b),
           [=](const Match& m) -> const UOp* {
             const UOp* g = m[gate];
             if (g->is_invalid()) return nullptr;
             const UOp* ret = g->cval().as_double() != 0 ? m[a] : m[b];
             // folding a strong WHERE to a weak constant keeps the strong dtype
             if (ret->is_const() && is_weak(ret->dtype) && !is_weak(m.root->dtype))
               return m.root->const_like(ret->cval());
             return ret;
           }),
      Rule(a.where(b.where(c, d), d), [](const Match& m) { return where(Expr(m[a]) & Expr(m[b]), m[c], m[d]).get(); }),
      Rule(a.where(c, b.where(c, d)), [](const Match& m) { return where(Expr(m[a]) | Expr(m[b]), m[c], m[d]).get(); }),
  });
}

}  // namespace

const PatternMatcher& symbolic_simple() {
  // the seeds' mop_cleanup (movement-op merging) belongs with the frontend's movement ops
  static const PatternMatcher pm = make_data_invalid() + make_simple();
  return pm;
}

}  // namespace kiln
