// gpu dims: launch dimensions become indices.
//
// On the CPU the launch dimension is the core: a kernel is called once per core with (core,
// cores), and each Thread loop (marked by the opts) becomes that core's share of it, rows
// [core*n/cores, (core+1)*n/cores). The DEFINE_VARs ".core" and ".cores" (names no spec can spell)
// stand for the two arguments.
//
// On a GPU target the Global loops (mark_global_axes) become work-item ids, SPECIALs named
// "idx0".."idx2" (get_global_id(0..2)): the innermost loop is dim 0, as tinygrad orders them, so
// neighbouring work items touch neighbouring elements. More loops than the target has dims, or
// loops longer than its limits, are fitted as tinygrad's gpudims fits them: adjacent loops merge
// into one id while their product fits (each loop is then a quotient and remainder of it), and a
// loop of constant length too long for its dim is split into factors carried by the next dim.
// Symbolic loops that fit one per dim in another order take that order instead of merging. The
// launch is exactly the ids' ends (the SPECIALs' sources), so no work item falls outside the loops.
// Work groups (GROUP's, LOCAL's) make "lidx<d>" ids of the items in a group and "gidx<d>" ids of
// the groups, and the launch is the groups' count of the items' size.
#include <algorithm>
#include <map>
#include <numeric>

#include "generator/codegen/passes.h"
#include "generator/ir/text.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

namespace {

const UOp* share_thread_loops(const UOp* sink, const std::map<int32_t, const UOp*>& threads) {
  Context& ctx = sink->ctx();
  Expr core = ctx.var(kCoreVar, 0, kMaxCores - 1), cores = ctx.var(kCoresVar, 1, kMaxCores);
  std::unordered_map<const UOp*, RangeReplacement> with;
  for (const auto& [axis, r] : threads) {
    Expr n = r->src(0);
    // clamped to n (a no-op: core < cores) so range analysis bounds them by n, outside the loop
    // core * n / cores, or where core * n may pass int64 (a dim up to 2^53) the same row as
    // n / cores * core + n % cores * core / cores, which stays below n * 256
    auto first_row = [&](Expr c) -> Expr {
      Expr whole = c * n;
      return whole->saturated() ? n / cores * c + n % cores * c / cores : whole / cores;
    };
    Expr lo = minimum(first_row(core), n), hi = minimum(first_row(core + 1), n);
    const UOp* share = ctx.make(Op::RANGE, r->dtype, {simplify(hi - lo)}, r->arg());
    with[r] = {lo + share, {share}};
  }
  return replace_ranges(sink, with);
}

int64_t most(const UOp* end) { return end->imax(); }

// The loops' ends, innermost first, fitted to `limit` by merging neighbours: groups[i] lists the
// loops (indices into ends) id i carries, innermost first. Empty where they do not fit.
std::vector<std::vector<size_t>> group_dims(const std::vector<const UOp*>& ends, const std::vector<int64_t>& limit) {
  std::vector<std::vector<size_t>> g;
  std::vector<int64_t> size;
  for (size_t i = 0; i < ends.size(); ++i) g.push_back({i}), size.push_back(most(ends[i]));
  auto fits = [&] {
    if (g.size() > limit.size()) return false;
    for (size_t i = 0; i < g.size(); ++i)
      if (size[i] > limit[i]) return false;
    return true;
  };
  while (!fits()) {
    size_t i = 0;
    // the first pair whose product fits the dim it would take (products of maxima: no overflow,
    // each below the limit's 2^31)
    while (i + 1 < g.size() && !(size[i] <= limit[i] && size[i + 1] <= limit[i] && size[i] * size[i + 1] <= limit[i]))
      ++i;
    if (i + 1 >= g.size()) return {};
    g[i].insert(g[i].end(), g[i + 1].begin(), g[i + 1].end());
    size[i] *= size[i + 1];
    g.erase(g.begin() + long(i) + 1), size.erase(size.begin() + long(i) + 1);
  }
  return g;
}

// One loop per dim in another order, where the innermost-first one does not fit: the first
// assignment in permutation order (the innermost loop keeps the lowest dim it can) where every loop
// fits its dim; empty for none. dim[l] is loop l's.
std::vector<size_t> permuted_dims(const std::vector<const UOp*>& ends, const std::vector<int64_t>& limit) {
  if (ends.size() > limit.size()) return {};
  std::vector<size_t> dim(ends.size());
  std::iota(dim.begin(), dim.end(), size_t(0));
  do {
    bool fits = true;
    for (size_t l = 0; l < ends.size(); ++l) fits &= most(ends[l]) <= limit[dim[l]];
    if (fits) return dim;
  } while (std::next_permutation(dim.begin(), dim.end()));
  return {};
}

// Constant sizes, innermost first, made to fit `limit` by moving factors of a dim too long to the
// next dim (tinygrad's _split_dims); empty where a dim has no factor that helps.
std::vector<int64_t> split_dims(std::vector<int64_t> d, const std::vector<int64_t>& limit) {
  d.resize(limit.size(), 1);
  for (size_t i = 0; i < d.size(); ++i)
    while (d[i] > limit[i]) {
      int64_t f = 2;
      while (f * f <= d[i] && d[i] % f != 0) ++f;
      if (f * f > d[i]) return {};
      d[i] /= f;
      d[(i + 1) % d.size()] *= f;
    }
  while (d.size() > 1 && d.back() == 1) d.pop_back();
  return d;
}

// The Global loops as ids named `prefix`<d>: "idx" (work items), or "gidx" (work groups, where the
// kernel has local ids).
const UOp* global_ids(const UOp* sink, const std::map<int32_t, const UOp*>& globals, const target::Target& t,
                      const std::string& prefix) {
  Context& ctx = sink->ctx();
  std::vector<const UOp*> loops;  // innermost first
  for (auto it = globals.rbegin(); it != globals.rend(); ++it) loops.push_back(it->second);
  std::vector<const UOp*> ends;
  for (const UOp* r : loops) ends.push_back(r->src(0));
  auto special = [&](size_t dim, Expr end) { return ctx.special(simplify(end), prefix + std::to_string(dim)); };
  std::unordered_map<const UOp*, RangeReplacement> with;
  std::vector<std::vector<size_t>> groups = group_dims(ends, t.global_max);
  bool one_each = !groups.empty();  // every loop fits its dim as it is
  for (const auto& gr : groups) one_each &= gr.size() == 1;
  // Merged symbolic loops are each a quotient and remainder of the id by a symbolic end: an index
  // the prover does not bound, so the kernel would lose its opts (bgemm's G up to 65536, one past
  // the second dim, merged all three). Where an end is symbolic, one loop per dim in another order
  // comes first; constant ones merge (their ids keep the innermost loop on dim 0).
  const bool symbolic = std::any_of(ends.begin(), ends.end(), [](const UOp* e) { return e->op != Op::CONST; });
  if (!one_each && symbolic)
    if (std::vector<size_t> dim = permuted_dims(ends, t.global_max); !dim.empty()) {
      for (size_t l = 0; l < loops.size(); ++l) with[loops[l]] = {special(dim[l], ends[l]), {}};
      return replace_ranges(sink, with);
    }
  if (!groups.empty() && !one_each) {
    // merged: id i runs over the product of its loops; each loop is a digit of it
    for (size_t i = 0; i < groups.size(); ++i) {
      Expr size = ends[groups[i][0]];
      for (size_t k = 1; k < groups[i].size(); ++k) size = size * ends[groups[i][k]];
      Expr id = special(i, size), below = ctx.cint(1, loops[0]->dtype);
      for (size_t k = 0; k < groups[i].size(); ++k) {
        size_t l = groups[i][k];
        Expr digit = k + 1 == groups[i].size() ? id / below : id / below % ends[l];
        with[loops[l]] = {simplify(digit), {}};
        below = below * ends[l];
      }
    }
    return replace_ranges(sink, with);
  }
  if (one_each) {
    for (size_t i = 0; i < loops.size(); ++i) with[loops[i]] = {special(i, ends[i]), {}};
    return replace_ranges(sink, with);
  }
  // too long for its dim, not mergeable: constant lengths are split into factors across the dims
  std::vector<int64_t> sizes;
  for (const UOp* e : ends) {
    if (e->op != Op::CONST) return nullptr;
    sizes.push_back(e->ival());
  }
  if (sizes.size() > t.global_max.size()) return nullptr;
  std::vector<int64_t> fit = split_dims(sizes, t.global_max);
  if (fit.empty()) return nullptr;
  // the flat position (innermost fastest) of the launch, then each loop's digit of it
  Expr flat = ctx.cint(0, loops[0]->dtype), stride = ctx.cint(1, loops[0]->dtype);
  for (size_t i = 0; i < fit.size(); ++i) {
    flat = flat + Expr(special(i, ctx.cint(fit[i], loops[0]->dtype))) * stride;
    stride = stride * fit[i];
  }
  int64_t below = 1;
  for (size_t l = 0; l < loops.size(); ++l) {
    Expr digit = l + 1 == loops.size() ? flat / below : flat / below % sizes[l];
    with[loops[l]] = {simplify(digit), {}};
    below *= sizes[l];
  }
  return replace_ranges(sink, with);
}

}  // namespace

// A work group's ids where the kernel has GROUPs: every GroupReduce range (one per grouped
// reduction) and every Local range (an output loop shared among the group's items, LOCAL after
// GROUP) becomes "lidx0", all of one size. A store to a global buffer whose address depends on none
// of them is gated to the group's item 0 (every item computed the same value: one writes it). The
// launch then counts groups (the "gidx" ids) of lidx0's size.
const UOp* local_ids(const UOp* sink, const std::vector<const UOp*>& shared, const target::Target& t) {
  const UOp* n = shared.front()->src(0);
  for (const UOp* g : shared)
    if (g->src(0) != n) throw InternalError("gpu dims: the group's ranges are not all of one size");
  if (n->op != Op::CONST || t.local_max.empty() || n->ival() > t.local_max[0] || n->ival() > t.local_max_total)
    throw InternalError("gpu dims: a work group of " + print(n) + " items does not fit " + t.name + "'s");
  Context& ctx = sink->ctx();
  const UOp* lidx = ctx.special(n, "lidx0");
  std::unordered_map<const UOp*, const UOp*> with;
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::STORE || u->src(0)->op != Op::INDEX) continue;
    const UOp* idx = u->src(0);
    const UOp* buf = idx->src(0);
    while (buf->op == Op::AFTER) buf = buf->src(0);
    if (buf->dtype.addrspace != AddrSpace::Global) continue;
    const std::vector<const UOp*> topo = toposort(idx);
    if (std::none_of(shared.begin(), shared.end(),
                     [&](const UOp* g) { return std::find(topo.begin(), topo.end(), g) != topo.end(); }))
      with[idx] = gate_index(idx, Expr(shared.front()) < 1);
  }
  sink = substitute(sink, with);
  std::unordered_map<const UOp*, RangeReplacement> ranges;  // rebuilt under the new sink
  for (const UOp* u : toposort(sink))
    if (u->op == Op::RANGE &&
        (u->arg<RangeArg>().type == AxisType::GroupReduce || u->arg<RangeArg>().type == AxisType::Local))
      ranges[u] = {lidx, {}};
  return replace_ranges(sink, ranges);
}

std::string local_dims_misfit(const UOp* sink, const target::Target& t) {
  std::map<int32_t, const UOp*> by_axis;
  bool grouped = false;
  for (const UOp* u : toposort(sink)) {
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Local) by_axis[u->arg<RangeArg>().axis] = u->src(0);
    grouped |= u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::GroupReduce;
  }
  if (grouped) return "";  // LOCAL shares the group's one dim, of the group's size (apply_opt checks it)
  int64_t total = 1;
  size_t d = 0;
  for (auto it = by_axis.rbegin(); it != by_axis.rend(); ++it, ++d) {
    const UOp* n = it->second;
    if (n->op != Op::CONST) return "work groups of " + print(n) + " items: not a constant";
    if (d >= t.local_max.size() || n->ival() > t.local_max[d] || (total *= n->ival()) > t.local_max_total)
      return "work groups of " + std::to_string(n->ival()) + " items in dim " + std::to_string(d) + " (" +
             std::to_string(total) + " in all) do not fit " + t.name + "'s";
  }
  return "";
}

// LOCAL's work groups: each Local range becomes "lidx<d>", the last split (the highest axis) dim 0,
// as the Global loops take theirs innermost first; the outer parts stay Global, the groups' ids.
const UOp* local_loop_ids(const UOp* sink, const std::map<int32_t, const UOp*>& locals, const target::Target& t) {
  if (std::string why = local_dims_misfit(sink, t); !why.empty()) throw InternalError("gpu dims: " + why);
  Context& ctx = sink->ctx();
  std::unordered_map<const UOp*, RangeReplacement> with;
  size_t d = 0;
  for (auto it = locals.rbegin(); it != locals.rend(); ++it, ++d)
    with[it->second] = {ctx.special(it->second->src(0), "lidx" + std::to_string(d)), {}};
  return replace_ranges(sink, with);
}

const UOp* add_gpudims(const UOp* sink, const target::Target& t) {
  // by axis: the same rows on every pass over them (a zeroing loop and its update loop)
  std::map<int32_t, const UOp*> threads, globals, groups, locals;
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::RANGE) continue;
    const RangeArg& a = u->arg<RangeArg>();
    if (a.type == AxisType::Thread) threads[a.axis] = u;
    if (a.type == AxisType::Global) globals[a.axis] = u;
    if (a.type == AxisType::GroupReduce) groups[a.axis] = u;
    if (a.type == AxisType::Local) locals[a.axis] = u;
  }
  if ((!globals.empty() || !groups.empty() || !locals.empty()) && !t.gpu)
    throw InternalError("gpu dims: Global or group loops on " + t.name + ", not a GPU target");
  if (!threads.empty()) sink = share_thread_loops(sink, threads);
  std::string prefix = "idx";
  if (!groups.empty() || !locals.empty()) {
    std::vector<const UOp*> shared;
    for (const auto* m : {&groups, &locals})
      for (const auto& [axis, r] : *m) shared.push_back(r);
    sink = groups.empty() ? local_loop_ids(sink, locals, t) : local_ids(sink, shared, t);
    prefix = "gidx";
    for (auto& [axis, r] : globals)  // rebuilt under the new sink
      for (const UOp* u : toposort(sink))
        if (u->op == Op::RANGE && u->arg<RangeArg>().axis == axis && u->arg<RangeArg>().type == AxisType::Global) r = u;
  }
  if (globals.empty()) return sink;
  // loops that do not fit the grid stay loops, outermost first, until the rest fits
  while (!globals.empty()) {
    if (const UOp* s = global_ids(sink, globals, t, prefix)) return s;
    const UOp* r = globals.begin()->second;
    RangeArg a = r->arg<RangeArg>();
    a.type = AxisType::Loop;
    sink = substitute(sink, {{r, sink->ctx().make(Op::RANGE, r->dtype, r->src(), a)}});
    globals.erase(globals.begin());
    for (auto& [axis, g] : globals)  // the rest were rebuilt under the new sink
      for (const UOp* u : toposort(sink))
        if (u->op == Op::RANGE && u->arg<RangeArg>().axis == axis && u->arg<RangeArg>().type == AxisType::Global) g = u;
  }
  return sink;
}

}  // namespace kiln::codegen
