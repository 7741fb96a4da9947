// pack_shared_operand: the operand a tiled reduction's rows share, copied block by block into a
// scratch buffer laid out as the tiles read it; block_for_caches: the heuristics' blocks of the
// reduction and of the columns around that copy (see opts.h).
#include <algorithm>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/passes.h"
#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

namespace {

bool has_range_type(const UOp* r, AxisType t) { return r->op == Op::RANGE && r->arg<RangeArg>().type == t; }

// The scratch buffer the packed nests of one kernel share: one PARAM, regions `stride` elements
// apart, one a core where `threaded`.
struct Scratch {
  const UOp* buf = nullptr;
  int64_t stride = 0;
  bool threaded = false;
};

// One nest with its shared operand packed: rmw is tile_reduction's
// END(STORE(out, out + REDUCE(body, step)), outer..., block, rows..., columns, lanes), `outer` the
// loops before the block (block_for_caches's column chunks), or without `blocked` the nest that
// starts the output, END(STORE(out, REDUCE(body, step)), outer..., rows..., columns, lanes), whose
// steps may be symbolic (n % block of them: the panels are as long as the most there can be).
// Returns the nest that copies the block before the tiles, or nullptr where it is not of that
// form. New ranges take axes from `axis`.
const UOp* pack_nest(const UOp* rmw, size_t outer, bool blocked, int32_t& axis, int32_t slot, Scratch& scratch) {
  const size_t loops = outer + (blocked ? 1 : 0);  // the loops around the copy and the tiles
  if (rmw->op != Op::END || rmw->nsrc() < 4 + loops) return nullptr;
  const UOp* st = rmw->src(0);
  if (st->op != Op::STORE || st->nsrc() != 2) return nullptr;
  if (blocked && !has_range_type(rmw->src(loops), AxisType::Loop)) return nullptr;
  std::vector<const UOp*> around(rmw->src().begin() + 1, rmw->src().begin() + 1 + loops);  // outer..., block
  std::vector<const UOp*> outs(rmw->src().begin() + 1 + loops, rmw->src().end());
  const UOp *lane = outs.back(), *col = outs[outs.size() - 2];
  std::vector<const UOp*> rows(outs.begin(), outs.end() - 2);
  if (!has_range_type(lane, AxisType::Lane) || lane->src(0)->op != Op::CONST || !has_range_type(col, AxisType::Loop))
    return nullptr;
  const UOp* red = nullptr;
  if (!blocked && st->src(1)->op == Op::REDUCE && st->src(1)->nsrc() == 2) red = st->src(1);
  for (const UOp* s : blocked ? st->src(1)->src() : std::span<const UOp* const>{})
    if (s->op == Op::REDUCE && s->nsrc() == 2) red = s;
  if (!red || (blocked && red->src(1)->src(0)->op != Op::CONST)) return nullptr;
  const UOp* step = red->src(1);
  // the shared read: one INDEX of an input that moves with the step and the columns, ungated, one
  // element per lane, and with no row
  const UOp* shared = nullptr;
  for (const UOp* u : toposort(red->src(0))) {
    if (u->op != Op::INDEX || u->src(0)->op != Op::PARAM || u->nsrc() != 2) continue;
    const UOp* addr = u->src(1);
    if (std::any_of(rows.begin(), rows.end(), [&](const UOp* r) { return contains(addr, r); })) continue;
    if (!contains(addr, step) || !contains(addr, col) || !contains(addr, lane)) continue;
    if (addr->op == Op::WHERE || (shared && shared != u)) return nullptr;
    shared = u;
  }
  if (!shared) return nullptr;
  if (std::optional<int64_t> s = step_along(shared->src(1), lane, clone_range(lane, axis)); !s || *s != 1)
    return nullptr;

  Context& ctx = rmw->ctx();
  const int64_t lanes = lane->src(0)->ival(), steps = step->src(0)->imax();
  if (steps < 1) return nullptr;
  const DType it = col->dtype;
  // one region a core: the panels of the block, each `steps` rows of `lanes` elements; regions
  // as far apart as the most panels the columns have (a constant: the bounds prover's arithmetic
  // stays linear in .core), the last one as long as these dims' panels
  const int64_t panels_most = col->src(0)->imax();
  if (panels_most < 1 || panels_most > kPackElementsMost / (steps * lanes)) return nullptr;
  // where the cores share the rows (a Thread loop), each core copies the whole block for its rows:
  // a region of its own, `.core`'s (the runtime calls core 0 .. cores - 1)
  const bool shared_rows = has_range_type(rows.front(), AxisType::Thread);
  Expr core = shared_rows ? Expr(ctx.var(kCoreVar, 0, kMaxCores - 1)) : Expr(ctx.cint(0, it));
  if (!scratch.buf) {
    Expr cores = shared_rows ? Expr(ctx.var(kCoresVar, 1, kMaxCores)) : Expr(ctx.cint(1, it));
    Expr per_core = simplify(Expr(col->src(0)) * (steps * lanes));
    scratch.stride = panels_most * steps * lanes;
    scratch.threaded = shared_rows;
    scratch.buf = ctx.make(Op::PARAM, shared->src(0)->dtype, {simplify((cores - 1) * scratch.stride + per_core)},
                           ParamArg{slot, -1, kPackBuffer});
  } else if (panels_most * steps * lanes > scratch.stride || (shared_rows && !scratch.threaded) ||
             scratch.buf->dtype != shared->src(0)->dtype) {
    return nullptr;  // another nest's scratch, too small for this one's block
  }
  const UOp* buf = scratch.buf;
  auto at_panel = [&](Expr panel, Expr k, Expr l) {
    return simplify(core * scratch.stride + (panel * steps + k) * lanes + l);
  };
  // the copy: none where the kernel has no rows of tiles (the cleanup nests do the work then), by
  // a loop that runs once or never around it (a product of the two ends would make the bounds
  // prover's arithmetic non-linear)
  const UOp* any_rows = ctx.make(Op::RANGE, it, {simplify(minimum(Expr(rows.front()->src(0)), Expr(ctx.cint(1, it))))},
                                 RangeArg{axis++, AxisType::Loop, 0});
  const UOp* panel = ctx.make(Op::RANGE, it, {col->src(0)}, RangeArg{axis++, AxisType::Loop, 0});
  const UOp* k = ctx.make(Op::RANGE, it, {step->src(0)}, RangeArg{axis++, AxisType::Loop, 0});
  const UOp* l = clone_range(lane, axis++);
  const UOp* value = substitute(shared, {{step, k}, {col, panel}, {lane, l}});
  const UOp* copy = ctx.make(
      Op::END, dtypes::void_,
      {ctx.make(Op::STORE, dtypes::void_, {ctx.make(Op::INDEX, shared->dtype, {buf, at_panel(panel, k, l)}), value}),
       any_rows, panel, k, l});
  const UOp* packed =
      ctx.make(Op::INDEX, shared->dtype, {ctx.make(Op::AFTER, buf->dtype, {buf, copy}), at_panel(col, step, lane)});
  std::vector<const UOp*> inner{substitute(st, shared, packed)};
  inner.insert(inner.end(), outs.begin(), outs.end());
  const UOp* tiles = ctx.make(Op::END, dtypes::void_, inner);
  std::vector<const UOp*> per_block{ctx.make(Op::GROUP, dtypes::void_, {copy, tiles})};
  per_block.insert(per_block.end(), around.begin(), around.end());
  return ctx.make(Op::END, dtypes::void_, per_block);
}

int32_t next_slot(const UOp* sink) {
  int32_t slot = 0;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::PARAM) slot = std::max(slot, u->arg<ParamArg>().slot + 1);
  return slot;
}

// A nest END(STORE, block, outs...) (`blocked`) or END(STORE, outs...) with outs[at] (a column
// chunk) moved first, before the block
const UOp* hoist(const UOp* end, size_t at, bool blocked) {
  const size_t first = blocked ? 2 : 1;
  std::vector<const UOp*> src{end->src(0), end->src(first + at)};
  for (size_t i = 1; i < end->nsrc(); ++i)
    if (i != first + at) src.push_back(end->src(i));
  return end->ctx().make(Op::END, dtypes::void_, src);
}

// One nest (SINK(END(STORE, outs...))) blocked and packed: blocks of `block` steps, each block's
// operand packed, and the nest that starts the output (the steps past the blocks: a symbolic
// length's n % block) packed as one block of its own; outs[chunk_at] (when given) the chunk loop,
// outside the blocks. Returns nullptr where the blocks or their packing do not apply.
const UOp* block_nest(const UOp* sink, int64_t block, std::optional<size_t> chunk_at, int32_t slot, Scratch& scratch) {
  const UOp* t = tile_reduction(sink, block);
  if (!t) return nullptr;
  const UOp *init = t->src(0), *rmw = t->src(1);
  const size_t outer = chunk_at ? 1 : 0;
  int32_t axis = first_free_axis(t);
  // (the blocks' first: their packed block is the largest, and a new scratch is sized for it)
  const UOp* packed = pack_nest(chunk_at ? hoist(rmw, *chunk_at, true) : rmw, outer, true, axis, slot, scratch);
  if (!packed) return nullptr;
  // the steps past the whole blocks: their B read packed too (rows N floats apart otherwise, in
  // the same cache sets where N is near a power of two), one pass over the output. (As blocks of
  // 64, each a pass, and the last n % 64 unpacked, sgemm's generic variant called directly ran
  // 2-12% slower: 1023^3, 1000^3, 1000 x 1000 x 100, 200 x 1023 x 500.)
  const UOp* first = init;
  if (const UOp* p = pack_nest(chunk_at ? hoist(init, *chunk_at, false) : init, outer, false, axis, slot, scratch))
    first = p;
  // the blocks add to what it stored: their read of the output comes after it
  if (first != init) packed = substitute(packed, init, first);
  return sink->ctx().make(Op::SINK, dtypes::void_, {first, packed}, sink->arg());
}

}  // namespace

const UOp* pack_shared_operand(const UOp* sink) {
  // tile_reduction's kernel: SINK(the first nest (zeros, or the steps past the last block),
  // END(STORE(out, out + REDUCE(body, step)), block, rows..., columns, lanes))
  if (sink->nsrc() < 2) return nullptr;
  Scratch scratch;
  int32_t axis = first_free_axis(sink);
  const UOp* packed = pack_nest(sink->src(1), 0, true, axis, next_slot(sink), scratch);
  return packed ? substitute(sink, sink->src(1), packed) : nullptr;
}

const UOp* block_for_caches(const UOp* sink, int64_t block, int64_t l2_bytes) {
  if (sink->nsrc() != 1 || sink->src(0)->op != Op::END || sink->src(0)->nsrc() < 4) return nullptr;
  const UOp* end = sink->src(0);
  if (end->src(0)->op != Op::STORE || block < 1) return nullptr;
  // a chunk's packed block (block x chunk elements) takes a quarter of L2
  const int64_t item = itemsize(end->src(0)->src(1)->dtype);
  if (item < 1 || block > l2_bytes / 4 / item) return nullptr;
  const int64_t chunk = l2_bytes / 4 / (block * item);
  const UOp *lane = end->src(end->nsrc() - 1), *col = end->src(end->nsrc() - 2);
  if (!has_range_type(lane, AxisType::Lane) || lane->src(0)->op != Op::CONST || !has_range_type(col, AxisType::Loop))
    return nullptr;
  const size_t col_at = end->nsrc() - 3;  // among the output loops
  // the columns in chunks of `per_chunk` tiles where they may be more: the largest multiple of a
  // chunk in chunks, the tiles past it in a nest of their own
  const int64_t per_chunk = chunk / lane->src(0)->ival();
  struct Part {
    const UOp* sink;
    bool chunked;
  };
  std::vector<Part> parts{{sink, false}};
  if (per_chunk >= 2 && col->src(0)->imax() > per_chunk) {
    const UOp *whole = sink, *past = nullptr;
    if (!col->src(0)->divides(per_chunk)) {
      NestSplit s = split_tail(sink, col, per_chunk, true);
      if (!s.first) return nullptr;
      whole = s.first, past = s.rest;
    }
    const UOp* c = whole->src(0)->src(whole->src(0)->nsrc() - 2);
    const UOp* n_chunks = c->src(0)->divides(per_chunk);
    if (!n_chunks) return nullptr;
    Context& ctx = sink->ctx();
    RangeArg chunk_arg = c->arg<RangeArg>();
    chunk_arg.sub = 0;
    const UOp* chunks = ctx.make(Op::RANGE, c->dtype, {simplify(n_chunks)}, chunk_arg);
    const UOp* tiles = ctx.make(Op::RANGE, c->dtype, {ctx.cint(per_chunk, c->dtype)},
                                RangeArg{first_free_axis(whole), AxisType::Loop, -1});
    whole = replace_ranges(whole, {{c, RangeReplacement{Expr(chunks) * per_chunk + tiles, {chunks, tiles}}}});
    parts = {{whole, true}};
    if (past && past->op == Op::SINK && past->nsrc() == 1 && past->src(0)->op == Op::END)
      parts.push_back({past, false});
    else if (past)
      return nullptr;
  }
  // the chunked nest first: its blocks are the largest, and the scratch is sized for them
  Scratch scratch;
  const int32_t slot = next_slot(sink);
  const UOp* out = nullptr;
  for (const Part& p : parts) {
    const UOp* s = out ? renumber_ranges(p.sink, first_free_axis(out)) : p.sink;
    const UOp* b = block_nest(s, block, p.chunked ? std::optional<size_t>(col_at) : std::nullopt, slot, scratch);
    if (!b) return nullptr;
    out = out ? join_nests(out, b) : b;
  }
  return out;
}

}  // namespace kiln::codegen
