// split ranges and simplify ranges: the loop structure that the index math asks for, before any
// opt picks tiles.
//   split ranges:    a range r used as r % c (c dividing its end) becomes two loops,
//                    r = outer * c + inner, so r % c and r // c fold to plain ranges
//                    (a transposed reshape then reads without a division).
//   simplify ranges: two ranges a kernel closes together become one loop over both when that
//                    takes no more divisions and modulos than before (a contiguous 2-D
//                    elementwise kernel becomes one long loop; a matmul keeps its two).
#include "generator/codegen/passes.h"

#include <map>

#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

namespace {

int64_t count_divmod(const UOp* u) {
  int64_t n = 0;
  for (const UOp* x : toposort(u)) n += x->op == Op::FLOORDIV || x->op == Op::FLOORMOD;
  return n;
}

bool is_range_list(const UOp* u) {
  for (const UOp* r : u->src().subspan(1))
    if (r->op != Op::RANGE) return false;
  return true;
}

// r0 (outer) and r1 (inner) as one range over both: r0 = r // end1, r1 = r % end1
std::unordered_map<const UOp*, RangeReplacement> merged(const UOp* r0, const UOp* r1) {
  Expr end1 = r1->src(0);
  const UOp* m = r0->ctx().make(Op::RANGE, r0->dtype, {simplify(Expr(r0->src(0)) * end1)}, r0->arg());
  return {{r0, {Expr(m) / end1, {m}}}, {r1, {Expr(m) % end1, {}}}};
}

// The index math of u (addresses and integer comparisons), where any division or modulo is: a
// merge is tried on it alone, which is cheaper than simplifying every value of the kernel.
const UOp* index_math(const UOp* u) {
  std::vector<const UOp*> roots;
  for (const UOp* x : toposort(u)) {
    if (x->op == Op::INDEX) roots.push_back(x->src(1));
    if (in_group(x->op, G_COMPARISON) && x->src(0)->dtype == dtypes::weakint) roots.push_back(x);
  }
  return u->ctx().make(Op::SINK, dtypes::void_, roots);
}

bool lists(std::span<const UOp* const> rs, const UOp* r) { return std::find(rs.begin(), rs.end(), r) != rs.end(); }

const UOp* merge_adjacent(const Match& m) {
  const UOp* u = m.root;
  if (u->nsrc() < 3 || !is_range_list(u)) return nullptr;
  const UOp* cur = u;
  int64_t divmods = count_divmod(index_math(cur));
  for (bool again = true; again;) {
    again = false;
    // two ranges merge only if every reduction inside reduces over both or neither, and every
    // index uses both or neither (one alone would be divided out of the merged range)
    const UOp* index = index_math(cur);
    std::vector<std::vector<const UOp*>> groups;
    for (const UOp* x : toposort(cur->src(0)))
      if (x->op == Op::REDUCE) groups.emplace_back(x->src().begin() + 1, x->src().end());
    for (const UOp* root : index->src()) {
      groups.emplace_back();
      for (const UOp* x : toposort(root))
        if (x->op == Op::RANGE) groups.back().push_back(x);
    }
    auto together = [&](const UOp* a, const UOp* b) {
      for (const auto& g : groups)
        if (lists(g, a) != lists(g, b)) return false;
      return true;
    };
    // an END's loops nest in list order: only neighbours merge. A REDUCE's order is free: any pair.
    auto rs = cur->src().subspan(1);
    for (size_t i = 0; i < rs.size() && !again; i++) {
      for (size_t j = 0; j < rs.size() && !again; j++) {
        if (i == j || (u->op == Op::END && j != i + 1)) continue;
        const UOp *r0 = rs[i], *r1 = rs[j];
        if (r0->arg<RangeArg>().type != r1->arg<RangeArg>().type || !together(r0, r1)) continue;
        auto with = merged(r0, r1);
        if (int64_t n = count_divmod(graph_rewrite(replace_ranges(index, with), sym())); n <= divmods) {
          cur = graph_rewrite(replace_ranges(cur, with), sym()), divmods = n, again = true;
        }
      }
    }
  }
  return cur == u ? nullptr : cur;
}

}  // namespace

const UOp* split_ranges(const UOp* sink) {
  // by axis, for a deterministic order: the range and the largest modulus that divides its end
  std::map<int32_t, std::pair<const UOp*, int64_t>> splits;
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::FLOORMOD || u->src(0)->op != Op::RANGE || u->src(1)->op != Op::CONST) continue;
    const UOp* r = u->src(0);
    int64_t c = u->src(1)->ival();
    if (r->src(0)->op != Op::CONST || c < 2 || r->src(0)->ival() % c != 0 || r->src(0)->ival() == c) continue;
    auto& s = splits[r->arg<RangeArg>().axis];
    if (s.first == nullptr || c > s.second) s = {r, c};
  }
  if (splits.empty()) return sink;
  Context& ctx = sink->ctx();
  int32_t next_axis = first_free_axis(sink);
  std::unordered_map<const UOp*, RangeReplacement> with;
  for (const auto& [axis, rc] : splits) {
    auto [r, c] = rc;
    RangeArg outer_arg = r->arg<RangeArg>(), inner_arg = outer_arg;
    inner_arg.axis = next_axis++;
    const UOp* outer = ctx.make(Op::RANGE, r->dtype, {ctx.cint(r->src(0)->ival() / c, r->dtype)}, outer_arg);
    const UOp* inner = ctx.make(Op::RANGE, r->dtype, {ctx.cint(c, r->dtype)}, inner_arg);
    with[r] = {Expr(outer) * c + inner, {outer, inner}};
  }
  return replace_ranges(sink, with);
}

const PatternMatcher& pm_simplify_ranges() {
  static const PatternMatcher pm({Rule(UPat::op({Op::END, Op::REDUCE}).allow_any_len(), merge_adjacent)});
  return pm;
}

}  // namespace kiln::codegen
