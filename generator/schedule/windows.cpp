#include "generator/schedule/windows.h"

#include <vector>

#include "generator/symbolic/symbolic.h"

namespace kiln::schedule {

bool windows_overlap(Context& ctx, std::span<const UOp* const> padded) {
  const UOp* at = ctx.var("kiln.step", 0, int64_t(1) << 40);  // a range's stand-in for step_along
  for (const UOp* j : padded) {
    std::vector<const UOp*> loops, reduces;
    for (const UOp* n : toposort(j))
      if (n->op == Op::RANGE) (n->arg<RangeArg>().type == AxisType::Reduce ? reduces : loops).push_back(n);
    for (const UOp* b : reduces) {
      std::optional<int64_t> sb = step_along(j, b, at);
      const UOp* extent = b->src(0);
      if (!sb || *sb <= 0 || extent->op != Op::CONST) continue;
      for (const UOp* a : loops)
        if (std::optional<int64_t> sa = step_along(j, a, at); sa && *sa > 0 && *sa < extent->ival() * *sb) return true;
    }
  }
  return false;
}

}  // namespace kiln::schedule
