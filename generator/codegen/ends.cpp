// split ends (and the range helpers of passes.h): an END closing several ranges becomes nested ENDs of one range each,
// the last (innermost) range closed first, so every loop has exactly one closing node. An END that lists no
// range any more (symbolic folds a range of one iteration to its value) closes nothing and goes.
#include "generator/codegen/passes.h"

#include <algorithm>
#include <unordered_map>

namespace kiln::codegen {

int32_t first_free_axis(const UOp* sink) {
  int32_t next = 0;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::RANGE) next = std::max(next, u->arg<RangeArg>().axis + 1);
  return next;
}

const UOp* clone_range(const UOp* r, int32_t axis) {
  RangeArg a = r->arg<RangeArg>();
  a.axis = axis;
  return r->ctx().make(Op::RANGE, r->dtype, r->src(), a);
}

const UOp* replace_ranges(const UOp* sink, const std::unordered_map<const UOp*, RangeReplacement>& with) {
  // one pass, sources first
  std::vector<const UOp*> order = toposort(sink);
  std::vector<const UOp*>& done = node_table(sink);  // what each node of `order` became, by id
  std::vector<const UOp*> src;
  for (const UOp* u : order) {
    if (auto it = with.find(u); it != with.end()) {
      done[u->id] = it->second.expr;
      continue;
    }
    src.clear();
    bool changed = false, lists_ranges = u->op == Op::END || u->op == Op::REDUCE;
    for (size_t i = 0; i < u->nsrc(); ++i) {
      const UOp* s = u->src(i);
      auto it = lists_ranges && i > 0 ? with.find(s) : with.end();
      if (it == with.end()) {
        src.push_back(done[s->id]);
        changed |= src.back() != s;
        continue;
      }
      for (const UOp* p : it->second.pieces)
        if (std::find(src.begin() + 1, src.end(), p) == src.end()) src.push_back(p);
      changed = true;
    }
    done[u->id] = changed ? u->with_src(src) : u;
  }
  return done[sink->id];
}

// The ranges an END closes, outermost first: each listed RANGE, and for anything else listed the
// ranges it depends on (a range that symbolic folded to its one value, a CONST, closes none).
static std::vector<const UOp*> closed_ranges(const UOp* e) {
  std::vector<const UOp*> out;
  auto add = [&](const UOp* r) {
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  };
  for (const UOp* s : e->src().subspan(1)) {
    if (s->op == Op::RANGE) {
      add(s);
      continue;
    }
    std::vector<const UOp*> inner;
    for (const UOp* u : toposort(s))
      if (u->op == Op::RANGE) inner.push_back(u);
    std::sort(inner.begin(), inner.end(),
              [](const UOp* a, const UOp* b) { return a->arg<RangeArg>().axis < b->arg<RangeArg>().axis; });
    for (const UOp* r : inner) add(r);
  }
  return out;
}

const PatternMatcher& pm_split_ends() {
  static const PatternMatcher pm({Rule(UPat::op({Op::END}).allow_any_len(), [](const Match& m) -> const UOp* {
    const UOp* e = m.root;
    if (e->nsrc() == 2 && e->src(1)->op == Op::RANGE) return nullptr;
    Context& ctx = e->ctx();
    const UOp* cur = e->src(0);
    std::vector<const UOp*> ranges = closed_ranges(e);
    for (size_t i = ranges.size(); i-- > 0;) cur = ctx.make(Op::END, dtypes::void_, {cur, ranges[i]});
    return cur;
  })});
  return pm;
}

}  // namespace kiln::codegen
