// The float64 reference interpreter for tensor graphs (tests only, never shipped). It knows the
// primitive ops only (movement ops, ALU ops, CAST/BITCAST, REDUCE), so a composite built by
// kiln::Tensor is checked against its definition, not against itself. Floats are evaluated in
// double, integers exactly at their dtype's width (ref::alu, not the generator's exec_alu), bools as 0/1.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "generator/ir/uop.h"

namespace kiln::oracle {

struct Array {
  std::vector<int64_t> shape;
  DType dtype;
  std::vector<ConstValue> values;  // row-major
  std::vector<double> doubles() const;
  size_t size() const { return values.size(); }
};

struct Bindings {
  std::map<std::string, int64_t> vars;            // DEFINE_VAR name -> value
  std::map<int32_t, std::vector<double>> inputs;  // PARAM slot -> row-major values
};

struct OracleError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<int64_t> eval_shape(std::span<const UOp* const> dims, const Bindings& b);
Array evaluate(const UOp* root, const Bindings& b);

}  // namespace kiln::oracle
