// pm_move_where_on_load: a WHERE that selects between a loaded value and 0 moves its clauses
// into the load's index valid (cond.where(buf[idx], 0) -> buf[idx.valid(cond)]), so the gate
// guards the memory access instead of the value. A gated load gives 0 where it is off.
#include <algorithm>
#include <iterator>
#include <span>
#include <unordered_map>
#include <vector>

#include "generator/symbolic/symbolic.h"

namespace kiln {

namespace {

// The sources of `u` from which on it closes ranges (REDUCE(src, ranges...), END(x, ranges...)).
size_t first_ended(const UOp* u) {
  if (OpSet({Op::REDUCE, Op::END, Op::STAGE, Op::CALL, Op::FUNCTION}).has(u->op)) return 1;
  if (u->op == Op::WMMA) return 3;
  if (u->op == Op::LINEAR) return 0;
  return u->nsrc();
}

// The nodes whose ranges `u` closes; AFTER closes what the nodes it waits for close.
void ended_by(const UOp* u, std::vector<const UOp*>& out) {
  if (u->op == Op::AFTER) {
    for (size_t i = 1; i < u->nsrc(); ++i) ended_by(u->src(i), out);
    return;
  }
  for (size_t i = first_ended(u); i < u->nsrc(); ++i) out.push_back(u->src(i));
}

using RangeSet = std::vector<const UOp*>;  // sorted by creation id

// The RANGEs `root` depends on that are still open at it: the seeds' `.ranges`. A RANGE is
// closed above the node that ends it; ending another node closes every range that node has.
RangeSet open_ranges(const UOp* root) {
  std::unordered_map<const UOp*, RangeSet> memo;
  auto by_id = [](const UOp* p, const UOp* q) { return p->id < q->id; };
  for (const UOp* u : toposort(root)) {
    RangeSet r;
    for (const UOp* s : u->src()) {
      const RangeSet& rs = memo.at(s);
      RangeSet merged;
      std::set_union(r.begin(), r.end(), rs.begin(), rs.end(), std::back_inserter(merged), by_id);
      r.swap(merged);
    }
    std::vector<const UOp*> ended;
    ended_by(u, ended);
    for (const UOp* e : ended) {
      if (e->op == Op::RANGE) {
        r.erase(std::remove(r.begin(), r.end(), e), r.end());
        continue;
      }
      auto it = memo.find(e);
      if (it == memo.end()) continue;
      RangeSet kept;
      std::set_difference(r.begin(), r.end(), it->second.begin(), it->second.end(), std::back_inserter(kept), by_id);
      r.swap(kept);
    }
    if (u->op == Op::RANGE) r.insert(std::lower_bound(r.begin(), r.end(), u, by_id), u);
    memo[u] = std::move(r);
  }
  return memo.at(root);
}

std::vector<const UOp*> indexes_in(const UOp* root) {
  std::vector<const UOp*> out;
  for (const UOp* u : toposort(root))
    if (u->op == Op::INDEX) out.push_back(u);
  return out;
}

// An index gated by a valid is valid.where(idx, Invalid); an ungated index is always valid.
bool is_gated(const UOp* idx) { return idx->op == Op::WHERE && idx->src(2)->is_invalid(); }
const UOp* get_valid(const UOp* idx) { return is_gated(idx) ? idx->src(0) : idx->ctx().cbool(true); }
const UOp* get_idx(const UOp* idx) { return is_gated(idx) ? idx->src(1) : idx; }
// idx.valid(cond), built directly: Invalid is a bool CONST, so promotion must not cast it
const UOp* gate_index(const UOp* idx, const UOp* cond) {
  return idx->ctx().make(Op::WHERE, idx->dtype, {cond, idx, idx->ctx().invalid()});
}

const UOp* and_all(const std::vector<const UOp*>& v) {
  Expr r = v[0];
  for (size_t i = 1; i < v.size(); ++i) r = r & Expr(v[i]);
  return r;
}

// cond.where(ld, 0) with ld = buf[idx] or a CAST of it. A clause moves into the valid when it
// depends on no range the index does not (the load stays where it is) and reads no memory other
// than what the index reads; a clause the valid already holds is dropped.
const UOp* where_on_load(const UOp* cond, const UOp* ld) {
  const UOp* index = ld->op == Op::CAST ? ld->src(0) : ld;
  const UOp* idx = index->src(1);
  // a vector index has a valid per lane; a poisoned index is folded by the Invalid rules
  if (idx->op == Op::STACK || idx->is_invalid()) return nullptr;
  const UOp* load_valid = get_valid(idx);
  const std::vector<const UOp*> in_load = load_valid->split(Op::AND);
  const std::vector<const UOp*> clauses = cond->split(Op::AND);
  auto by_id = [](const UOp* p, const UOp* q) { return p->id < q->id; };
  const RangeSet idx_ranges = open_ranges(idx);
  std::vector<const UOp*> idx_indexes = indexes_in(idx);
  std::sort(idx_indexes.begin(), idx_indexes.end(), by_id);
  auto can_move = [&](const UOp* c) {
    RangeSet rs = open_ranges(c);
    if (!std::includes(idx_ranges.begin(), idx_ranges.end(), rs.begin(), rs.end(), by_id)) return false;
    for (const UOp* u : indexes_in(c))
      if (!std::binary_search(idx_indexes.begin(), idx_indexes.end(), u, by_id)) return false;
    return true;
  };
  std::vector<const UOp*> moved, keep;
  for (const UOp* c : clauses) {
    if (std::find(in_load.begin(), in_load.end(), c) != in_load.end()) continue;
    (can_move(c) ? moved : keep).push_back(c);
  }
  if (keep.size() == clauses.size()) return nullptr;

  const UOp* ret = ld;
  if (!moved.empty()) {
    std::vector<const UOp*> valid;
    if (load_valid != idx->ctx().cbool(true)) valid.push_back(load_valid);
    valid.insert(valid.end(), moved.begin(), moved.end());
    const UOp* srcs[2] = {index->src(0), gate_index(get_idx(idx), and_all(valid))};
    const UOp* gated_load = index->with_src(srcs);
    ret = ld->op == Op::CAST ? ld->with_src(std::span<const UOp* const>(&gated_load, 1)) : gated_load;
  }
  // with every clause gone the WHERE is where(true, ...): fold it here
  if (keep.empty()) return ret;
  return ret->ctx().make(Op::WHERE, ret->dtype, {and_all(keep), ret, ret->const_like(int64_t(0))});
}

PatternMatcher make_move_where_on_load() {
  UPat cond = UPat::var("cond");
  UPat ld = UPat::var("ld");  // the load (an INDEX), or a CAST of it
  UPat load = UPat::op(Op::INDEX, {UPat::var("buf"), UPat::var("idx")}).or_casted("ld");
  return PatternMatcher({
      Rule(cond.where(load, UPat::cnst(0)), [=](const Match& m) { return where_on_load(m[cond], m[ld]); }),
      Rule(cond.where(UPat::cnst(0), load),
           [=](const Match& m) { return where_on_load(m[cond]->logical_not(), m[ld]); }),
  });
}

}  // namespace

const PatternMatcher& pm_move_where_on_load() {
  static const PatternMatcher pm = make_move_where_on_load();
  return pm;
}

}  // namespace kiln
