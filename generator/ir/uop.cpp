#include "generator/ir/uop.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <unordered_set>

namespace kiln {

// ---------------------------------------------------------------- args

ConstValue ConstValue::of_float(double v) {
  if (v != v) v = std::numeric_limits<double>::quiet_NaN();
  return {Kind::Float, 0, v};
}

bool ConstValue::operator==(const ConstValue& o) const {
  if (kind != o.kind) return false;
  if (kind == Kind::Float) return std::memcmp(&f, &o.f, sizeof f) == 0;
  return i == o.i;
}

std::string_view axis_type_name(AxisType t) {
  switch (t) {
    case AxisType::Device:
      return "device";
    case AxisType::Global:
      return "global";
    case AxisType::Warp:
      return "warp";
    case AxisType::Local:
      return "local";
    case AxisType::Weak:
      return "weak";
    case AxisType::GroupReduce:
      return "group_reduce";
    case AxisType::Reduce:
      return "reduce";
    case AxisType::Upcast:
      return "upcast";
    case AxisType::Unroll:
      return "unroll";
    case AxisType::Thread:
      return "thread";
    case AxisType::Placeholder:
      return "placeholder";
    case AxisType::Loop:
      return "loop";
    case AxisType::Lane:
      return "lane";
  }
  return "?";
}

std::optional<Op> parse_op(std::string_view name) {
  for (int i = 0; i < kNumOps; ++i)
    if (detail::kOpNames[i] == name) return static_cast<Op>(i);
  return std::nullopt;
}

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}
uint64_t hash_str(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// a plain loop: std::equal over pointers calls memcmp, slow for the usual one to three sources
bool same_srcs(std::span<const UOp* const> a, const UOp* const* b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

uint64_t hash_arg(const Arg& a) {
  uint64_t h = a.index();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, ConstValue>) {
          uint64_t bits;
          std::memcpy(&bits, &v.f, sizeof bits);
          h = mix(mix(mix(h, uint64_t(v.kind)), uint64_t(v.i)), v.is_float() ? bits : 0);
        } else if constexpr (std::is_same_v<T, VarArg>) {
          uint64_t a, b;
          std::memcpy(&a, &v.fmin, sizeof a);
          std::memcpy(&b, &v.fmax, sizeof b);
          h = mix(
              mix(mix(mix(mix(mix(h, hash_str(v.name)), uint64_t(v.min)), uint64_t(v.max)), uint64_t(v.multiple_of)),
                  a),
              b);
        } else if constexpr (std::is_same_v<T, RangeArg>) {
          h = mix(mix(mix(h, uint64_t(v.axis)), uint64_t(v.type)), uint64_t(v.sub));
        } else if constexpr (std::is_same_v<T, ParamArg>) {
          h = mix(mix(mix(h, uint64_t(v.slot)), uint64_t(v.size)), hash_str(v.name));
        } else if constexpr (std::is_same_v<T, ReduceArg>) {
          h = mix(mix(h, uint64_t(v.op)), uint64_t(v.horizontal));
        } else if constexpr (std::is_same_v<T, Name>) {
          h = mix(h, hash_str(v.s));
        } else if constexpr (std::is_same_v<T, int64_t>) {
          h = mix(h, uint64_t(v));
        }
      },
      a);
  return h;
}

}  // namespace

// ---------------------------------------------------------------- the arena

// Arena blocks of Contexts gone, kept for the next Context: fresh memory costs a page fault per
// page on first touch, a good part of compiling a kernel in a fresh Context. Never destroyed, so
// a Context that outlives static destruction still has it.
constexpr size_t kBlockSize = size_t(1) << 20;
constexpr size_t kPooledBlocks = 16;
struct BlockPool {
  std::mutex mu;
  std::vector<std::unique_ptr<std::byte[]>> blocks;
  // intern tables of Contexts gone and tables outgrown, one per size (1 << k slots), for the same
  // reason: a kernel's Context grows its table to some 10^4 slots, through every size below
  std::vector<std::vector<std::pair<uint64_t, const UOp*>>> tables;
};
static BlockPool& block_pool() {
  static BlockPool* pool = new BlockPool;
  return *pool;
}

struct Context::Impl {
  // bump allocator for nodes and source arrays
  std::vector<std::unique_ptr<std::byte[]>> blocks;
  std::vector<size_t> block_sizes;
  size_t used = 0, cap = 0;
  ~Impl() {
    BlockPool& pool = block_pool();
    std::lock_guard lock(pool.mu);
    for (size_t i = 0; i < blocks.size(); ++i)
      if (block_sizes[i] == kBlockSize && pool.blocks.size() < kPooledBlocks)
        pool.blocks.push_back(std::move(blocks[i]));
    give_table(pool, std::move(table));
  }
  void* alloc(size_t bytes, size_t align) {
    used = (used + align - 1) & ~(align - 1);
    if (used + bytes > cap) [[unlikely]]
      new_block(bytes, align);
    void* p = blocks.back().get() + used;
    used += bytes;
    return p;
  }
  [[gnu::noinline]] void new_block(size_t bytes, size_t align) {
    cap = std::max<size_t>(kBlockSize, bytes + align);
    if (cap == kBlockSize) {
      BlockPool& pool = block_pool();
      std::lock_guard lock(pool.mu);
      if (!pool.blocks.empty()) {
        blocks.push_back(std::move(pool.blocks.back()));
        pool.blocks.pop_back();
      }
    }
    if (block_sizes.size() == blocks.size()) blocks.emplace_back(new std::byte[cap]);
    block_sizes.push_back(cap);
    used = 0;
  }
  // open-addressing intern table; the hash sits next to the pointer so a probe that misses
  // never touches the node's memory
  using Slot = std::pair<uint64_t, const UOp*>;  // (hash, node); an empty slot has no node
  static constexpr size_t kFirstTable = 1024, kLargestPooledTable = size_t(1) << 16;
  std::vector<Slot> table = take_table(kFirstTable);
  // an empty table of `n` slots: a pooled one where there is one
  static std::vector<Slot> take_table(size_t n) {
    if (n > kFirstTable && n <= kLargestPooledTable) {
      BlockPool& pool = block_pool();
      std::lock_guard lock(pool.mu);
      for (size_t k = 0; k < pool.tables.size(); ++k)
        if (pool.tables[k].size() == n) {
          std::vector<Slot> r = std::move(pool.tables[k]);
          pool.tables.erase(pool.tables.begin() + std::ptrdiff_t(k));
          std::fill(r.begin(), r.end(), Slot{0, nullptr});
          return r;
        }
    }
    return std::vector<Slot>(n, Slot{0, nullptr});
  }
  // caller holds pool.mu
  static void give_table(BlockPool& pool, std::vector<Slot>&& t) {
    if (t.size() <= kFirstTable || t.size() > kLargestPooledTable) return;
    for (const auto& p : pool.tables)
      if (p.size() == t.size()) return;
    pool.tables.push_back(std::move(t));
  }
  size_t count = 0;
  std::deque<std::string> strings;
  std::unordered_set<std::string_view> string_set;
};

Context::Context() : impl_(std::make_unique<Impl>()) {}
Context::~Context() = default;

std::string_view Context::intern(std::string_view s) {
  if (auto it = impl_->string_set.find(s); it != impl_->string_set.end()) return *it;
  std::string_view v = impl_->strings.emplace_back(s);
  impl_->string_set.insert(v);
  return v;
}

const UOp* Context::make(Op op, DType dtype, std::span<const UOp* const> src, Arg arg, int32_t tag) {
  return make_hashed(op, dtype, src, arg, tag,
                     mix(mix(mix(uint64_t(op) + 1, dtype.key()), uint64_t(uint32_t(tag))), hash_arg(arg)));
}

const UOp* Context::make_hashed(Op op, DType dtype, std::span<const UOp* const> src, const Arg& arg, int32_t tag,
                                const uint64_t head) {
  uint64_t h = head;
  for (const UOp* s : src) h = mix(h, s->id);
  h = mix(h, src.size());
  h ^= h >> 29;  // the multiply leaves the low bits weak; the slot index uses them
  auto& t = impl_->table;
  size_t mask = t.size() - 1;
  size_t i = h & mask;
  for (; t[i].second != nullptr; i = (i + 1) & mask) {
    if (t[i].first != h) continue;
    const UOp* u = t[i].second;
    if (u->op != op || u->dtype != dtype || u->tag != tag || u->nsrc_ != src.size()) continue;
    if (!same_srcs(src, u->srcs_)) continue;
    if (u->arg_ == arg) return u;
  }
  // intern names so args never point into caller memory
  Arg own = arg;
  if (auto* v = std::get_if<VarArg>(&own)) v->name = intern(v->name);
  if (auto* p = std::get_if<ParamArg>(&own)) p->name = intern(p->name);
  if (auto* n = std::get_if<Name>(&own)) n->s = intern(n->s);
  auto** srcs =
      static_cast<const UOp**>(impl_->alloc(sizeof(const UOp*) * std::max<size_t>(src.size(), 1), alignof(UOp*)));
  std::copy(src.begin(), src.end(), srcs);
  void* mem = impl_->alloc(sizeof(UOp), alignof(UOp));
  auto* u =
      new (mem) UOp(this, op, dtype, uint32_t(nodes_.size()), tag, srcs, uint32_t(src.size()), std::move(own), head);
  static_assert(std::is_trivially_destructible_v<UOp>, "the arena never runs destructors");
  nodes_.push_back(u);
  t[i] = {h, u};
  if (++impl_->count * 2 > t.size()) {  // grow and rehash
    std::vector<Impl::Slot> nt = Impl::take_table(t.size() * 2);
    size_t nmask = nt.size() - 1;
    for (const Impl::Slot& e : t) {
      if (e.second == nullptr) continue;
      size_t j = e.first & nmask;
      while (nt[j].second != nullptr) j = (j + 1) & nmask;
      nt[j] = e;
    }
    t.swap(nt);
    BlockPool& pool = block_pool();
    std::lock_guard lock(pool.mu);
    Impl::give_table(pool, std::move(nt));
  }
  return u;
}

uint32_t Context::new_epoch() {
  // grown ahead of the Context (its new slots are 0, never an epoch), so a growing graph does
  // not reallocate the marks at every walk
  if (marks_.size() < nodes_.size()) marks_.resize(std::max(nodes_.size(), 2 * marks_.size()), 0);
  if (++epoch_ == 0) {  // wrapped: clear and start over
    std::fill(marks_.begin(), marks_.end(), 0);
    epoch_ = 1;
  }
  return epoch_;
}

const UOp* Context::cint(int64_t v, DType d) { return make(Op::CONST, d, {}, ConstValue::of_int(v)); }
const UOp* Context::cfloat(double v, DType d) {
  return make(Op::CONST, d, {}, truncate_to(d, ConstValue::of_float(v)));
}
const UOp* Context::cbool(bool v) { return make(Op::CONST, dtypes::bool_, {}, ConstValue::of_bool(v)); }
const UOp* Context::invalid() { return make(Op::CONST, dtypes::bool_, {}, ConstValue::invalid()); }
const UOp* Context::cconst(const ConstValue& v, DType d) {
  if (v.is_invalid()) return invalid();
  ConstValue c = v;
  if (is_float(d))
    c = ConstValue::of_float(v.as_double());
  else if (is_bool(d))
    c = ConstValue::of_bool(v.is_float() ? v.f != 0.0 : v.i != 0);
  else if (!v.is_float())  // a float into an int dtype: truncate_to converts it, in range or not
    c = ConstValue::of_int(v.i);
  return make(Op::CONST, d, {}, truncate_to(d, c));
}
const UOp* Context::var(std::string_view name, int64_t min, int64_t max, DType d, int64_t multiple_of) {
  return make(Op::DEFINE_VAR, d, {}, VarArg{name, min, max, multiple_of});
}
const UOp* Context::fvar(std::string_view name, double min, double max, DType d) {
  VarArg v{name, 0, 0, 1, min, max};
  return make(Op::DEFINE_VAR, d, {}, v);
}
const UOp* Context::range(const UOp* end, int32_t axis, AxisType type, DType d) {
  return make(Op::RANGE, d, {end}, RangeArg{axis, type, -1});
}
const UOp* Context::range(int64_t end, int32_t axis, AxisType type) { return range(cint(end), axis, type); }
const UOp* Context::special(const UOp* end, std::string_view name) {
  return make(Op::SPECIAL, end->dtype, {end}, Name{name});
}
const UOp* Context::sink(std::span<const UOp* const> src) { return make(Op::SINK, dtypes::void_, src); }

// ---------------------------------------------------------------- builders

static DType result_dtype(Op op, std::span<const UOp* const> src) {
  auto promo = [&](size_t from) {
    DType d = src[from]->dtype;
    for (size_t i = from + 1; i < src.size(); ++i)
      if (src[i]->dtype != d) d = least_upper_dtype(d, src[i]->dtype);
    return d;
  };
  if (in_group(op, G_COMPARISON)) return DType(Scalar::Bool, src[0]->dtype.count, false, AddrSpace::None);
  if (op == Op::WHERE) return promo(1);
  if (op == Op::SHL || op == Op::SHR) return src[0]->dtype;
  if (op == Op::SIN || op == Op::LOG2 || op == Op::EXP2 || op == Op::SQRT || op == Op::RECIPROCAL) {
    DType d = src[0]->dtype;
    if (is_float(d)) return d;
    return d.scalar == Scalar::WeakInt ? DType(dtypes::weakfloat) : least_upper_dtype(d, dtypes::float32);
  }
  if (in_group(op, G_UNARY)) return src[0]->dtype;
  return promo(0);
}

const UOp* UOp::with_src(std::span<const UOp* const> s) const {
  if (s.size() == nsrc_ && same_srcs(s, srcs_)) return this;
  return ctx_->make_hashed(op, dtype, s, arg_, tag, head_hash_);
}
const UOp* UOp::with_arg(Arg a) const { return ctx_->make(op, dtype, src(), std::move(a), tag); }
const UOp* UOp::with_tag(int32_t t) const { return t == tag ? this : ctx_->make(op, dtype, src(), arg_, t); }
const UOp* UOp::with_dtype(DType d) const { return d == dtype ? this : ctx_->make(op, d, src(), arg_, tag); }
const UOp* UOp::const_like(int64_t v) const { return ctx_->cconst(ConstValue::of_int(v), dtype.base()); }
const UOp* UOp::const_like(double v) const { return ctx_->cconst(ConstValue::of_float(v), dtype.base()); }
const UOp* UOp::const_like(const ConstValue& v) const { return ctx_->cconst(v, dtype.base()); }
const UOp* UOp::alu(Op o, const UOp* b) const {
  const UOp* s[2] = {this, b};
  return ctx_->make(o, result_dtype(o, s), s);
}
const UOp* UOp::alu(Op o, const UOp* b, const UOp* c) const {
  const UOp* s[3] = {this, b, c};
  return ctx_->make(o, result_dtype(o, s), s);
}
const UOp* UOp::cast(DType d) const {
  if (d == dtype) return this;
  const UOp* s[1] = {this};
  return ctx_->make(Op::CAST, d, s);
}
const UOp* UOp::bitcast(DType d) const {
  if (d == dtype) return this;
  const UOp* s[1] = {this};
  return ctx_->make(Op::BITCAST, d, s);
}
const UOp* UOp::ne(const UOp* b) const { return binop(Op::CMPNE, this, b); }
const UOp* UOp::logical_not() const { return cast(dtypes::bool_)->ne(ctx_->cbool(true)); }
const UOp* UOp::where(const UOp* t, const UOp* f) const {
  auto [tt, ff] = promote(t, f);
  return alu(Op::WHERE, tt, ff);
}
const UOp* UOp::maximum(const UOp* b) const { return binop(Op::MAX, this, b); }
const UOp* UOp::minimum(const UOp* b) const { return kiln::minimum(this, b); }

// ---------------------------------------------------------------- Expr

const UOp* lift(const UOp* like, int64_t v) {
  if (is_bool(like->dtype) && (v == 0 || v == 1)) return like->ctx().cbool(v != 0);
  return like->ctx().cint(v);
}

std::pair<const UOp*, const UOp*> promote(const UOp* a, const UOp* b) {
  if (a->dtype == b->dtype) return {a, b};
  DType out = least_upper_dtype(a->dtype, b->dtype);
  auto fix = [&](const UOp* t) -> const UOp* {
    if (t->is_invalid()) return t;
    if (is_weak(t->dtype) && t->op == Op::CONST) return t->ctx().cconst(t->cval(), weak_of(out));
    return t->cast(out);
  };
  return {fix(a), fix(b)};
}

const UOp* binop(Op op, const UOp* a, const UOp* b) {
  auto [x, y] = promote(a, b);
  return x->alu(op, y);
}

Expr operator+(Expr a, Expr b) { return binop(Op::ADD, a, b); }
Expr operator*(Expr a, Expr b) { return binop(Op::MUL, a, b); }
Expr operator-(Expr a) {
  if (is_bool(a->dtype)) return a->logical_not();
  return binop(Op::MUL, a, lift(a, -1));
}
Expr operator-(Expr a, Expr b) {
  auto [x, y] = promote(a, b);
  return x->alu(Op::ADD, -Expr(y));
}
Expr operator/(Expr a, Expr b) {
  auto [x, y] = promote(a, b);
  if (is_int(x->dtype) && is_int(y->dtype)) return x->alu(Op::FLOORDIV, y);
  const UOp* r[1] = {y};
  return x->alu(Op::MUL, y->ctx().make(Op::RECIPROCAL, result_dtype(Op::RECIPROCAL, r), r));
}
Expr operator%(Expr a, Expr b) {
  auto [x, y] = promote(a, b);
  if (is_int(x->dtype) && is_int(y->dtype)) return x->alu(Op::FLOORMOD, y);
  return Expr(x) - (Expr(x) / Expr(y)) * Expr(y);  // floats: not used by index math
}
Expr operator<(Expr a, Expr b) { return binop(Op::CMPLT, a, b); }
Expr operator>(Expr a, Expr b) { return binop(Op::CMPLT, b, a); }
Expr operator>=(Expr a, Expr b) { return !(a < b); }
Expr operator<=(Expr a, Expr b) { return !(a > b); }
Expr operator!=(Expr a, Expr b) { return binop(Op::CMPNE, a, b); }
Expr operator&(Expr a, Expr b) { return binop(Op::AND, a, b); }
Expr operator|(Expr a, Expr b) { return binop(Op::OR, a, b); }
Expr operator^(Expr a, Expr b) { return binop(Op::XOR, a, b); }
Expr operator<<(Expr a, Expr b) { return binop(Op::SHL, a, b); }
Expr operator>>(Expr a, Expr b) { return binop(Op::SHR, a, b); }
Expr operator!(Expr a) { return a->logical_not(); }
Expr cdiv(Expr a, Expr b) { return binop(Op::CDIV, a, b); }
Expr cmod(Expr a, Expr b) { return binop(Op::CMOD, a, b); }
Expr eq(Expr a, Expr b) { return !(a != b); }
Expr maximum(Expr a, Expr b) { return binop(Op::MAX, a, b); }
Expr minimum(Expr a, Expr b) {
  auto [x, y] = promote(a, b);
  if (is_float(x->dtype)) return -Expr(binop(Op::MAX, -Expr(x), -Expr(y)));
  int64_t k = is_unsigned(x->dtype) ? int64_t(uint_max(x->dtype)) : -1;
  if (is_bool(x->dtype)) return Expr(x) & Expr(y);
  const UOp* kk = x->ctx().cint(k, is_weak(x->dtype) ? dtypes::weakint : x->dtype.base());
  return (Expr(x) ^ kk).get()->maximum(Expr(y) ^ kk) ^ Expr(kk);
}
Expr where(Expr c, Expr t, Expr f) { return c->where(t, f); }
Expr usum(std::span<const UOp* const> terms, const UOp* zero_like) {
  if (terms.empty()) return zero_like->const_like(int64_t(0));
  Expr r = terms[0];
  bool b = is_bool(r->dtype);
  for (size_t i = 1; i < terms.size(); ++i) r = b ? (r | Expr(terms[i])) : (r + Expr(terms[i]));
  return r;
}
Expr uprod(std::span<const UOp* const> terms, const UOp* one_like) {
  if (terms.empty()) return is_bool(one_like->dtype) ? one_like->ctx().cbool(true) : one_like->const_like(int64_t(1));
  Expr r = terms[0];
  bool b = is_bool(r->dtype);
  for (size_t i = 1; i < terms.size(); ++i) r = b ? (r & Expr(terms[i])) : (r * Expr(terms[i]));
  return r;
}

}  // namespace kiln
