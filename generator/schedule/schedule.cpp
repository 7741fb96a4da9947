#include "generator/schedule/schedule.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "generator/frontend/shape.h"
#include "generator/ir/text.h"
#include "generator/schedule/split_reduce.h"
#include "generator/schedule/windows.h"
#include "generator/schedule/workspace.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::schedule {

namespace {

// The scheduler recurses once per nested op. Its cap is checked before it starts, from the graph's
// longest path (which bounds that recursion), so no exception is thrown from 20000 frames down:
// unwinding that much stack is more than the sanitizers can follow.
constexpr int kMaxDepth = 20000;

std::string too_deep() {
  return "the tensor program is too deep to schedule (more than " + std::to_string(kMaxDepth) + " nested ops)";
}

void check_depth(std::span<const Tensor> outputs) {
  std::unordered_map<const UOp*, int> depth;
  for (const Tensor& t : outputs)
    for (const UOp* u : toposort(t.uop())) {  // sources first
      int d = 1;
      for (const UOp* s : u->src()) d = std::max(d, depth.at(s) + 1);
      if (d > kMaxDepth) throw ShapeError(too_deep());
      depth.emplace(u, d);
    }
}

// A position in a tensor: one weakint index per axis, and whether the position is inside the
// tensor at all (false in the padding a PAD added). Interned as one STACK so it can key memos.
struct Index {
  std::vector<const UOp*> idx;
  const UOp* valid;
  // where a reshape of symbolic sizes made idx from one row-major position: that position and the
  // shape it is row-major in. A buffer of that shape is read at it directly, where recombining idx
  // ((p / (M*256))*(M*256) + ((p / 256) % M)*256 + p % 256) would be the same value in a form that
  // neither the simplifier nor the bounds prover folds back to p.
  const UOp* flat = nullptr;
  std::vector<const UOp*> flat_shape = {};
};

// Thrown while building a kernel when a node must become a buffer first; the build restarts.
struct Realize {
  const UOp* node;
};

DType concrete(DType d) {
  if (d == dtypes::weakint) return dtypes::int32;
  if (d == dtypes::weakfloat) return dtypes::float32;
  return d;
}

std::vector<int64_t> const_args(const UOp* stack) {
  std::vector<int64_t> r;
  for (const UOp* s : stack->src()) r.push_back(s->ival());
  return r;
}

const UOp* zero_of(Context& ctx, DType d) {
  if (is_bool(d)) return ctx.cbool(false);
  if (is_float(d)) return ctx.cfloat(0.0, d);
  return ctx.cint(0, d);
}

// The row-major strides of a shape, simplified.
std::vector<const UOp*> strides_of(Context& ctx, const Shape& s) {
  std::vector<const UOp*> st(s.size());
  const UOp* acc = ctx.cint(1);
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc = simplify_dim(Expr(acc) * Expr(s[i]));
  }
  return st;
}

bool same_without_ones(const Shape& a, const Shape& b) {
  std::vector<const UOp*> x, y;
  for (const UOp* d : a)
    if (!dim_is(d, 1)) x.push_back(d);
  for (const UOp* d : b)
    if (!dim_is(d, 1)) y.push_back(d);
  return x == y;
}

class Scheduler {
 public:
  Scheduler(std::span<const Tensor> inputs, std::span<const Tensor> outputs, std::string_view name, ShapeCache& shapes)
      : ctx_(outputs.empty() ? inputs[0].ctx() : outputs[0].ctx()),
        inputs_(inputs),
        outputs_(outputs),
        name_(name),
        shapes_(shapes) {}

  Schedule run() {
    std::vector<const UOp*> roots;
    for (const Tensor& t : outputs_) roots.push_back(t.uop());
    const UOp* sink = ctx_.make(Op::SINK, dtypes::void_, roots);
    // toposort over tensor edges only: a kernel's inputs come before it
    order_ = tensor_toposort(sink);
    for (const Tensor& t : outputs_) realized_.insert(t.uop());
    while (true) {  // each round realizes one more node, so this ends
      try {
        return build();
      } catch (const Realize& r) {
        if (realized_.contains(r.node) || r.node->op == Op::PARAM)
          throw std::logic_error("scheduler: realizing an already realized node: " + print(r.node));
        realized_.insert(r.node);
      }
    }
  }

 private:
  std::vector<const UOp*> tensor_toposort(const UOp* sink) {
    std::vector<const UOp*> out;
    std::unordered_set<const UOp*> seen;
    std::vector<std::pair<const UOp*, size_t>> stack{{sink, 0}};
    seen.insert(sink);
    while (!stack.empty()) {
      auto& [u, i] = stack.back();
      auto srcs = u->op == Op::SINK ? u->src() : tensor_sources(u);
      if (i < srcs.size()) {
        const UOp* s = srcs[i++];
        if (seen.insert(s).second) stack.push_back({s, 0});
        continue;
      }
      if (u->op != Op::SINK) out.push_back(u);
      stack.pop_back();
    }
    return out;
  }

  // ------------------------------------------------------------ one attempt
  Schedule build() {
    Schedule s;
    buffer_of_.clear();
    reduce_use_.clear();
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor& t = inputs_[i];
      Buffer b{Buffer::Kind::Input, std::string(t.uop()->arg<ParamArg>().name), t.dtype(), t.shape(), numel(t.shape()),
               int32_t(i)};
      buffer_of_.emplace(t.uop(), int32_t(s.buffers.size()));
      s.buffers.push_back(std::move(b));
    }
    // every output gets its own buffer; a node that is several outputs stores to each
    std::map<const UOp*, std::vector<int32_t>> stores;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const Tensor& t = outputs_[i];
      Buffer b{Buffer::Kind::Output, output_name(i), concrete(t.dtype()), t.shape(), numel(t.shape()), int32_t(i)};
      stores[t.uop()].push_back(int32_t(s.buffers.size()));
      s.buffers.push_back(std::move(b));
    }
    // consumers read an output node from its first output buffer, not from the input it copies
    for (size_t i = 0; i < outputs_.size(); ++i)
      if (outputs_[i].uop()->op != Op::PARAM) buffer_of_[outputs_[i].uop()] = stores[outputs_[i].uop()][0];
    int tmp = 0;
    for (const UOp* u : order_) {
      if (!realized_.contains(u) || stores.contains(u)) continue;
      Buffer b{Buffer::Kind::Intermediate, "t" + std::to_string(tmp++), concrete(u->dtype), shapes_.shape_of(u),
               numel(shapes_.shape_of(u))};
      stores[u].push_back(int32_t(s.buffers.size()));
      buffer_of_[u] = int32_t(s.buffers.size());
      s.buffers.push_back(std::move(b));
    }
    for (const UOp* u : order_) {
      auto it = stores.find(u);
      if (it == stores.end()) continue;
      s.kernels.push_back(build_kernel(u, it->second, int32_t(s.kernels.size()), s.buffers));
    }
    finish(s);
    return s;
  }

  std::string output_name(size_t i) const {
    return i < output_names_.size() ? output_names_[i] : "out" + std::to_string(i);
  }

  const UOp* numel(const Shape& s) { return s.empty() ? ctx_.cint(1) : dim_product(s); }

  // ------------------------------------------------------------ one kernel
  Kernel build_kernel(const UOp* root, const std::vector<int32_t>& targets, int32_t kernel_id,
                      std::vector<Buffer>& buffers) {
    Kernel k{name_ + "_" + std::to_string(kernel_id), nullptr, {}};
    kernel_ = &k;
    root_ = root;
    kernel_id_ = kernel_id;
    next_axis_ = 0;
    memo_.clear();
    slot_of_.clear();
    for (int32_t b : targets) param_for(b, buffers);
    const Shape& shape = shapes_.shape_of(root);
    Index out{{}, ctx_.cbool(true)};
    store_ranges_.clear();
    for (const UOp* d : shape) {
      if (dim_is(d, 1)) {
        out.idx.push_back(ctx_.cint(0));
        continue;
      }
      const UOp* r = ctx_.range(d, next_axis_++, AxisType::Loop);
      out.idx.push_back(r);
      store_ranges_.push_back(r);
    }
    buffers_ = &buffers;
    const UOp* value = inline_node(root, out, root, 0);
    std::vector<const UOp*> stores;
    for (int32_t b : targets) {
      const Buffer& buf = buffers[size_t(b)];
      const UOp* v = value->dtype == buf.dtype ? value : ctx_.make(Op::CAST, buf.dtype, {value});
      const UOp* at = ctx_.make(Op::INDEX, buf.dtype, {param_for(b, buffers), flat_index(buf.shape, out)});
      stores.push_back(ctx_.make(Op::STORE, dtypes::void_, {at, v}));
    }
    // one END closes the output loops, over all the stores of the node (a GROUP when several)
    std::vector<const UOp*> ends = stores;
    if (!store_ranges_.empty()) {
      std::vector<const UOp*> src{stores.size() == 1 ? stores[0] : ctx_.make(Op::GROUP, dtypes::void_, stores)};
      src.insert(src.end(), store_ranges_.begin(), store_ranges_.end());
      ends = {ctx_.make(Op::END, dtypes::void_, src)};
    }
    k.ast = ctx_.make(Op::SINK, dtypes::void_, ends, Name{ctx_.intern(k.name)});
    for (int32_t b : k.buffers) {
      Buffer& buf = buffers[size_t(b)];
      if (std::find(targets.begin(), targets.end(), b) != targets.end()) {
        if (buf.first_kernel < 0) buf.first_kernel = kernel_id;
      } else {
        buf.last_kernel = std::max(buf.last_kernel, kernel_id);
      }
    }
    kernel_ = nullptr;
    return k;
  }

  const UOp* param_for(int32_t buffer, const std::vector<Buffer>& buffers) {
    auto it = slot_of_.find(buffer);
    if (it != slot_of_.end()) return it->second;
    const Buffer& b = buffers[size_t(buffer)];
    int32_t slot = int32_t(kernel_->buffers.size());
    kernel_->buffers.push_back(buffer);
    const UOp* p = ctx_.make(Op::PARAM, b.dtype.as_ptr(), {b.numel}, ParamArg{slot, -1, ctx_.intern(b.name)});
    slot_of_.emplace(buffer, p);
    return p;
  }

  const UOp* flat_index(const Shape& shape, const Index& at) {
    const UOp* lin = at.flat;
    if (!lin || at.flat_shape != shape) {
      std::vector<const UOp*> st = strides_of(ctx_, shape);
      lin = ctx_.cint(0);
      for (size_t i = 0; i < shape.size(); ++i) lin = Expr(lin) + Expr(at.idx[i]) * Expr(st[i]);
      lin = simp(lin);
    }
    if (at.valid->op == Op::CONST && at.valid->cval().i == 1) return lin;
    return ctx_.make(Op::WHERE, dtypes::weakint, {at.valid, lin, ctx_.invalid()});
  }

  const UOp* key_of(const Index& at) {
    std::vector<const UOp*> src = at.idx;
    src.push_back(at.valid);
    return ctx_.make(Op::STACK, dtypes::void_, src);
  }

  // The value of tensor node u at position `at`, inside the current kernel. `base` is the node
  // a realization would make a buffer of if u's subtree cannot be computed here.
  const UOp* inline_node(const UOp* u, const Index& at, const UOp* base, int depth) {
    if (depth > kMaxDepth) throw ShapeError(too_deep());  // check_depth refuses such programs first
    const UOp* key = key_of(at);
    auto memo_key = std::make_pair(u, key);
    if (auto it = memo_.find(memo_key); it != memo_.end()) return it->second;
    const UOp* r = compute(u, at, base, depth);
    memo_.emplace(memo_key, r);
    return r;
  }

  const UOp* load(const UOp* u, const Index& at) {
    int32_t b = buffer_of_.at(u);
    const Buffer& buf = (*buffers_)[size_t(b)];
    const UOp* v = ctx_.make(Op::INDEX, buf.dtype, {param_for(b, *buffers_), flat_index(buf.shape, at)});
    return v->dtype == u->dtype ? v : ctx_.make(Op::CAST, u->dtype, {v});
  }

  const UOp* compute(const UOp* u, const Index& at, const UOp* base, int depth) {
    if (u != root_ && buffer_of_.contains(u)) return load(u, at);
    if (u == root_ && u->op == Op::PARAM) return load(u, at);
    const Shape& out = shapes_.shape_of(u);
    switch (u->op) {
      case Op::CONST:
      case Op::DEFINE_VAR:
        return u;
      case Op::IOTA:  // the value at position i is i
        return u->dtype == dtypes::weakint ? at.idx[0] : ctx_.make(Op::CAST, u->dtype, {at.idx[0]});
      case Op::PARAM:
        throw std::logic_error("scheduler: input " + print(u) + " has no buffer");
      case Op::RESHAPE:
      case Op::EXPAND:
      case Op::PERMUTE:
      case Op::PAD:
      case Op::SHRINK:
      case Op::FLIP:
        return movement(u, at, out, base, depth);
      case Op::REDUCE:
        return reduce(u, at, base, depth);
      default:
        break;
    }
    std::vector<const UOp*> src;
    for (const UOp* s : u->src()) src.push_back(inline_node(s, at, base, depth + 1));
    return ctx_.make(u->op, u->dtype, src, u->arg());
  }

  const UOp* movement(const UOp* u, const Index& at, const Shape& out, const UOp* base, int depth) {
    const UOp* x = u->src(0);
    const Shape& in = shapes_.shape_of(x);
    Index src{std::vector<const UOp*>(in.size()), at.valid};
    switch (u->op) {
      case Op::RESHAPE:
        src.idx = reshape_index(out, in, at.idx, &src.flat);
        if (src.flat) src.flat_shape = in;
        break;
      case Op::EXPAND:
        for (size_t i = 0; i < in.size(); ++i) src.idx[i] = dim_is(in[i], 1) ? ctx_.cint(0) : at.idx[i];
        break;
      case Op::PERMUTE: {
        auto order = const_args(u->src(1));
        for (size_t k = 0; k < order.size(); ++k) src.idx[size_t(order[k])] = at.idx[k];
        break;
      }
      case Op::SHRINK:
        for (size_t i = 0; i < in.size(); ++i) src.idx[i] = simp(Expr(at.idx[i]) + Expr(u->src(1)->src(i)));
        break;
      case Op::FLIP: {
        auto flags = const_args(u->src(1));
        for (size_t i = 0; i < in.size(); ++i)
          src.idx[i] = flags[i] ? simp(Expr(in[i]) - 1 - Expr(at.idx[i])) : at.idx[i];
        break;
      }
      case Op::PAD: {
        const UOp* inside = ctx_.cbool(true);
        std::vector<const UOp*> padded;  // the indices into padded dims
        for (size_t i = 0; i < in.size(); ++i) {
          const UOp* before = u->src(1)->src(i);
          const UOp* j = simp(Expr(at.idx[i]) - Expr(before));
          src.idx[i] = j;
          if (dim_is(before, 0) && dim_is(u->src(2)->src(i), 0)) continue;
          padded.push_back(j);
          inside = Expr(inside) & (Expr(j) >= 0) & (Expr(j) < Expr(in[i]));
        }
        inside = simp(inside);
        // overlapping windows over padding (a convolution's, a pooling's): the padded tensor is
        // realized, so that the windows read it without a gate. A gated read keeps its lane loop
        // scalar, and the padded copy costs a pass over the input (3x3 64 -> 64 over 56^2, the
        // AVX-512 and AVX2 variants on a Zen 4, 1 thread: 28-37 and 12-14 GFLOP/s gated, 100-105
        // and 70-100 ungated)
        if (u != root_ && inside->op != Op::CONST && reads_memory(x) && windows_overlap(ctx_, padded)) throw Realize{u};
        src.valid = simp(Expr(at.valid) & Expr(inside));
        const UOp* v = inline_node(x, src, base, depth + 1);
        if (inside->op == Op::CONST) return inside->cval().i ? v : zero_of(ctx_, u->dtype);
        return ctx_.make(Op::WHERE, u->dtype, {inside, v, zero_of(ctx_, u->dtype)});
      }
      default:
        throw std::logic_error("scheduler: not a movement op");
    }
    // Only an expand makes the consumer read one value at many positions, so it is where a
    // realization fixes recomputation; through the other movement ops the base stays.
    return inline_node(x, src, u->op == Op::EXPAND ? base_below(x) : base, depth + 1);
  }

  // whether tensor x reads an input (a pad of what is computed from constants alone, avg_pool's
  // count of the cells inside, is a select that vectorizes as it is)
  bool reads_memory(const UOp* x) {
    auto [it, fresh] = reads_memory_.try_emplace(x, false);
    if (fresh)
      for (const UOp* n : toposort(x)) it->second = it->second || n->op == Op::PARAM;
    return it->second;
  }

  // The node a realization under an expand would buffer: the first non-movement node.
  static const UOp* base_below(const UOp* x) {
    while (in_group(x->op, G_MOVEMENT)) x = x->src(0);
    return x;
  }

  // `flat`: set to the row-major position in `in` where the index is computed from one
  std::vector<const UOp*> reshape_index(const Shape& out, const Shape& in, const std::vector<const UOp*>& idx,
                                        const UOp** flat) {
    std::vector<const UOp*> r;
    if (same_without_ones(out, in)) {
      std::vector<const UOp*> kept;
      for (size_t i = 0; i < out.size(); ++i)
        if (!dim_is(out[i], 1)) kept.push_back(idx[i]);
      size_t k = 0;
      for (const UOp* d : in) r.push_back(dim_is(d, 1) ? ctx_.cint(0) : kept[k++]);
      return r;
    }
    if (all_positive_consts(out) && all_positive_consts(in)) return reshape_index_by_groups(out, in, idx);
    std::vector<const UOp*> ost = strides_of(ctx_, out), ist = strides_of(ctx_, in);
    const UOp* lin = ctx_.cint(0);
    for (size_t i = 0; i < out.size(); ++i) lin = Expr(lin) + Expr(idx[i]) * Expr(ost[i]);
    lin = simp(lin);
    *flat = lin;
    for (size_t i = 0; i < in.size(); ++i) {
      if (dim_is(in[i], 1)) {
        r.push_back(ctx_.cint(0));
        continue;
      }
      Expr e = i == 0 ? Expr(lin) / Expr(ist[i]) : (Expr(lin) / Expr(ist[i])) % Expr(in[i]);
      r.push_back(simp(e));
    }
    return r;
  }

  static bool all_positive_consts(const Shape& s) {
    return std::all_of(s.begin(), s.end(), [](const UOp* d) { return d->op == Op::CONST && d->ival() > 0; });
  }

  // A reshape of known sizes splits into groups of dims whose products agree ((6, 4) -> (2, 3, 4):
  // {6} -> {2, 3} and {4} -> {4}). An input index depends only on the output indices of its group,
  // so the index math to simplify holds only those: the same values, far smaller expressions.
  std::vector<const UOp*> reshape_index_by_groups(const Shape& out, const Shape& in,
                                                  const std::vector<const UOp*>& idx) {
    std::vector<const UOp*> r;
    size_t o = 0, i = 0;
    while (i < in.size()) {
      size_t o0 = o, i0 = i;
      int64_t po = 1, pi = 1;
      do {
        if (pi <= po && i < in.size())
          pi *= in[i++]->ival();
        else if (o < out.size())
          po *= out[o++]->ival();
        else
          throw std::logic_error("scheduler: a reshape changes the number of elements");
      } while (po != pi);
      const UOp* lin = ctx_.cint(0);
      int64_t st = po;
      for (size_t k = o0; k < o; ++k) {
        st /= out[k]->ival();
        lin = Expr(lin) + Expr(idx[k]) * Expr(ctx_.cint(st));
      }
      lin = simp(lin);
      st = pi;
      for (size_t j = i0; j < i; ++j) {
        st /= in[j]->ival();
        if (dim_is(in[j], 1)) {
          r.push_back(ctx_.cint(0));
          continue;
        }
        Expr e = j == 0 ? Expr(lin) / Expr(ctx_.cint(st)) : (Expr(lin) / Expr(ctx_.cint(st))) % Expr(in[j]);
        r.push_back(simp(e));
      }
    }
    return r;
  }

  const UOp* reduce(const UOp* u, const Index& at, const UOp* base, int depth) {
    check_reduce_placement(u, at, base);
    const UOp* x = u->src(0);
    const Shape& in = shapes_.shape_of(x);
    Index src = at;
    src.flat = nullptr;  // the reduce's ranges replace some of idx
    std::vector<const UOp*> ranges;
    for (int64_t a : const_args(u->src(1))) {
      if (dim_is(in[size_t(a)], 1)) continue;
      const UOp* r = ctx_.range(in[size_t(a)], next_axis_++, AxisType::Reduce);
      src.idx[size_t(a)] = r;
      ranges.push_back(r);
    }
    const UOp* body = inline_node(x, src, base_below(x), depth + 1);
    if (ranges.empty()) return body;
    std::vector<const UOp*> srcs{body};
    srcs.insert(srcs.end(), ranges.begin(), ranges.end());
    return ctx_.make(Op::REDUCE, u->dtype, srcs, u->arg<ReduceArg>());
  }

  // A reduce is computed where it is used only if that computes each of its values once.
  void check_reduce_placement(const UOp* u, const Index& at, const UOp* base) {
    const UOp* key = key_of(at);
    auto [it, fresh] = reduce_use_.try_emplace(u, kernel_id_, key);
    if (!fresh && (it->second.first != kernel_id_ || it->second.second != key)) throw Realize{u};
    // the ranges the position depends on must be the outermost output axes, and no reduce axis
    std::unordered_set<const UOp*> deps;
    for (const UOp* n : toposort(key))
      if (n->op == Op::RANGE) deps.insert(n);
    bool ok = deps.size() <= store_ranges_.size();
    for (size_t i = 0; ok && i < deps.size(); ++i) ok = deps.contains(store_ranges_[i]);
    if (ok) return;
    throw Realize{base != root_ ? base : u};
  }

  // simplify(), memoized: the same index expressions recur across kernels and restarts
  const UOp* simp(const UOp* u) {
    auto [it, fresh] = simplified_.try_emplace(u, nullptr);
    if (fresh) it->second = simplify(u);
    return it->second;
  }

  // ------------------------------------------------------------ buffers and the arena
  void finish(Schedule& s) {
    plan_workspace(ctx_, s);
    std::unordered_set<const UOp*> seen;
    for (const Kernel& k : s.kernels)
      for (const UOp* n : toposort(k.ast))
        if (n->op == Op::DEFINE_VAR && seen.insert(n).second) s.vars.push_back(n);
    for (const Buffer& b : s.buffers)
      for (const UOp* d : b.shape)
        for (const UOp* n : toposort(d))
          if (n->op == Op::DEFINE_VAR && seen.insert(n).second) s.vars.push_back(n);
    std::sort(s.vars.begin(), s.vars.end(), [](const UOp* a, const UOp* b) { return a->id < b->id; });
  }

 public:
  std::vector<std::string> output_names_;

 private:
  Context& ctx_;
  std::span<const Tensor> inputs_, outputs_;
  std::string name_;
  ShapeCache& shapes_;  // shared with split_total_reductions, which ran on the same graph first
  std::vector<const UOp*> order_;
  std::unordered_set<const UOp*> realized_;
  std::unordered_map<const UOp*, bool> reads_memory_;  // reads_memory(), by tensor node
  std::unordered_map<const UOp*, int32_t> buffer_of_;
  std::unordered_map<const UOp*, const UOp*> simplified_;
  std::unordered_map<const UOp*, std::pair<int32_t, const UOp*>> reduce_use_;
  // per kernel
  Kernel* kernel_ = nullptr;
  std::vector<Buffer>* buffers_ = nullptr;
  const UOp* root_ = nullptr;
  int32_t kernel_id_ = 0;
  int32_t next_axis_ = 0;
  std::vector<const UOp*> store_ranges_;
  std::map<std::pair<const UOp*, const UOp*>, const UOp*> memo_;
  std::unordered_map<int32_t, const UOp*> slot_of_;
};

}  // namespace

Schedule schedule(std::span<const Tensor> inputs, std::span<const Tensor> outputs, std::string_view name,
                  std::span<const std::string> output_names) {
  if (outputs.empty()) throw ShapeError("schedule: expected at least one output");
  check_depth(outputs);
  ShapeCache shapes;
  std::vector<Tensor> split = split_total_reductions(outputs, shapes);  // so the cores can share them
  Scheduler s(inputs, split, name, shapes);
  s.output_names_.assign(output_names.begin(), output_names.end());
  return s.run();
}

}  // namespace kiln::schedule

namespace kiln::schedule {

std::string describe(const Schedule& s) {
  static constexpr const char* kKind[] = {"input", "output", "intermediate"};
  std::string r;
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const Buffer& b = s.buffers[i];
    r += "buffer " + std::to_string(i) + " " + b.name + ": " + kKind[int(b.kind)] + " " + to_string(b.dtype) +
         shape_str(b.shape);
    if (b.offset) r += " @" + dim_str(b.offset);
    r += " written by " + std::to_string(b.first_kernel) + ", last read by " + std::to_string(b.last_kernel) + "\n";
  }
  for (const Kernel& k : s.kernels) {
    r += "kernel " + k.name + "(";
    for (size_t i = 0; i < k.buffers.size(); ++i) r += (i ? ", " : "") + s.buffers[size_t(k.buffers[i])].name;
    r += ")\n" + print_graph(k.ast) + "\n";
  }
  r += "workspace: " + dim_str(s.workspace_bytes) + " bytes\n";
  return r;
}

}  // namespace kiln::schedule
