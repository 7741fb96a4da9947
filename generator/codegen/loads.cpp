// add loads: the scheduler's kernel ASTs read memory with a bare INDEX; from here on a read is an
// explicit LOAD(INDEX), so the renderer and the later stages see reads and addresses apart.
#include "generator/codegen/passes.h"

namespace kiln::codegen {

namespace {

bool is_read(const UOp* s) { return s->op == Op::INDEX && !s->dtype.ptr; }

const UOp* add_loads(const Match& m) {
  const UOp* u = m.root;
  std::vector<const UOp*> src(u->src().begin(), u->src().end());
  bool changed = false;
  for (size_t i = u->op == Op::STORE ? 1 : 0; i < src.size(); ++i) {
    if (u->op == Op::REDUCE && i > 0) break;  // a REDUCE's other sources are its ranges
    if (!is_read(src[i])) continue;
    src[i] = u->ctx().make(Op::LOAD, src[i]->dtype, {src[i]});
    changed = true;
  }
  return changed ? u->with_src(src) : nullptr;
}

}  // namespace

const PatternMatcher& pm_add_loads() {
  static const PatternMatcher pm({Rule(
      UPat::op(OpSet::of_group(G_UNARY | G_BINARY | G_TERNARY) | OpSet{Op::CAST, Op::BITCAST, Op::STORE, Op::REDUCE})
          .allow_any_len(),
      add_loads)});
  return pm;
}

const UOp* gate_index(const UOp* idx, const UOp* valid) {
  Context& ctx = idx->ctx();
  const UOp* i = idx->src(1);
  if (i->op == Op::WHERE && i->src(2)->is_invalid()) {
    valid = Expr(valid) & Expr(i->src(0));
    i = i->src(1);
  }
  return idx->with_src({{idx->src(0), ctx.make(Op::WHERE, i->dtype, {valid, i, ctx.invalid()})}});
}

}  // namespace kiln::codegen
