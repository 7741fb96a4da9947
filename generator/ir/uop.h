// UOp: the one IR node, and Context: the arena that interns them (hash-consing).
// Two structurally equal nodes of one Context are the same pointer.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "generator/ir/dtype.h"
#include "generator/ir/ops.h"

namespace kiln {

class Context;
class UOp;

// ---------------------------------------------------------------- typed args

// A constant value: an integer (any int dtype, carried in int64), a float, a bool, or the
// seeds' Invalid marker (an index that must not be accessed).
struct ConstValue {
  enum class Kind : uint8_t { Int, Float, Bool, Invalid };
  Kind kind = Kind::Int;
  int64_t i = 0;   // Int, and Bool as 0/1
  double f = 0.0;  // Float

  static ConstValue of_int(int64_t v) { return {Kind::Int, v, 0.0}; }
  static ConstValue of_float(double v);  // canonicalizes NaN
  static ConstValue of_bool(bool v) { return {Kind::Bool, v ? 1 : 0, 0.0}; }
  static ConstValue invalid() { return {Kind::Invalid, 0, 0.0}; }
  bool is_int() const { return kind == Kind::Int; }
  bool is_float() const { return kind == Kind::Float; }
  bool is_bool() const { return kind == Kind::Bool; }
  bool is_invalid() const { return kind == Kind::Invalid; }
  double as_double() const { return kind == Kind::Float ? f : double(i); }
  bool operator==(const ConstValue& o) const;  // floats compare by bits (-0.0 != 0.0, NaN == NaN)
};

enum class AxisType : uint8_t {
  Device,
  Global,
  Warp,
  Local,
  Weak,
  GroupReduce,
  Reduce,
  Upcast,
  Unroll,
  Thread,
  Placeholder,
  Loop,
  Lane,  // a short innermost loop over consecutive elements: vectorize makes it vectors of the target's width
};
std::string_view axis_type_name(AxisType t);  // lowercase: "loop", "reduce", ...

struct VarArg {           // DEFINE_VAR: a bounded symbolic value (an integer, or a float with fmin/fmax)
  std::string_view name;  // interned in the Context
  int64_t min = 0, max = 0;
  int64_t multiple_of = 1;
  double fmin = 0.0, fmax = 0.0;  // the bounds of a float variable
  bool operator==(const VarArg&) const = default;
};
struct RangeArg {  // RANGE: axis id and kind; `sub` distinguishes split copies of one axis
  int32_t axis = 0;
  AxisType type = AxisType::Loop;
  int32_t sub = -1;
  bool operator==(const RangeArg&) const = default;
};
struct ParamArg {  // PARAM / BUFFER: a kernel argument or allocation
  int32_t slot = -1;
  int64_t size = -1;  // element count when known
  std::string_view name;
  bool operator==(const ParamArg&) const = default;
};
struct ReduceArg {  // REDUCE: the ALU op and the number of horizontal (vector) axes
  Op op = Op::ADD;
  int32_t horizontal = 0;
  bool operator==(const ReduceArg&) const = default;
};
struct Name {  // SPECIAL and other named nodes
  std::string_view s;
  bool operator==(const Name&) const = default;
};

using Arg = std::variant<std::monostate, ConstValue, VarArg, RangeArg, ParamArg, ReduceArg, Name, int64_t>;

// ---------------------------------------------------------------- the node

class UOp {
 public:
  const Op op;
  const DType dtype;
  const uint32_t id;  // creation order in the Context: the deterministic tie-break everywhere
  const int32_t tag;  // 0 = untagged

  std::span<const UOp* const> src() const { return {srcs_, nsrc_}; }
  const UOp* src(size_t i) const { return srcs_[i]; }
  size_t nsrc() const { return nsrc_; }
  const Arg& arg() const { return arg_; }
  template <class T> const T& arg() const { return std::get<T>(arg_); }
  template <class T> bool has_arg() const { return std::holds_alternative<T>(arg_); }
  Context& ctx() const { return *ctx_; }

  // CONST helpers
  bool is_const() const { return op == Op::CONST; }
  const ConstValue& cval() const { return std::get<ConstValue>(arg_); }
  int64_t ival() const { return cval().i; }  // int/bool CONST value
  bool is_invalid() const { return op == Op::CONST && cval().is_invalid(); }

  // ---- range analysis (cached per node, computed iteratively; see range.cpp)
  const ConstValue& vmin() const;
  const ConstValue& vmax() const;
  int64_t imin() const { return vmin().i; }  // for int/bool dtypes, as carried (uint64 from 2^63 up: negative)
  int64_t imax() const { return vmax().i; }
  i128 exact_lo() const { return exact_value(dtype, vmin().i); }  // the bounds as exact integers (int/bool)
  i128 exact_hi() const { return exact_value(dtype, vmax().i); }
  // A weakint range that passes the int64 carrier is clamped to it (values past it are undefined):
  // whether that happened to this node, or to this node or any node below it.
  bool saturated() const {
    vmin();
    return saturated_;
  }
  bool saturated_below() const {
    vmin();
    return saturated_below_;
  }

  // ---- divisibility facts (divisibility.cpp)
  int64_t const_factor() const;                 // a known integer that divides this node
  const UOp* divides(int64_t v) const;          // this / v when exact by construction, else nullptr
  const UOp* divide_exact(const UOp* v) const;  // this / v for a symbolic divisor, else nullptr
  std::pair<const UOp*, ConstValue> pop_const(Op sep = Op::ADD) const;  // x+c -> (x, c)
  void split(Op sep, std::vector<const UOp*>& out) const;               // flatten a chain of `sep`
  std::vector<const UOp*> split(Op sep) const;

  // ---- builders (they intern into the same Context)
  const UOp* with_src(std::span<const UOp* const> s) const;
  const UOp* with_arg(Arg a) const;
  const UOp* with_tag(int32_t t) const;
  const UOp* with_dtype(DType d) const;
  const UOp* const_like(int64_t v) const;  // a CONST of this node's dtype (bool for bool)
  const UOp* const_like(double v) const;
  const UOp* const_like(const ConstValue& v) const;
  const UOp* alu(Op o, const UOp* b) const;  // dtype by promotion
  const UOp* alu(Op o, const UOp* b, const UOp* c) const;
  const UOp* cast(DType d) const;
  const UOp* bitcast(DType d) const;
  const UOp* logical_not() const;  // (x != true)
  const UOp* ne(const UOp* b) const;
  const UOp* where(const UOp* t, const UOp* f) const;
  const UOp* maximum(const UOp* b) const;
  const UOp* minimum(const UOp* b) const;

 private:
  friend class Context;
  UOp(Context* c, Op o, DType d, uint32_t i, int32_t t, const UOp* const* s, uint32_t n, Arg a, uint64_t head_hash)
      : op(o), dtype(d), id(i), tag(t), srcs_(s), nsrc_(n), arg_(std::move(a)), head_hash_(head_hash), ctx_(c) {}
  void compute_bounds() const;

  const UOp* const* srcs_;
  uint32_t nsrc_;
  Arg arg_;
  uint64_t head_hash_;  // the intern table's hash of (op, dtype, tag, arg): with_src reuses it
  Context* ctx_;
  mutable bool bounds_done_ = false;
  mutable bool saturated_ = false, saturated_below_ = false;
  mutable ConstValue vmin_, vmax_;
  friend struct BoundsImpl;
};

// Errors inside the generator that are not the user's fault: a pass produced bad IR, a rewrite
// did not terminate. The CLI turns them into exit code 70 with the pass named.
class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- the arena

class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // The one way to make a node: returns the existing node when an equal one exists.
  const UOp* make(Op op, DType dtype, std::span<const UOp* const> src = {}, Arg arg = {}, int32_t tag = 0);
  const UOp* make(Op op, DType dtype, std::initializer_list<const UOp*> src, Arg arg = {}, int32_t tag = 0) {
    return make(op, dtype, std::span<const UOp* const>(src.begin(), src.size()), std::move(arg), tag);
  }

  const UOp* cint(int64_t v, DType d = dtypes::weakint);
  const UOp* cfloat(double v, DType d = dtypes::weakfloat);
  const UOp* cbool(bool v);
  const UOp* cconst(const ConstValue& v, DType d);
  const UOp* invalid();
  const UOp* var(std::string_view name, int64_t min, int64_t max, DType d = dtypes::weakint, int64_t multiple_of = 1);
  const UOp* fvar(std::string_view name, double min, double max, DType d = dtypes::float32);
  const UOp* range(const UOp* end, int32_t axis, AxisType type = AxisType::Loop, DType d = dtypes::weakint);
  const UOp* range(int64_t end, int32_t axis, AxisType type = AxisType::Loop);
  const UOp* special(const UOp* end, std::string_view name);
  const UOp* sink(std::span<const UOp* const> src);

  std::string_view intern(std::string_view s);  // stable storage for names

  // Visit marks for traversals: O(subgraph) instead of O(context) per traversal. A traversal
  // takes a fresh epoch; a node is visited in it when mark(id) == epoch.
  uint32_t new_epoch();
  uint32_t& mark(uint32_t id) { return marks_[id]; }
  size_t size() const { return nodes_.size(); }
  const UOp* node(uint32_t id) const { return nodes_[id]; }

  // The ops of a node's graph (itself included), computed once per node.
  OpSet ops_below(const UOp* root);

  // verify() passed on the node and everything below it (verify.cpp)
  bool verified(uint32_t id) const { return id < verified_.size() && verified_[id]; }
  void set_verified(uint32_t id) {
    if (id >= verified_.size()) verified_.resize(std::max(nodes_.size(), size_t(id) + 1), 0);
    verified_[id] = 1;
  }

  // Fixed points of pure matchers (see PatternMatcher::remember_fixed_points): bit `b` of node
  // `id` says that no rule of that matcher changes the node or anything below it.
  bool fixed(uint32_t id, uint8_t b) const { return id < fixed_.size() && (fixed_[id] & b); }
  void set_fixed(uint32_t id, uint8_t b) {
    if (id >= fixed_.size()) fixed_.resize(std::max(nodes_.size(), size_t(id) + 1), 0);
    fixed_[id] |= b;
  }
  // What a top-down rewrite with the pure matcher of bit `b` made of the root `id` (nullptr: not
  // known): the same graph_rewrite again, or a nested simplify() of the same expression, ends there.
  const UOp* rewritten(uint32_t id, uint8_t b) const {
    const auto& t = rewritten_[std::countr_zero(b)];
    auto it = t.find(id);
    return it == t.end() ? nullptr : it->second;
  }
  void set_rewritten(uint32_t id, uint8_t b, const UOp* r) { rewritten_[std::countr_zero(b)][id] = r; }

 private:
  friend class UOp;
  // make() with the hash of (op, dtype, tag, arg) given; `arg` is copied only into a new node
  const UOp* make_hashed(Op op, DType dtype, std::span<const UOp* const> src, const Arg& arg, int32_t tag,
                         uint64_t head);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<const UOp*> nodes_;
  std::vector<uint32_t> marks_;
  std::vector<uint8_t> fixed_;
  std::array<std::unordered_map<uint32_t, const UOp*>, 8> rewritten_;  // by the bit of the matcher, then by root id
  std::vector<uint8_t> verified_;
  std::vector<OpSet> ops_below_;  // by id; empty: not computed yet (a node's own op is always in it)
  uint32_t epoch_ = 0;
};

// ---------------------------------------------------------------- graph helpers

// Sources before users, each node once, deterministic (follows src order). Iterative.
std::vector<const UOp*> toposort(const UOp* root);
// A table by node id for a one-pass rewrite of root's graph in toposort order (what each node
// became): large enough for all of it (the root is its newest node), reused per thread, so the
// passes using it must not nest. Slots outside the graph hold stale values: read only those written.
std::vector<const UOp*>& node_table(const UOp* root);
bool in_backward_slice(const UOp* root, OpSet ops);  // any node of root's graph (root included) has an op in `ops`
bool contains(const UOp* root, const UOp* needle);   // needle is in root's graph (root included)
// Structural order of the seeds' `tuplize` (op, arg, dtype, then sources); used for canonical operand order.
int compare_structural(const UOp* a, const UOp* b);

// ---------------------------------------------------------------- expression builders

// A thin handle so index math reads like algebra: Expr(a) * 4 + b. Operators promote dtypes the
// way the seeds do (a weak constant takes the other side's family). `/` and `%` on integers are
// floor division and floor modulo (the seeds' `//` and `%`); on floats `/` is x * (1/y).
class Expr {
 public:
  Expr(const UOp* u) : u_(u) {}  // NOLINT: implicit on purpose
  operator const UOp*() const { return u_; }
  const UOp* operator->() const { return u_; }
  const UOp* get() const { return u_; }

 private:
  const UOp* u_;
};

// binary promotion: returns the pair made ready for `op` (weak consts adopt, others are cast)
std::pair<const UOp*, const UOp*> promote(const UOp* a, const UOp* b);
const UOp* binop(Op op, const UOp* a, const UOp* b);  // promote, then make
const UOp* lift(const UOp* like, int64_t v);          // a weak const usable next to `like`

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator&(Expr a, Expr b);
Expr operator|(Expr a, Expr b);
Expr operator^(Expr a, Expr b);
Expr operator<<(Expr a, Expr b);
Expr operator>>(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator!(Expr a);
#define KILN_EXPR_INT_OPS(OP)                                                  \
  inline Expr operator OP(Expr a, int64_t b) { return a OP Expr(lift(a, b)); } \
  inline Expr operator OP(int64_t a, Expr b) { return Expr(lift(b, a)) OP b; }
KILN_EXPR_INT_OPS(+)
KILN_EXPR_INT_OPS(-)
KILN_EXPR_INT_OPS(*)
KILN_EXPR_INT_OPS(/)
KILN_EXPR_INT_OPS(%)
KILN_EXPR_INT_OPS(<)
KILN_EXPR_INT_OPS(>)
KILN_EXPR_INT_OPS(<=)
KILN_EXPR_INT_OPS(>=)
KILN_EXPR_INT_OPS(!=)
KILN_EXPR_INT_OPS(&)
KILN_EXPR_INT_OPS(|)
KILN_EXPR_INT_OPS(^)
KILN_EXPR_INT_OPS(<<)
KILN_EXPR_INT_OPS(>>)
#undef KILN_EXPR_INT_OPS
Expr cdiv(Expr a, Expr b);  // C (truncating) division
Expr cmod(Expr a, Expr b);
Expr eq(Expr a, Expr b);  // !(a != b)
Expr maximum(Expr a, Expr b);
Expr minimum(Expr a, Expr b);
Expr where(Expr c, Expr t, Expr f);
Expr usum(std::span<const UOp* const> terms, const UOp* zero_like);  // 0 for an empty list
Expr uprod(std::span<const UOp* const> terms, const UOp* one_like);  // 1 for an empty list

// Exact scalar semantics, shared by constant folding and the test interpreters:
// integers wrap at the dtype's width; FLOORDIV/FLOORMOD floor; CDIV/CMOD truncate.
// `operand` is the dtype of the sources of a comparison or a CAST (a uint64 operand is read
// unsigned); void means `dtype`. Returns nullopt where the op is undefined (division by zero),
// unsupported, or the result leaves the weakint carrier.
std::optional<ConstValue> exec_alu(Op op, DType dtype, std::span<const ConstValue> operands, DType operand = DType());
ConstValue truncate_to(DType d, const ConstValue& v);           // wrap ints, round floats to the dtype
ConstValue convert(DType to, DType from, const ConstValue& v);  // a value of dtype `from` as a `to` (CAST)
// exec_alu's `operand` for node u: its sources' common dtype for a comparison, the source's for a CAST
DType operand_dtype(const UOp* u);

}  // namespace kiln
