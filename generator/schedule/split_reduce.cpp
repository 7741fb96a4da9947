// Splitting reductions to one value so the cores can share them: a kernel is shared among the
// cores by its outermost output loop, and a reduction to a single value has none. A long one
// (of 2^16 elements or more, at the largest its dims allow) becomes two: kParts partial results, each over a contiguous
// part of the input (padded with the reduction's identity to kParts parts of equal length), then
// the reduction of the parts. The first kernel's output loop over the parts is shared among the
// cores; the second is short. This reassociates the reduction, as any parallel reduction does.
#include "generator/schedule/split_reduce.h"

#include <cmath>
#include <limits>

#include "generator/frontend/shape.h"
#include "generator/rewrite/rewrite.h"

namespace kiln::schedule {

namespace {

constexpr int64_t kParts = 256;         // more than the cores of any machine kiln targets
constexpr int64_t kLongEnough = 65536;  // shorter ones are not worth a second kernel

double identity(Op op, DType d) {
  if (op == Op::ADD) return 0.0;
  if (op == Op::MUL) return 1.0;
  if (is_float(d)) return -std::numeric_limits<double>::infinity();
  return is_bool(d) ? 0.0 : double(int_min(d));
}

Tensor reduce(const Tensor& t, Op op, const std::vector<int>& axes) {
  return op == Op::ADD ? t.sum(axes) : op == Op::MUL ? t.prod(axes) : t.max(axes);
}

// the reduction of n elements as kParts partial results, then theirs (throws ShapeError)
const UOp* split_into_parts(Context& ctx, const UOp* red, const UOp* n, size_t out_rank) {
  Op op = red->arg<ReduceArg>().op;
  Tensor x(&ctx, red->src(0));
  // parts of len elements, the last padded: len * kParts = n + pad, with pad written so that range
  // analysis sees it is never negative
  const UOp* len = simplify_dim((Expr(n) + (kParts - 1)) / kParts);
  const UOp* pad = simplify_dim(Expr(lift(n, kParts - 1)) - (Expr(n) + (kParts - 1)) % kParts);
  Tensor flat = x.reshape({n});
  if (!dim_is(pad, 0)) flat = flat.pad_value({{Dim(0), Dim(pad)}}, identity(op, red->dtype));
  Tensor parts = reduce(flat.reshape({kParts, len}), op, {1});
  std::vector<Dim> ones(out_rank, Dim(1));
  return reduce(parts, op, {0}).reshape(ones).uop();
}

// the parts form of a REDUCE to one value, or nullptr when it is not one or is short
const UOp* split(Context& ctx, ShapeCache& shapes, const UOp* red) {
  Op op = red->arg<ReduceArg>().op;
  if (red->arg<ReduceArg>().horizontal != 0 || (op != Op::ADD && op != Op::MUL && op != Op::MAX)) return nullptr;
  const Shape& out = shapes.shape_of(red);
  for (const UOp* d : out)
    if (!dim_is(d, 1)) return nullptr;
  const UOp* n = dim_product(shapes.shape_of(red->src(0)));
  if (n->vmax().i < kLongEnough) return nullptr;
  // The shapes below agree only where symbolic proves n + pad == kParts * len, which it cannot
  // for every form of n (a dim declared a multiple of 16, a product of dims): the split is an
  // optimization, and where it cannot be shaped the reduction stays one kernel.
  try {
    return split_into_parts(ctx, red, n, out.size());
  } catch (const ShapeError&) {
    return nullptr;
  }
}

}  // namespace

std::vector<Tensor> split_total_reductions(std::span<const Tensor> outputs, ShapeCache& shapes) {
  std::vector<Tensor> result(outputs.begin(), outputs.end());
  if (outputs.empty()) return result;
  Context& ctx = outputs[0].ctx();
  std::vector<const UOp*> roots;
  for (const Tensor& t : outputs) roots.push_back(t.uop());
  std::unordered_map<const UOp*, const UOp*> with;
  for (const UOp* u : toposort(ctx.make(Op::SINK, dtypes::void_, roots)))
    if (u->op == Op::REDUCE)
      if (const UOp* s = split(ctx, shapes, u)) with[u] = s;
  if (with.empty()) return result;
  for (Tensor& t : result) t = Tensor(&ctx, substitute(t.uop(), with));
  return result;
}

}  // namespace kiln::schedule
