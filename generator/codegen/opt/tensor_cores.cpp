// TC: a matmul of half-precision inputs on a GPU's tensor cores (tinygrad's TC opt, for NVIDIA's
// mma.sync.m16n8k16 with float sums).
//
// One warp (32 work items) computes 16 x 8 products of the output, up to 2 x 4 of them (32 x 32),
// and a block (a work group) up to 4 warps down the rows (128 x 32). At every step of 16 along the
// reduction each item loads its share of the products' operands (its fragments: 8 elements of A's
// 16 x 16 block for each row of products, 4 of B's 16 x 8 for each column) and the warp multiplies
// them at once (WMMA), each item getting its 4 elements of each 16 x 8 product, which it adds to
// its sums. PTX fixes which
// elements an item holds; with lane = the item's id in the warp, g = lane / 4 and t = lane % 4:
//   A element i (0..7): row g + 8 * (i / 2 % 2), column 2 * t + i % 2 + 8 * (i / 4)
//   B element i (0..3): row 2 * t + i % 2 + 8 * (i / 2), column g
//   C element i (0..3): row g + 8 * (i / 2), column 2 * t + i % 2
// (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating point type"). The kernel is written
// with those indices directly, not through tinygrad's opts and swizzles: the block's rows and
// columns become two Global loops, its warp a Local loop and the lane two more of 8 and 4 (the work
// group), the reduction a loop of 16-steps, and each product's 4 outputs four REDUCEs of a GEP of
// its WMMA. Rows and
// columns that are not whole tiles are padded to them first where the caller allows (PADTO): the
// work items past the ends load zeros and store nothing, and every lane of each warp runs every
// step. (A padded reduction's WHERE(k < K, a * b, 0) is taken too, where a tune database pads it.)
//
// The product of two halves is exact in the tensor core, where the kernel's own semantics rounds it
// to half before the float sum (as tinygrad's TC, kiln takes the exact product).
#include <algorithm>
#include <array>
#include <span>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/passes.h"
#include "generator/symbolic/symbolic.h"
#include "generator/target/target.h"

namespace kiln::codegen {

namespace {

// A block's tile, largest first: rows of 128 (4 warps down the rows, each two products of 16 rows),
// 64, 32 (one warp) and 16; columns of 32 (each warp's four products of 8 columns), 16 and 8
constexpr std::array<int64_t, 4> kRowTiles = {128, 64, 32, 16};
constexpr std::array<int64_t, 3> kColumnTiles = {32, 16, 8};
constexpr const char* kF16 = "m16n8k16.f16";
constexpr const char* kBf16 = "m16n8k16.bf16";

const UOp* refuse(std::string* why, std::string reason) {
  if (why) *why = "TC: " + std::move(reason);
  return nullptr;
}

// x as a read of a half or bfloat16 input (an INDEX of a PARAM), through a CAST to float
const UOp* half_read(const UOp* x) {
  if (x->op == Op::CAST && x->dtype == dtypes::float32) x = x->src(0);
  if (x->op != Op::INDEX || x->src(0)->op != Op::PARAM) return nullptr;
  return x->dtype == dtypes::float16 || x->dtype == dtypes::bfloat16 ? x : nullptr;
}

// Is the read `x` (an INDEX, through a CAST) gated by `c`, its gate c or an AND of c and others?
// It then reads 0 wherever c is false (PADTO's gates: a padded reduction's WHERE(c, a * b, 0) is
// a * b where both reads are so gated)
bool gated_by(const UOp* x, const UOp* c) {
  if (x->op == Op::CAST) x = x->src(0);
  const UOp* i = x->src(1);
  if (i->op != Op::WHERE || !i->src(2)->is_invalid()) return false;
  for (const UOp* term : i->src(0)->split(Op::AND))
    if (term == c) return true;
  return false;
}

}  // namespace

const UOp* apply_tensor_cores(const UOp* sink, const target::Target& t, std::string* why, std::vector<Opt>* pads) {
  if (t.tensor_cores.empty()) return refuse(why, t.name + " has no tensor cores");
  if (sink->nsrc() != 1 || sink->src(0)->op != Op::END) return refuse(why, "the kernel is not one loop nest");
  const UOp* end = sink->src(0);
  const UOp* st = end->src(0);
  if (st->op != Op::STORE || st->src(0)->op != Op::INDEX) return refuse(why, "the kernel is not one store");
  const UOp* red = nullptr;
  for (const UOp* u : toposort(st->src(1)))
    if (u->op == Op::REDUCE) {
      if (red) return refuse(why, "the kernel has more than one reduction");
      red = u;
    }
  if (!red || red->nsrc() != 2 || red->arg<ReduceArg>().op != Op::ADD || red->dtype != dtypes::float32)
    return refuse(why, "the kernel's value is not one float sum over one range");
  const UOp* k = red->src(1);
  // the product of two half inputs, in half (rounded, then summed as floats) or in float
  const UOp* body = red->src(0);
  const UOp* padded = nullptr;  // a padded reduction's WHERE(k < K, product, 0)
  if (body->op == Op::WHERE && body->src(2)->is_const() && body->src(2)->cval().is_float() &&
      body->src(2)->cval().f == 0.0)
    padded = body->src(0), body = body->src(1);
  if (body->op == Op::CAST && body->dtype == dtypes::float32 && body->src(0)->op == Op::MUL) body = body->src(0);
  if (body->op != Op::MUL) return refuse(why, "the sum is not of products");
  const UOp* x = half_read(body->src(0));
  const UOp* y = half_read(body->src(1));
  if (!x || !y || x->dtype != y->dtype) return refuse(why, "the products are not of two float16 (or bfloat16) inputs");
  if (padded && (!gated_by(body->src(0), padded) || !gated_by(body->src(1), padded)))
    return refuse(why, "a padded reduction reads an input past its end");
  const bool bf16 = x->dtype == dtypes::bfloat16;
  if (!contains(x, k) || !contains(y, k)) return refuse(why, "an input does not depend on the reduction");
  // the rows (A depends on them, B does not) and the columns (the other way round); other output
  // loops (a batch) stay as they are
  const UOp *m = nullptr, *n = nullptr;
  for (const UOp* r : end->src().subspan(1)) {
    if (r->op != Op::RANGE) return refuse(why, "an output loop is not a range");
    const bool in_x = contains(x, r), in_y = contains(y, r);
    if (in_x == in_y) continue;
    if ((in_x ? m : n) != nullptr) return refuse(why, "more than one output loop is read by one input alone");
    (in_x ? m : n) = r;
  }
  if (!m || !n) return refuse(why, "the kernel is not a matrix product (no rows of A alone and columns of B alone)");
  // the rows and columns padded to whole tiles where they may be as long as one (PADTO: the items
  // past the ends read 0 and store nothing), in a kernel of those two output loops only: beside a
  // batch loop the bounds prover does not bound the gated stores (nor, for a padded reduction, the
  // reads gated by k < K: K * row + k under row < M and k < K), and gen would then drop every opt
  if (pads && k->src(0)->divides(16) && (end->nsrc() == 3 || (m->src(0)->divides(16) && n->src(0)->divides(8)))) {
    const UOp* s = sink;
    std::vector<Opt> made;
    for (auto [r, sizes] : {std::pair<const UOp*, std::span<const int64_t>>{m, kRowTiles}, {n, kColumnTiles}}) {
      if (r->src(0)->divides(sizes.back())) continue;
      if (r->src(0)->imax() < sizes.back()) return refuse(why, "a dim is never as long as a tile");
      int64_t size = sizes.front();  // the block's tile where the dim may be as long, else less
      for (int64_t z : sizes)
        if (r->src(0)->imax() >= z) {
          size = z;
          break;
        }
      const Opt o{Opt::Kind::Padto, r->arg<RangeArg>().axis, size};
      if (!(s = apply_opt(s, o, why, true))) return nullptr;
      made.push_back(o);
    }
    const UOp* r = apply_tensor_cores(s, t, why, nullptr);
    if (r) pads->insert(pads->end(), made.begin(), made.end());
    return r;
  }
  if (!m->src(0)->divides(16) || !n->src(0)->divides(8) || !k->src(0)->divides(16))
    return refuse(why, "the rows, columns and reduction are not known multiples of 16, 8 and 16");
  // the block's tile: the most rows and columns that divide (a warp's wm x wn products, the block's
  // warps bm of them down the rows)
  int64_t rows = 16, cols = 8;
  for (int64_t z : kRowTiles)
    if (m->src(0)->divides(z)) {
      rows = z;
      break;
    }
  for (int64_t z : kColumnTiles)
    if (n->src(0)->divides(z)) {
      cols = z;
      break;
    }
  const int64_t wm = std::min<int64_t>(rows / 16, 2), bm = rows / 16 / wm, wn = cols / 8;
  Context& ctx = sink->ctx();
  const DType it = m->dtype;
  auto piece = [&](const UOp* r, int64_t size, AxisType type) {
    RangeArg a = r->arg<RangeArg>();
    a.type = type;
    a.sub = 0;
    return ctx.make(Op::RANGE, it, {simplify(r->src(0)->divides(size))}, a);
  };
  const UOp* mo = piece(m, rows, AxisType::Global);
  const UOp* no = piece(n, cols, AxisType::Global);
  const UOp* ko = piece(k, 16, AxisType::Reduce);
  // the lane as two ids, lane = 4 g + t: t the block's x (gpu dims gives the last Local range dim 0),
  // g its y, so a warp's lanes are its block's threads in order and no index divides the lane; the
  // warp its z
  const int32_t axis = first_free_axis(sink);
  const UOp* wr = bm > 1 ? ctx.make(Op::RANGE, it, {ctx.cint(bm, it)}, RangeArg{axis, AxisType::Local, -1}) : nullptr;
  const UOp* gr = ctx.make(Op::RANGE, it, {ctx.cint(8, it)}, RangeArg{axis + 1, AxisType::Local, -1});
  const UOp* tr = ctx.make(Op::RANGE, it, {ctx.cint(4, it)}, RangeArg{axis + 2, AxisType::Local, -1});
  Expr g = gr, tt = tr;
  auto c = [&](int64_t v) { return Expr(ctx.cint(v, it)); };
  auto as_float = [&](const UOp* read) { return ctx.make(Op::CAST, dtypes::float32, {read}); };
  // the first row of the warp's im-th product, the first column of its in-th
  Expr warp_row = Expr(mo) * c(rows);
  if (wr) warp_row = warp_row + Expr(wr) * c(16 * wm);
  auto first_row = [&](int64_t im) { return warp_row + c(16 * im); };
  auto first_col = [&](int64_t in) { return Expr(no) * c(cols) + c(8 * in); };
  const DType f4 = DType(dtypes::float32).vec(4);
  std::vector<const UOp*> a_frags, b_frags;  // each product row's A fragment, each column's B fragment
  for (int64_t im = 0; im < wm; ++im) {
    std::vector<const UOp*> a;
    for (int64_t i = 0; i < 8; ++i) {
      Expr row = first_row(im) + g + c(8 * (i / 2 % 2)), col = Expr(ko) * c(16) + tt * c(2) + c(i % 2 + 8 * (i / 4));
      a.push_back(as_float(substitute(x, {{m, row}, {k, col}})));
    }
    a_frags.push_back(ctx.make(Op::STACK, DType(dtypes::float32).vec(8), a));
  }
  for (int64_t in = 0; in < wn; ++in) {
    std::vector<const UOp*> b;
    for (int64_t i = 0; i < 4; ++i) {
      Expr row = Expr(ko) * c(16) + tt * c(2) + c(i % 2 + 8 * (i / 2)), col = first_col(in) + g;
      b.push_back(as_float(substitute(y, {{k, row}, {n, col}})));
    }
    b_frags.push_back(ctx.make(Op::STACK, f4, b));
  }
  const UOp* zero = ctx.cfloat(0.0, dtypes::float32);
  const UOp* zeros = ctx.make(Op::STACK, f4, {zero, zero, zero, zero});
  std::vector<const UOp*> stores;
  for (int64_t im = 0; im < wm; ++im)
    for (int64_t in = 0; in < wn; ++in) {
      const UOp* w =
          ctx.make(Op::WMMA, f4, {a_frags[size_t(im)], b_frags[size_t(in)], zeros}, Name{bf16 ? kBf16 : kF16});
      for (int64_t i = 0; i < 4; ++i) {
        const UOp* sum =
            ctx.make(Op::REDUCE, dtypes::float32, {ctx.make(Op::GEP, dtypes::float32, {w}, i), ko}, red->arg());
        Expr row = first_row(im) + g + c(8 * (i / 2)), col = first_col(in) + tt * c(2) + c(i % 2);
        stores.push_back(substitute(st, {{red, sum}, {m, row}, {n, col}}));
      }
    }
  std::vector<const UOp*> src{ctx.make(Op::GROUP, dtypes::void_, stores)};
  for (const UOp* r : end->src().subspan(1)) src.push_back(r == m ? mo : r == n ? no : r);
  if (wr) src.push_back(wr);
  src.push_back(gr);
  src.push_back(tr);
  return ctx.make(Op::SINK, dtypes::void_, {ctx.make(Op::END, dtypes::void_, src)}, sink->arg());
}

}  // namespace kiln::codegen
