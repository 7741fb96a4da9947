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
#include <map>
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

// A Global range's end as a whole multiple of `amount` (a constant, or a dim declared a multiple)
bool divides(const UOp* r, int64_t amount) { return r->src(0)->divides(amount) != nullptr; }

// The Global ranges of the kernel by axis, outermost first (gpu dims gives the last dim 0)
std::vector<const UOp*> global_ranges(const UOp* sink) {
  std::map<int32_t, const UOp*> by_axis;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Global) by_axis[u->arg<RangeArg>().axis] = u;
  std::vector<const UOp*> out;
  for (const auto& [axis, r] : by_axis) out.push_back(r);
  return out;
}

// Does some input's read (an INDEX of a PARAM no STORE writes through) not depend on range r? A
// matmul's A does not depend on N nor B on M: upcasting that axis reuses each of its loads.
bool some_input_ignores(const UOp* sink, const UOp* r) {
  const std::vector<const UOp*> topo = toposort(sink);
  std::unordered_set<const UOp*> stored;
  for (const UOp* u : topo)
    if (u->op == Op::STORE) stored.insert(u->src(0));
  for (const UOp* u : topo)
    if (u->op == Op::INDEX && u->src(0)->op == Op::PARAM && !stored.count(u) && !contains(u, r)) return true;
  return false;
}

// Register tiles and work groups for a kernel of many outputs whose reduction reads inputs that
// some output loop does not index (a matmul, a convolution): tinygrad's hand-coded GPU opts, in
// short. Each Global loop some input ignores is UPCAST by 4 (each work item computes a 4 x 4 tile:
// every load it makes serves 4 outputs from a register), at most two of them; then the two
// innermost Global loops are split into work groups of up to 16 x 16 items (LOCAL), so a group's
// items share the rows and columns they read in the device's caches. The splits need loops that
// divide (a dim a bucket declares a multiple, a constant); in a kernel of two Global loops, others
// are padded to multiples of 64 first.
std::vector<Opt> tiles_and_groups(const UOp*& sink, const target::Target& t) {
  std::vector<Opt> chosen;
  int64_t reduces = 0;
  for (const UOp* u : toposort(sink)) {
    reduces += u->op == Op::REDUCE;
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Loop) return chosen;  // not all on the grid
  }
  if (reduces != 1) return chosen;
  std::vector<const UOp*> globals = global_ranges(sink);
  if (globals.size() < 2) return chosen;
  auto apply = [&](const Opt& o) {
    if (const UOp* s = apply_opt(sink, o, nullptr, true)) {
      sink = s;
      chosen.push_back(o);
      return true;
    }
    return false;
  };
  // a loop that may be long but is not a whole multiple of a group's 64 (a dim of any length, the
  // generic variant's) is padded to one: the items past its end are gated off, at most 63 a row.
  // Only in a kernel of two Global loops: a batch loop beside them (attention's scores, S x S per
  // head) makes stores at S*row + S*S*batch + col that the bounds prover does not bound under the
  // padding's gates, and gen would then emit the kernel without any opts
  std::vector<int32_t> padded;
  for (size_t k = 0; k < 2 && globals.size() == 2; ++k) {
    const UOp* r = globals[globals.size() - 1 - k];
    if (!divides(r, 64) && r->src(0)->imax() >= 256 && apply(Opt{Opt::Kind::Padto, r->arg<RangeArg>().axis, 64}))
      padded.push_back(r->arg<RangeArg>().axis);
  }
  globals = global_ranges(sink);
  // innermost first: the columns' tile before the rows'. Where the columns need no padding, their
  // tile is LANES: its loads and stores of 4 consecutive elements are one vector access each
  // (OpenCL's vload4, CUDA's 16-byte load), and its arithmetic is on vectors (a padded loop's
  // gated stores stay scalar: UPCAST)
  int upcasts = 0;
  for (auto it = globals.rbegin(); it != globals.rend() && upcasts < 2; ++it) {
    const UOp* r = *it;
    if (r->src(0)->imax() < 64 || !divides(r, 4) || !some_input_ignores(sink, r)) continue;
    const bool lanes =
        it == globals.rbegin() && std::find(padded.begin(), padded.end(), r->arg<RangeArg>().axis) == padded.end();
    upcasts += apply(Opt{lanes ? Opt::Kind::Lane : Opt::Kind::Upcast, r->arg<RangeArg>().axis, 4});
  }
  // work groups over the two innermost Global loops (their outer parts after the upcasts)
  globals = global_ranges(sink);
  const int64_t most = std::min<int64_t>(t.local_max_total, 256);
  int64_t total = 1;
  std::vector<Opt> locals;
  for (size_t k = 0; k < 2 && k < globals.size() && k < t.local_max.size(); ++k) {
    const UOp* r = globals[globals.size() - 1 - k];
    int64_t amount = 16;
    while (amount >= 2 &&
           (amount > t.local_max[k] || total * amount > most || !divides(r, amount) || r->src(0)->imin() < amount))
      amount /= 2;
    if (amount < 2) continue;
    total *= amount;
    locals.push_back(Opt{Opt::Kind::Local, r->arg<RangeArg>().axis, amount});
  }
  // applied outermost first: the innermost loop's items are the last split, dim 0
  for (auto it = locals.rbegin(); it != locals.rend(); ++it) apply(*it);
  return chosen;
}

// A work group per row for a kernel whose reductions each give a value an output loop then uses
// for every element (softmax: a row's max and sum, then its columns; layernorm: mean and
// variance, then its columns). mark_global_axes leaves that loop in each work item, so one item
// would run a row's passes alone, its reads a row apart from its neighbours'. Instead every
// reduction is GROUPed by one group of items (a power of two up to 256, the target's work group,
// and about the square root of the shortest reduction), and the output loop is padded to the group's multiple
// and shared among its items (LOCAL; the innermost loop of a nest, one per nest: two on one id would
// run only their diagonal): on every pass neighbouring items read neighbouring elements.
// Nothing where any step does not apply (a reduction inside the loop, a kernel that reads what it
// stores, a reduction without an identity to pad with).
std::vector<Opt> group_rows(const UOp*& sink, const target::Target& t) {
  std::vector<const UOp*> reduces;
  std::map<int32_t, const UOp*> loops;  // the innermost output loop of each nest
  for (const UOp* u : toposort(sink)) {
    if (u->op == Op::REDUCE) reduces.push_back(u);
    if (u->op != Op::END) continue;
    const UOp* innermost = nullptr;
    for (const UOp* r : u->src().subspan(1))
      if (r->op == Op::RANGE && r->arg<RangeArg>().type == AxisType::Loop) innermost = r;
    if (innermost) loops[innermost->arg<RangeArg>().axis] = innermost;
  }
  if (reduces.empty() || loops.empty()) return {};
  std::vector<int32_t> axes;  // each reduction's longest range
  int64_t shortest = std::numeric_limits<int64_t>::max();
  for (const UOp* red : reduces) {
    const UOp* longest = nullptr;
    for (const UOp* r : red->src().subspan(1))
      if (r->op == Op::RANGE && r->arg<RangeArg>().type == AxisType::Reduce &&
          (!longest || r->src(0)->imax() > longest->src(0)->imax()))
        longest = r;
    if (!longest) return {};
    if (std::find(axes.begin(), axes.end(), longest->arg<RangeArg>().axis) == axes.end())
      axes.push_back(longest->arg<RangeArg>().axis);
    shortest = std::min(shortest, longest->src(0)->imax());
  }
  // each item runs its share of a row (D / G elements a pass) and log2(G) steps combining the
  // group's partials: G about sqrt(D), which measured best on PoCL (softmax 256 x 1024: 0.99 ms at
  // 128 items, 1.59 ms at 256), and enough items for a GPU where rows are many
  int64_t amount = 1;
  while (amount * 2 <= std::min<int64_t>(t.local_max_total, 256) && amount * 2 <= t.local_max[0] &&
         (amount * 2) * (amount * 2) <= shortest && int64_t(axes.size()) * amount * 2 * 8 <= t.local_bytes)
    amount *= 2;
  if (amount < 2) return {};
  const UOp* s = sink;
  std::vector<Opt> chosen;
  auto apply = [&](const Opt& o) {
    s = s ? apply_opt(s, o, nullptr, true) : nullptr;
    chosen.push_back(o);
  };
  for (int32_t axis : axes) apply(Opt{Opt::Kind::Group, axis, amount});
  for (const auto& [axis, r] : loops) {
    if (!divides(r, amount)) apply(Opt{Opt::Kind::Padto, axis, amount});
    apply(Opt{Opt::Kind::Local, axis, amount});
  }
  if (!s) return {};
  sink = s;
  return chosen;
}

// An elementwise kernel (no reduction, every output loop on the grid) whose innermost loop is a
// whole multiple of 4 and long: each work item takes 4 neighbouring elements of it (LANES), so its
// loads and stores of consecutive elements are one 16-byte access each (vload4 / vstore4, CUDA's
// ld.global.v4), the way GPU kernels reach their memory's bandwidth with fewer, wider accesses.
std::vector<Opt> lanes_of_elementwise(const UOp*& sink) {
  for (const UOp* u : toposort(sink)) {
    if (u->op == Op::REDUCE) return {};
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Loop) return {};  // not all on the grid
  }
  std::vector<const UOp*> globals = global_ranges(sink);
  if (globals.empty()) return {};
  const UOp* r = globals.back();
  if (r->src(0)->imin() < 4 || r->src(0)->imax() < 1024 || !divides(r, 4)) return {};
  const Opt o{Opt::Kind::Lane, r->arg<RangeArg>().axis, 4};
  const UOp* s = apply_opt(sink, o, nullptr, true);
  if (!s) return {};
  sink = s;
  return {o};
}

}  // namespace

bool reads_what_it_stores(const UOp* sink) {
  auto buffer = [](const UOp* b) {
    while (b->op == Op::AFTER) b = b->src(0);
    return b;
  };
  std::unordered_set<const UOp*> targets, stored;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::STORE && u->src(0)->op == Op::INDEX)
      targets.insert(u->src(0)), stored.insert(buffer(u->src(0)->src(0)));
  for (const UOp* u : toposort(sink))
    if (u->op == Op::INDEX && !targets.count(u) && stored.count(buffer(u->src(0)))) return true;
  return false;
}

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
  if (reads_what_it_stores(sink)) return sink;  // another work item may read what one stores
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
  // a matmul of halves: on the tensor cores, its dims padded to whole tiles where they are not
  if (const UOp* s = apply_tensor_cores(sink, t, nullptr, &chosen)) {
    for (const UOp* u : toposort(sink))
      if (u->op == Op::REDUCE) chosen.push_back(Opt{Opt::Kind::Tc, u->src(1)->arg<RangeArg>().axis, 0});
    sink = s;
    return chosen;
  }
  if (std::optional<Opt> g = group_choice(sink, t)) {
    // the partials of one group, in local memory
    const int64_t bytes = g->amount * 8;
    if (bytes <= t.local_bytes)
      if (const UOp* s = apply_opt(sink, *g, nullptr, true)) sink = s, chosen.push_back(*g);
    return chosen;
  }
  if (std::vector<Opt> rows = group_rows(sink, t); !rows.empty()) return rows;
  if (std::vector<Opt> lanes = lanes_of_elementwise(sink); !lanes.empty()) return lanes;
  return tiles_and_groups(sink, t);
}

}  // namespace kiln::codegen
