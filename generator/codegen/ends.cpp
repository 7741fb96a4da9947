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

namespace {

const UOp* replace_range_lists(const Match& m, void* vctx) {
  const UOp* u = m.root;
  const auto& by_expr = *static_cast<std::unordered_map<const UOp*, const RangeReplacement*>*>(vctx);
  std::vector<const UOp*> src{u->src(0)};
  bool changed = false;
  for (const UOp* s : u->src().subspan(1)) {
    auto it = by_expr.find(s);
    if (it == by_expr.end()) {
      src.push_back(s);
      continue;
    }
    for (const UOp* p : it->second->pieces)
      if (std::find(src.begin() + 1, src.end(), p) == src.end()) src.push_back(p);
    changed = true;
  }
  return changed ? u->with_src(src) : nullptr;
}

}  // namespace

const UOp* replace_ranges(const UOp* sink, const std::unordered_map<const UOp*, RangeReplacement>& with) {
  std::unordered_map<const UOp*, const UOp*> exprs;
  std::unordered_map<const UOp*, const RangeReplacement*> by_expr;
  for (const auto& [r, rep] : with) {
    exprs[r] = rep.expr;
    by_expr[rep.expr] = &rep;
  }
  static const PatternMatcher pm({Rule(UPat::op({Op::END, Op::REDUCE}).allow_any_len(), replace_range_lists)});
  RewriteOptions o;
  o.name = "replace ranges";
  return graph_rewrite(substitute(sink, exprs), pm, &by_expr, o);
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
