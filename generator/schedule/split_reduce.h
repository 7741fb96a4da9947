// Reductions to one value over long inputs, split in two so the cores can share the first part
// (split_reduce.cpp).
#pragma once

#include <span>
#include <vector>

#include "generator/frontend/shape.h"
#include "generator/frontend/tensor.h"

namespace kiln::schedule {

// `shapes`: the shapes of the graph's nodes, kept for the scheduler (nodes never change, so what
// it holds stays true after the split).
std::vector<Tensor> split_total_reductions(std::span<const Tensor> outputs, ShapeCache& shapes);

}  // namespace kiln::schedule
