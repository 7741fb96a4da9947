// The kernel-AST interpreter (tests only, never shipped): runs the scheduler's kernels on real
// typed bytes, so a test sees what the generated code would compute. Values are exact for their
// dtype (ref::alu, ref::to_dtype, the oracle's own arithmetic: float32 rounds to float32, int32 wraps). Every index
// is bounds-checked against its PARAM's element count, and a whole schedule runs with all its
// intermediates placed at their planned offsets in one poisoned workspace arena, so a wrong index
// or a wrong memory plan shows up as an InterpError or as a wrong result. It runs the IR of every
// codegen stage too: the graph form until "remove reduces", then linear programs with accumulator
// registers (run_linear, run_stage).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "generator/ir/uop.h"
#include "generator/schedule/schedule.h"
#include "tests/unit/guard_pages.h"

namespace kiln::interp {

struct InterpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Vars = std::map<std::string, int64_t>;  // DEFINE_VAR name -> value

// `numel` elements of a scalar dtype as the target stores them (bool 1 byte, half/bfloat16 as
// their 16-bit patterns, ...). Owns its bytes, or views bytes of an arena.
class Buf {
 public:
  Buf(DType dtype, int64_t numel);                   // owning, zero-filled
  Buf(DType dtype, int64_t numel, std::byte* data);  // a view: `data` must outlive the Buf
  Buf(Buf&&) = default;
  Buf& operator=(Buf&&) = default;
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;

  DType dtype() const { return dtype_; }
  int64_t numel() const { return numel_; }
  size_t bytes() const { return size_t(numel_) * size_t(itemsize(dtype_)); }
  std::byte* data() { return data_; }

  ConstValue get(int64_t i) const;            // throws for a bool byte that is neither 0 nor 1
  void set(int64_t i, const ConstValue& v);   // rounds/wraps v to the dtype
  void fill(std::span<const double> values);  // size must be numel
  void poison();                              // floats: 0xFF bytes (NaN); ints and bools: 0xA5
  std::vector<double> doubles() const;        // uint64 as unsigned; a poisoned bool reads NaN
  std::vector<ConstValue> values() const;     // a poisoned bool reads ConstValue::invalid()

 private:
  DType dtype_;
  int64_t numel_ = 0;
  std::vector<std::byte> own_;
  std::byte* data_ = nullptr;
};

// A dim (a weakint expression of DEFINE_VARs) evaluated with `vars`. Throws InterpError.
int64_t eval_dim(const UOp* d, const Vars& vars);

// Kernels shared among cores (they use the DEFINE_VAR ".core") run once per core, core = 0 ..
// vars[".cores"]-1 (default 1 core), one after another, as the C kernel would be called; the
// others run once. `run` gets the vars with ".core" and ".cores" bound.
void for_each_core(std::span<const UOp* const> nodes, const Vars& vars, const std::function<void(const Vars&)>& run);

// Runs one kernel AST (the SINK) with params_by_slot[ParamArg::slot] as its buffers. Each PARAM's
// element count (its source, evaluated with `vars`) and element dtype must match its buffer.
void run_kernel(const UOp* sink, std::span<Buf* const> params_by_slot, const Vars& vars);

// Runs a linear program (codegen::linearize's list, SINK last) the way the rendered C runs it: a
// RANGE opens its loop (its end evaluated once, at the start), the END of that range jumps back or
// falls through; every other node runs when reached. A value is its latest evaluation, readable
// only where C's block scoping shows it; accumulators (BUFFER in AddrSpace::Reg, addressed
// directly or through AFTER) are registers. Loads, stores and bounds checks are run_kernel's.
void run_linear(std::span<const UOp* const> linear, std::span<Buf* const> params_by_slot, const Vars& vars);

// Runs the sink of any codegen stage: the graph form while it has REDUCEs or no registers,
// otherwise split into one END per loop, linearized, and run as a linear program.
void run_stage(const UOp* sink, std::span<Buf* const> params_by_slot, const Vars& vars);

struct Output {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
  std::vector<ConstValue> exact;
};

struct RunOptions {
  // Reject two intermediates whose workspace bytes overlap while both are live (used by one
  // kernel range that intersects). Off, such a plan runs and corrupts what it corrupts.
  bool check_workspace_overlap = true;
  // Every buffer, each intermediate too, in memory of its own flush against a PROT_NONE page on
  // this side (guard::Pages), for native kernels; the plan's offsets are still checked. Without it,
  // inputs and outputs are owned vectors and intermediates live at their offsets in one arena.
  std::optional<guard::Side> guard;
};

// Runs every kernel of `s` in order. Inputs are given by input position; outputs come back by
// output position. Outputs and the workspace are poisoned before the first kernel.
std::vector<Output> run_schedule(const schedule::Schedule& s, const Vars& vars,
                                 const std::vector<std::vector<double>>& inputs, const RunOptions& opts = {});

// Runs kernel k of a schedule on its buffers (params_by_slot order).
using KernelRunner = std::function<void(size_t kernel, std::span<Buf* const> params_by_slot)>;

// The same, with each kernel run by `run` (any stage's sink through run_stage, a linear program
// through run_linear, ...) instead of run_kernel on its AST.
std::vector<Output> run_schedule(const schedule::Schedule& s, const Vars& vars,
                                 const std::vector<std::vector<double>>& inputs, const RunOptions& opts,
                                 const KernelRunner& run);

}  // namespace kiln::interp
