// THE pipeline: a scheduled kernel AST -> a linear program -> C source. One function, one line a
// stage, in the order of seed 000's full_rewrite_to_sink; the stages the CPU target does not
// implement yet are listed in pipeline.cpp where they belong.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "generator/codegen/bounds.h"
#include "generator/codegen/opt/opts.h"
#include "generator/ir/uop.h"
#include "generator/target/target.h"

namespace kiln::codegen {

struct PipelineOptions {
  // where the kernel runs: its vector width decides how Lane loops become vectors (vectorize)
  const target::Target* target = target::find("cpu");
  // called after every stage with its name and result (kiln --dump-after, tests)
  std::function<void(std::string_view stage, const UOp* sink)> after_stage;
  bool verify = true;    // run the IR verifier after every stage (InternalError naming the stage)
  bool optimize = true;  // apply the CPU heuristics' opts (off: the kernel's loops as scheduled)
  std::vector<std::string>* applied_opts = nullptr;  // where given: the opts the heuristics chose ("LANES(1, 64)")
  // an access not proven inside its buffer (bounds.h) is an InternalError; off: it is only listed in
  // CKernel::bounds, for the caller to report (kiln gen and codegen warn: the prover does not know
  // every index form yet, and a valid spec must not be refused for that)
  bool require_proven_bounds = true;
  // with optimize: these opts (kiln tune's, from its database) instead of the heuristics' choice;
  // on a GPU target after the output loops are put on the grid, with its local memory for GROUP
  std::optional<TunedOpts> tuned;
  // with optimize: a kernel may take a scratch buffer (CKernel::scratch_slot) that the caller lays
  // out, .cores regions of CKernel::scratch_bytes each (kiln gen's dispatch and kiln tune's harness
  // do; a caller that passes the schedule's buffers only leaves it off)
  bool scratch = false;
};

// PipelineOptions::tuned does not apply to the kernel (the message says which opt and why).
class OptError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A kernel needs math its target cannot compute: no library function for it there and no
// decomposition in kiln. The message names the target, the op and the dtype.
class MathError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// (kiln gen reports it at the kernel's declaration; nothing else in the pipeline throws it.)

// The stage names in order, as PipelineOptions::after_stage reports them, then "linearize".
const std::vector<std::string_view>& stage_names();

// The rewrites, from the scheduler's kernel AST to the graph the linearizer takes.
const UOp* full_rewrite_to_sink(const UOp* ast, const PipelineOptions& opts = {});

struct CKernel {
  std::string name;
  const UOp* sink;                 // after the last rewrite
  std::vector<const UOp*> linear;  // the linearized program
  std::string source;              // the C function (without render::c_preamble())
  bool parallel = false;           // the cores share its work (else core 0 does it all)
  // a GPU kernel's launch, dim 0 first: the work items per dim (an expression of the dims; null:
  // 1), and per work group (null everywhere: the driver's choice)
  std::array<const UOp*, 3> global_size{}, local_size{};
  int32_t buffer_args = 0;          // the buffers an OpenCL kernel takes (its highest PARAM slot + 1), before the vars
  std::vector<AccessProof> bounds;  // every load and store, and whether it is proven inside its buffer
  // the scratch buffer (PipelineOptions::scratch): its slot, after the schedule's buffers (-1: none);
  // core c's region starts scratch_stride * c bytes in, and the last is scratch_bytes long (an
  // expression of the dims): a call with n cores passes (n - 1) * scratch_stride + scratch_bytes
  int32_t scratch_slot = -1;
  int64_t scratch_stride = 0;
  const UOp* scratch_bytes = nullptr;
};

// The whole path to C; it throws InternalError for an access it cannot prove in bounds (bounds.h)
// unless opts.require_proven_bounds is off.
// `vars` are the DEFINE_VARs in the order the caller passes their values;
// `symbol` names the function (default: the kernel's name).
CKernel compile_to_c(const UOp* ast, std::span<const UOp* const> vars, const PipelineOptions& opts = {},
                     std::string_view symbol = {});

// What kiln gen and codegen emit: compile_to_c where every access is proven. Where the opts made an
// index the prover cannot follow, the kernel is compiled again without opts (slower, never unsafe),
// and `fallback` (where given) is set to the access the opts' kernel left unproven (describe());
// where that is not proven either, an InternalError naming the kernel, the buffer and the index.
CKernel compile_proven(const UOp* ast, std::span<const UOp* const> vars, PipelineOptions opts,
                       std::string_view symbol = {}, std::string* fallback = nullptr);

}  // namespace kiln::codegen
