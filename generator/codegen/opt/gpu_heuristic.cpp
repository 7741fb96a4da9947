// The GPU heuristics: one work item per output element (mark_global_axes), and where that leaves
// a long reduction on too few work items to fill a device, the reduction shared by a work group.
//
// A kernel that stores a few outputs, each a long reduction (a total, a mean, the second kernel of
// a split sum, a matrix-vector product of few rows), would otherwise run each reduction serially on
// one work item: thousands of cycles per element, with the device all but idle. As tinygrad's
// heuristic does for outputs of at most 2048 elements, the reduction is GROUPed: the work group's
// items each reduce every group-th element (neighbouring items read neighbouring elements), and
// "remove reduces" combines their partial results through local memory.
#include <algorithm>
#include <limits>
#include <optional>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/passes.h"
#include "generator/target/target.h"

namespace kiln::codegen {

namespace {

// tinygrad's bound on the outputs of a grouped kernel, and the shortest reduction worth a group
constexpr int64_t kMaxGroupedOutputs = 2048;
constexpr int64_t kMinGroupedReduction = 128;

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t p;
  return __builtin_mul_overflow(a, b, &p) ? std::numeric_limits<int64_t>::max() : p;
}

// The GROUP the kernel should take: its one reduction's longest range, shared by a power of two
// of work items up to the target's work-group size and a quarter of the range's longest extent.
std::optional<Opt> group_choice(const UOp* sink, const target::Target& t) {
  const UOp* reduce = nullptr;
  int64_t outputs = 1, stores = 0;
  for (const UOp* u : toposort(sink)) {
    if (u->op == Op::REDUCE) {
      if (reduce) return std::nullopt;  // softmax, layernorm: each reduction its own group, not yet
      reduce = u;
    }
    if (u->op == Op::STORE) ++stores;
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Global)
      outputs = saturating_mul(outputs, std::max<int64_t>(u->src(0)->imax(), 1));
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Loop) return std::nullopt;  // not all on the grid
  }
  if (!reduce || stores != 1 || outputs > kMaxGroupedOutputs) return std::nullopt;
  Op op = reduce->arg<ReduceArg>().op;
  if (op != Op::ADD && op != Op::MUL && op != Op::MAX) return std::nullopt;
  const UOp* longest = nullptr;
  for (const UOp* r : reduce->src().subspan(1))
    if (r->op == Op::RANGE && r->arg<RangeArg>().type == AxisType::Reduce &&
        (!longest || r->src(0)->imax() > longest->src(0)->imax()))
      longest = r;
  if (!longest || longest->src(0)->imax() < kMinGroupedReduction) return std::nullopt;
  int64_t amount = 1;
  while (amount * 2 <= t.local_max_total && amount * 2 <= t.local_max[0] && amount * 2 * 4 <= longest->src(0)->imax())
    amount *= 2;
  if (amount < 2) return std::nullopt;
  return Opt{Opt::Kind::Group, longest->arg<RangeArg>().axis, amount};
}

}  // namespace

std::vector<Opt> gpu_optimizations(const UOp*& sink, const target::Target& t) {
  sink = mark_global_axes(sink);
  std::vector<Opt> chosen;
  if (t.local_bytes <= 0 || t.local_max.empty()) return chosen;
  if (std::optional<Opt> g = group_choice(sink, t)) {
    // the partials of one group, in local memory
    const int64_t bytes = g->amount * 8;
    if (bytes <= t.local_bytes)
      if (const UOp* s = apply_opt(sink, *g, nullptr, true)) sink = s, chosen.push_back(*g);
  }
  return chosen;
}

}  // namespace kiln::codegen
