// Composite ops: matmul with batch broadcasting, softmax, norms.
#include "generator/frontend/tensor.h"

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

Tensor Tensor::softmax(int axis) const {
  Tensor m = float_t() - max({axis}, true).float_t();
  Tensor e = m.exp();
  return e / e.sum({axis}, true);
}

Tensor Tensor::log_softmax(int axis) const {
  Tensor m = float_t() - max({axis}, true).float_t();
  return m - m.exp().sum({axis}, true).log();
}

Tensor Tensor::layernorm(int axis, double eps) const {
  Tensor y = float_t() - mean({axis}, true);
  return y * ((y * y).mean({axis}, true) + eps).rsqrt();
}

Tensor Tensor::rmsnorm(int axis, double eps) const {
  Tensor x = float_t();
  return x * ((x * x).mean({axis}, true) + eps).rsqrt();
}

}  // namespace kiln

namespace kiln {

Tensor Tensor::pad_value(const std::vector<std::pair<Dim, Dim>>& pads, double value) const {
  Tensor p = pad(pads);
  if (p.uop() == u_ || value == 0) return p;
  Tensor inside = Tensor::full(*ctx_, std::vector<Dim>(shape_.begin(), shape_.end()), 1, dtypes::bool_).pad(pads);
  return inside.where(p, p.lift(value));
}

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
  for (size_t a = 0; a < nk; ++a) {
    if (k[a] < 1 || stride[a] < 1 || dilation[a] < 1)
      throw ShapeError("pool: expected positive kernel, stride and dilation on axis " + std::to_string(lead + a));
    const UOp* o = simplify_dim((Expr(shape_[lead + a]) - dilation[a] * (k[a] - 1) - 1) / stride[a] + 1);
    if (o->vmin().i < 1)
      throw ShapeError("pool: expected a kernel of extent " + std::to_string(dilation[a] * (k[a] - 1) + 1) +
                       " to fit in " + shape_str(shape_) + " on axis " + std::to_string(lead + a));
    out[lead + a] = o;
  }
  bool constant = true;
  for (size_t a = 0; a < nk; ++a) constant &= shape_[lead + a]->op == Op::CONST;
  if (constant) return pool_by_repeat(k, stride, dilation, out);
  std::vector<Tensor> views;
  size_t total = 1;
  for (int64_t x : k) total *= size_t(x);
  for (size_t flat = 0; flat < total; ++flat) {
    Tensor v = *this;
    size_t rem = flat;
    for (size_t a = nk; a-- > 0;) {
      int64_t off = int64_t(rem % size_t(k[a])) * dilation[a];
      rem /= size_t(k[a]);
      size_t ax = lead + a;
      const UOp* o = out[ax];
      const UOp* len = simplify_dim(Expr(o) * stride[a] - (stride[a] - 1));
      v = v.slice(int(ax), off, simplify_dim(Expr(len) + off));
      if (stride[a] == 1) continue;
      std::vector<std::pair<Dim, Dim>> pads(v.ndim(), {int64_t(0), int64_t(0)});
      pads[ax] = {int64_t(0), stride[a] - 1};
      std::vector<Dim> split(v.shape().begin(), v.shape().end());
      split[ax] = o;
      split.insert(split.begin() + long(ax) + 1, stride[a]);
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
  Tensor x = pad({{0, 0}, {0, 0}, {padding.at(0), padding.at(0)}, {padding.at(1), padding.at(1)}});
  Tensor p = x.pool({kh, kw}, stride, dilation);  // (N, C, oh, ow, kh, kw)
  const UOp *n = shape_[0], *oh = p.shape()[2], *ow = p.shape()[3];
  Tensor xs = p.reshape({n, g, 1, cg, oh, ow, kh, kw});
  Tensor ws = w.reshape({1, g, og, cg, 1, 1, kh, kw});
  Tensor r = (xs * ws).sum({3, 6, 7}).reshape({n, cout, oh, ow});
  if (bias) r = r + bias->reshape({1, cout, 1, 1});
  return r;
}

Tensor Tensor::max_pool2d(std::vector<int64_t> k, std::vector<int64_t> stride, std::vector<int64_t> padding) const {
  if (stride.empty()) stride = k;
  std::vector<std::pair<Dim, Dim>> pads(ndim(), {int64_t(0), int64_t(0)});
  for (size_t a = 0; a < 2 && a < ndim(); ++a) pads[ndim() - 2 + a] = {padding.at(a), padding.at(a)};
  Tensor x = pad_value(pads, -std::numeric_limits<double>::infinity());
  return x.pool(k, stride, {1, 1}).max({-2, -1});
}

Tensor Tensor::avg_pool2d(std::vector<int64_t> k, std::vector<int64_t> stride) const {
  if (stride.empty()) stride = k;
  return pool(k, stride, {1, 1}).mean({-2, -1});
}

Tensor Tensor::tril(int64_t diagonal) const {
  if (ndim() < 2) throw ShapeError("tril: expected rank >= 2, got " + shape_str(shape_));
  const UOp *r = shape_[ndim() - 2], *c = shape_[ndim() - 1];
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
