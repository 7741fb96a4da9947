// Small helpers shared by the kernel-runner tests: filled and poisoned buffers, and float32
// schedule buffers of one dim for hand-built schedules.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tests/unit/kernel_interp.h"

namespace kiln::kernel_testing {

inline interp::Buf filled(DType d, std::vector<double> v) {
  interp::Buf b(d, int64_t(v.size()));
  b.fill(v);
  return b;
}

inline interp::Buf poisoned(DType d, int64_t n) {
  interp::Buf b(d, n);
  b.poison();
  return b;
}

inline schedule::Buffer buffer(schedule::Buffer::Kind kind, std::string name, const UOp* n, int32_t position,
                               const UOp* offset = nullptr) {
  schedule::Buffer b;
  b.kind = kind;
  b.name = std::move(name);
  b.dtype = dtypes::float32;
  b.shape = {n};
  b.numel = n;
  b.position = position;
  b.offset = offset;
  return b;
}

}  // namespace kiln::kernel_testing
