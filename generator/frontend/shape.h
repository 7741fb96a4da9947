// Shape inference for the tensor graph. A shape is a list of weakint dims: CONSTs for literal
// sizes, DEFINE_VARs for symbolic ones (M), or simplified index expressions of them (M*2).
// Dims are interned and simplified, so two equal dims are the same pointer.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "generator/ir/uop.h"

namespace kiln {

using Shape = std::vector<const UOp*>;

// A user error in a tensor program: the message says what was expected and what was found.
class ShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string dim_str(const UOp* d);       // "M", "784", "M*2"
std::string shape_str(const Shape& s);   // "[M, 784]"
const UOp* simplify_dim(const UOp* d);   // simplify(d), kept weakint
const UOp* dim_product(const Shape& s);  // simplified product, 1 for ()
bool dim_is(const UOp* d, int64_t v);    // d is the CONST v

// Which sources of `u` are tensors (the others are shape/axis arguments).
std::span<const UOp* const> tensor_sources(const UOp* u);

// The shape of one node from the shapes of its tensor sources (in tensor_sources order).
// Throws ShapeError on an ill-formed node.
Shape infer_shape(const UOp* u, std::span<const Shape* const> src_shapes);

// Memoized shapes of a graph's nodes, keyed by node id; computed iteratively.
class ShapeCache {
 public:
  const Shape& shape_of(const UOp* t);

 private:
  std::unordered_map<uint32_t, Shape> memo_;
};

Shape shape_of(const UOp* t);  // with a temporary cache

}  // namespace kiln
