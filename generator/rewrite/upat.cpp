#include "generator/rewrite/upat.h"

#include <algorithm>
#include <mutex>
#include <string>

namespace kiln {

// ---------------------------------------------------------------- capture names

namespace {
struct CaptureTable {
  std::mutex mu;
  std::vector<std::string> names;
};
CaptureTable& captures() {
  static CaptureTable t;
  return t;
}
}  // namespace

int capture_slot(std::string_view name) {
  auto& t = captures();
  std::lock_guard lock(t.mu);
  for (size_t i = 0; i < t.names.size(); ++i)
    if (t.names[i] == name) return int(i);
  if (t.names.size() >= size_t(kMaxCaptures))
    throw InternalError("too many distinct capture names in patterns (max " + std::to_string(kMaxCaptures) + ")");
  t.names.emplace_back(name);
  return int(t.names.size() - 1);
}

std::string_view capture_name(int slot) {
  auto& t = captures();
  std::lock_guard lock(t.mu);
  return slot >= 0 && size_t(slot) < t.names.size() ? std::string_view(t.names[slot]) : std::string_view("?");
}

const UOp* Match::operator[](const UPat& p) const {
  int s = p.capture();
  if (s < 0) throw InternalError("pattern has no capture name");
  return slots_[s];
}

// ---------------------------------------------------------------- construction

namespace {
std::shared_ptr<PatNode> fresh() { return std::make_shared<PatNode>(); }
// derive the hot-path fields from `ops` and `early_reject`
void finalize(PatNode& n) {
  int count = 0;
  n.ops.for_each([&](Op o) { ++count, n.single_op = int16_t(o); });
  if (count != 1) n.single_op = -1;
  n.n_reject = 0;
  n.early_reject.for_each([&](Op o) {
    if (n.n_reject < n.reject_ops.size()) n.reject_ops[n.n_reject++] = o;
  });
  n.ndt = n.dtypes.size() <= n.dt.size() ? uint8_t(n.dtypes.size()) : PatNode::kManyDtypes;
  n.dt = {};
  if (n.ndt != PatNode::kManyDtypes) std::copy(n.dtypes.begin(), n.dtypes.end(), n.dt.begin());
  n.rare_checks = n.const_num.has_value() || n.arg.has_value() || n.n_reject > 0;
  n.leaf = n.mode == UPat::SrcMode::None && n.alternatives.empty();
}
}  // namespace

UPat::UPat() : n_(fresh()) {}

UPat UPat::var(std::string_view name, std::vector<DType> dts) {
  auto n = fresh();
  n->capture = capture_slot(name);
  n->dtypes = std::move(dts);
  finalize(*n);
  return UPat(n);
}
UPat UPat::cvar(std::string_view name, std::vector<DType> dts) {
  auto n = fresh();
  n->ops = OpSet(Op::CONST);
  n->capture = capture_slot(name);
  n->dtypes = std::move(dts);
  finalize(*n);
  return UPat(n);
}
UPat UPat::cnst(int64_t v) {
  auto n = fresh();
  n->ops = OpSet(Op::CONST);
  n->const_num = ConstValue::of_int(v);
  finalize(*n);
  return UPat(n);
}
UPat UPat::cnst_f(double v) {
  auto n = fresh();
  n->ops = OpSet(Op::CONST);
  n->const_num = ConstValue::of_float(v);
  finalize(*n);
  return UPat(n);
}
UPat UPat::cbool(bool v) {
  auto n = fresh();
  n->ops = OpSet(Op::CONST);
  n->dtypes = {dtypes::bool_};
  n->arg = Arg(ConstValue::of_bool(v));
  finalize(*n);
  return UPat(n);
}
UPat UPat::invalid() {
  auto n = fresh();
  n->ops = OpSet(Op::CONST);
  n->arg = Arg(ConstValue::invalid());
  finalize(*n);
  return UPat(n);
}

UPat UPat::op(OpSet ops, std::vector<UPat> src, SrcMode mode) {
  auto n = fresh();
  n->ops = ops;
  n->src = std::move(src);
  // no source patterns: any sources
  n->mode = n->src.empty() && mode != SrcMode::Repeat ? SrcMode::None : mode;
  if (mode == SrcMode::Permute) {
    // all-equal sources need a single order
    bool same = n->src.size() > 1;
    for (const auto& s : n->src) same &= s.n_ == n->src[0].n_;
    if (same) n->mode = SrcMode::Ordered;
  }
  if (n->mode == SrcMode::Ordered || n->mode == SrcMode::Permute)
    for (const auto& s : n->src) {
      const PatNode& sp = s.node();
      int count = 0;
      Op only = Op::NOOP;
      sp.ops.for_each([&](Op o) { ++count, only = o; });
      if (sp.alternatives.empty() && count == 1) n->early_reject.add(only);
    }
  if (n->mode == SrcMode::Repeat && n->src.size() != 1)
    throw InternalError("a repeated source pattern takes one pattern");
  finalize(*n);
  return UPat(n);
}

UPat UPat::any_of(std::vector<UPat> alternatives) {
  auto n = fresh();
  n->alternatives = std::move(alternatives);
  finalize(*n);
  return UPat(n);
}

UPat UPat::named(std::string_view name) const {
  auto n = std::make_shared<PatNode>(*n_);
  n->capture = capture_slot(name);
  finalize(*n);
  return UPat(n);
}
UPat UPat::dtype(std::vector<DType> dts) const {
  auto n = std::make_shared<PatNode>(*n_);
  n->dtypes = std::move(dts);
  finalize(*n);
  return UPat(n);
}
UPat UPat::arg(Arg a) const {
  auto n = std::make_shared<PatNode>(*n_);
  n->arg = std::move(a);
  finalize(*n);
  return UPat(n);
}
UPat UPat::allow_any_len() const {
  auto n = std::make_shared<PatNode>(*n_);
  n->any_len = true;
  finalize(*n);
  return UPat(n);
}
UPat UPat::fold() const {
  auto n = std::make_shared<PatNode>(*n_);
  n->fold = true;
  finalize(*n);
  return UPat(n);
}
UPat UPat::cast(std::vector<DType> dts) const { return op(Op::CAST, {*this}).dtype(std::move(dts)); }
UPat UPat::or_casted(std::string_view name) const {
  UPat self = name.empty() ? *this : named(name);
  UPat c = op(Op::CAST, {*this});
  if (!name.empty()) c = c.named(name);
  return any_of({self, c});
}
UPat UPat::where(const UPat& t, const UPat& f) const {
  UPat r = op(Op::WHERE, {*this, t, f});
  auto n = std::make_shared<PatNode>(r.node());
  n->dtypes = f.node().dtypes;
  finalize(*n);
  return UPat(n);
}
UPat UPat::alu(Op o, const UPat& b) const {
  bool comm = in_group(o, G_COMMUTATIVE);
  UPat r = op(o, {*this, b}, comm ? SrcMode::Permute : SrcMode::Ordered);
  auto n = std::make_shared<PatNode>(r.node());
  n->dtypes = in_group(o, G_COMPARISON) ? std::vector<DType>{dtypes::bool_} : b.node().dtypes;
  finalize(*n);
  return UPat(n);
}
UPat UPat::ne(const UPat& o) const { return alu(Op::CMPNE, o); }
UPat UPat::logical_not() const { return alu(Op::CMPNE, cbool(true)); }
UPat UPat::maximum(const UPat& o) const { return alu(Op::MAX, o); }

int UPat::capture() const { return n_->capture; }

UPat operator+(const UPat& a, const UPat& b) { return a.alu(Op::ADD, b); }
UPat operator*(const UPat& a, const UPat& b) { return a.alu(Op::MUL, b); }
UPat operator/(const UPat& a, const UPat& b) { return a.alu(Op::FLOORDIV, b); }
UPat operator%(const UPat& a, const UPat& b) { return a.alu(Op::FLOORMOD, b); }
UPat operator<(const UPat& a, const UPat& b) { return a.alu(Op::CMPLT, b); }
UPat operator!=(const UPat& a, const UPat& b) { return a.alu(Op::CMPNE, b); }
UPat operator&(const UPat& a, const UPat& b) { return a.alu(Op::AND, b); }
UPat operator|(const UPat& a, const UPat& b) { return a.alu(Op::OR, b); }
UPat operator^(const UPat& a, const UPat& b) { return a.alu(Op::XOR, b); }
UPat operator<<(const UPat& a, const UPat& b) { return a.alu(Op::SHL, b); }
UPat operator>>(const UPat& a, const UPat& b) { return a.alu(Op::SHR, b); }
UPat operator+(const UPat& a, int64_t b) { return a + UPat::cnst(b); }
UPat operator*(const UPat& a, int64_t b) { return a * UPat::cnst(b); }
UPat operator/(const UPat& a, int64_t b) { return a / UPat::cnst(b); }
UPat operator%(const UPat& a, int64_t b) { return a % UPat::cnst(b); }
UPat operator<(const UPat& a, int64_t b) { return a < UPat::cnst(b); }
UPat operator!=(const UPat& a, int64_t b) { return a != UPat::cnst(b); }
UPat operator&(const UPat& a, int64_t b) { return a & UPat::cnst(b); }
UPat operator|(const UPat& a, int64_t b) { return a | UPat::cnst(b); }
UPat operator^(const UPat& a, int64_t b) { return a ^ UPat::cnst(b); }
UPat operator+(int64_t a, const UPat& b) { return UPat::cnst(a) + b; }
UPat operator*(int64_t a, const UPat& b) { return UPat::cnst(a) * b; }

namespace pat {
const UPat x = UPat::var("x"), y = UPat::var("y"), z = UPat::var("z"), w = UPat::var("w");
const UPat a = UPat::var("a"), b = UPat::var("b"), c = UPat::var("c"), d = UPat::var("d");
const UPat c0 = UPat::cvar("c0"), c1 = UPat::cvar("c1"), c2 = UPat::cvar("c2"), c3 = UPat::cvar("c3");
}  // namespace pat

// ---------------------------------------------------------------- matching

namespace detail {

// a literal of a pattern is a number: -1 is not the uint64 2^64-1 that is carried as -1
static bool const_num_eq(const ConstValue& want, const UOp* c) {
  const ConstValue& got = c->cval();
  if (got.is_invalid() || want.is_invalid()) return false;
  if (want.is_float() || got.is_float()) return want.as_double() == got.as_double();
  return i128(want.i) == exact_value(c->dtype, got.i);
}

// the checks few patterns have
static bool match_rare(const PatNode& p, const UOp* u) {
  if (p.const_num && !(u->op == Op::CONST && const_num_eq(*p.const_num, u))) return false;
  if (p.arg && !(*p.arg == u->arg())) return false;
  for (uint8_t i = 0; i < p.n_reject; ++i) {
    Op o = p.reject_ops[i];
    if (std::none_of(u->src().begin(), u->src().end(), [o](const UOp* s) { return s->op == o; })) return false;
  }
  return true;
}

static inline bool head(const PatNode& p, const UOp* u) {
  if (p.single_op >= 0 ? int(u->op) != p.single_op : !p.ops.empty() && !p.ops.has(u->op)) return false;
  if (p.ndt != 0) {
    bool ok = false;
    if (p.ndt == PatNode::kManyDtypes) {
      for (DType d : p.dtypes) ok |= d == u->dtype;
    } else {
      for (uint8_t i = 0; i < p.ndt; ++i) ok |= p.dt[i] == u->dtype;
    }
    if (!ok) return false;
  }
  if (p.mode == UPat::SrcMode::Ordered || p.mode == UPat::SrcMode::Permute)
    if (p.any_len ? u->nsrc() < p.src.size() : u->nsrc() != p.src.size()) return false;
  return !p.rare_checks || match_rare(p, u);
}

bool head_matches(const PatNode& p, const UOp* u) {
  if (p.alternatives.empty()) return head(p, u);
  for (const UPat& a : p.alternatives)
    if (head_matches(a.node(), u)) return true;
  return false;
}

static bool match_srcs(const PatNode& p, const UOp* u, size_t i, const int* perm, Match& m, Cont k) {
  if (p.mode == UPat::SrcMode::Repeat) {
    if (i == u->nsrc()) return k();
    auto next = [&]() { return match_srcs(p, u, i + 1, perm, m, k); };
    return match_rec(p.src[0], u->src(i), m, Cont(next));
  }
  if (i == p.src.size()) return k();
  const UPat& q = p.src[perm[i]];
  const UOp* s = u->src(i);
  const PatNode& qn = q.node();
  if (qn.leaf) {  // the common source pattern (x, c0, a constant): no continuation needed
    if (!head(qn, s)) return false;
    if (qn.capture < 0) return match_srcs(p, u, i + 1, perm, m, k);
    const UOp*& slot = m.slots_[qn.capture];
    if (slot != nullptr) return slot == s && match_srcs(p, u, i + 1, perm, m, k);
    slot = s;
    if (match_srcs(p, u, i + 1, perm, m, k)) return true;
    slot = nullptr;
    return false;
  }
  auto next = [&]() { return match_srcs(p, u, i + 1, perm, m, k); };
  return match_rec(q, s, m, Cont(next));
}

bool match_rec(const UPat& pu, const UOp* u, Match& m, Cont k) {
  const PatNode& p = pu.node();
  if (!p.alternatives.empty()) {
    for (const UPat& alt : p.alternatives)
      if (match_rec(alt, u, m, k)) return true;
    return false;
  }
  if (!head(p, u)) return false;
  bool set_here = false;
  if (p.capture >= 0) {
    if (m.slots_[p.capture] != nullptr) {
      if (m.slots_[p.capture] != u) return false;
    } else {
      m.slots_[p.capture] = u;
      set_here = true;
    }
  }
  static constexpr int ident[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  static constexpr int perms2[2][2] = {{0, 1}, {1, 0}};
  static constexpr int perms3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  bool ok = false;
  switch (p.mode) {
    case UPat::SrcMode::None:
      ok = k();
      break;
    case UPat::SrcMode::Repeat:
      ok = match_srcs(p, u, 0, ident, m, k);
      break;
    case UPat::SrcMode::Ordered:
      if (p.src.size() > 8) throw InternalError("patterns match at most 8 ordered sources");
      ok = match_srcs(p, u, 0, ident, m, k);
      break;
    case UPat::SrcMode::Permute:
      if (p.src.size() == 2) {
        for (const auto& pr : perms2)
          if ((ok = match_srcs(p, u, 0, pr, m, k))) break;
      } else if (p.src.size() == 3) {
        for (const auto& pr : perms3)
          if ((ok = match_srcs(p, u, 0, pr, m, k))) break;
      } else {
        ok = match_srcs(p, u, 0, ident, m, k);
      }
      break;
  }
  if (set_here && !ok) m.slots_[p.capture] = nullptr;
  return ok;
}

}  // namespace detail

bool match_first(const UPat& p, const UOp* u, Match& m) {
  return match_each(p, u, m, [](const Match&) { return true; });
}

// ---------------------------------------------------------------- templates (rules as data)

static const UOp* build_rec(const UPat& t, const Match& m, Context& ctx) {
  const PatNode& p = t.node();
  if (!p.alternatives.empty()) throw InternalError("an any_of pattern cannot be a rewrite template");
  if (p.src.empty() && p.capture >= 0) {
    const UOp* u = m.get(p.capture);
    if (!u) throw InternalError("template capture '" + std::string(capture_name(p.capture)) + "' was not bound");
    return u;
  }
  if (p.const_num) {
    return p.const_num->is_float() ? ctx.cfloat(p.const_num->f) : ctx.cint(p.const_num->i);
  }
  if (p.arg && p.src.empty()) {
    if (const auto* cv = std::get_if<ConstValue>(&*p.arg))
      return cv->is_invalid() ? ctx.invalid() : ctx.cconst(*cv, p.dtypes.empty() ? dtypes::bool_ : p.dtypes[0]);
  }
  if (p.single_op < 0) throw InternalError("a rewrite template node needs exactly one op");
  Op op = Op(p.single_op);
  const UOp* s[3];
  if (p.src.size() > 3) throw InternalError("rewrite templates build nodes of at most 3 sources");
  for (size_t i = 0; i < p.src.size(); ++i)
    if ((s[i] = build_rec(p.src[i], m, ctx)) == nullptr) return nullptr;
  size_t ns = p.src.size();
  const UOp* r;
  if (op == Op::WHERE && ns == 3)
    r = s[0]->where(s[1], s[2]);
  else if (op == Op::CAST && ns == 1 && p.dtypes.size() == 1)
    r = s[0]->cast(p.dtypes[0]);
  else if (in_group(op, G_BINARY) && ns == 2)
    r = binop(op, s[0], s[1]);
  else if (in_group(op, G_UNARY) && ns == 1)
    r = ctx.make(op, s[0]->dtype, {s[0]});
  else
    throw InternalError("unsupported rewrite template op " + std::string(op_name(op)));
  if (p.fold) {
    ConstValue vals[3];
    size_t nv = 0;
    for (const UOp* x : r->src()) {
      if (x->op != Op::CONST || nv == 3) return r;
      vals[nv++] = x->cval();
    }
    if (auto v = exec_alu(r->op, r->dtype, std::span<const ConstValue>(vals, nv), operand_dtype(r)))
      return ctx.cconst(*v, r->dtype);
    return nullptr;  // a fold that cannot be done (weakint overflow, x // 0): the rule does not fire
  }
  return r;
}

const UOp* UPat::build(const Match& m) const {
  Context& ctx = m.root->ctx();
  const UOp* r = build_rec(*this, m, ctx);
  if (r == nullptr) return nullptr;
  // a literal result takes the matched node's dtype (x*0 -> 0 of x's dtype)
  if (r->op == Op::CONST && r->dtype != m.root->dtype && is_weak(r->dtype) && !is_bool(m.root->dtype) &&
      m.root->dtype.ptr == false)
    r = m.root->const_like(r->cval());
  return r;
}

}  // namespace kiln
