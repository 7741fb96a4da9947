// Graph helpers over UOps: the topological order, backward slices, containment and structural
// order. Each walk keeps its stack per thread (none of them nests), so its growth is paid once.
#include <algorithm>
#include <variant>
#include <vector>

#include "generator/ir/uop.h"

namespace kiln {

std::vector<const UOp*> toposort(const UOp* root) {
  // iterative post-order; a node is marked when first pushed, so each is emitted once
  Context& ctx = root->ctx();
  uint32_t epoch = ctx.new_epoch();
  // the walk's stack and order, kept per thread so their growth is paid once (toposort never
  // nests); the result is one allocation of the exact size
  thread_local std::vector<const UOp*> out;
  out.clear();
  thread_local std::vector<std::pair<const UOp*, uint32_t>> stack;
  stack.assign(1, {root, 0});
  ctx.mark(root->id) = epoch;
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i < u->nsrc()) {
      const UOp* s = u->src(i++);
      if (ctx.mark(s->id) != epoch) {
        ctx.mark(s->id) = epoch;
        stack.push_back({s, 0});
      }
      continue;
    }
    out.push_back(u);
    stack.pop_back();
  }
  return std::vector<const UOp*>(out.begin(), out.end());
}

std::vector<const UOp*>& node_table(const UOp* root) {
  thread_local std::vector<const UOp*> table;
  if (table.size() <= root->id) table.resize(root->id + 1);
  return table;
}

OpSet Context::ops_below(const UOp* root) {
  if (ops_below_.size() < nodes_.size()) ops_below_.resize(std::max(nodes_.size(), 2 * ops_below_.size()));
  if (!ops_below_[root->id].empty()) return ops_below_[root->id];
  // post-order over the nodes not computed yet; a node's sources are done before it (the stack
  // kept per thread: this walk never nests)
  thread_local std::vector<std::pair<const UOp*, uint32_t>> stack;
  stack.assign(1, {root, 0});
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i < u->nsrc()) {
      const UOp* s = u->src(i++);
      if (ops_below_[s->id].empty()) stack.push_back({s, 0});
      continue;
    }
    OpSet ops(u->op);
    for (const UOp* s : u->src()) ops = ops | ops_below_[s->id];
    ops_below_[u->id] = ops;
    stack.pop_back();
  }
  return ops_below_[root->id];
}

bool in_backward_slice(const UOp* root, OpSet ops) { return root->ctx().ops_below(root).intersects(ops); }

bool contains(const UOp* root, const UOp* needle) {
  if (root == needle) return true;
  if (needle->id > root->id) return false;  // sources are always created before their users
  // depth-first search; a node created before the needle cannot reach it (sources are older)
  Context& ctx = root->ctx();
  uint32_t epoch = ctx.new_epoch();
  // the stack is kept per thread (contains never nests); assign() drops what an early return left
  thread_local std::vector<const UOp*> stack;
  stack.assign(1, root);
  ctx.mark(root->id) = epoch;
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    for (const UOp* s : u->src()) {
      if (s == needle) return true;
      // a node older than the needle cannot reach it
      if (s->id < needle->id || ctx.mark(s->id) == epoch) continue;
      ctx.mark(s->id) = epoch;
      stack.push_back(s);
    }
  }
  return false;
}

static int compare_arg(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return a.index() < b.index() ? -1 : 1;
  auto cmp = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if (auto* x = std::get_if<ConstValue>(&a)) {
    const auto& y = std::get<ConstValue>(b);
    if (x->kind != y.kind) return cmp(int(x->kind), int(y.kind));
    return x->is_float() ? cmp(x->f, y.f) : cmp(x->i, y.i);
  }
  if (auto* x = std::get_if<VarArg>(&a)) {
    const auto& y = std::get<VarArg>(b);
    if (int c = x->name.compare(y.name)) return c < 0 ? -1 : 1;
    if (x->min != y.min) return cmp(x->min, y.min);
    if (x->max != y.max) return cmp(x->max, y.max);
    if (x->fmin != y.fmin) return cmp(x->fmin, y.fmin);
    if (x->fmax != y.fmax) return cmp(x->fmax, y.fmax);
    return cmp(x->multiple_of, y.multiple_of);
  }
  if (auto* x = std::get_if<RangeArg>(&a)) {
    const auto& y = std::get<RangeArg>(b);
    if (x->axis != y.axis) return cmp(x->axis, y.axis);
    if (x->type != y.type) return cmp(int(x->type), int(y.type));
    return cmp(x->sub, y.sub);
  }
  if (auto* x = std::get_if<ParamArg>(&a)) {
    const auto& y = std::get<ParamArg>(b);
    if (x->slot != y.slot) return cmp(x->slot, y.slot);
    if (x->size != y.size) return cmp(x->size, y.size);
    return cmp(x->name, y.name);
  }
  if (auto* x = std::get_if<ReduceArg>(&a)) {
    const auto& y = std::get<ReduceArg>(b);
    if (x->op != y.op) return cmp(int(x->op), int(y.op));
    return cmp(x->horizontal, y.horizontal);
  }
  if (auto* x = std::get_if<Name>(&a)) return cmp(x->s, std::get<Name>(b).s);
  if (auto* x = std::get_if<int64_t>(&a)) return cmp(*x, std::get<int64_t>(b));
  return 0;
}

// (op, arg, dtype) of two nodes, the head of their tuples
static int compare_head(const UOp* x, const UOp* y) {
  if (x->op != y->op) return int(x->op) < int(y->op) ? -1 : 1;
  if (int c = compare_arg(x->arg(), y->arg())) return c;
  if (x->dtype != y->dtype) return x->dtype.key() < y->dtype.key() ? -1 : 1;
  return 0;
}

int compare_structural(const UOp* a, const UOp* b) {
  if (a == b) return 0;
  if (int c = compare_head(a, b)) return c;  // most comparisons end here, without the stack
  // iterative lexicographic comparison of (op, arg, dtype, src...) trees; the stack is kept per
  // thread (from `base` up: this call's part, as the unequal-length case recurses)
  thread_local std::vector<std::pair<const UOp*, const UOp*>> stack;
  const size_t base = stack.size();
  auto done = [&](int c) {
    stack.resize(base);
    return c;
  };
  stack.push_back({a, b});
  while (stack.size() > base) {
    auto [x, y] = stack.back();
    stack.pop_back();
    if (x == y) continue;
    if (int c = compare_head(x, y)) return done(c);
    size_t n = std::min(x->nsrc(), y->nsrc());
    // push in reverse so the first source is compared first; a shorter tuple sorts first
    if (x->nsrc() != y->nsrc()) {
      // compare the common prefix first; if equal, the shorter is smaller
      for (size_t i = 0; i < n; ++i)
        if (int c = compare_structural(x->src(i), y->src(i))) return done(c);
      return done(x->nsrc() < y->nsrc() ? -1 : 1);
    }
    for (size_t i = n; i-- > 0;) stack.push_back({x->src(i), y->src(i)});
  }
  return 0;
}

}  // namespace kiln
