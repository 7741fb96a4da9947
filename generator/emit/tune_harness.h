// kiln tune's timing harness (tune.cpp builds and runs it): the C source of a program that checks
// and times a variant's candidates through the kernel ABI. Internal to generator/emit/.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "generator/codegen/pipeline.h"
#include "generator/frontend/spec_ast.h"
#include "generator/ir/uop.h"

namespace kiln::emit::detail {

// one kernel buffer at the shape timed: its bytes, its element kind and size
struct BufferInfo {
  int64_t bytes;
  int kind;  // 0 bool, 1 float32, 2 float64, 3 float16, 4 bfloat16, 5 integer
  int elem;
};

// The value of dim `d` a harness times a variant at: inside the bucket `b` (none: the generic
// variant's, which no bucket takes), as near `want` as the range allows; none if no value is.
std::optional<int64_t> value_in_bucket(const frontend::Dim& d, const frontend::Specialization* b, int64_t want);

// The buffers of a kernel AST by PARAM slot, their sizes at these values of the dims
// (`dims`: the spec's DEFINE_VARs, in the order of `values`).
std::vector<BufferInfo> buffers_of(const UOp* ast, const std::vector<const UOp*>& dims,
                                   const std::vector<int64_t>& values);

// The harness for `count` kernels kiln_tune_0 .. kiln_tune_<count-1> (0: the heuristics'): run as
// `harness <first> <budget ms>`, it runs kernel 0 for the reference outputs from random non-zero
// inputs, then each kernel from `first` on from the same inputs, checks its outputs and times it
// in turn with kernel 0: "c <i> ok <ns> <ns of kernel 0>" or "c <i> mismatch ...", one line each,
// until the budget is spent ("stop"). `scratch`: the bytes of the scratch buffer the kernels take
// after their buffers (codegen::CKernel::scratch_slot; one core's), 0 for none; it is not compared.
std::string harness_c(size_t count, const std::vector<BufferInfo>& bufs, const std::vector<int64_t>& values,
                      int64_t scratch = 0);

// The bytes of the scratch buffer the kernels take after their `nbufs` buffers at these values of
// the dims (the most any takes, one core's; 0 for none): InternalError where a kernel's is in
// another slot or its size does not fold.
int64_t scratch_bytes(const std::vector<codegen::CKernel>& ks, size_t nbufs, const std::vector<const UOp*>& dims,
                      const std::vector<int64_t>& values);

// How tune.cpp compiles and runs the harness (and kiln tune's --runner): a word quoted for sh, and
// a shell command run with its standard output and error passed line by line to `line` (the exit
// status, as pclose gives it; -1 where it could not start).
std::string shell_quote(const std::string& s);
int run_command(const std::string& cmd, const std::function<void(const std::string&)>& line);

}  // namespace kiln::emit::detail
