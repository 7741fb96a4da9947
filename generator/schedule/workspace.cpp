#include "generator/schedule/workspace.h"

#include <algorithm>

#include "generator/frontend/shape.h"

namespace kiln::schedule {

namespace {

struct Slot {
  const UOp* bytes;    // the largest aligned size it holds
  int32_t free_after;  // the last kernel that reads its current buffer
};

const UOp* aligned_bytes(const Buffer& b) {
  Expr bytes = Expr(b.numel) * int64_t(itemsize(b.dtype));
  return simplify_dim((bytes + (kWorkspaceAlign - 1)) / kWorkspaceAlign * kWorkspaceAlign);
}

}  // namespace

void plan_workspace(Context& ctx, Schedule& s) {
  std::vector<Slot> slots;
  std::vector<size_t> slot_of(s.buffers.size(), SIZE_MAX);
  // buffers in the order they are written; a slot is free once its buffer's last reader ran
  // before the writer of the new one (a kernel never reads and writes the same bytes)
  std::vector<size_t> order;
  for (size_t i = 0; i < s.buffers.size(); ++i)
    if (s.buffers[i].kind == Buffer::Kind::Intermediate) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return s.buffers[a].first_kernel < s.buffers[b].first_kernel; });
  for (size_t i : order) {
    Buffer& b = s.buffers[i];
    const UOp* bytes = aligned_bytes(b);
    int32_t last = std::max(b.last_kernel, b.first_kernel);
    size_t pick = SIZE_MAX;
    for (size_t k = 0; k < slots.size(); ++k) {
      if (slots[k].free_after >= b.first_kernel) continue;
      if (pick == SIZE_MAX || (slots[k].bytes == bytes && slots[pick].bytes != bytes)) pick = k;
    }
    if (pick == SIZE_MAX) {
      slots.push_back({bytes, last});
      pick = slots.size() - 1;
    } else {
      Slot& sl = slots[pick];
      if (sl.bytes != bytes) sl.bytes = simplify_dim(maximum(Expr(sl.bytes), Expr(bytes)));
      sl.free_after = last;
    }
    slot_of[i] = pick;
  }
  std::vector<const UOp*> offsets;
  const UOp* total = ctx.cint(0);
  for (const Slot& sl : slots) {
    offsets.push_back(total);
    total = simplify_dim(Expr(total) + Expr(sl.bytes));
  }
  for (size_t i : order) s.buffers[i].offset = offsets[slot_of[i]];
  s.workspace_bytes = total;
}

}  // namespace kiln::schedule
