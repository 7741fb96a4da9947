// Where the scheduler realizes a padded tensor (schedule.cpp): under windows that read each of its
// elements several times, a convolution's or a pooling's, which then read it without a gate.
#pragma once

#include <span>

#include "generator/ir/uop.h"

namespace kiln::schedule {

// Whether windows read each element of a padded dim several times: some index into it (`padded`,
// one per padded dim) moves by less with an output range than a reduce range spans (oy + ky - 1:
// by 1 against 3; a stride-2 window's 2 against 3). A padded sum reads each element once (a split
// reduction's p * chunk + r: chunk against chunk), as does a pooling whose stride is its window.
bool windows_overlap(Context& ctx, std::span<const UOp* const> padded);

}  // namespace kiln::schedule
