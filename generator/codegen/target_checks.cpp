// early movement ops: the seeds push movement ops left in a kernel into its index math here.
// kiln's scheduler already carries every movement op back into the index of the load it
// shapes, so a kernel reaching codegen has none; the stage checks that.
//
// The stages of the seeds' pipeline that have no work on the CPU target, each a check that the
// kernel indeed gives it none (a kernel that did would need a target this one is not):
//   local buffers:     no local (shared) memory: opts refuse LOCAL and GROUP, so no range is
//                      Local or GroupReduce and no buffer lives in local memory.
//   devectorize:       the seeds split vectors to the widths the target supports; kiln's vectors
//                      are made by vectorize at the target's width, so the check is that none is
//                      wider than its vector registers (memory coalescing, grouping consecutive
//                      accesses into vector ones, is vectorize's own: it makes them vector accesses).
//   implicit barriers: with no local memory, no access needs a workgroup barrier.
//   move gates:        the C renderer guards an access by the gate of its INDEX,
//                      INDEX(buf, WHERE(valid, i, Invalid)), so gates stay there; the check is
//                      that Invalid appears nowhere else (it has no value to compute with).
#include <unordered_set>

#include "generator/codegen/passes.h"

namespace kiln::codegen {

namespace {

[[noreturn]] void needs_another_target(const char* stage, const UOp* u, const char* what) {
  throw InternalError(std::string("stage '") + stage + "': the kernel " + what + " (" + std::string(op_name(u->op)) +
                      "), which the CPU target has no use for");
}

bool local(const UOp* u) { return u->dtype.ptr && u->dtype.addrspace == AddrSpace::Local; }

}  // namespace

const UOp* check_no_movement_ops(const UOp* sink) {
  for (const UOp* u : toposort(sink))
    if (in_group(u->op, G_MOVEMENT))
      throw InternalError("stage 'early movement ops': a movement op (" + std::string(op_name(u->op)) +
                          ") reached codegen; the scheduler turns them into index math");
  return sink;
}

const UOp* check_no_local_buffers(const UOp* sink) {
  for (const UOp* u : toposort(sink)) {
    if (u->op == Op::RANGE) {
      AxisType t = u->arg<RangeArg>().type;
      if (t == AxisType::Local || t == AxisType::GroupReduce || t == AxisType::Warp)
        needs_another_target("local buffers", u, "has a local or grouped axis");
    }
    if (local(u)) needs_another_target("local buffers", u, "uses local memory");
  }
  return sink;
}

const UOp* check_vector_widths(const UOp* sink, int vector_bytes) {
  std::unordered_set<const UOp*> fragments;  // a tensor core's operands are registers of their own
  const std::vector<const UOp*> topo = toposort(sink);
  for (const UOp* u : topo)
    if (u->op == Op::WMMA) fragments.insert(u->src().begin(), u->src().end());
  for (const UOp* u : topo) {
    DType d = u->dtype.elem();
    if (d.count > 1 && itemsize(d) > vector_bytes && !fragments.count(u))
      throw InternalError("stage 'devectorize': a vector of " + std::to_string(itemsize(d)) + " bytes (" +
                          std::string(op_name(u->op)) + " " + to_string(u->dtype) + "), wider than the target's " +
                          std::to_string(vector_bytes));
  }
  return sink;
}

const UOp* check_gates(const UOp* sink) {
  auto gated = [](const UOp* w) { return w->op == Op::WHERE && w->src(2)->is_invalid(); };
  for (const UOp* u : toposort(sink))
    for (size_t i = 0; i < u->nsrc(); ++i) {
      const UOp* s = u->src(i);
      bool address = u->op == Op::INDEX && i == 1;
      if ((gated(s) && !address) || (s->is_invalid() && !(gated(u) && i == 2)))
        throw InternalError("stage 'move gates': Invalid outside the address of an INDEX, in " +
                            std::string(op_name(u->op)));
    }
  return sink;
}

const UOp* check_no_barriers(const UOp* sink) {
  for (const UOp* u : toposort(sink))
    if (u->op == Op::BARRIER || local(u)) needs_another_target("implicit barriers", u, "shares local memory");
  return sink;
}

}  // namespace kiln::codegen
