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
#include <unordered_map>
#include <unordered_set>

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

const UOp* mark_global_axes(const UOp* sink) {
  std::vector<const UOp*> common;  // the output loops of every END at the top, outermost first
  for (size_t i = 0; i < sink->nsrc(); ++i) {
    const UOp* e = sink->src(i);
    if (e->op != Op::END) return sink;
    std::vector<const UOp*> mine;
    for (const UOp* r : e->src().subspan(1))
      if (r->op == Op::RANGE && r->arg<RangeArg>().type == AxisType::Loop &&
          (i == 0 || std::find(common.begin(), common.end(), r) != common.end()))
        mine.push_back(r);
    common = std::move(mine);
  }
  auto buffer = [](const UOp* b) {
    while (b->op == Op::AFTER) b = b->src(0);
    return b;
  };
  std::unordered_set<const UOp*> targets, stored;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::STORE && u->src(0)->op == Op::INDEX)
      targets.insert(u->src(0)), stored.insert(buffer(u->src(0)->src(0)));
  // a buffer the kernel stores and also reads: another work item may read what one stores
  for (const UOp* u : toposort(sink))
    if (u->op == Op::INDEX && !targets.count(u) && stored.count(buffer(u->src(0)))) return sink;
  // An output loop some reduction does not depend on (softmax's and layernorm's columns: the row's
  // max and sum are the same for all of them) stays a loop in each work item: on the grid, every
  // item would compute the whole reduction again, D times the work of a row.
  std::vector<const UOp*> reduces;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::REDUCE) reduces.push_back(u);
  std::unordered_map<const UOp*, const UOp*> with;
  for (const UOp* r : common) {
    if (std::any_of(reduces.begin(), reduces.end(), [&](const UOp* red) { return !contains(red->src(0), r); }))
      continue;
    RangeArg a = r->arg<RangeArg>();
    a.type = AxisType::Global;
    with[r] = sink->ctx().make(Op::RANGE, r->dtype, r->src(), a);
  }
  return with.empty() ? sink : substitute(sink, with);
}

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
