// The codegen stages, each in its own file; codegen/pipeline.cpp runs them in order.
#pragma once

#include <unordered_map>
#include <vector>

#include "generator/rewrite/rewrite.h"
#include "generator/target/target.h"

namespace kiln::codegen {

// Range helpers the stages share: the first axis id no range of `sink` uses, and a copy of a
// range under another axis id (a distinct loop over the same extent).
int32_t first_free_axis(const UOp* sink);
const UOp* clone_range(const UOp* r, int32_t axis);
// A range replaced by an expression of new ranges: `expr` wherever the range is used as a value,
// and `pieces` (outermost first) where END and REDUCE list it. Ranges replaced together may
// share pieces (a merge); each piece is listed once, where the first of them was.
struct RangeReplacement {
  const UOp* expr;
  std::vector<const UOp*> pieces;
};
const UOp* replace_ranges(const UOp* sink, const std::unordered_map<const UOp*, RangeReplacement>& with);

struct ReduceContext {
  int32_t acc_num = 0;    // accumulators made so far (their BUFFER slot)
  int32_t local_num = 0;  // local buffers made so far (a group's partial results)
  int32_t next_axis = 0;  // for the lane loops it clones: above every axis of the kernel
};

// load collapse (collapse.cpp): sum over v of (v == idx ? x[v] : 0) -> idx in range ? x[idx] : 0,
// on a kernel in symbolic's canonical form (the one-hot test as CMPNE or CMPEQ of the range).
const PatternMatcher& pm_load_collapse();

// split ranges (ranges.cpp): a range used as r % c (c dividing its constant end) becomes two
// loops, r = outer * c + inner.
const UOp* split_ranges(const UOp* sink);
// simplify ranges (ranges.cpp): ranges an END closes together (neighbours) or a REDUCE reduces
// together (any pair) merge into one loop where that takes no more divisions and modulos.
const PatternMatcher& pm_simplify_ranges();

// Stages with no work on the CPU target (target_checks.cpp): each checks that the kernel has none
// for it, and throws InternalError naming what needs another target.
const UOp* check_no_movement_ops(const UOp* sink);   // early movement ops
const UOp* check_no_local_buffers(const UOp* sink);  // local buffers
const UOp* check_gates(const UOp* sink);             // move gates
const UOp* check_no_barriers(const UOp* sink);       // implicit barriers
// On a GPU target (local_memory.cpp): "local buffers" checks that a kernel's local buffers fit the
// target's local memory; "implicit barriers" puts a BARRIER between local stores and the reads
// after them. Elsewhere they are check_no_local_buffers and check_no_barriers.
const UOp* check_local_buffers(const UOp* sink, const target::Target& t);
const UOp* add_barriers(const UOp* sink, const target::Target& t);
// devectorize: no vector is wider than the target's vector registers (`vector_bytes`)
const UOp* check_vector_widths(const UOp* sink, int vector_bytes);

// add loads (loads.cpp): an INDEX read as a value becomes LOAD(INDEX); a STORE's target stays.
const PatternMatcher& pm_add_loads();
// INDEX(buf, i) -> INDEX(buf, WHERE(valid, i, Invalid)): it addresses nothing where `valid` is
// false (nor where it already addressed nothing).
const UOp* gate_index(const UOp* idx, const UOp* valid);

// expander (expander.cpp): Upcast ranges of ENDs and Unroll ranges of REDUCEs unrolled into copies.
const PatternMatcher& pm_expander();

// The value a reduction by `op` (ADD, MUL or MAX) starts from: 0, 1, or the lowest value of `d`.
const UOp* reduce_identity(Context& ctx, Op op, DType d);

// remove reduces (reduce.cpp): REDUCE -> an accumulator register; graph_rewrite ctx: ReduceContext.
const PatternMatcher& pm_remove_reduces();
// Accumulations that the expander copied loop over the same range in the same place: one END
// (over a GROUP of their updates) closes the range for all of them, so they share one loop.
const UOp* merge_reduce_ends(const UOp* sink);

// gpu dims (gpudims.cpp): each Thread loop becomes the calling core's share of it; on a GPU target
// the Global loops become work-item ids (SPECIAL "idx0".."idx2", dim 0 innermost), merged or split to
// fit Target::global_max; loops that cannot be fitted stay loops.
inline constexpr const char* kCoreVar = ".core";
inline constexpr const char* kCoresVar = ".cores";
inline constexpr int64_t kMaxCores = 256;
// the scratch buffer pack_shared_operand (opt/pack.cpp) copies a tile's operand into: a PARAM in the
// slot after the kernel's buffers, of .cores regions, each of at most kPackElementsMost elements
// (where the operand's block may be larger, it is not packed)
inline constexpr const char* kPackBuffer = ".pack";
inline constexpr int64_t kPackElementsMost = int64_t(1) << 18;
const UOp* add_gpudims(const UOp* sink, const target::Target& t);
// "" where the kernel's Local ranges (LOCAL's work groups) fit t's work group as gpu dims lays them
// out (the last split dim 0); otherwise why they do not
std::string local_dims_misfit(const UOp* sink, const target::Target& t);

// split ends (ends.cpp): END(x, r0, r1) -> END(END(x, r1), r0), one range per END, outermost last; an END
// of no range (END(x, 0): symbolic folded a range of one iteration) -> x.
const PatternMatcher& pm_split_ends();

// lower index dtype (index_dtype.cpp): weakint becomes int32 where every index value of the
// kernel fits, int64 otherwise (one width per kernel, so index math never mixes widths).
const UOp* lower_index_dtype(const UOp* sink);

// decompositions (decompositions.cpp): math as arithmetic; graph_rewrite ctx: the target
// (const target::Target*). float32 EXP2 and LOG2 everywhere (they vectorize), and the math a target
// lacks (Target::math_ops): EXP2 and LOG2 on float64, TRUNC; float16 and bfloat16 via float32.
// Other math a target lacks (SIN, SQRT, POW) throws MathError (pipeline.h).
const PatternMatcher& pm_decompositions();

// renderer rules (render_rules.cpp): what the target's renderer prefers to the IR's own ops, as
// the seeds' renderers bring their extra_matcher. Both: FLOORDIV/FLOORMOD of a non-negative by a
// positive -> CDIV/CMOD (C's / and %, LLVM's sdiv and srem). LLVM's also: by a power of two, of
// any sign -> an arithmetic shift and a mask (floor semantics exactly; C leaves >> of a negative
// to the implementation, so the C renderer keeps its helper there).
const PatternMatcher& pm_renderer_rules(const target::Target& t);

// commit weak (weak.cpp): weak constants take the dtype of the op they feed.
const PatternMatcher& pm_commit_weak();

// vectorize (vectorize.cpp): each Lane loop elementwise over its lanes (W of them, a constant)
// becomes a loop of W / n iterations over vectors of n lanes, n * itemsize = vector_bytes: vector
// LOADs and STOREs of consecutive elements, lanewise ALU ops, STACK broadcasts, accumulators as
// BUFFERs of vectors (the contract: ops.def). Loops it cannot express stay scalar.
const UOp* vectorize_lanes(const UOp* sink, int vector_bytes);

// linearize (linearize.cpp): the kernel as a list in execution order. A RANGE opens its loop and
// the END of that range closes it; every other node sits in the innermost loop of the ranges it
// depends on (so work that does not depend on a loop is hoisted out of it), after its sources.
std::vector<const UOp*> linearize(const UOp* sink);

}  // namespace kiln::codegen
