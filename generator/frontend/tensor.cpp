#include "generator/frontend/tensor.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>

namespace kiln {

const UOp* Dim::get(Context& ctx) const {
  if (!u) return ctx.cint(v);
  if (u->dtype != dtypes::weakint) throw ShapeError("dim: expected a weakint dim, got " + to_string(u->dtype));
  return simplify_dim(u);
}

static std::vector<const UOp*> dims_of(Context& ctx, const std::vector<Dim>& dims) {
  std::vector<const UOp*> r;
  for (const Dim& d : dims) r.push_back(d.get(ctx));
  return r;
}

static const UOp* stack_of(Context& ctx, std::span<const UOp* const> xs) {
  return ctx.make(Op::STACK, dtypes::void_, xs);
}

static const UOp* int_stack(Context& ctx, const std::vector<int64_t>& xs) {
  std::vector<const UOp*> s;
  for (int64_t x : xs) s.push_back(ctx.cint(x));
  return stack_of(ctx, s);
}

Tensor make_tensor(Op op, DType d, const std::vector<Tensor>& srcs, std::vector<const UOp*> args, Arg arg) {
  Context& ctx = srcs.at(0).ctx();
  std::vector<const UOp*> s;
  std::vector<const Shape*> shapes;
  for (const Tensor& t : srcs) {
    s.push_back(t.uop());
    shapes.push_back(&t.shape());
  }
  s.insert(s.end(), args.begin(), args.end());
  const UOp* u = ctx.make(op, d, s, std::move(arg));
  return Tensor(&ctx, u, infer_shape(u, shapes));
}

Tensor::Tensor(Context* ctx, const UOp* u) : ctx_(ctx), u_(u), shape_(kiln::shape_of(u)) {}

Tensor Tensor::input(Context& ctx, std::string_view name, DType dtype, const std::vector<Dim>& dims) {
  int32_t slot = 0;
  for (uint32_t i = 0; i < ctx.size(); ++i)
    if (ctx.node(i)->op == Op::PARAM && !ctx.node(i)->dtype.ptr) ++slot;
  return input(ctx, slot, name, dtype, dims);
}

Tensor Tensor::input(Context& ctx, int32_t slot, std::string_view name, DType dtype, const std::vector<Dim>& dims) {
  const UOp* shape = stack_of(ctx, dims_of(ctx, dims));
  return Tensor(&ctx, ctx.make(Op::PARAM, dtype, {shape}, ParamArg{slot, -1, ctx.intern(name)}));
}

Tensor Tensor::constant(Context& ctx, double value, DType dtype) {
  ConstValue v = is_float(dtype)  ? ConstValue::of_float(value)
                 : is_bool(dtype) ? ConstValue::of_bool(value != 0)
                                  : ConstValue::of_int(int64_t(value));
  return Tensor(&ctx, ctx.cconst(truncate_to(dtype, v), dtype), {});
}

Tensor Tensor::full(Context& ctx, const std::vector<Dim>& dims, double value, DType dtype) {
  return constant(ctx, value, dtype).broadcast_to(dims_of(ctx, dims));
}

// 0..n-1 as one IOTA node: kernels read it as their loop index, with no arithmetic and no memory.
Tensor Tensor::iota(Context& ctx, Dim n, DType dtype) {
  const UOp* d = n.get(ctx);
  if (d->vmin().i < 0) throw ShapeError("iota: expected a non-negative length, got " + dim_str(d));
  return Tensor(&ctx, ctx.make(Op::IOTA, dtype, {d}));
}

Tensor Tensor::arange(Context& ctx, int64_t start, int64_t stop, int64_t step, DType dtype) {
  if (step == 0) throw ShapeError("arange: expected a non-zero step, got 0");
  int64_t n = std::max<int64_t>(0, (stop - start + step - (step > 0 ? 1 : -1)) / step);
  return iota(ctx, n, dtype) * step + start;
}

int Tensor::norm_axis(int64_t axis, size_t rank) const {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    throw ShapeError("axis: expected an axis in [" + std::to_string(-r) + ", " + std::to_string(r) + ") for shape " +
                     shape_str(shape_) + ", got " + std::to_string(axis));
  return int(axis < 0 ? axis + r : axis);
}

// "(2, -1, M)": sizes as the user passed them, for messages.
static std::string sizes_str(Context& ctx, const std::vector<Dim>& dims) {
  std::string r = "(";
  for (size_t i = 0; i < dims.size(); ++i)
    r += (i ? ", " : "") + (dims[i].u ? dim_str(dims[i].get(ctx)) : std::to_string(dims[i].v));
  return r + ")";
}

// ---------------------------------------------------------------- movement

Tensor Tensor::reshape(const std::vector<Dim>& dims) const {
  Shape out;
  int infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!dims[i].u && dims[i].v < 0) {
      if (dims[i].v != -1 || infer >= 0)
        throw ShapeError("reshape: expected sizes >= 0 and at most one -1, got " + sizes_str(*ctx_, dims));
      infer = int(i);
      out.push_back(ctx_->cint(1));
    } else {
      out.push_back(dims[i].get(*ctx_));
    }
  }
  if (infer >= 0) {
    const UOp* all = shape_.empty() ? ctx_->cint(1) : dim_product(shape_);
    const UOp* rest = out.empty() ? ctx_->cint(1) : dim_product(out);
    const UOp* q = dim_is(rest, 0) ? nullptr : all->divide_exact(rest);
    if (!q && !dim_is(rest, 0)) q = simplify_dim(Expr(all) / Expr(rest));
    if (q) {
      out[size_t(infer)] = simplify_dim(q);
      if (!dim_is(simplify_dim(Expr(dim_product(out)) - Expr(all)), 0)) q = nullptr;
    }
    if (!q)
      throw ShapeError("reshape: cannot infer the -1 in " + sizes_str(*ctx_, dims) + " for " + shape_str(shape_) +
                       ": expected " + dim_str(all) + " elements to be a multiple of " + dim_str(rest));
  }
  if (out == shape_) return *this;
  return make_tensor(Op::RESHAPE, dtype(), {*this}, {stack_of(*ctx_, out)});
}

Tensor Tensor::permute(const Axes& order) const {
  std::vector<int64_t> o;
  for (int64_t a : order.v) o.push_back(norm_axis(a, ndim()));
  bool id = o.size() == ndim();
  for (size_t i = 0; i < o.size(); ++i) id &= o[i] == int64_t(i);
  if (id) return *this;
  return make_tensor(Op::PERMUTE, dtype(), {*this}, {int_stack(*ctx_, o)});
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  std::vector<int64_t> order(ndim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[size_t(norm_axis(a, ndim()))], order[size_t(norm_axis(b, ndim()))]);
  return permute(order);
}

// As tinygrad: the shapes align on the right, and -1 keeps the size there (1 on a new axis).
Tensor Tensor::expand(const std::vector<Dim>& dims) const {
  if (dims.size() < ndim())
    throw ShapeError("expand: expected at least rank " + std::to_string(ndim()) + " for " + shape_str(shape_) +
                     ", got rank " + std::to_string(dims.size()));
  size_t lead = dims.size() - ndim();
  Shape out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!dims[i].u && dims[i].v < -1)
      throw ShapeError("expand: expected sizes >= 0 or -1, got " + sizes_str(*ctx_, dims));
    bool keep = !dims[i].u && dims[i].v == -1;
    out.push_back(!keep ? dims[i].get(*ctx_) : i >= lead ? shape_[i - lead] : ctx_->cint(1));
  }
  return broadcast_to(out);
}

Tensor Tensor::broadcast_to(const Shape& s) const {
  if (s.size() < ndim())
    throw ShapeError("expand: expected at least rank " + std::to_string(ndim()) + " for " + shape_str(shape_) +
                     ", got " + shape_str(s));
  Shape ones(s.size() - ndim(), ctx_->cint(1));
  ones.insert(ones.end(), shape_.begin(), shape_.end());
  Tensor r = ones == shape_ ? *this : make_tensor(Op::RESHAPE, dtype(), {*this}, {stack_of(*ctx_, ones)});
  if (s == r.shape_) return r;
  return make_tensor(Op::EXPAND, dtype(), {r}, {stack_of(*ctx_, s)});
}

Tensor Tensor::pad(const std::vector<std::pair<Dim, Dim>>& pads) const {
  if (pads.size() != ndim())
    throw ShapeError("pad: expected " + std::to_string(ndim()) + " pairs for shape " + shape_str(shape_) + ", got " +
                     std::to_string(pads.size()));
  std::vector<const UOp*> b, a;
  bool zero = true;
  for (const auto& [x, y] : pads) {
    b.push_back(x.get(*ctx_));
    a.push_back(y.get(*ctx_));
    zero &= dim_is(b.back(), 0) && dim_is(a.back(), 0);
  }
  if (zero) return *this;
  return make_tensor(Op::PAD, dtype(), {*this}, {stack_of(*ctx_, b), stack_of(*ctx_, a)});
}

Tensor Tensor::shrink(const std::vector<std::pair<Dim, Dim>>& bounds) const {
  if (bounds.size() != ndim())
    throw ShapeError("shrink: expected " + std::to_string(ndim()) + " pairs for shape " + shape_str(shape_) + ", got " +
                     std::to_string(bounds.size()));
  std::vector<const UOp*> b, e;
  bool full = true;
  for (size_t i = 0; i < ndim(); ++i) {
    b.push_back(bounds[i].first.get(*ctx_));
    e.push_back(bounds[i].second.get(*ctx_));
    full &= dim_is(b.back(), 0) && e.back() == shape_[i];
  }
  if (full) return *this;
  return make_tensor(Op::SHRINK, dtype(), {*this}, {stack_of(*ctx_, b), stack_of(*ctx_, e)});
}

Tensor Tensor::slice(int64_t axis, Dim begin, Dim end) const {
  size_t ax = size_t(norm_axis(axis, ndim()));
  std::vector<std::pair<Dim, Dim>> bounds;
  for (size_t i = 0; i < ndim(); ++i)
    bounds.push_back(i == ax ? std::pair<Dim, Dim>{begin, end} : std::pair<Dim, Dim>{int64_t(0), shape_[i]});
  return shrink(bounds);
}

namespace {

// One axis of x[...] as tinygrad's _parse_view_index reads it: the bounds to shrink to, the
// stride (negative: flip first) and whether the axis goes away (an integer index).
struct AxisView {
  const UOp *begin, *end;
  int64_t stride = 1;
  bool collapse = false;
};

// Python's slice.indices on a constant size n: absent bounds default by the step's sign,
// negative ones count from the end, and both clamp into range.
std::pair<int64_t, int64_t> slice_indices(std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step,
                                          int64_t n) {
  auto fix = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v < 0 ? *v + n : *v;
    if (x < 0) return step < 0 ? int64_t(-1) : int64_t(0);
    if (x >= n) return step < 0 ? n - 1 : n;
    return x;
  };
  return {fix(start, step < 0 ? n - 1 : 0), fix(stop, step < 0 ? -1 : n)};
}

std::optional<int64_t> const_of(Context& ctx, const std::optional<Dim>& d) {
  if (!d) return std::nullopt;
  const UOp* u = d->get(ctx);
  if (u->op != Op::CONST) return std::nullopt;
  return u->ival();
}

}  // namespace

Tensor Tensor::getitem(const std::vector<Index>& given) const {
  // tinygrad's _normalize_indices: one ellipsis stands for the whole axes no other index reads
  size_t reading = 0, ellipses = 0;
  for (const Index& i : given) reading += !i.new_axis && !i.ellipsis, ellipses += i.ellipsis;
  if (ellipses > 1) throw ShapeError("index: expected at most one ..., got " + std::to_string(ellipses));
  std::vector<Index> all;
  for (const Index& i : given) {
    if (!i.ellipsis) {
      all.push_back(i);
      continue;
    }
    for (size_t k = reading; k < ndim(); ++k) all.push_back(Slice{});
  }
  std::vector<Index> indices;  // the ones that read an axis
  for (const Index& i : all)
    if (!i.new_axis) indices.push_back(i);
  if (indices.size() > ndim())
    throw ShapeError("index: expected at most " + std::to_string(ndim()) + " indices for shape " + shape_str(shape_) +
                     ", got " + std::to_string(indices.size()));
  Context& c = *ctx_;
  std::vector<AxisView> views;
  for (size_t d = 0; d < ndim(); ++d) {
    const UOp* size = shape_[d];
    bool known = size->op == Op::CONST;
    int64_t n = known ? size->ival() : 0;
    auto from_end = [&](const UOp* v) {  // a negative constant counts from the end
      return v->op == Op::CONST && v->ival() < 0 ? simplify_dim(Expr(size) + Expr(v)) : v;
    };
    if (d >= indices.size()) {
      views.push_back({c.cint(0), size});
    } else if (!indices[d].slice) {
      const UOp* i = indices[d].at.get(c);
      int64_t lo = size->vmin().i;  // in range for every size the axis may have
      if (i->op == Op::CONST && (i->ival() >= lo || i->ival() < -lo))
        throw ShapeError("index: expected an index in [-" + dim_str(size) + ", " + dim_str(size) + ") on axis " +
                         std::to_string(d) + " of " + shape_str(shape_) + ", got " + std::to_string(i->ival()));
      const UOp* b = from_end(i);
      views.push_back({b, simplify_dim(Expr(b) + 1), 1, true});
    } else {
      const Slice& s = *indices[d].slice;
      if (s.step == 0) throw ShapeError("index: expected a non-zero slice step, got 0");
      std::optional<int64_t> b = const_of(c, s.start), e = const_of(c, s.stop);
      if (known && (!s.start || b) && (!s.stop || e)) {
        auto [lo, hi] = slice_indices(b, e, s.step, n);
        if (s.step > 0 ? hi < lo : lo < hi) hi = lo;  // an empty slice
        if (s.step < 0) std::tie(lo, hi) = std::pair{hi + 1, lo + 1};
        views.push_back({c.cint(lo), c.cint(hi), s.step});
        continue;
      }
      if (s.step < 0 && (!s.start || !s.stop))
        throw ShapeError("index: expected explicit bounds for a negative step on axis " + std::to_string(d) + " of " +
                         shape_str(shape_));
      const UOp* lo = s.start ? from_end(s.start->get(c)) : c.cint(0);
      const UOp* hi = s.stop ? from_end(s.stop->get(c)) : size;
      if (s.step < 0) std::tie(lo, hi) = std::pair{simplify_dim(Expr(hi) + 1), simplify_dim(Expr(lo) + 1)};
      // within the axis for every size it may have
      if (lo->vmin().i < 0 || simplify_dim(Expr(hi) - Expr(lo))->vmin().i < 0 ||
          simplify_dim(Expr(size) - Expr(hi))->vmin().i < 0)
        throw ShapeError("index: expected a slice within [0, " + dim_str(size) + "] on axis " + std::to_string(d) +
                         " of " + shape_str(shape_) + ", got [" + dim_str(lo) + ", " + dim_str(hi) + ")");
      views.push_back({lo, hi, s.step});
    }
  }
  std::vector<std::pair<Dim, Dim>> bounds;
  std::vector<int64_t> flips;
  for (size_t d = 0; d < views.size(); ++d) {
    bounds.push_back({views[d].begin, views[d].end});
    if (views[d].stride < 0) flips.push_back(int64_t(d));
  }
  Tensor x = shrink(bounds).flip(flips);
  for (size_t d = 0; d < views.size(); ++d) {
    if (views[d].stride == 1 || views[d].stride == -1) continue;
    const UOp* len = x.shape()[d];
    if (len->op != Op::CONST)
      throw ShapeError("index: expected a constant length for a slice with step " + std::to_string(views[d].stride) +
                       " on axis " + std::to_string(d) + ", got " + dim_str(len));
    int64_t l = len->ival(), st = views[d].stride;
    st = st == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : st < 0 ? -st : st;
    if (l == 0) continue;
    st = std::min(st, l);  // a step past the end takes the first element only
    int64_t rows = (l + st - 1) / st;
    std::vector<std::pair<Dim, Dim>> pads(x.ndim(), {int64_t(0), int64_t(0)});
    pads[d] = {int64_t(0), rows * st - l};
    std::vector<Dim> split(x.shape().begin(), x.shape().end());
    split[d] = rows;
    split.insert(split.begin() + long(d) + 1, st);
    x = x.pad(pads).reshape(split).slice(int64_t(d) + 1, 0, 1).squeeze(int64_t(d) + 1);
  }
  std::vector<Dim> kept;
  size_t d = 0;
  for (const Index& i : all) {
    if (i.new_axis) {
      kept.push_back(int64_t(1));
    } else if (!views[d++].collapse) {
      kept.push_back(x.shape()[d - 1]);
    }
  }
  for (; d < views.size(); ++d) kept.push_back(x.shape()[d]);
  return x.reshape(kept);
}

Tensor Tensor::flip(const Axes& axes) const {
  std::vector<int64_t> f(ndim(), 0);
  for (int64_t a : axes.v) {
    size_t ax = size_t(norm_axis(a, ndim()));
    if (f[ax]) throw ShapeError("flip: expected each axis at most once, got " + std::to_string(a) + " again");
    f[ax] = 1;
  }
  if (std::all_of(f.begin(), f.end(), [](int64_t x) { return x == 0; })) return *this;
  return make_tensor(Op::FLIP, dtype(), {*this}, {int_stack(*ctx_, f)});
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  size_t ax = size_t(norm_axis(axis, ndim() + 1));
  std::vector<Dim> d(shape_.begin(), shape_.end());
  d.insert(d.begin() + long(ax), Dim(int64_t(1)));
  return reshape(d);
}

Tensor Tensor::squeeze(int64_t axis) const {
  size_t ax = size_t(norm_axis(axis, ndim()));
  if (!dim_is(shape_[ax], 1))
    throw ShapeError("squeeze: expected dim " + std::to_string(ax) + " of " + shape_str(shape_) + " to be 1, got " +
                     dim_str(shape_[ax]));
  std::vector<Dim> d(shape_.begin(), shape_.end());
  d.erase(d.begin() + long(ax));
  return reshape(d);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (shape_.empty()) return reshape({ctx_->cint(1)});
  size_t a = size_t(norm_axis(start_dim, ndim())), b = size_t(norm_axis(end_dim, ndim()));
  std::vector<Dim> d(shape_.begin(), shape_.begin() + long(a));
  d.push_back(a > b ? ctx_->cint(1) : dim_product(Shape(shape_.begin() + long(a), shape_.begin() + long(b) + 1)));
  d.insert(d.end(), shape_.begin() + long(b) + 1, shape_.end());
  return reshape(d);
}

// Concatenation is padding each piece to the full extent along `axis` and adding.
Tensor Tensor::cat(const std::vector<Tensor>& ts, int64_t axis) {
  if (ts.empty()) throw ShapeError("cat: expected at least one tensor, got none");
  const Tensor& t0 = ts[0];
  size_t ax = size_t(t0.norm_axis(axis, t0.ndim()));
  for (const Tensor& t : ts)
    if (t.ndim() != t0.ndim())
      throw ShapeError("cat: expected rank " + std::to_string(t0.ndim()) + " like " + shape_str(t0.shape()) + ", got " +
                       shape_str(t.shape()));
  std::vector<const UOp*> sizes;
  for (const Tensor& t : ts) sizes.push_back(t.shape()[ax]);
  const UOp* total = simplify_dim(usum(sizes, sizes[0]));
  const UOp* off = t0.ctx().cint(0);
  std::optional<Tensor> acc;
  for (const Tensor& t : ts) {
    std::vector<std::pair<Dim, Dim>> pads(t.ndim(), {int64_t(0), int64_t(0)});
    const UOp* end = simplify_dim(Expr(off) + Expr(t.shape()[ax]));
    pads[ax] = {off, simplify_dim(Expr(total) - Expr(end))};
    Tensor p = t.pad(pads);
    acc = acc ? (is_bool(acc->dtype()) && is_bool(p.dtype()) ? acc->logical_or(p) : *acc + p) : p;
    off = end;
  }
  return *acc;
}

Tensor Tensor::stack(const std::vector<Tensor>& ts, int64_t axis) {
  if (ts.empty()) throw ShapeError("stack: expected at least one tensor, got none");
  std::vector<Tensor> u;
  for (const Tensor& t : ts) u.push_back(t.unsqueeze(axis));
  return cat(u, axis);
}

// ---------------------------------------------------------------- broadcasting and promotion

Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const UOp* x = i < n - a.size() ? nullptr : a[i - (n - a.size())];
    const UOp* y = i < n - b.size() ? nullptr : b[i - (n - b.size())];
    if (!x || dim_is(x, 1))
      out[i] = y ? y : x;
    else if (!y || dim_is(y, 1) || x == y)
      out[i] = x;
    else
      throw ShapeError("broadcast: expected compatible shapes, got " + shape_str(a) + " and " + shape_str(b));
  }
  return out;
}

static Tensor to_dtype(const Tensor& t, DType d) {
  if (t.dtype() == d) return t;
  if (t.uop()->op == Op::CONST && is_weak(t.dtype()))
    return Tensor(&t.ctx(), t.ctx().cconst(truncate_to(d, t.uop()->cval()), d));
  return t.cast(d);
}

std::pair<Tensor, Tensor> broadcasted(const Tensor& a, const Tensor& b) {
  DType d = least_upper_dtype(a.dtype(), b.dtype());
  if (is_weak(d) && !(is_weak(a.dtype()) && is_weak(b.dtype()))) d = strong(d);
  Shape s = broadcast_shape(a.shape(), b.shape());
  return {to_dtype(a, d).broadcast_to(s), to_dtype(b, d).broadcast_to(s)};
}

}  // namespace kiln
