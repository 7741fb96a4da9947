// Composite ops: matmul with batch broadcasting, softmax, norms.
#include "generator/frontend/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln {

// a (..., n, k) @ b (..., k, m): a as (..., n, 1, k) times b^T as (..., 1, m, k), summed over k.
// A 1-d operand is a row (left) or a column (right) vector whose axis is dropped afterwards.
Tensor Tensor::matmul(const Tensor& o) const {
  if (ndim() == 0 || o.ndim() == 0)
    throw ShapeError("matmul: expected operands of rank >= 1, got " + shape_str(shape_) + " and " +
                     shape_str(o.shape()));
  Tensor a = ndim() == 1 ? unsqueeze(0) : *this;
  Tensor b = o.ndim() == 1 ? o.unsqueeze(1) : o;
  const UOp* k = a.shape().back();
  if (b.shape()[b.ndim() - 2] != k)
    throw ShapeError("matmul: expected the inner dims to match, got " + shape_str(shape_) + " @ " +
                     shape_str(o.shape()));
  Tensor r = (a.unsqueeze(-2) * b.transpose(-1, -2).unsqueeze(-3)).sum({-1});
  if (o.ndim() == 1) r = r.squeeze(-1);
  if (ndim() == 1) r = r.squeeze(o.ndim() == 1 ? -1 : -2);
  return r;
}

Tensor Tensor::softmax(int64_t axis) const {
  Tensor m = float_t() - max({axis}, true).float_t();
  Tensor e = m.exp();
  return e / e.sum({axis}, true);
}

Tensor Tensor::log_softmax(int64_t axis) const {
  Tensor m = float_t() - max({axis}, true).float_t();
  return m - m.exp().sum({axis}, true).log();
}

Tensor Tensor::layernorm(int64_t axis, double eps) const {
  Tensor y = float_t() - mean({axis}, true);
  return y * ((y * y).mean({axis}, true) + eps).rsqrt();
}

Tensor Tensor::rmsnorm(int64_t axis, double eps) const {
  Tensor x = float_t();
  return x * ((x * x).mean({axis}, true) + eps).rsqrt();
}

}  // namespace kiln

namespace kiln {

Tensor Tensor::pad_value(const std::vector<std::pair<Dim, Dim>>& pads, double value) const {
  if (pads.size() != ndim())
    throw ShapeError("pad: expected " + std::to_string(ndim()) + " pairs for shape " + shape_str(shape_) + ", got " +
                     std::to_string(pads.size()));
  // negative pads shrink first, as tinygrad's _pad_constant does
  std::vector<std::pair<Dim, Dim>> cut, grow;
  bool negative = false;
  for (size_t i = 0; i < ndim(); ++i) {
    const UOp *b = pads[i].first.get(*ctx_), *a = pads[i].second.get(*ctx_);
    bool nb = b->op == Op::CONST && b->ival() < 0, na = a->op == Op::CONST && a->ival() < 0;
    negative |= nb || na;
    // in uint64, where the two magnitudes (each at most 2^63) cannot overflow
    uint64_t cut_by = (nb ? 0 - uint64_t(b->ival()) : 0) + (na ? 0 - uint64_t(a->ival()) : 0);
    if ((nb || na) && cut_by > uint64_t(shape_[i]->vmin().i))
      throw ShapeError("pad: expected negative pads that cut at most the " + dim_str(shape_[i]) + " elements of axis " +
                       std::to_string(i) + ", got (" + dim_str(b) + ", " + dim_str(a) + ")");
    cut.push_back(
        {nb ? Dim(-b->ival()) : Dim(int64_t(0)), na ? Dim(simplify_dim(Expr(shape_[i]) + Expr(a))) : Dim(shape_[i])});
    grow.push_back({nb ? Dim(int64_t(0)) : Dim(b), na ? Dim(int64_t(0)) : Dim(a)});
  }
  if (negative) return shrink(cut).pad_value(grow, value);
  Tensor p = pad(pads);
  if (p.uop() == u_ || value == 0) return p;
  Tensor inside = Tensor::full(*ctx_, std::vector<Dim>(shape_.begin(), shape_.end()), 1, dtypes::bool_).pad(pads);
  // a float fill is weak (it takes the tensor's dtype); an integer one must not promote it to float
  return inside.where(p, is_float(dtype()) ? p.lift(value) : Tensor::constant(*ctx_, value, dtype()));
}

// tinygrad's other pad modes, one axis at a time: the pieces that go before and after are views
// of the axis itself (mirrored without its edge, its edge repeated, or its other end).
Tensor Tensor::pad_mode(const std::vector<std::pair<Dim, Dim>>& pads, std::string_view mode, double value) const {
  if (mode == "constant") return pad_value(pads, value);
  if (mode != "reflect" && mode != "replicate" && mode != "circular")
    throw ShapeError("pad: expected mode \"constant\", \"reflect\", \"replicate\" or \"circular\", got \"" +
                     std::string(mode) + "\"");
  if (pads.size() != ndim())
    throw ShapeError("pad: expected " + std::to_string(ndim()) + " pairs for shape " + shape_str(shape_) + ", got " +
                     std::to_string(pads.size()));
  std::vector<std::pair<int64_t, int64_t>> p;
  for (size_t i = 0; i < ndim(); ++i) {
    const UOp *b = pads[i].first.get(*ctx_), *a = pads[i].second.get(*ctx_);
    if (shape_[i]->op != Op::CONST || b->op != Op::CONST || a->op != Op::CONST)
      throw ShapeError("pad: expected constant sizes and pads with mode \"" + std::string(mode) + "\", got " +
                       shape_str(shape_));
    p.push_back({b->ival(), a->ival()});
  }
  bool circular = mode == "circular";
  // negative pads cut: first for circular (it wraps what is left), last for the others (they read the whole axis)
  std::vector<std::pair<Dim, Dim>> cut;
  for (size_t i = 0; i < ndim(); ++i)
    cut.push_back({std::min<int64_t>(p[i].first, 0), std::min<int64_t>(p[i].second, 0)});
  Tensor x = circular ? pad_value(cut, 0) : *this;
  for (size_t d = 0; d < ndim(); ++d) {
    int64_t s = x.shape()[d]->ival(), before = std::max<int64_t>(p[d].first, 0),
            after = std::max<int64_t>(p[d].second, 0);
    if (before == 0 && after == 0) continue;
    int64_t limit = mode == "reflect" ? s - 1 : circular ? s : std::numeric_limits<int64_t>::max();
    if (before > limit || after > limit || s == 0)
      throw ShapeError("pad: expected pads of at most " + std::to_string(limit) + " with mode \"" + std::string(mode) +
                       "\" on axis " + std::to_string(d) + " of size " + std::to_string(s) + ", got (" +
                       std::to_string(before) + ", " + std::to_string(after) + ")");
    auto along = [&](Slice sl) {
      std::vector<Index> idx(d, Index(Slice{}));
      idx.push_back(sl);
      return x.getitem(idx);
    };
    auto repeat = [&](int64_t at, int64_t n) {
      std::vector<Dim> shape(x.shape().begin(), x.shape().end());
      shape[d] = n;
      return along(Slice{at, at + 1}).expand(shape);
    };
    std::vector<Tensor> pieces;
    if (before)
      pieces.push_back(mode == "reflect"     ? along(Slice{before, 0, -1})
                       : mode == "replicate" ? repeat(0, before)
                                             : along(Slice{s - before, s}));
    pieces.push_back(x);
    std::optional<Dim> reflect_end = s - 2 - after >= 0 ? std::optional<Dim>(s - 2 - after) : std::nullopt;
    if (after)
      pieces.push_back(mode == "reflect"     ? along(Slice{s - 2, reflect_end, -1})
                       : mode == "replicate" ? repeat(s - 1, after)
                                             : along(Slice{0, after}));
    x = Tensor::cat(pieces, int64_t(d));
  }
  return circular ? x : x.pad_value(cut, 0);
}

namespace {

__extension__ using i128 = __int128;

// Pool and conv arithmetic on user values: exact, and an error where int64 cannot hold the result.
int64_t fits(i128 v, const char* op, const char* what) {
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min())
    throw ShapeError(std::string(op) + ": expected a " + what + " that fits in int64, got one that overflows");
  return int64_t(v);
}

// tinygrad's make_tuple: one value for all n spatial axes, or one per axis.
std::vector<int64_t> per_axis(const std::vector<int64_t>& v, size_t n, const char* op, const char* what) {
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  if (v.size() != n)
    throw ShapeError(std::string(op) + ": expected one " + what + " or " + std::to_string(n) + ", got " +
                     std::to_string(v.size()));
  return v;
}

// tinygrad's resolve_pool_pads, as (before, after) per spatial axis: one pad for all sides, one
// per axis, or one per side written (left, right, top, bottom, ...), the last axis first.
std::vector<std::pair<int64_t, int64_t>> pool_pads(const std::vector<int64_t>& p, size_t n, const char* op) {
  std::vector<std::pair<int64_t, int64_t>> r;
  if (p.size() == 1 || p.size() == n) {
    for (int64_t x : per_axis(p, n, op, "padding")) r.push_back({x, x});
    return r;
  }
  if (p.size() != 2 * n)
    throw ShapeError(std::string(op) + ": expected 1, " + std::to_string(n) + " or " + std::to_string(2 * n) +
                     " paddings, got " + std::to_string(p.size()));
  for (size_t a = 0; a < n; ++a) r.push_back({p[2 * (n - 1 - a)], p[2 * (n - 1 - a) + 1]});
  return r;
}

i128 floor_div(i128 a, i128 b) { return a / b - (a % b != 0 && ((a < 0) != (b < 0))); }

// tinygrad's _apply_ceil_mode: more padding after, so that a last partial window counts, but
// none where a window would start in the padding alone.
std::vector<std::pair<int64_t, int64_t>> ceil_pads(const Shape& shape, const std::vector<int64_t>& k,
                                                   const std::vector<int64_t>& s, const std::vector<int64_t>& d,
                                                   std::vector<std::pair<int64_t, int64_t>> pads, const char* op) {
  size_t lead = shape.size() - k.size();
  for (size_t a = 0; a < k.size(); ++a) {
    const UOp* n = shape[lead + a];
    if (n->op != Op::CONST)
      throw ShapeError(std::string(op) + ": expected constant spatial sizes with ceil_mode, got " + shape_str(shape));
    i128 i = n->ival(), pb = pads[a].first, pa = pads[a].second, ext = i128(d[a]) * (k[a] - 1) + 1;
    i128 o = -floor_div(-(i + pb + pa - ext), s[a]) + 1;
    i128 late = s[a] * (o - 1) - (pb + i - 1);
    pads[a].second = fits(pa + s[a] * (o - 1) + ext - (i + pb + pa) - (late > 0 ? late : 0), op, "padding");
  }
  return pads;
}

// The smallest value of a dtype: what max pooling pads with.
double lowest(DType d) {
  if (is_float(d)) return -std::numeric_limits<double>::infinity();
  if (is_bool(d)) return 0;
  return double(int_min(d));
}

}  // namespace

// Constant spatial sizes: one view for all kernel offsets, as tinygrad's _pool builds it. Each
// spatial axis i is repeated r times (r * i >= k * (f*i + d)), cut to k rows of f*i + d, of which
// each keeps o*s and then every s-th: the element at (o, kk) sits at kk*(f*i + d) + o*s of the
// repeats, which is x[(kk*d + o*s) % i] = x[kk*d + o*s], one index the symbolic rules fold. (A cat
// of the k*k shifted views would read every offset's view through its own gate.)
Tensor Tensor::pool_by_repeat(const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
                              const std::vector<int64_t>& dilation, const Shape& out) const {
  size_t nk = k.size(), lead = ndim() - nk;
  std::vector<int64_t> i(nk), o(nk), f(nk), r(nk);
  for (size_t a = 0; a < nk; ++a) {
    i[a] = shape_[lead + a]->ival();
    o[a] = out[lead + a]->ival();
    f[a] = o[a] * stride[a] > i[a] - dilation[a] * (k[a] - 1) ? 2 : 1;  // room for o*s in a row
    r[a] = (k[a] * (f[a] * i[a] + dilation[a]) + i[a] - 1) / i[a];
  }
  std::vector<Dim> lead_dims(shape_.begin(), shape_.begin() + long(lead));
  auto with_lead = [&](std::vector<Dim> tail) {
    std::vector<Dim> d = lead_dims;
    d.insert(d.end(), tail.begin(), tail.end());
    return d;
  };
  auto bounds = [&](std::vector<std::pair<Dim, Dim>> tail) {
    std::vector<std::pair<Dim, Dim>> b;
    for (const Dim& d : lead_dims) b.push_back({int64_t(0), d});
    b.insert(b.end(), tail.begin(), tail.end());
    return b;
  };
  std::vector<Dim> ones, repeated, merged;
  for (size_t a = 0; a < nk; ++a) {
    ones.insert(ones.end(), {int64_t(1), i[a]});
    repeated.insert(repeated.end(), {r[a], i[a]});
    merged.push_back(r[a] * i[a]);
  }
  Tensor x = reshape(with_lead(ones)).expand(with_lead(repeated)).reshape(with_lead(merged));
  std::vector<std::pair<Dim, Dim>> cut;
  std::vector<Dim> rows;
  for (size_t a = 0; a < nk; ++a) {
    cut.push_back({int64_t(0), k[a] * (f[a] * i[a] + dilation[a])});
    rows.insert(rows.end(), {k[a], f[a] * i[a] + dilation[a]});
  }
  x = x.shrink(bounds(cut)).reshape(with_lead(rows));
  cut.clear(), rows.clear();
  for (size_t a = 0; a < nk; ++a) {
    cut.insert(cut.end(), {{int64_t(0), k[a]}, {int64_t(0), o[a] * stride[a]}});
    rows.insert(rows.end(), {k[a], o[a], stride[a]});
  }
  x = x.shrink(bounds(cut)).reshape(with_lead(rows));
  cut.clear(), rows.clear();
  for (size_t a = 0; a < nk; ++a) {
    cut.insert(cut.end(), {{int64_t(0), k[a]}, {int64_t(0), o[a]}, {int64_t(0), int64_t(1)}});
    rows.insert(rows.end(), {k[a], o[a]});
  }
  x = x.shrink(bounds(cut)).reshape(with_lead(rows));
  std::vector<int> order;
  for (size_t a = 0; a < lead; ++a) order.push_back(int(a));
  for (size_t a = 0; a < nk; ++a) order.push_back(int(lead + 2 * a + 1));  // the outputs, then the offsets
  for (size_t a = 0; a < nk; ++a) order.push_back(int(lead + 2 * a));
  return x.permute(order);
}

// Every kernel offset is a shifted (and strided) view of the input; the views are stacked on a
// new last axis. Strides are a reshape (o, s) of a view padded to s*o, keeping column 0.
Tensor Tensor::pool(const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
                    const std::vector<int64_t>& dilation) const {
  size_t nk = k.size(), lead = ndim() - std::min(ndim(), nk);
  if (ndim() < nk || stride.size() != nk || dilation.size() != nk)
    throw ShapeError("pool: expected " + std::to_string(nk) + " spatial axes with strides and dilations, got " +
                     shape_str(shape_));
  Shape out = shape_;
  std::vector<int64_t> stride_used = stride, dilation_used = dilation;
  for (size_t a = 0; a < nk; ++a) {
    if (k[a] < 1 || stride[a] < 1 || dilation[a] < 1)
      throw ShapeError("pool: expected positive kernel, stride and dilation on axis " + std::to_string(lead + a) +
                       ", got " + std::to_string(k[a]) + ", " + std::to_string(stride[a]) + " and " +
                       std::to_string(dilation[a]));
    const UOp* n = shape_[lead + a];
    i128 ext = i128(dilation[a]) * (k[a] - 1) + 1;
    if (ext > n->vmin().i)
      throw ShapeError(
          "pool: expected a kernel of extent " +
          (ext > std::numeric_limits<int64_t>::max() ? std::string("over 2^63") : std::to_string(int64_t(ext))) +
          " to fit in " + shape_str(shape_) + " on axis " + std::to_string(lead + a));
    const UOp* o = simplify_dim((Expr(n) - int64_t(ext)) / stride[a] + 1);
    // one window per row whatever the stride: past the row's length it changes nothing
    if (o->vmax().i == 1) stride_used[a] = std::min(stride[a], n->vmax().i);
    if (k[a] == 1) dilation_used[a] = 1;  // one tap: the dilation spaces nothing
    out[lead + a] = o;
  }
  const std::vector<int64_t>&strides = stride_used, &dilations = dilation_used;
  bool constant = true;
  for (size_t a = 0; a < nk; ++a) constant &= shape_[lead + a]->op == Op::CONST;
  if (constant) return pool_by_repeat(k, strides, dilations, out);
  std::vector<Tensor> views;
  size_t total = 1;
  for (int64_t x : k) total *= size_t(x);
  for (size_t flat = 0; flat < total; ++flat) {
    Tensor v = *this;
    size_t rem = flat;
    for (size_t a = nk; a-- > 0;) {
      int64_t off = int64_t(rem % size_t(k[a])) * dilations[a];
      rem /= size_t(k[a]);
      size_t ax = lead + a;
      const UOp* o = out[ax];
      const UOp* len = simplify_dim(Expr(o) * strides[a] - (strides[a] - 1));
      v = v.slice(int(ax), off, simplify_dim(Expr(len) + off));
      if (strides[a] == 1) continue;
      std::vector<std::pair<Dim, Dim>> pads(v.ndim(), {int64_t(0), int64_t(0)});
      pads[ax] = {int64_t(0), strides[a] - 1};
      std::vector<Dim> split(v.shape().begin(), v.shape().end());
      split[ax] = o;
      split.insert(split.begin() + long(ax) + 1, strides[a]);
      v = v.pad(pads).reshape(split).slice(int(ax) + 1, 0, 1).squeeze(int(ax) + 1);
    }
    views.push_back(v.unsqueeze(-1));
  }
  std::vector<Dim> final(out.begin(), out.end());
  for (int64_t x : k) final.push_back(x);
  return Tensor::cat(views, -1).reshape(final);
}

Tensor Tensor::conv2d(const Tensor& w, const Tensor* bias, int64_t groups, std::vector<int64_t> stride,
                      std::vector<int64_t> dilation, std::vector<int64_t> padding) const {
  if (ndim() != 4 || w.ndim() != 4)
    throw ShapeError("conv2d: expected (N, C, H, W) and (Cout, C/groups, kh, kw), got " + shape_str(shape_) + " and " +
                     shape_str(w.shape()));
  const UOp *cin = shape_[1], *cout = w.shape()[0];
  if (cin->op != Op::CONST || cout->op != Op::CONST || groups < 1 || cin->ival() % groups || cout->ival() % groups ||
      !dim_is(w.shape()[1], cin->ival() / groups) || w.shape()[2]->op != Op::CONST || w.shape()[3]->op != Op::CONST)
    throw ShapeError("conv2d: expected constant channels with weight (Cout, C/" + std::to_string(groups) +
                     ", kh, kw), got " + shape_str(shape_) + " and " + shape_str(w.shape()));
  int64_t g = groups, cg = cin->ival() / g, og = cout->ival() / g;
  int64_t kh = w.shape()[2]->ival(), kw = w.shape()[3]->ival();
  auto pads = pool_pads(padding, 2, "conv2d");
  Tensor x = pad_value({{0, 0}, {0, 0}, {pads[0].first, pads[0].second}, {pads[1].first, pads[1].second}}, 0);
  Tensor p = x.pool({kh, kw}, per_axis(stride, 2, "conv2d", "stride"), per_axis(dilation, 2, "conv2d", "dilation"));
  const UOp *n = shape_[0], *oh = p.shape()[2], *ow = p.shape()[3];
  Tensor xs = p.reshape({n, g, 1, cg, oh, ow, kh, kw});
  Tensor ws = w.reshape({1, g, og, cg, 1, 1, kh, kw});
  Tensor r = (xs * ws).sum({3, 6, 7}).reshape({n, cout, oh, ow});
  if (bias) r = r + bias->reshape({1, cout, 1, 1});
  return r;
}

// Pads (grouped per spatial axis) in front of the pooled axes.
static std::vector<std::pair<Dim, Dim>> full_pads(size_t rank, const std::vector<std::pair<int64_t, int64_t>>& p) {
  std::vector<std::pair<Dim, Dim>> r(rank - p.size(), {int64_t(0), int64_t(0)});
  for (const auto& [b, a] : p) r.push_back({b, a});
  return r;
}

Tensor Tensor::max_pool2d(std::vector<int64_t> k, std::vector<int64_t> stride, std::vector<int64_t> padding,
                          std::vector<int64_t> dilation, bool ceil_mode) const {
  if (k.size() == 1) k = {k[0], k[0]};  // one size: a square window; more: that many spatial axes
  size_t n = k.size();
  std::vector<int64_t> s = per_axis(stride.empty() ? k : stride, n, "max_pool2d", "stride");
  std::vector<int64_t> d = per_axis(dilation, n, "max_pool2d", "dilation");
  if (ndim() < n)
    throw ShapeError("max_pool2d: expected at least " + std::to_string(n) + " axes, got " + shape_str(shape_));
  auto pads = pool_pads(padding, n, "max_pool2d");
  if (ceil_mode) pads = ceil_pads(shape_, k, s, d, pads, "max_pool2d");
  Axes axes;
  for (size_t a = 0; a < n; ++a) axes.v.push_back(int64_t(a) - int64_t(n));
  return pad_value(full_pads(ndim(), pads), lowest(dtype())).pool(k, s, d).max(axes);
}

Tensor Tensor::avg_pool2d(std::vector<int64_t> k, std::vector<int64_t> stride, std::vector<int64_t> padding,
                          std::vector<int64_t> dilation, bool ceil_mode, bool count_include_pad) const {
  if (k.size() == 1) k = {k[0], k[0]};  // one size: a square window; more: that many spatial axes
  size_t n = k.size();
  std::vector<int64_t> s = per_axis(stride.empty() ? k : stride, n, "avg_pool2d", "stride");
  std::vector<int64_t> d = per_axis(dilation, n, "avg_pool2d", "dilation");
  if (ndim() < n)
    throw ShapeError("avg_pool2d: expected at least " + std::to_string(n) + " axes, got " + shape_str(shape_));
  auto reg = pool_pads(padding, n, "avg_pool2d");
  auto pads = ceil_mode ? ceil_pads(shape_, k, s, d, reg, "avg_pool2d") : reg;
  Axes axes;
  for (size_t a = 0; a < n; ++a) axes.v.push_back(int64_t(a) - int64_t(n));
  auto pool = [&](const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& p) {
    return x.pad_value(full_pads(x.ndim(), p), 0).pool(k, s, d);
  };
  Tensor ones = Tensor::full(*ctx_, std::vector<Dim>(shape_.begin(), shape_.end()), 1, dtype());
  if (!count_include_pad) return pool(*this, pads).sum(axes) / pool(ones, pads).sum(axes);
  if (!ceil_mode) return pool(*this, pads).mean(axes);
  // the regular padding counts, the extra padding of ceil_mode does not
  std::vector<std::pair<int64_t, int64_t>> extra;
  for (size_t a = 0; a < n; ++a) extra.push_back({pads[a].first - reg[a].first, pads[a].second - reg[a].second});
  Tensor counted = Tensor::full(*ctx_, std::vector<Dim>(shape_.begin(), shape_.end()), 1, dtype())
                       .pad_value(full_pads(ndim(), reg), 1);
  return pool(*this, pads).sum(axes) / pool(counted, extra).sum(axes);
}

Tensor Tensor::tril(int64_t diagonal) const {
  if (ndim() < 2) throw ShapeError("tril: expected rank >= 2, got " + shape_str(shape_));
  const UOp *r = shape_[ndim() - 2], *c = shape_[ndim() - 1];
  // the indices are int32: a diagonal past either corner keeps all or nothing, as any further one
  diagonal = std::clamp(diagonal, -r->vmax().i, c->vmax().i);
  Tensor i = iota(*ctx_, r).reshape({r, 1}), j = iota(*ctx_, c).reshape({1, c});
  return (j <= i + diagonal).where(*this, lift(0).cast(dtype()));
}

Tensor Tensor::scaled_dot_product_attention(const Tensor& k, const Tensor& v, const Tensor* mask, bool causal) const {
  const UOp* d = shape_.empty() ? nullptr : shape_.back();
  if (!d) throw ShapeError("attention: expected a query of rank >= 1, got []");
  Tensor qk = float_t().matmul(k.float_t().transpose(-2, -1));
  qk = d->op == Op::CONST ? qk / std::sqrt(double(d->ival())) : qk * Tensor(ctx_, d).cast(qk.dtype()).rsqrt();
  if (causal) {
    if (mask) throw ShapeError("attention: expected no mask with causal=true, got one");
    std::vector<Dim> s(qk.shape().end() - 2, qk.shape().end());
    Tensor m = Tensor::full(*ctx_, s, 1, dtypes::bool_).tril();
    qk = m.where(qk, qk.lift(-std::numeric_limits<double>::infinity()));
  } else if (mask) {
    qk = is_bool(mask->dtype()) ? mask->where(qk, qk.lift(-std::numeric_limits<double>::infinity())) : qk + *mask;
  }
  return qk.softmax(-1).matmul(v);
}

}  // namespace kiln
