// kiln::Tensor: the C++ frontend that builds the tensor graph, with tinygrad's semantics.
//
// The graph lives in the IR of a kiln::Context. A tensor node is:
//   PARAM(STACK(dims...))            an input; dtype = element dtype, arg = ParamArg{slot, -1, name}
//   CONST                            a scalar (shape ()), broadcast with RESHAPE + EXPAND
//   RESHAPE(x, STACK(dims))          EXPAND(x, STACK(full shape))  (same rank; size-1 dims broadcast)
//   PERMUTE(x, STACK(order))         PAD(x, STACK(before), STACK(after))
//   SHRINK(x, STACK(begin), STACK(end))   FLIP(x, STACK(0/1 per axis))
//   ALU ops, CAST, BITCAST           sources of equal shape (broadcasting inserts RESHAPE + EXPAND)
//   REDUCE(x, STACK(axes))           arg ReduceArg{ADD|MUL|MAX}; the reduced axes stay as size 1
//                                    (keepdim form); keepdim=false is a RESHAPE after it
// Dims are weakint UOps (CONST, DEFINE_VAR or simplified expressions of them). Shapes are
// checked as the graph is built: errors throw ShapeError ("expected X, got Y").
// Python-scalar operands are weak (weakint / weakfloat CONSTs) and adopt the tensor's dtype.
#pragma once

#include <concepts>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "generator/frontend/shape.h"
#include "generator/ir/uop.h"

namespace kiln {

// A dim as the user writes it: a literal size or a weakint UOp (DEFINE_VAR or expression).
struct Dim {
  Dim(int64_t v) : v(v) {}     // NOLINT: implicit on purpose
  Dim(int v) : v(v) {}         // NOLINT
  Dim(const UOp* u) : u(u) {}  // NOLINT
  const UOp* u = nullptr;
  int64_t v = 0;
  const UOp* get(Context& ctx) const;
};

template <class T>
concept Number = std::is_arithmetic_v<T>;

// Axes as tinygrad takes them: one (`x.sum(1)`) or a list (`x.sum({0, 2})`); negative ones count
// from the end. 64-bit, so an axis is range-checked as written, never truncated first.
struct Axes {
  Axes() = default;
  Axes(int64_t a) : v{a} {}                                                               // NOLINT: implicit on purpose
  Axes(std::initializer_list<int64_t> l) : v(l) {}                                        // NOLINT
  template <std::integral T> Axes(const std::vector<T>& xs) : v(xs.begin(), xs.end()) {}  // NOLINT
  std::vector<int64_t> v;
};

// One index of x[...]: an integer or dim (selects one position and drops the axis), a slice
// start:stop:step with Python's bounds (absent, negative from the end, clamped when constant),
// None (std::nullopt), which inserts an axis of size 1 and reads none, or one Ellipsis.
struct Slice {
  std::optional<Dim> start, stop;
  int64_t step = 1;
};
struct Ellipsis {};  // x[..., i]: as many whole axes as the other indices leave
struct Index {
  Index(Dim at) : at(at) {}                                  // NOLINT: implicit on purpose
  Index(const UOp* at) : at(at) {}                           // NOLINT
  Index(int64_t at) : at(at) {}                              // NOLINT
  Index(int at) : at(int64_t(at)) {}                         // NOLINT
  Index(Slice s) : at(int64_t(0)), slice(std::move(s)) {}    // NOLINT
  Index(std::nullopt_t) : at(int64_t(0)), new_axis(true) {}  // NOLINT: None, a new axis of size 1
  Index(Ellipsis) : at(int64_t(0)), ellipsis(true) {}        // NOLINT
  Dim at;
  std::optional<Slice> slice;
  bool new_axis = false, ellipsis = false;
};

template <class... T>
concept Dims = sizeof...(T) > 0 && (std::convertible_to<T, Dim> && ...);
template <class... T>
concept Ints = sizeof...(T) > 0 && (std::integral<T> && ...);

class Tensor {
 public:
  Tensor(Context* ctx, const UOp* u);  // infers the shape of an existing graph

  // slot = the number of tensor inputs (non-pointer PARAMs) the Context already holds (a scan of
  // the Context: a caller that makes many inputs numbers them itself with the overload below)
  static Tensor input(Context& ctx, std::string_view name, DType dtype, const std::vector<Dim>& dims);
  static Tensor input(Context& ctx, int32_t slot, std::string_view name, DType dtype, const std::vector<Dim>& dims);
  static Tensor constant(Context& ctx, double value, DType dtype);  // a 0-d tensor
  static Tensor full(Context& ctx, const std::vector<Dim>& dims, double value, DType dtype);
  static Tensor arange(Context& ctx, int64_t start, int64_t stop, int64_t step = 1, DType dtype = dtypes::int32);
  static Tensor arange(Context& ctx, int64_t stop) { return arange(ctx, 0, stop); }
  static Tensor iota(Context& ctx, Dim n, DType dtype = dtypes::int32);  // 0..n-1; n may be symbolic

  Context& ctx() const { return *ctx_; }
  const UOp* uop() const { return u_; }
  DType dtype() const { return u_->dtype; }
  const Shape& shape() const { return shape_; }
  size_t ndim() const { return shape_.size(); }

  // ---- movement (tensor.cpp). Negative axes count from the end. As in tinygrad, the shape and
  // axis lists take one list or separate arguments: `x.reshape({1, 16})` or `x.reshape(1, 16)`.
  Tensor reshape(const std::vector<Dim>& dims) const;  // one -1: the size that keeps the count
  template <class... D>
  requires Dims<D...> Tensor reshape(D... d)
  const { return reshape(std::vector<Dim>{Dim(d)...}); }
  Tensor permute(const Axes& order) const;
  template <class... I>
  requires Ints<I...> Tensor permute(I... o)
  const { return permute(Axes{int64_t(o)...}); }
  Tensor transpose(int64_t a = -2, int64_t b = -1) const;
  Tensor expand(const std::vector<Dim>& dims) const;  // -1 keeps the size
  template <class... D>
  requires Dims<D...> Tensor expand(D... d)
  const { return expand(std::vector<Dim>{Dim(d)...}); }
  Tensor pad(const std::vector<std::pair<Dim, Dim>>& pads) const;
  Tensor shrink(const std::vector<std::pair<Dim, Dim>>& bounds) const;
  Tensor slice(int64_t axis, Dim begin, Dim end) const;     // shrink along one axis
  Tensor getitem(const std::vector<Index>& indices) const;  // x[i, a:b:s, ...]; missing trailing axes are whole
  Tensor flip(const Axes& axes) const;
  template <class... I>
  requires Ints<I...> Tensor flip(I... a)
  const { return flip(Axes{int64_t(a)...}); }
  Tensor unsqueeze(int64_t axis) const;
  Tensor squeeze(int64_t axis) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  static Tensor cat(const std::vector<Tensor>& ts, int64_t axis = 0);
  static Tensor stack(const std::vector<Tensor>& ts, int64_t axis = 0);
  Tensor broadcast_to(const Shape& s) const;

  // ---- elementwise (tensor_math.cpp)
  Tensor cast(DType d) const;
  Tensor bitcast(DType d) const;
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu(std::string_view approximate = "tanh") const;  // "tanh" or "none" (erf)
  Tensor erf() const;                                        // Abramowitz and Stegun 7.1.26, as tinygrad
  Tensor sign() const;
  Tensor silu() const;
  Tensor reciprocal() const;
  Tensor trunc() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;  // half to even
  Tensor pow(const Tensor& e) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor where(const Tensor& t, const Tensor& f) const;  // this is the condition
  Tensor logical_not() const;
  Tensor logical_and(const Tensor& o) const;
  Tensor logical_or(const Tensor& o) const;
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;                                  // true division (ints promote to float)
  Tensor div(const Tensor& o, std::string_view rounding_mode) const;  // "trunc", "floor" or "" (true division)
  Tensor idiv(const Tensor& o) const;  // ints: floor division (Python's //), from CDIV/CMOD
  Tensor mod(const Tensor& o) const;   // ints: floor modulo (Python's %, the divisor's sign)
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  // integers and bools (shifts: integers only); the operands promote like any binary op
  Tensor bitwise_and(const Tensor& o) const;
  Tensor bitwise_or(const Tensor& o) const;
  Tensor bitwise_xor(const Tensor& o) const;
  Tensor bitwise_not() const;
  Tensor lshift(const Tensor& o) const;
  Tensor rshift(const Tensor& o) const;
  Tensor scalar(double v) const;   // a weakfloat CONST in this tensor's Context
  Tensor scalar(int64_t v) const;  // a weakint CONST
  template <Number T> Tensor lift(T v) const {
    if constexpr (std::is_same_v<T, bool>)
      return Tensor(ctx_, ctx_->cbool(v));
    else if constexpr (std::is_floating_point_v<T>)
      return scalar(double(v));
    else
      return scalar(int64_t(v));
  }

  // ---- reductions (tensor_math.cpp); empty axes = all axes
  Tensor sum(const Axes& axes = {}, bool keepdim = false) const;
  Tensor prod(const Axes& axes = {}, bool keepdim = false) const;
  Tensor max(const Axes& axes = {}, bool keepdim = false) const;
  Tensor min(const Axes& axes = {}, bool keepdim = false) const;
  Tensor mean(const Axes& axes = {}, bool keepdim = false) const;
  // the first maximal (minimal) index, int32; no axis: over the flattened tensor
  Tensor argmax(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;

  // ---- nn (tensor_nn.cpp)
  Tensor matmul(const Tensor& o) const;
  Tensor softmax(int64_t axis = -1) const;
  Tensor log_softmax(int64_t axis = -1) const;
  Tensor layernorm(int64_t axis = -1, double eps = 1e-5) const;
  Tensor rmsnorm(int64_t axis = -1, double eps = 1e-6) const;
  // Sliding windows over the last k.size() axes: (..., o1, .., ok, k1, .., kk), o = (n - d*(k-1) - 1)/s + 1.
  Tensor pool(const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& dilation) const;
  Tensor pool_by_repeat(const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& dilation, const Shape& out) const;  // pool, constant sizes
  // tinygrad's pad: PAD, then `value` there; a negative pad cuts that many elements instead
  Tensor pad_value(const std::vector<std::pair<Dim, Dim>>& pads, double value) const;
  // mode "constant" (pad_value), or on constant shapes "reflect", "replicate" or "circular"
  Tensor pad_mode(const std::vector<std::pair<Dim, Dim>>& pads, std::string_view mode, double value = 0) const;
  // Pool and conv options as tinygrad takes them: one value for every spatial axis or one per
  // axis; padding also (left, right, top, bottom, ...) per side, last axis first.
  // x (N, Cin, H, W), w (Cout, Cin/groups, kh, kw), bias (Cout) or nullptr.
  Tensor conv2d(const Tensor& w, const Tensor* bias = nullptr, int64_t groups = 1, std::vector<int64_t> stride = {1, 1},
                std::vector<int64_t> dilation = {1, 1}, std::vector<int64_t> padding = {0, 0}) const;
  // pads with the dtype's minimum; stride defaults to k; ceil_mode: a last partial window counts
  Tensor max_pool2d(std::vector<int64_t> k = {2, 2}, std::vector<int64_t> stride = {},
                    std::vector<int64_t> padding = {0}, std::vector<int64_t> dilation = {1},
                    bool ceil_mode = false) const;
  // count_include_pad=false: the padding is not counted in the average
  Tensor avg_pool2d(std::vector<int64_t> k = {2, 2}, std::vector<int64_t> stride = {},
                    std::vector<int64_t> padding = {0}, std::vector<int64_t> dilation = {1}, bool ceil_mode = false,
                    bool count_include_pad = true) const;
  Tensor tril(int64_t diagonal = 0) const;  // keeps (i, j) with j <= i + diagonal over the last two axes
  // softmax(q @ k^T / sqrt(d) + mask) @ v; a bool mask keeps where true; causal masks j > i.
  Tensor scaled_dot_product_attention(const Tensor& k, const Tensor& v, const Tensor* mask = nullptr,
                                      bool causal = false) const;

  int norm_axis(int64_t axis, size_t rank) const;  // checks range, maps negative axes

 private:
  Tensor(Context* ctx, const UOp* u, Shape shape) : ctx_(ctx), u_(u), shape_(std::move(shape)) {}
  friend Tensor make_tensor(Op op, DType d, const std::vector<Tensor>& srcs, std::vector<const UOp*> args, Arg arg);
  Tensor reduce(Op op, const Axes& axes, bool keepdim) const;
  Tensor unary(Op op) const;
  Tensor float_t() const;  // ints and bool become float32 for transcendental ops

  Context* ctx_;
  const UOp* u_;
  Shape shape_;
};

// Makes a node from tensor sources plus argument sources, inferring (and checking) its shape.
Tensor make_tensor(Op op, DType d, const std::vector<Tensor>& srcs, std::vector<const UOp*> args = {}, Arg arg = {});
// Promotes two operands to their common dtype (weak scalars adopt) and broadcasts them.
std::pair<Tensor, Tensor> broadcasted(const Tensor& a, const Tensor& b);
Shape broadcast_shape(const Shape& a, const Shape& b);

#define KILN_TENSOR_BINOP(OP, FN)                                                          \
  inline Tensor operator OP(const Tensor& a, const Tensor& b) { return a.FN(b); }          \
  template <Number T> Tensor operator OP(const Tensor& a, T b) { return a.FN(a.lift(b)); } \
  template <Number T> Tensor operator OP(T a, const Tensor& b) { return b.lift(a).FN(b); }
KILN_TENSOR_BINOP(+, add)
KILN_TENSOR_BINOP(-, sub)
KILN_TENSOR_BINOP(*, mul)
KILN_TENSOR_BINOP(/, div)
KILN_TENSOR_BINOP(<, lt)
KILN_TENSOR_BINOP(<=, le)
KILN_TENSOR_BINOP(>, gt)
KILN_TENSOR_BINOP(>=, ge)
KILN_TENSOR_BINOP(==, eq)
KILN_TENSOR_BINOP(!=, ne)
KILN_TENSOR_BINOP(&, bitwise_and)
KILN_TENSOR_BINOP(|, bitwise_or)
KILN_TENSOR_BINOP(^, bitwise_xor)
KILN_TENSOR_BINOP(<<, lshift)
KILN_TENSOR_BINOP(>>, rshift)
#undef KILN_TENSOR_BINOP
inline Tensor operator-(const Tensor& a) { return a.neg(); }
inline Tensor operator~(const Tensor& a) { return a.bitwise_not(); }

}  // namespace kiln
