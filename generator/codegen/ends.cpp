// split ends (and the range helpers of passes.h): an END closing several ranges becomes nested ENDs of one range each,
// the last (innermost) range closed first, so every loop has exactly one closing node.
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

const PatternMatcher& pm_split_ends() {
  static const PatternMatcher pm({Rule(UPat::op({Op::END}).allow_any_len(), [](const Match& m) -> const UOp* {
    const UOp* e = m.root;
    if (e->nsrc() <= 2) return nullptr;
    Context& ctx = e->ctx();
    const UOp* cur = e->src(0);
    for (size_t i = e->nsrc(); i-- > 1;) cur = ctx.make(Op::END, dtypes::void_, {cur, e->src(i)});
    return cur;
  })});
  return pm;
}

}  // namespace kiln::codegen
