// The stages of a GPU target's local memory: "local buffers" checks what a kernel keeps there
// against the target's, "implicit barriers" orders its writes before its reads.
//
// A local buffer (a BUFFER in the Local space: a work group's partial results, "remove reduces"'
// GROUP rewrite) is written by every work item of the group and then read by all of them. The
// reads come after a barrier (tinygrad's add_raw_barrier): an AFTER of a local buffer that orders
// it after a store into local memory orders it after BARRIER(that store) instead, which the
// renderer writes as the dialect's work-group barrier. The stores sit in no loop (the group's one
// pass and its halving steps, "remove reduces"), so every work item reaches each barrier; a step's
// store overwrites only partials no other item read in the step before (its own), so no write needs
// a barrier after the reads (tinygrad's add_war_barrier has nothing to do).
#include "generator/codegen/passes.h"
#include "generator/target/target.h"

namespace kiln::codegen {

namespace {

bool local_buffer(const UOp* u) { return u->op == Op::BUFFER && u->dtype.addrspace == AddrSpace::Local; }

const UOp* buffer_of(const UOp* u) {
  while (u->op == Op::AFTER || u->op == Op::INDEX) u = u->src(0);
  return u;
}

}  // namespace

const UOp* check_local_buffers(const UOp* sink, const target::Target& t) {
  if (!t.gpu) return check_no_local_buffers(sink);
  int64_t bytes = 0;
  for (const UOp* u : toposort(sink)) {
    if (u->op == Op::RANGE) {
      AxisType a = u->arg<RangeArg>().type;
      if (a == AxisType::Warp)
        throw InternalError("stage 'local buffers': a " + std::string(axis_type_name(a)) + " range, which kiln's " +
                            t.name + " kernels do not make yet");
    }
    if (local_buffer(u)) bytes += u->arg<ParamArg>().size * itemsize(u->dtype.elem());
  }
  if (bytes > t.local_bytes)
    throw InternalError("stage 'local buffers': the kernel keeps " + std::to_string(bytes) +
                        " bytes in local memory, " + t.name + " has " + std::to_string(t.local_bytes));
  return sink;
}

const UOp* add_barriers(const UOp* sink, const target::Target& t) {
  if (!t.gpu) return check_no_barriers(sink);
  std::unordered_map<const UOp*, const UOp*> with;
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::AFTER || !local_buffer(u->src(0)) || u->nsrc() < 2) continue;
    bool after_store = false;
    for (const UOp* dep : u->src().subspan(1))
      for (const UOp* d : toposort(dep)) after_store |= d->op == Op::STORE && local_buffer(buffer_of(d->src(0)));
    if (!after_store) continue;
    std::vector<const UOp*> deps(u->src().begin() + 1, u->src().end());
    with[u] = u->ctx().make(Op::AFTER, u->dtype, {u->src(0), u->ctx().make(Op::BARRIER, dtypes::void_, deps)});
  }
  return with.empty() ? sink : substitute(sink, with);
}

}  // namespace kiln::codegen
