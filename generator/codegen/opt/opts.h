// Opts: changes to a kernel's loop structure that keep its meaning, and the hand-coded
// heuristics that pick them for the CPU. An opt splits a range; the expander then unrolls the
// pieces marked Upcast (outputs) or Unroll (reductions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "generator/ir/uop.h"

namespace kiln::target {
struct Target;
}

namespace kiln::codegen {

struct Opt {
  // Lane: the inner piece stays a loop, innermost (see AxisType::Lane); Thread: see mark_thread_axis.
  // Local, Group, GroupTop (local memory) and Tc (tensor cores) need what the CPU target lacks.
  enum class Kind { Upcast, Unroll, Lane, Thread, Local, Group, GroupTop, Padto, Swap, Tc };
  Kind kind;
  int32_t axis;             // RangeArg::axis of the range it changes
  int64_t amount;           // a split's inner size; PADTO: the multiple; SWAP: the other axis
  std::string str() const;  // "UPCAST(1, 16)", "PADTO(0, 16)", "SWAP(0, 1)"
  bool operator==(const Opt&) const = default;
};

// Applies one opt to a kernel AST (for the CPU target). Returns nullptr when it does not apply,
// and then, when `why` is given, says why in words a user can act on.
//   UPCAST / UNROLL / LANE: splits the range `axis` into an outer range (end / amount) and an
//     inner range of `amount` marked Upcast, Unroll or Lane: r -> r_outer * amount + r_inner.
//     `amount` must divide the range's end (PADTO first where it does not). Refused for a range
//     that encloses another loop (an END inside it: softmax's stored term).
//   THREAD: mark_thread_axis, for the outermost output loop only.
//   PADTO: the range runs to the next multiple of `amount`; the extra iterations do nothing
//     (addresses that depend on the range are gated, a reduction over it adds the identity).
//     Unchanged when the end is already a multiple. Refused for split ranges, reductions without
//     an identity, and where a padded iteration could divide by zero.
//   SWAP: exchanges the loop order of two output ranges closed by one END.
//   GROUP / GROUPTOP (with `local_memory`, a GPU target's): the reduction `axis` is padded to a
//     multiple of `amount` (PADTO) and split into a GroupReduce range of `amount`, the work items of
//     one group, and a Reduce range each of them runs: GROUP r -> rest * amount + g (neighbouring
//     work items read neighbouring elements), GROUPTOP r -> g * (end / amount) + rest. "remove
//     reduces" combines the group's partial results through local memory. A kernel of one store;
//     several reductions may each be grouped, all by one amount (one group shares them).
//   LOCAL (with `local_memory`): splits a Global loop into work groups of `amount` items (Local,
//     "lidx<d>"); in a kernel with GROUP, instead an output loop no reduction depends on is shared
//     among the group's items (r -> outer * amount + lidx0), `amount` the group's size, one loop
//     per nest, in a kernel that does not read what it stores.
//   TC, and GROUP / GROUPTOP / LOCAL without local memory: refused, the CPU target has no local
//     memory or tensor cores.
const UOp* apply_opt(const UOp* sink, const Opt& opt, std::string* why = nullptr, bool local_memory = false);

// Tiles the reduction of a kernel that stores a plain sum (C = sum over k of ...): a first nest
// stores the output's start (zero; for a symbolic length n, a dim, the sum of its last n % tile
// steps), then for each block of `tile` steps of k the block's partial sums are added to it, with
// the block loop outside the output loops. A block of B then stays in cache (and its pages in the
// TLB) while every output tile uses it. Returns nullptr when the kernel is not of that form, or a
// constant length is not a multiple of 2 * tile, or a symbolic one is never as long as 2 * tile.
const UOp* tile_reduction(const UOp* sink, int64_t tile);

// The operand the rows of a tiled reduction share (a matmul's B, whose rows are N elements apart),
// packed block by block (pack.cpp): in each block of tile_reduction's kernel, before the tiles, a nest
// copies what the tiles read of it into a scratch buffer (the PARAM kPackBuffer, in the slot after
// the kernel's others), one panel of the lanes' columns after another, each panel's `step` rows of
// lanes in a row; the tiles then read their panel's elements one after another, not rows of B 4 or 8
// KiB apart (a 2048-column sgemm's block: 128 pages, past the TLB, and its rows in the same cache
// sets). Where the cores share the rows, each copies the whole block into a region of its own
// (`.core`'s; the buffer holds `.cores` of them). Nothing is copied where there are no rows of tiles.
// Measured by hand on the tile kiln makes (x86_64-avx2, AMD EPYC Zen 3, 1 thread): sgemm 2048^3
// 52.5 -> 75.9 GFLOP/s (OpenBLAS 88.1), 1024^3 54.6 -> 72.0 (86.0), M = 16 31.8 -> 40.2. Returns
// nullptr where the kernel is not of that form (no block loop, no lanes, a gated or row-varying read).
const UOp* pack_shared_operand(const UOp* sink);

// The heuristics' blocks for the caches (pack.cpp), on a tiled nest (SINK(END(STORE(out, REDUCE),
// rows..., columns, lanes))) where the compile has a scratch: the reduction in blocks of `block`
// steps, and the columns in chunks (whole tiles) whose packed block (block x chunk) takes a quarter
// of `l2_bytes`, the chunk loop outside the blocks, so that the block stays in L2 while every row tile reads
// it, and the output is read and written once a block, not once every 64 steps. Columns past the
// last whole chunk are a nest of their own, blocked the same way. A symbolic length's steps past
// the last block (up to block - 1) are summed in the nest that starts the output, which packs them
// as one block of its own. Every block's operand is packed (pack_shared_operand) into one scratch. Returns nullptr
// where any of it does not apply (the caller then blocks by 64). Measured by hand on the C of the sgemm variant
// (x86_64-avx512, Xeon with 1.25 MiB of L2, 1 thread, against OpenBLAS in the same run): blocks of 64 over all columns
// 0.90x at 1024^3 and 0.83x at 2048^3; blocks of 256 over chunks of 512 columns 0.99x and 0.89x; blocks of 256 over all
// columns 0.93x and 0.73x (the packed block past L2).
inline constexpr int64_t kCacheBlock = 256;
const UOp* block_for_caches(const UOp* sink, int64_t block, int64_t l2_bytes);

// The cleanup tile of a symbolic (or odd) output loop. Splits the loop `r` of a kernel with one
// loop nest (SINK(END(STORE, ranges...))) into two kernels of one nest each, which together store
// what it stored: `first` over the largest multiple of `f` in r's end n (n / f * f iterations, a
// known multiple of f, so LANES and UPCAST by f apply there), `rest` over the n % f iterations
// past it. The two share ranges; renumber `rest` before joining them (join_nests). Returns
// {nullptr, nullptr} when r is not an output loop of the nest, or f already divides n, or n is
// never as large as f. One iteration past the tiles is no loop: `rest` stores it alone. The outer
// piece of a split range (LANES's tiles) only with `pieces`.
struct NestSplit {
  const UOp* first;
  const UOp* rest;
};
NestSplit split_tail(const UOp* sink, const UOp* r, int64_t f, bool pieces = false);

// Every range of `sink` again, with axes from `first_axis` on (in the order the ranges are
// found), so that it shares no range with a kernel it is joined with.
const UOp* renumber_ranges(const UOp* sink, int32_t first_axis);

// One kernel that runs both kernels' nests, `a`'s first (they must store disjoint elements and
// share no range).
const UOp* join_nests(const UOp* a, const UOp* b);

// Marks the outermost output loop Thread: the cores share it (the stage "gpu dims" gives each
// core its part). Returns nullptr for a kernel without such a loop; a kernel with no Thread loop
// runs whole on core 0.
const UOp* mark_thread_axis(const UOp* sink);

// (gpu_heuristic.cpp) The output loops every store of the kernel sits in are marked Global, one work item per output
// element ("gpu dims" makes them the launch's ids), except those some reduction does not depend on
// (a softmax's columns), which stay loops so that each reduction runs once. Unchanged for a kernel
// that reads a buffer it stores (its work items could race) or has no output loop.
const UOp* mark_global_axes(const UOp* sink);

// TC (tensor_cores.cpp): a kernel that stores a sum of products of two float16 (or bfloat16) inputs
// as floats (C = A @ B, rows M, columns N, reduction K, any other output loop a batch), on the
// target's tensor cores: a block per tile of C of up to 128 x 32, a warp (32 work items) per 32 x 32
// of it at most, mma.sync.m16n8k16 on each 16-step of K (the tile the most that divides). M, N and K must be known
// multiples of 16, 8 and 16 (a bucket's). Returns nullptr, with the reason in `why` where given, where the kernel or
// the target does not qualify. The opt's spelling: TC(<the reduction's axis>, 0). With `pads`, in a kernel of two
// output loops, rows or columns that are not a multiple but may reach one are padded first (PADTO, listed in *pads
// where TC then applies); K must be a known multiple of 16.
const UOp* apply_tensor_cores(const UOp* sink, const target::Target& t, std::string* why = nullptr,
                              std::vector<Opt>* pads = nullptr);

// (gpu_heuristic.cpp) Does the kernel read, at an INDEX other than a store's, a buffer it stores?
// Work items that split its loops could then read what another one stores.
bool reads_what_it_stores(const UOp* sink);

// The GPU heuristics (gpu_heuristic.cpp): mark_global_axes, then, for a kernel of one store of at
// most 2048 outputs whose one reduction (a sum, product or max) is at least 128 long, GROUP that
// reduction over a work group (a power of two of work items, up to the target's work-group size
// and a quarter of the reduction); for a kernel whose output loop uses its reductions' results
// (softmax, layernorm), a work group per row (every reduction GROUPed, the loop shared by LOCAL);
// for a matmul, register tiles and work groups. Returns the opts it applied to `sink`.
std::vector<Opt> gpu_optimizations(const UOp*& sink, const target::Target& t);

// Splits every reduction whose body uses no lane loop, over at least 2 * width steps, into
// `width` lanes: REDUCE(x, k) -> REDUCE(REDUCE(x[k := k' * width + lane], k'), lane), so `width`
// partial results accumulate side by side (a loop the C compiler vectorizes) and are combined at
// the end. A length that is not a known multiple of `width` (a symbolic dim) reduces its last
// n % width steps on their own and combines that too. This reassociates the reduction, as any
// vectorized reduction does. Unchanged when nothing applies.
const UOp* split_reduce_lanes(const UOp* sink, int64_t width);

// Splits the innermost output loop of every store of consecutive elements (each read moves one
// element along it or stays put, inside reductions too) into lanes: 256 bytes of elements (64
// floats) per row of lanes, the C renderer's vectors, and when the length is not a known multiple
// (a symbolic dim) a loop over the last n % width elements. A reduction per element (a matmul of
// a symbolic width) then keeps one accumulator per lane; a store that also reads a statistic of
// the whole row (softmax's max), or that sits in unrolled rows with a remainder, is left alone. A
// Thread loop's pieces are both Thread loops, so the cores share the rows and the rest. Unchanged
// when nothing applies.
const UOp* split_store_lanes(const UOp* sink);

// A term that a kernel computes twice for each element of its innermost output loop, once inside
// a sum over a range of the same extent (softmax: exp(x - max) in the sum, and again in the
// output), is computed once: a loop stores it where the output of the row goes, the sum reads it
// back from there (a row in cache), and the output reads it there too. Only for terms with an
// exp, log or sin (where recomputing costs more than a store and two reads) and an output of the
// term's dtype (so the stored value is exact). Returns nullptr when the kernel has no such term.
const UOp* store_shared_term(const UOp* sink);

// The CPU heuristics (heuristic.cpp): for a kernel that reduces into a 2-D (or higher) output,
// tile it: lanes of the last axis (one accumulator per lane) and up to 8 unrolled rows of the axis
// whose rows share the lanes' loads (B's columns for a matmul's rows, the input's for a
// convolution's output channels); where the columns or rows are not a known multiple of the tile,
// split_tail gives the tile the largest multiple and cleanup nests the rest, each optimized on its
// own and joined (join_nests); the reduction then runs in blocks, in the tile's nest only: with
// `pack`, block_for_caches's (256 steps over chunks of the columns sized to `l2_bytes`, the target's
// L2), else or where those do not apply tile_reduction's of 64; the opts returned are each nest's in turn. The lanes
// are up to 64, or, where 8 rows of at least 2 vectors fit in all but 8 of the target's registers (AVX-512), the widest
// that fit (8 x 32 floats: LLVM spills the 34 live vectors of 8 x 64). Measured on sgemm 1024^3 (AVX-512, C): 4x16 gave
// 9 GFLOP/s, 8x16 19, 8x32 72, 8x64 80, 16x16 12 and 8x128 47 (spills). Returns the opts it chose (applied to `sink`).
// `vector_registers` and `vector_bytes` are the target's (the defaults: the cpu target's); without `threads` no loop is
// shared among cores. `pack`: the kernel may take a scratch buffer (pack_shared_operand) that its caller lays out.
std::vector<Opt> hand_coded_optimizations(const UOp*& sink, int vector_registers = 16, int vector_bytes = 16,
                                          bool threads = true, bool pack = false, int64_t l2_bytes = 1 << 20);

// A kernel's opts as `kiln tune` measured them (tuned.cpp): the Opt list that replaces the
// heuristics' choice, and the block of the reduction tile_reduction makes (0: none). The rewrites
// the heuristics make around their opts (store_shared_term before, split_store_lanes and
// split_reduce_lanes after) are made the same way, so only what the search chose differs.
struct TunedOpts {
  std::vector<Opt> opts;
  int64_t reduce_block = 0;
  bool operator==(const TunedOpts&) const = default;
};

// "UPCAST(1, 16)" or "UPCAST(1,16)", "THREAD(0)": Opt::str()'s text back; nullopt when it is not one.
std::optional<Opt> parse_opt(std::string_view text);

// Applies `t` to a kernel AST as hand_coded_optimizations applies its own choice. Returns nullptr,
// with the reason in `why` where given, when an opt or the reduction block does not apply.
// `pack` as for hand_coded_optimizations: the reduction's blocks pack their shared operand, and
// are block_for_caches's over chunks of the columns sized to `l2_bytes` (the target's L2) where those apply.
const UOp* apply_tuned_opts(const UOp* sink, const TunedOpts& t, std::string* why = nullptr, bool pack = false,
                            int64_t l2_bytes = 1 << 20);

}  // namespace kiln::codegen
