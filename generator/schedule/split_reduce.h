// Reductions to one value over long inputs, split in two so the cores can share the first part
// (split_reduce.cpp).
#pragma once

#include <span>
#include <vector>

#include "generator/frontend/tensor.h"

namespace kiln::schedule {

std::vector<Tensor> split_total_reductions(std::span<const Tensor> outputs);

}  // namespace kiln::schedule
