// The workspace plan: every intermediate buffer gets a byte offset in one arena. Buffers whose
// lifetimes (writer kernel .. last reader kernel) do not overlap share space; sizes are symbolic
// in the dims, so a shared slot is as large as the largest buffer it holds (a MAX expression).
#pragma once

#include "generator/schedule/schedule.h"

namespace kiln::schedule {

inline constexpr int64_t kWorkspaceAlign = 64;

// Sets Buffer::offset of every intermediate and Schedule::workspace_bytes.
void plan_workspace(Context& ctx, Schedule& s);

}  // namespace kiln::schedule
