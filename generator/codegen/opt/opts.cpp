#include "generator/codegen/opt/opts.h"

#include "generator/codegen/passes.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

namespace {

const char* kind_name(Opt::Kind k) {
  switch (k) {
    case Opt::Kind::Upcast:
      return "UPCAST";
    case Opt::Kind::Unroll:
      return "UNROLL";
    case Opt::Kind::Lane:
      return "LANES";
    case Opt::Kind::Thread:
      return "THREAD";
    case Opt::Kind::Local:
      return "LOCAL";
    case Opt::Kind::Group:
      return "GROUP";
    case Opt::Kind::GroupTop:
      return "GROUPTOP";
    case Opt::Kind::Padto:
      return "PADTO";
    case Opt::Kind::Swap:
      return "SWAP";
    case Opt::Kind::Tc:
      return "TC";
  }
  return "?";
}

}  // namespace

std::string Opt::str() const {
  std::string head = std::string(kind_name(kind)) + "(" + std::to_string(axis);
  if (kind == Kind::Thread) return head + ")";
  return head + ", " + std::to_string(amount) + ")";
}

namespace {

const UOp* refuse(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return nullptr;
}

std::string axis_str(int64_t axis) { return "axis " + std::to_string(axis); }

// The range an opt on `axis` changes: not an inner piece an earlier split made (those take new axis ids)
const UOp* find_range(const UOp* sink, int64_t axis) {
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::RANGE || u->arg<RangeArg>().axis != axis) continue;
    AxisType t = u->arg<RangeArg>().type;
    if (t != AxisType::Upcast && t != AxisType::Unroll && t != AxisType::Lane) return u;
  }
  return nullptr;
}

bool lists(const UOp* u, const UOp* r) {
  auto rs = u->src().subspan(1);
  return std::find(rs.begin(), rs.end(), r) != rs.end();
}

// The most copies of a loop nest's body its upcasts, unrolls and lanes may make: 4x what the
// heuristics and kiln tune choose (1024). A tune database is input, and UPCAST(0,65536) of a loop
// of 2^20 would not finish compiling.
constexpr int64_t kMaxExpansion = 4096;

// The copies the nest of `r` already makes (each nest of a SINK its own; at least 1, saturated)
int64_t expansion(const UOp* sink, const UOp* r) {
  int64_t most = 1;
  for (const UOp* root : sink->src()) {
    std::vector<const UOp*> topo = toposort(root);
    if (std::find(topo.begin(), topo.end(), r) == topo.end()) continue;
    int64_t n = 1;
    for (const UOp* u : topo) {
      if (u->op != Op::RANGE || u->src(0)->op != Op::CONST) continue;
      AxisType t = u->arg<RangeArg>().type;
      if (t != AxisType::Upcast && t != AxisType::Unroll && t != AxisType::Lane) continue;
      if (__builtin_mul_overflow(n, std::max<int64_t>(u->src(0)->ival(), 1), &n)) n = kMaxExpansion + 1;
      n = std::min(n, kMaxExpansion + 1);
    }
    most = std::max(most, n);
  }
  return most;
}

const UOp* split_range(const UOp* sink, const Opt& opt, std::string* why) {
  const UOp* r = find_range(sink, opt.axis);
  if (!r) return refuse(why, "no range with " + axis_str(opt.axis));
  if (opt.amount < 2) return refuse(why, opt.str() + ": the amount must be at least 2");
  const bool local = opt.kind == Opt::Kind::Local;  // work items side by side: no copies of the body
  if (!local && opt.amount > kMaxExpansion / expansion(sink, r))
    return refuse(why, opt.str() + ": the loop nest's upcasts, unrolls and lanes would make more than " +
                           std::to_string(kMaxExpansion) + " copies of its body");
  // the end must be a multiple of the amount: a constant, or a dim declared as a multiple
  const UOp* outer_end = r->src(0)->divides(opt.amount);
  if (!outer_end)
    return refuse(why, opt.str() + ": " + std::to_string(opt.amount) + " does not divide the end of " +
                           axis_str(opt.axis) + " (PADTO it first)");
  outer_end = simplify(outer_end);
  bool whole = outer_end->op == Op::CONST && outer_end->ival() == 1;
  bool reduce = r->arg<RangeArg>().type == AxisType::Reduce;
  const bool group = opt.kind == Opt::Kind::Group || opt.kind == Opt::Kind::GroupTop;
  if ((opt.kind == Opt::Kind::Unroll || group) != reduce)
    return refuse(why, opt.str() + ": " +
                           (reduce ? "UPCAST and LANES split output axes, " + axis_str(opt.axis) + " is a reduction"
                                   : "UNROLL and GROUP split reductions, " + axis_str(opt.axis) + " is not one"));
  // the inner piece is unrolled (the expander copies what depends on it) or a lane loop innermost:
  // a loop inside the range (an END in its body that depends on it: softmax's stored term) would be
  // copied once per copy, each closing that same loop, or would be inside a lane
  for (const UOp* closer : local ? std::vector<const UOp*>{} : toposort(sink))
    if ((closer->op == Op::END || closer->op == Op::REDUCE) && lists(closer, r))
      for (const UOp* u : toposort(closer->src(0)))
        if (u->op == Op::END && contains(u, r))
          return refuse(why, opt.str() + ": " + axis_str(opt.axis) + " encloses another loop (" +
                                 (reduce ? "UNROLL" : "UPCAST and LANES") + " split innermost loops only)");
  Context& ctx = sink->ctx();
  AxisType inner_type = opt.kind == Opt::Kind::Upcast   ? AxisType::Upcast
                        : opt.kind == Opt::Kind::Unroll ? AxisType::Unroll
                        : group                         ? AxisType::GroupReduce
                        : local                         ? AxisType::Local
                                                        : AxisType::Lane;
  RangeArg inner_arg{first_free_axis(sink), inner_type, -1};
  const UOp* inner = ctx.make(Op::RANGE, r->dtype, {ctx.cint(opt.amount, r->dtype)}, inner_arg);
  RangeReplacement sr{inner, {inner}};
  if (!whole && opt.kind == Opt::Kind::GroupTop) {
    // the group's work items each take a contiguous run of the reduction: r -> g * (end / amount) + rest
    RangeArg rest_arg = r->arg<RangeArg>();
    rest_arg.sub = 0;
    const UOp* rest = ctx.make(Op::RANGE, r->dtype, {outer_end}, rest_arg);
    sr.expr = ctx.make(Op::ADD, r->dtype, {ctx.make(Op::MUL, r->dtype, {inner, outer_end}), rest});
    sr.pieces = {rest, inner};
  } else if (!whole) {
    RangeArg outer_arg = r->arg<RangeArg>();
    outer_arg.sub = 0;
    const UOp* outer = ctx.make(Op::RANGE, r->dtype, {outer_end}, outer_arg);
    sr.expr =
        ctx.make(Op::ADD, r->dtype, {ctx.make(Op::MUL, r->dtype, {outer, ctx.cint(opt.amount, r->dtype)}), inner});
    sr.pieces = {outer, inner};
  }
  return replace_ranges(sink, {{r, std::move(sr)}});
}

// Ops a value of a padded iteration must not reach as the right operand: C traps or is undefined
// for an integer division by zero or an oversized shift, even where the result is then discarded.
bool traps_on(const UOp* u) {
  bool divides = u->op == Op::CDIV || u->op == Op::CMOD || u->op == Op::FLOORDIV || u->op == Op::FLOORMOD;
  return is_int(u->dtype) && (divides || u->op == Op::SHL || u->op == Op::SHR);
}

const UOp* padto(const UOp* sink, const Opt& opt, std::string* why) {
  const UOp* r = find_range(sink, opt.axis);
  if (!r) return refuse(why, "no range with " + axis_str(opt.axis));
  AxisType t = r->arg<RangeArg>().type;
  if (t != AxisType::Loop && t != AxisType::Global && t != AxisType::Reduce)
    return refuse(why, opt.str() + ": PADTO pads an output loop or a reduction, " + axis_str(opt.axis) + " is a " +
                           std::string(axis_type_name(t)) + " range");
  if (opt.amount < 1) return refuse(why, opt.str() + ": the amount must be at least 1");
  const UOp* n = r->src(0);
  if (n->divides(opt.amount)) return sink;  // already a multiple: nothing to pad
  // a tune database is input: PADTO(0,9223372036854775807) would round the end past int64
  if (opt.amount - 1 > std::numeric_limits<int64_t>::max() - n->imax())
    return refuse(why, opt.str() + ": the end of " + axis_str(opt.axis) + " padded to a multiple of " +
                           std::to_string(opt.amount) + " does not fit an int64");
  Context& ctx = sink->ctx();
  const UOp* padded_end = n->op == Op::CONST
                              ? ctx.cint((n->ival() + (opt.amount - 1)) / opt.amount * opt.amount, n->dtype)
                              : simplify((Expr(n) + (opt.amount - 1)) / opt.amount * opt.amount);
  std::vector<const UOp*> topo = toposort(sink);
  // what a padded iteration changes: the range and what is computed from it, except a reduction
  // over it (the identity it adds there keeps the result exact) and what follows the END that
  // closes it (softmax's stored term: the loop that reads it back is not inside r)
  std::unordered_set<const UOp*> varies{r};
  for (const UOp* u : topo) {
    if ((u->op == Op::REDUCE || u->op == Op::END) && lists(u, r)) continue;
    if (std::any_of(u->src().begin(), u->src().end(), [&](const UOp* s) { return varies.contains(s); }))
      varies.insert(u);
  }
  for (const UOp* u : topo) {
    if (u->op == Op::REDUCE && lists(u, r)) {
      Op op = u->arg<ReduceArg>().op;
      if (op != Op::ADD && op != Op::MUL && op != Op::MAX)
        return refuse(why, opt.str() + ": a reduction by " + std::string(op_name(op)) + " has no identity to pad with");
    }
    if (traps_on(u) && varies.contains(u->src(1)))
      return refuse(why, opt.str() + ": " + axis_str(opt.axis) +
                             " reaches an integer divisor or shift, which a padded iteration could make trap");
    if (u->op == Op::STORE && varies.contains(u) && (t == AxisType::Reduce || u->src(0)->op != Op::INDEX))
      return refuse(why, opt.str() + ": a store depends on " + axis_str(opt.axis) + " where no gate can go");
    if (u->op == Op::INDEX && varies.contains(u) && u->nsrc() != 2)
      return refuse(why, opt.str() + ": an INDEX with a separate gate operand");
  }
  // in terms of r; the substitution below makes every use of r (this one too) the padded range
  Expr valid = Expr(r) < Expr(n);
  std::unordered_map<const UOp*, const UOp*> map{{r, ctx.make(Op::RANGE, r->dtype, {padded_end}, r->arg())}};
  for (const UOp* u : topo) {
    if (u->op == Op::INDEX && varies.contains(u->src(1))) map[u] = gate_index(u, valid);
    if (u->op == Op::STORE && varies.contains(u)) map[u->src(0)] = gate_index(u->src(0), valid);
    if (u->op == Op::REDUCE && lists(u, r)) {
      const UOp* x = u->src(0);
      const UOp* id = reduce_identity(ctx, u->arg<ReduceArg>().op, x->dtype);
      std::vector<const UOp*> src(u->src().begin(), u->src().end());
      src[0] = ctx.make(Op::WHERE, x->dtype, {valid, x, id});
      map[u] = u->with_src(src);
    }
  }
  return substitute(sink, map);
}

// SWAP: where one END closes both ranges, each takes the other's place in the loop nest
const UOp* swap(const UOp* sink, const Opt& opt, std::string* why) {
  const UOp* a = find_range(sink, opt.axis);
  const UOp* b = find_range(sink, opt.amount);
  if (!a || !b) return refuse(why, "no range with " + axis_str(a ? opt.amount : opt.axis));
  if (a == b) return refuse(why, opt.str() + ": SWAP needs two different axes");
  for (const UOp* r : {a, b})
    if (r->arg<RangeArg>().type != AxisType::Loop)
      return refuse(why, opt.str() + ": SWAP reorders output loops, " + axis_str(r->arg<RangeArg>().axis) + " is a " +
                             std::string(axis_type_name(r->arg<RangeArg>().type)) + " range");
  std::unordered_map<const UOp*, const UOp*> map;
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::END || !lists(u, a) || !lists(u, b)) continue;
    std::vector<const UOp*> src(u->src().begin(), u->src().end());
    std::iter_swap(std::find(src.begin() + 1, src.end(), a), std::find(src.begin() + 1, src.end(), b));
    map[u] = u->with_src(src);
  }
  if (map.empty()) return refuse(why, opt.str() + ": no END closes both axes");
  return substitute(sink, map);
}

// Why GROUP(axis, amount) cannot share reduction r among a work group, or "" where it can. Each
// reduction of the kernel may be grouped (softmax's max and sum, layernorm's mean and variance),
// all by one group: every GROUP of a kernel has the same amount, its items are "lidx0" (gpu dims).
// One store, which gpu dims gives to the group's item 0 where all items compute the same value,
// and no reduction inside an output loop: the partials' local buffer is written once, so nothing
// can write it again while another item still reads it (a barrier after the reads would be needed).
std::string group_misfit(const UOp* sink, const Opt& opt, const UOp* r) {
  int64_t stores = 0;
  for (const UOp* u : toposort(sink)) {
    stores += u->op == Op::STORE;
    if (u->op != Op::RANGE) continue;
    const AxisType t = u->arg<RangeArg>().type;
    if (t == AxisType::Local) return "GROUP comes before LOCAL in one kernel";
    if (t == AxisType::GroupReduce && u->src(0)->ival() != opt.amount)
      return "the kernel's work group has " + std::to_string(u->src(0)->ival()) +
             " items already (each GROUP of a kernel shares it)";
  }
  if (stores != 1) return std::string(kind_name(opt.kind)) + " takes a kernel of one store";
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::REDUCE || !r || !lists(u, r)) continue;
    for (const UOp* x : u->src().subspan(1))
      if (x->op == Op::RANGE && x->arg<RangeArg>().type == AxisType::GroupReduce)
        return "its reduction is grouped already";
    for (const UOp* x : toposort(u->src(0)))
      if (x->op == Op::RANGE && x->arg<RangeArg>().type == AxisType::Loop && !lists(u, x))
        return "its reduction lies inside an output loop (" + axis_str(x->arg<RangeArg>().axis) +
               "), which would write the partials again while other items read them";
  }
  return "";
}

// LOCAL of an output loop in a grouped kernel (softmax's stored columns): the loop's iterations
// are shared among the group's items, each taking every amount-th one (r -> outer * amount + lidx0:
// neighbouring items store neighbouring elements). The group's size, a loop no reduction depends on
// (the loop runs after the group's reductions, the same count on every item), and a kernel that
// does not read what it stores (one item's stores are not another's to read).
const UOp* share_loop(const UOp* sink, const Opt& opt, std::string* why) {
  const UOp* r = find_range(sink, opt.axis);
  if (!r) return refuse(why, "no range with " + axis_str(opt.axis));
  if (r->arg<RangeArg>().type != AxisType::Loop)
    return refuse(why, opt.str() + ": in a kernel with GROUP, LOCAL shares an output loop among the group's items, " +
                           axis_str(opt.axis) + " is a " + std::string(axis_type_name(r->arg<RangeArg>().type)) +
                           " range");
  for (const UOp* u : toposort(sink)) {
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::GroupReduce && u->src(0)->ival() != opt.amount)
      return refuse(why, opt.str() + ": the kernel's work group has " + std::to_string(u->src(0)->ival()) +
                             " items (LOCAL shares a loop among them)");
    if (u->op == Op::REDUCE && contains(u, r))
      return refuse(why, opt.str() + ": a reduction depends on " + axis_str(opt.axis) +
                             " (LOCAL shares a loop that runs after the group's reductions)");
    // two loops of one nest on the same id would run only the pairs where they are equal
    if (u->op == Op::STORE && contains(u, r))
      for (const UOp* x : toposort(u))
        if (x->op == Op::RANGE && x->arg<RangeArg>().type == AxisType::Local)
          return refuse(why, opt.str() + ": a loop of the same nest (" + axis_str(x->arg<RangeArg>().axis) +
                                 "'s) is shared among the group's items already");
  }
  if (reads_what_it_stores(sink))
    return refuse(why, opt.str() + ": the kernel reads a buffer it stores, which other items' shares would write");
  return split_range(sink, opt, why);
}

}  // namespace

const UOp* apply_opt(const UOp* sink, const Opt& opt, std::string* why, bool local_memory) {
  switch (opt.kind) {
    case Opt::Kind::Upcast:
    case Opt::Kind::Unroll:
    case Opt::Kind::Lane:
      return split_range(sink, opt, why);
    case Opt::Kind::Thread: {
      const UOp* outermost = sink->nsrc() == 1 && sink->src(0)->op == Op::END ? sink->src(0)->src(1) : nullptr;
      if (!outermost || outermost->op != Op::RANGE || outermost->arg<RangeArg>().axis != opt.axis)
        return refuse(why, opt.str() + ": THREAD splits only the outermost output loop of a kernel with one loop nest");
      const UOp* s = mark_thread_axis(sink);
      return s ? s : refuse(why, opt.str() + ": nothing to share among the cores");
    }
    case Opt::Kind::Padto:
      return padto(sink, opt, why);
    case Opt::Kind::Swap:
      return swap(sink, opt, why);
    case Opt::Kind::Local: {
      if (!local_memory) return refuse(why, "LOCAL needs a GPU target's work groups; the CPU target has none");
      // a Global loop split into work groups (the outer part, still Global) of `amount` items
      const UOp* r = find_range(sink, opt.axis);
      const bool grouped = std::ranges::any_of(toposort(sink), [](const UOp* u) {
        return u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::GroupReduce;
      });
      if (r && r->arg<RangeArg>().type != AxisType::Global && !grouped)
        return refuse(why, opt.str() + ": LOCAL splits a loop on the grid, " + axis_str(opt.axis) + " is a " +
                               std::string(axis_type_name(r->arg<RangeArg>().type)) + " range");
      return grouped ? share_loop(sink, opt, why) : split_range(sink, opt, why);
    }
    case Opt::Kind::Group:
    case Opt::Kind::GroupTop:
      if (local_memory) {
        const UOp* r = find_range(sink, opt.axis);
        if (r && r->arg<RangeArg>().type != AxisType::Reduce)
          return refuse(why, opt.str() + ": " + kind_name(opt.kind) + " splits reductions, " + axis_str(opt.axis) +
                                 " is not one");
        if (std::string no = group_misfit(sink, opt, r); !no.empty()) return refuse(why, opt.str() + ": " + no);
        // a reduction of any length: padded to a multiple of the group first
        const UOp* padded = padto(sink, Opt{Opt::Kind::Padto, opt.axis, opt.amount}, why);
        return padded ? split_range(padded, opt, why) : nullptr;
      }
      return refuse(why,
                    std::string(kind_name(opt.kind)) +
                        " needs a target with local memory to combine partial reductions; the CPU target has none");
    case Opt::Kind::Tc:
      return refuse(why, "TC needs a target with tensor cores; the CPU target has none");
  }
  return refuse(why, "unknown opt");
}

const UOp* tile_reduction(const UOp* sink, int64_t tile) {
  if (sink->nsrc() != 1 || sink->src(0)->op != Op::END) return nullptr;
  const UOp* end = sink->src(0);
  const UOp* st = end->src(0);
  if (st->op != Op::STORE || st->src(0)->op != Op::INDEX || st->src(0)->src(0)->op != Op::PARAM) return nullptr;
  const UOp* red = st->src(1);
  if (red->op != Op::REDUCE || red->nsrc() != 2 || red->arg<ReduceArg>().op != Op::ADD) return nullptr;
  const UOp* k = red->src(1);
  const UOp* n = k->src(0);
  if (tile < 2) return nullptr;
  // a constant length: whole blocks only; a symbolic one (a dim): blocks where it is long, the
  // n % tile steps past the last block summed in the nest that starts the output (below)
  // (imax / 2 < tile, not imax < 2 * tile: a tune database's block may be any int64)
  if (n->op == Op::CONST ? n->ival() % tile != 0 || n->ival() / tile < 2 : n->imax() / 2 < tile) return nullptr;
  Context& ctx = sink->ctx();
  int32_t next_axis = first_free_axis(sink);
  const UOp* idx = st->src(0);
  const UOp* out = idx->src(0);
  // a nest of its own over copies of the output loops (`clones`, filled here), storing `body`
  // (which uses the copies)
  auto own_nest = [&](std::unordered_map<const UOp*, const UOp*>& clones) {
    for (const UOp* r : end->src().subspan(1)) clones[r] = clone_range(r, next_axis++);
  };
  auto closed = [&](const UOp* body, std::unordered_map<const UOp*, const UOp*>& clones) {
    std::vector<const UOp*> src{body};
    for (const UOp* r : end->src().subspan(1)) src.push_back(clones.at(r));
    return ctx.make(Op::END, dtypes::void_, src);
  };
  // k = block * tile + step over the whole blocks; a symbolic length's n % tile steps past them
  // (`rest`) are summed first, in a nest of their own that stores the output (their sum, or zero
  // where there are none: a constant length has none) before the blocks add theirs. One pass over
  // the output before the blocks, not a zeroing pass and the rest's pass after them (each a read or
  // write of the whole output: sgemm 1024^3 with a symbolic K read and wrote C once more for a
  // rest of no steps)
  const UOp* blocks = n->op == Op::CONST ? ctx.cint(n->ival() / tile, k->dtype) : simplify(Expr(n) / tile);
  const UOp* left = n->op == Op::CONST ? ctx.cint(0, k->dtype) : simplify(Expr(n) % tile);
  std::unordered_map<const UOp*, const UOp*> init_loops;
  own_nest(init_loops);
  const UOp* step =
      ctx.make(Op::RANGE, k->dtype, {ctx.cint(tile, k->dtype)}, RangeArg{next_axis++, AxisType::Reduce, -1});
  const UOp* first = is_float(red->dtype) ? ctx.cfloat(0.0, red->dtype) : ctx.cint(0, red->dtype);
  if (left->op != Op::CONST || left->ival() != 0) {
    const UOp* rest = ctx.make(Op::RANGE, k->dtype, {left}, RangeArg{next_axis++, AxisType::Reduce, -1});
    const UOp* tail =
        ctx.make(Op::REDUCE, red->dtype, {substitute(red->src(0), k, Expr(blocks) * tile + rest), rest}, red->arg());
    first = substitute(tail, init_loops);
  }
  const UOp* init = closed(ctx.make(Op::STORE, dtypes::void_, {substitute(idx, init_loops), first}), init_loops);
  // each block adds its partial sum to what the output holds
  RangeArg block_arg = k->arg<RangeArg>();
  block_arg.type = AxisType::Loop;
  block_arg.sub = 0;
  const UOp* block = ctx.make(Op::RANGE, k->dtype, {blocks}, block_arg);
  const UOp* kk = ctx.make(Op::ADD, k->dtype, {ctx.make(Op::MUL, k->dtype, {block, ctx.cint(tile, k->dtype)}), step});
  const UOp* partial = ctx.make(Op::REDUCE, red->dtype, {substitute(red->src(0), k, kk), step}, red->arg());
  // the read of what the first nest and earlier blocks stored is ordered after them
  const UOp* before =
      ctx.make(Op::INDEX, idx->dtype, {ctx.make(Op::AFTER, out->dtype, {out, init, block}), idx->src(1)});
  const UOp* sum = ctx.make(Op::ADD, red->dtype, {before, partial});
  std::vector<const UOp*> rmw_src{ctx.make(Op::STORE, dtypes::void_, {idx, sum}), block};
  rmw_src.insert(rmw_src.end(), end->src().begin() + 1, end->src().end());
  const UOp* rmw = ctx.make(Op::END, dtypes::void_, rmw_src);
  return ctx.make(Op::SINK, dtypes::void_, {init, rmw}, sink->arg());
}

const UOp* renumber_ranges(const UOp* sink, int32_t first_axis) {
  std::unordered_map<const UOp*, const UOp*> map;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::RANGE) map[u] = clone_range(u, first_axis++);
  return substitute(sink, map);
}

const UOp* join_nests(const UOp* a, const UOp* b) {
  std::vector<const UOp*> src(a->src().begin(), a->src().end());
  src.insert(src.end(), b->src().begin(), b->src().end());
  return a->ctx().make(Op::SINK, dtypes::void_, src, a->arg());
}

const UOp* mark_thread_axis(const UOp* sink) {
  if (sink->nsrc() != 1 || sink->src(0)->op != Op::END) return nullptr;
  const UOp* r = sink->src(0)->src(1);  // the outermost output loop
  if (r->op != Op::RANGE || r->arg<RangeArg>().type != AxisType::Loop) return nullptr;
  if (r->src(0)->op == Op::CONST && r->src(0)->ival() < 2) return nullptr;
  RangeArg a = r->arg<RangeArg>();
  a.type = AxisType::Thread;
  return substitute(sink, {{r, sink->ctx().make(Op::RANGE, r->dtype, r->src(), a)}});
}

}  // namespace kiln::codegen
