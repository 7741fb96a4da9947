// The CPU heuristics (tinygrad's codegen/opt/heuristic.py): which opts a kernel gets, from what
// it reads and the target's registers; opts.cpp applies them.
#include <algorithm>
#include <vector>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/passes.h"
#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {
namespace {

// The reads of inputs inside reductions: each address (its gate dropped) with the reduction's ranges
struct ReductionRead {
  const UOp* addr;
  std::span<const UOp* const> ranges;
};
std::vector<ReductionRead> reads_in_reductions(const UOp* sink) {
  std::vector<ReductionRead> reads;
  for (const UOp* red : toposort(sink)) {
    if (red->op != Op::REDUCE) continue;
    for (const UOp* u : toposort(red->src(0))) {
      if (u->op != Op::INDEX || u->src(0)->op != Op::PARAM) continue;
      const UOp* addr = u->src(1);
      if (addr->op == Op::WHERE && addr->src(2)->is_invalid()) addr = addr->src(1);
      reads.push_back({addr, red->src().subspan(1)});
    }
  }
  return reads;
}

// a read at an address that varies with its reduction but not with `row`
bool shares_reads_across(const UOp* sink, const UOp* row) {
  for (const ReductionRead& rd : reads_in_reductions(sink)) {
    if (contains(rd.addr, row)) continue;
    for (const UOp* r : rd.ranges)
      if (contains(rd.addr, r)) return true;
  }
  return false;
}

// every read inside a reduction that moves with `r` moves forward by 1 to 4 elements: lanes over r
// then read (nearly) consecutive elements (a matmul's B along its columns, a pooling window with
// stride 2), not one stream per lane (partial sums over parts far apart)
bool reads_consecutive_along(const UOp* sink, const UOp* r) {
  const UOp* at = clone_range(r, first_free_axis(sink));  // r's stand-in, for r + 1 (a node cannot contain itself)
  for (const ReductionRead& rd : reads_in_reductions(sink)) {
    if (!contains(rd.addr, r)) continue;
    std::optional<int64_t> step = step_along(rd.addr, r, at);
    if (!step || *step < 1 || *step > 4) return false;
  }
  return true;
}

// The output axis a tile unrolls into rows: one whose rows share a read inside the reduction. The
// innermost (before the lanes' own) that no read moving with the lanes moves with, where there is
// one: each row then reuses the tile's vector loads, not only a scalar. A convolution's output
// channels share the input's vectors, its output rows only a weight (8 rows of the image: 16
// vector loads and a broadcast per 16 FMAs; 8 channels: 2 and 8 broadcasts; 3x3 64 -> 64 over
// 56 x 56 on the AVX-512 Xeon, 1 thread: 40 against 24 GFLOP/s). Else the axis before the
// lanes', if its rows share a read. nullptr: no rows to unroll.
const UOp* row_axis(const UOp* sink, const std::vector<const UOp*>& axes) {
  if (axes.size() < 2) return nullptr;
  const UOp* col = axes.back();
  std::vector<ReductionRead> reads = reads_in_reductions(sink);
  for (size_t i = axes.size() - 1; i-- > 0;) {
    bool shared = false, apart = false;
    for (const ReductionRead& rd : reads)
      if (contains(rd.addr, col)) (contains(rd.addr, axes[i]) ? apart : shared) = true;
    if (shared && !apart && shares_reads_across(sink, axes[i])) return axes[i];
  }
  return shares_reads_across(sink, axes[axes.size() - 2]) ? axes[axes.size() - 2] : nullptr;
}

constexpr int64_t kLaneWidths[] = {64, 32, 16, 8, 4};

// A register tile's shape: the lanes of a row and the rows. The widest lanes whose 8 rows of
// vectors (at least 2 each) fit in all but 8 of the registers (AVX-512's 32: 8 x 32 floats, 16
// accumulators). A file too small for that (AVX2's 16 registers, 16-byte vectors' 16) takes rows
// of 2 vectors, as many as leave 3 registers for the operands (B's 2 vectors and A's broadcast),
// 8 at most: 6 x 16 floats on AVX2, 12 accumulators, as OpenBLAS's Haswell kernel. (The 8 x 64
// it had before kept 32 accumulators in L1: the x86_64-avx2 sgemm variants called directly, 1
// thread, AMD EPYC Zen 4: 1024^3 33-38 against 43-44 GFLOP/s, 1000^3 31-34 against 53-75; conv2d
// 3x3 64 -> 64 over 56^2 6.8 against 12-13.)
// Without real vectors (4 bytes: Cortex-M), the widest lanes and 8 rows, as before.
struct TileShape {
  int64_t lanes, rows;
};
TileShape tile_shape(int64_t item, int vector_registers, int vector_bytes) {
  for (int64_t w : kLaneWidths)
    if (w * item >= 2 * vector_bytes && 8 * (w * item / vector_bytes) <= vector_registers - 8) return {w, 8};
  int64_t w = 2 * vector_bytes / item;
  if (w < kLaneWidths[std::size(kLaneWidths) - 1]) return {kLaneWidths[0], 8};
  return {w, std::clamp<int64_t>((vector_registers - 3) / 2, 2, 8)};
}

}  // namespace

const UOp* store_shared_term(const UOp* sink) {
  if (sink->nsrc() != 1 || sink->src(0)->op != Op::END) return nullptr;
  const UOp* end = sink->src(0);
  const UOp* st = end->src(0);
  if (st->op != Op::STORE || st->nsrc() != 2 || st->src(0)->op != Op::INDEX) return nullptr;
  const UOp *idx = st->src(0), *out = idx->src(0), *v = st->src(1);
  // the innermost output loop; not the outermost, which the cores may share (each core's rows
  // must be all it stores)
  if (end->nsrc() < 3) return nullptr;
  const UOp* n = end->src(end->nsrc() - 1);
  if (out->op != Op::PARAM || n->op != Op::RANGE || n->arg<RangeArg>().type != AxisType::Loop) return nullptr;
  auto v_nodes = toposort(v);
  for (const UOp* u : v_nodes)
    if (u == out) return nullptr;  // the kernel reads its output already
  for (const UOp* red : v_nodes) {
    if (red->op != Op::REDUCE || red->nsrc() != 2 || red->arg<ReduceArg>().op != Op::ADD) continue;
    const UOp *k = red->src(1), *body = red->src(0);
    // a term the row does not vary (softmax of a constant row) is no term of the row to store
    if (k->src(0) != n->src(0) || body->dtype != out->dtype.elem() || !contains(body, k)) continue;
    bool costly = false, nested = false;
    for (const UOp* u : toposort(body)) {
      costly |= u->op == Op::EXP2 || u->op == Op::LOG2 || u->op == Op::SIN;
      nested |= u->op == Op::REDUCE && std::find(u->src().begin() + 1, u->src().end(), k) != u->src().end();
    }
    if (!costly || nested) continue;
    const UOp* at_n = substitute(body, k, n);
    if (std::find(v_nodes.begin(), v_nodes.end(), at_n) == v_nodes.end()) continue;
    // found: the term is computed once per element, stored where the output goes, and read back
    Context& ctx = sink->ctx();
    int32_t axis = first_free_axis(sink);
    RangeArg loop_arg = k->arg<RangeArg>();
    loop_arg.type = AxisType::Loop;
    loop_arg.axis = axis++;
    const UOp* k1 = ctx.make(Op::RANGE, k->dtype, k->src(), loop_arg);
    const UOp* k2 = clone_range(k, axis++);
    const UOp* first =
        ctx.make(Op::END, dtypes::void_,
                 {ctx.make(Op::STORE, dtypes::void_, {substitute(idx, n, k1), substitute(body, k, k1)}), k1});
    const UOp* stored = ctx.make(Op::AFTER, out->dtype, {out, first});
    auto read_at = [&](const UOp* r) {
      return ctx.make(Op::INDEX, body->dtype, {stored, substitute(idx->src(1), n, r)});
    };
    const UOp* sum = ctx.make(Op::REDUCE, red->dtype, {read_at(k2), k2}, red->arg());
    const UOp* nv = substitute(v, {{at_n, read_at(n)}, {red, sum}});
    // for each row: the loop that stores the term, then the output loop
    const UOp* row = ctx.make(Op::END, dtypes::void_, {ctx.make(Op::STORE, dtypes::void_, {idx, nv}), n});
    std::vector<const UOp*> end_src{ctx.make(Op::GROUP, dtypes::void_, {first, row})};
    end_src.insert(end_src.end(), end->src().begin() + 1, end->src().end() - 1);
    return ctx.make(Op::SINK, dtypes::void_, {ctx.make(Op::END, dtypes::void_, end_src)}, sink->arg());
  }
  return nullptr;
}

namespace {

// the heuristics on one kernel; `block_k`: tile a long reduction (not in a cleanup nest, where it
// would triple the code of a nest that does a sliver of the work)
std::vector<Opt> optimize(const UOp*& sink, int vector_registers, int vector_bytes, bool threads, bool block_k,
                          bool pack, int64_t l2_bytes) {
  std::vector<Opt> applied;
  bool reduces = false;
  for (const UOp* u : toposort(sink)) reduces |= u->op == Op::REDUCE;
  // one loop nest: the output axes, outermost first (none for a kernel that stores one value)
  bool nest = sink->nsrc() == 1 && sink->src(0)->op == Op::END;
  bool scalar = sink->nsrc() == 1 && sink->src(0)->op == Op::STORE;
  if (!nest && !scalar) return applied;
  std::vector<const UOp*> axes;
  if (nest) axes.assign(sink->src(0)->src().begin() + 1, sink->src(0)->src().end());
  bool rows_share = !axes.empty() && shares_reads_across(sink, axes[0]);  // before any opt renames it
  auto try_opt = [&](const UOp* r, Opt::Kind kind, std::initializer_list<int64_t> amounts) {
    for (int64_t amt : amounts) {
      Opt o{kind, r->arg<RangeArg>().axis, amt};
      if (const UOp* s = apply_opt(sink, o)) {
        sink = s;
        applied.push_back(o);
        return;
      }
    }
  };
  // a tiled kernel whose columns or rows are not a known multiple of its tile (a symbolic dim, or
  // N % 16 where the tile is 32 columns wide): the tile over the largest multiple, and a cleanup
  // nest over the rest, each optimized on its own (rather than the whole call without a tile)
  const UOp* tile_rows = reduces ? row_axis(sink, axes) : nullptr;
  const UOp* store = nest ? sink->src(0)->src(0) : nullptr;
  int64_t item = store && store->op == Op::STORE ? itemsize(store->src(1)->dtype) : 0;
  TileShape shape = item > 0 ? tile_shape(item, vector_registers, vector_bytes) : TileShape{0, 8};
  if (reduces && nest && tile_rows) {
    int64_t lanes = item > 0 ? shape.lanes : 0;
    int64_t rows = lanes * item / vector_bytes == 1 && 16 <= vector_registers - 8 ? 16 : shape.rows;
    // the widest piece of a tile that the loop holds at its largest: columns of the tile's lanes,
    // or half as many, then of narrower vectors down to 16 bytes (the columns past the last 32 of a
    // symbolic N on AVX-512 are up to 31: 16, 8 and 4 in lanes, the last 3 one at a time; with
    // the last 15 one at a time, user-path sgemm 1023^3 ran at 0.70x OpenBLAS on the AVX-512 Xeon,
    // 0.73-0.74x so); rows of the tile's (the rows past them, split as the columns are into 4 and
    // 2, measured no faster: a sliver of the work, not worth the nests' code)
    std::vector<int64_t> col_sizes, row_sizes{rows};
    const int64_t least = std::min<int64_t>(vector_bytes, 16);
    for (int64_t w = lanes; w >= 2 && w * item >= least; w /= 2) col_sizes.push_back(w);
    auto piece = [](const UOp* r, const std::vector<int64_t>& sizes) -> int64_t {
      const UOp* n = r->src(0);
      for (int64_t f : sizes)
        if (f <= n->imax()) return f;
      return 0;
    };
    const UOp *col = axes.back(), *row = tile_rows;
    NestSplit parts{nullptr, nullptr};
    if (int64_t f = piece(col, col_sizes); f > 0 && reads_consecutive_along(sink, col))
      parts = split_tail(sink, col, f);
    if (int64_t f = piece(row, row_sizes); !parts.first && f > 0) parts = split_tail(sink, row, f);
    if (parts.first) {
      const UOp* first = parts.first;
      applied = optimize(first, vector_registers, vector_bytes, threads, block_k, pack, l2_bytes);
      const UOp* rest = renumber_ranges(parts.rest, first_free_axis(first));
      std::vector<Opt> more = optimize(rest, vector_registers, vector_bytes, threads, false, false, l2_bytes);
      applied.insert(applied.end(), more.begin(), more.end());
      sink = join_nests(first, rest);
      return applied;
    }
  }
  if (reduces) {
    // softmax's exp, once per element: stored in the output row, summed from there, scaled there
    if (const UOp* s = store_shared_term(sink)) sink = s;
    // unrolled rows pay only where they share a read: a load inside the reduction that the row
    // does not change (B of a matmul, the weights of a convolution). Rows that share nothing
    // (softmax, layernorm) would only widen the working set.
    bool rows = tile_rows != nullptr;
    // lanes of columns, then unrolled rows: the tile_shape() of the register file. On AVX-512,
    // 8 x 32 floats, 16 accumulators, which LLVM allocates without a spill (8 x 64 needs 34 live
    // vectors: LLVM's allocator then copies 23 registers per step, 44 against 50 GFLOP/s on
    // sgemm 1024^3; GCC's C is the same at both). On 16 registers, rows of 2 vectors: the tiles
    // that fit were once slower than 8 x 64 in L1 (AVX2 8 x 8: 20 against 27 GFLOP/s) only because
    // their rows' stores stayed scalar; vectorize.cpp now proves the rows apart.
    std::vector<int64_t> widths(std::begin(kLaneWidths), std::end(kLaneWidths));
    if (rows && item > 0) widths.erase(widths.begin(), std::find(widths.begin(), widths.end(), shape.lanes));
    // without unrolled rows the lanes are all the accumulators there are: fewer than 4 vectors
    // wait on the FMA's latency (a vector-matrix product, M = 1 and N % 16 on AVX-512: 16 lanes
    // took 2.8x the time of the 64 lanes and remainder loop split_store_lanes makes)
    if (!rows && item > 0) std::erase_if(widths, [&](int64_t w) { return w * item < 4 * vector_bytes; });
    int64_t lane_vectors = 0;  // the vectors one row of lanes takes
    if (!axes.empty() && reads_consecutive_along(sink, axes.back()))
      for (int64_t amt : widths)
        if (const UOp* s = apply_opt(sink, {Opt::Kind::Lane, axes.back()->arg<RangeArg>().axis, amt})) {
          sink = s;
          applied.push_back({Opt::Kind::Lane, axes.back()->arg<RangeArg>().axis, amt});
          lane_vectors = item > 0 ? std::max<int64_t>(1, amt * item / vector_bytes) : 0;
          break;
        }
    // 8 rows of one vector each are 8 accumulators: too few to keep two FMA units busy through
    // their latency; where the columns allow one vector only (N % 16 on AVX-512), 16 rows, if the
    // register file holds them with room for the operands
    if (rows && lane_vectors == 1 && 16 <= vector_registers - 8)
      try_opt(tile_rows, Opt::Kind::Upcast, {16, 8, 4, 2});
    else if (rows)
      try_opt(tile_rows, Opt::Kind::Upcast, {shape.rows, 4, 2});
  }
  // the outermost loop (after tiling: over tiles) is shared among the cores, where there are threads
  if (const UOp* s = threads ? mark_thread_axis(sink) : nullptr) {
    sink = s;
    applied.push_back({Opt::Kind::Thread, sink->src(0)->src(1)->arg<RangeArg>().axis, 0});
  }
  // elementwise loops of consecutive elements, of any length: lanes, and the rest on its own
  sink = split_store_lanes(sink);
  if (!reduces) return applied;
  // long reductions in blocks, so a block of the operands stays in cache across output tiles (only
  // where output rows share an operand). With a scratch to pack into (kiln gen, kiln tune): blocks
  // of 256 steps over chunks of the columns whose packed block takes a quarter of the target's L2
  // (block_for_caches; user-path sgemm on a 1.25 MiB-L2 AVX-512 Xeon, 1 / 2 threads: 1024^3 0.88x /
  // 0.85x OpenBLAS -> 0.93x / 0.90x, 2048^3 0.73x / 0.78x -> 0.90x / 0.89x). Without one, or where
  // that does not apply, blocks of 64 steps: B's block of a 2048-column sgemm is then 512 KiB
  // (unpacked, 1 thread, AVX-512 Xeon: 0.66x OpenBLAS at 2048^3 against 0.58x with blocks of 128
  // and 0.39x with 256 over all columns)
  if (rows_share && block_k && !applied.empty()) {
    if (const UOp* s = pack ? block_for_caches(sink, kCacheBlock, l2_bytes) : nullptr) {
      sink = s;
    } else if (const UOp* t = tile_reduction(sink, 64)) {
      sink = t;
      if (const UOp* p = pack ? pack_shared_operand(sink) : nullptr) sink = p;
    }
  }
  // reductions that no output lane vectorizes: 64 partial results side by side (4 AVX-512 registers)
  sink = split_reduce_lanes(sink, 64);
  return applied;
}

}  // namespace

std::vector<Opt> hand_coded_optimizations(const UOp*& sink, int vector_registers, int vector_bytes, bool threads,
                                          bool pack, int64_t l2_bytes) {
  return optimize(sink, vector_registers, vector_bytes, threads, true, pack, l2_bytes);
}

}  // namespace kiln::codegen
