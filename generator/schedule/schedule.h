// The scheduler: a tensor program (inputs, outputs) -> an ordered list of kernel ASTs.
//
// A kernel AST has the seeds' form, all indices weakint:
//   SINK(END(STORE(INDEX(PARAM, idx), value), RANGE...))   arg Name{kernel name}; a node stored to
//             several outputs has END(GROUP(STORE...), RANGE...)
//   PARAM     dtype T* (the buffer's element type), arg ParamArg{slot, -1, buffer name},
//             src (element count, a weakint expression of the dims). Slots: the buffers the
//             kernel stores first, then the ones it only reads, in order of first use.
//   INDEX(PARAM, idx)          a flat row-major element index; as a value it is a load. A padded
//                              read's index is WHERE(valid, idx, Invalid): a gated load that reads 0.
//   RANGE(end) arg RangeArg{axis, Loop}    one per stored axis of size != 1 (size-1 axes index 0)
//   REDUCE(value, RANGE...) arg ReduceArg{ADD|MUL|MAX}, the ranges of type Reduce
//   ALU ops, CAST, BITCAST, WHERE, CONST, DEFINE_VAR (the dims) as in the tensor graph.
// A STORE with no ranges (a scalar) is not wrapped in an END.
//
// What is fused: elementwise ops are always inlined into their consumers (and recomputed where a
// consumer reads them more than once). A reduce is inlined into its consumer kernel when it is
// computed there once per value it produces: used at one index only, by one kernel only, and
// that index depends on a prefix of the kernel's output axes and on no reduce axis. So relu(x@w+b)
// is one kernel, and softmax/layernorm over the last axis are one kernel each (the row
// statistics are computed once per row, before the row's outputs). Otherwise the scheduler
// realizes a buffer: the reduce itself when it is used at several indices or by several kernels,
// or the node under the movement ops through which the consumer reads it (matmul's expand), or
// a pad that overlapping windows read (a convolution's or a pooling's padded input: one pass over
// the input, then every window reads it without a gate, which vectorizes).
// A reduction of a constant 2^16 elements or more to one value is first split in two (256
// partial results, then theirs: split_reduce.h), so the cores can share the first kernel.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "generator/frontend/tensor.h"
#include "generator/ir/uop.h"

namespace kiln::schedule {

struct Buffer {
  enum class Kind { Input, Output, Intermediate };
  Kind kind = Kind::Input;
  std::string name;             // the input/output name; intermediates are "t0", "t1", ...
  DType dtype;                  // element dtype (never weak)
  Shape shape;                  // dims as weakint UOps
  const UOp* numel;             // element count, simplified
  int32_t position = -1;        // Input/Output: the index in the program's inputs/outputs
  const UOp* offset = nullptr;  // Intermediate: byte offset in the workspace (64-byte aligned)
  int32_t first_kernel = -1;    // the kernel that writes it (Input: -1)
  int32_t last_kernel = -1;     // the last kernel that reads it (-1: none)
};

struct Kernel {
  std::string name;              // "<program>_<n>"
  const UOp* ast;                // the SINK
  std::vector<int32_t> buffers;  // PARAM slot -> index into Schedule::buffers
};

struct Schedule {
  std::vector<Buffer> buffers;   // inputs (program order), outputs (program order), intermediates
  std::vector<Kernel> kernels;   // in execution order
  const UOp* workspace_bytes;    // arena size for the intermediates, simplified weakint (0 if none)
  std::vector<const UOp*> vars;  // the DEFINE_VARs the program uses, by creation id
};

// Schedules outputs computed from inputs (both Tensor API tensors of one Context). An output may
// be an input or another output. `name` prefixes kernel names; output buffers take
// `output_names` ("out0", "out1", ... where missing). Deterministic: the same program gives the
// same kernels, node for node. Throws ShapeError for a program it cannot schedule.
Schedule schedule(std::span<const Tensor> inputs, std::span<const Tensor> outputs, std::string_view name,
                  std::span<const std::string> output_names = {});

std::string describe(const Schedule& s);  // a readable multi-line summary (buffers, kernels, plan)

}  // namespace kiln::schedule
