// linearize: the kernel graph as a list in execution order.
//
// Loops nest as their ENDs say: a range's loop sits inside the innermost range its END still
// depends on. Every other node goes into the innermost loop among the ranges it depends on, so
// code that does not depend on a loop runs outside it (the row statistics of a fused softmax run
// once per row, not once per element). Within one loop body the nodes and the child loops are
// ordered by their dependencies, ties broken by the graph's own order, so the list is
// deterministic.
#include <algorithm>
#include <queue>
#include <unordered_map>

#include "generator/codegen/passes.h"
#include "generator/ir/text.h"

namespace kiln::codegen {

namespace {

class Linearizer {
 public:
  explicit Linearizer(const UOp* sink) : sink_(sink), topo_(toposort(sink)) {}

  std::vector<const UOp*> run() {
    uint32_t max_id = 0;
    for (const UOp* u : topo_) max_id = std::max(max_id, u->id);
    pos_.assign(size_t(max_id) + 1, 0);
    for (size_t i = 0; i < topo_.size(); ++i) {
      order_[topo_[i]] = i;
      pos_[topo_[i]->id] = uint32_t(i);
    }
    find_loops();
    compute_deps();
    nest_loops();
    place_nodes();
    order_items();
    std::vector<const UOp*> out;
    emit(nullptr, out);
    out.push_back(sink_);
    return out;
  }

 private:
  // Range sets are bitsets of `words_` 64-bit words, one row per node (by toposort position).
  const uint64_t* deps(const UOp* u) const { return &deps_[size_t(pos_[u->id]) * words_]; }
  bool has(const uint64_t* d, size_t i) const { return (d[i / 64] >> (i % 64)) & 1; }

  void find_loops() {
    for (const UOp* u : topo_) {
      if (u->op == Op::RANGE) {
        range_id_[u] = ranges_.size();
        ranges_.push_back(u);
      }
    }
    for (const UOp* u : topo_) {
      if (u->op != Op::END) continue;
      if (u->nsrc() != 2 || u->src(1)->op != Op::RANGE) throw InternalError("linearize: END must close one range");
      if (!end_of_.emplace(u->src(1), u).second)
        throw InternalError("linearize: range closed twice: " + print(u->src(1)));
    }
    for (const UOp* r : ranges_)
      if (!end_of_.contains(r)) throw InternalError("linearize: range never closed: " + print(r));
  }

  void compute_deps() {
    words_ = std::max<size_t>(1, (ranges_.size() + 63) / 64);  // one word even without ranges
    deps_.assign(topo_.size() * words_, 0);
    for (size_t i = 0; i < topo_.size(); ++i) {
      const UOp* u = topo_[i];
      uint64_t* d = &deps_[i * words_];
      for (const UOp* s : u->src()) {
        const uint64_t* sd = deps(s);
        for (size_t w = 0; w < words_; ++w) d[w] |= sd[w];
      }
      if (u->op == Op::RANGE) {
        size_t r = range_id_.at(u);
        d[r / 64] |= uint64_t(1) << (r % 64);
      }
      if (u->op == Op::END) {
        size_t r = range_id_.at(u->src(1));
        d[r / 64] &= ~(uint64_t(1) << (r % 64));
      }
    }
  }

  // depth and parent of each loop: inside the deepest range its END depends on
  size_t depth(const UOp* r) {
    if (auto it = depth_.find(r); it != depth_.end()) return it->second;
    const uint64_t* d = deps(end_of_.at(r));
    const UOp* parent = nullptr;
    size_t best = 0;
    for (size_t i = 0; i < ranges_.size(); ++i) {
      if (!has(d, i)) continue;
      size_t di = depth(ranges_[i]);
      if (di >= best) best = di, parent = ranges_[i];
    }
    parent_[r] = parent;
    depth_[r] = best + 1;
    return best + 1;
  }

  void nest_loops() {
    for (const UOp* r : ranges_) depth(r);
    // each range with its ancestors, for the nesting checks
    anc_.assign(ranges_.size() * words_, 0);
    for (size_t i = 0; i < ranges_.size(); ++i)
      for (const UOp* p = ranges_[i]; p; p = parent_.at(p)) {
        size_t j = range_id_.at(p);
        anc_[i * words_ + j / 64] |= uint64_t(1) << (j % 64);
      }
    for (const UOp* r : ranges_) check_chain(deps(end_of_.at(r)), parent_.at(r), r);
  }

  // every range in d must enclose `inner` (or be it): otherwise no loop order exists
  void check_chain(const uint64_t* d, const UOp* inner, const UOp* who) const {
    const uint64_t* a = inner ? &anc_[range_id_.at(inner) * words_] : nullptr;
    for (size_t w = 0; w < words_; ++w)
      if (d[w] & ~(a ? a[w] : 0))
        throw InternalError("linearize: " + print(who).substr(0, 200) + " uses ranges that do not nest");
  }

  const UOp* deepest(const uint64_t* d) const {
    const UOp* best = nullptr;
    for (size_t w = 0; w < words_; ++w)
      for (uint64_t bits = d[w]; bits; bits &= bits - 1) {
        const UOp* r = ranges_[w * 64 + size_t(__builtin_ctzll(bits))];
        if (!best || depth_.at(r) > depth_.at(best)) best = r;
      }
    return best;
  }

  // An item of a loop body: a node, or a child loop (its RANGE stands for it).
  struct Home {
    const UOp* scope;  // nullptr: the kernel's top level
    const UOp* item;
  };

  void place_nodes() {
    for (const UOp* u : topo_) {
      if (u == sink_) continue;
      if (u->op == Op::RANGE) {
        home_[u] = {parent_.at(u), u};
      } else if (u->op == Op::END) {
        const UOp* r = u->src(1);
        home_[u] = {parent_.at(r), r};
      } else {
        const UOp* s = deepest(deps(u));
        check_chain(deps(u), s, u);
        home_[u] = {s, u};
      }
      items_[home_[u].scope];  // every scope exists
      if (home_[u].item == u || u->op == Op::RANGE) add_item(home_[u]);
    }
  }

  void add_item(const Home& h) {
    auto& list = items_[h.scope];
    if (std::find(list.begin(), list.end(), h.item) == list.end()) list.push_back(h.item);
  }

  void order_items() {
    // dependency edges between items of the same scope, at the scopes where user and source meet
    std::unordered_map<const UOp*, std::vector<const UOp*>> succ;
    std::unordered_map<const UOp*, size_t> indeg;
    for (const UOp* u : topo_) {
      if (u == sink_) continue;
      for (const UOp* s : u->src()) {
        Home hu = home_.at(u), hs = home_.at(s);
        // walk both up to a common scope
        while (hu.scope != hs.scope) {
          size_t du = hu.scope ? depth_.at(hu.scope) : 0, ds = hs.scope ? depth_.at(hs.scope) : 0;
          if (du >= ds) hu = {parent_.at(hu.scope), hu.scope};
          if (ds >= du) hs = {parent_.at(hs.scope), hs.scope};
        }
        if (hu.item == hs.item) continue;
        succ[hs.item].push_back(hu.item);
        ++indeg[hu.item];
      }
    }
    for (auto& [scope, list] : items_) {
      auto later = [&](const UOp* a, const UOp* b) { return order_.at(a) > order_.at(b); };
      std::priority_queue<const UOp*, std::vector<const UOp*>, decltype(later)> ready(later);
      for (const UOp* it : list)
        if (indeg[it] == 0) ready.push(it);
      std::vector<const UOp*> sorted;
      while (!ready.empty()) {
        const UOp* it = ready.top();
        ready.pop();
        sorted.push_back(it);
        for (const UOp* n : succ[it])
          if (--indeg[n] == 0 && home_.at(n).scope == scope) ready.push(n);
      }
      if (sorted.size() != list.size())
        throw InternalError("linearize: the loop bodies depend on each other in a cycle");
      list = std::move(sorted);
    }
  }

  void emit(const UOp* scope, std::vector<const UOp*>& out) {
    for (const UOp* it : items_[scope]) {
      out.push_back(it);
      if (it->op != Op::RANGE) continue;
      emit(it, out);
      out.push_back(end_of_.at(it));
    }
  }

  const UOp* sink_;
  std::vector<const UOp*> topo_;
  std::unordered_map<const UOp*, size_t> order_, range_id_, depth_;
  std::vector<const UOp*> ranges_;
  std::unordered_map<const UOp*, const UOp*> end_of_, parent_;
  size_t words_ = 0;
  std::vector<uint32_t> pos_;         // node id -> toposort position
  std::vector<uint64_t> deps_, anc_;  // per node / per range: range bitsets
  std::unordered_map<const UOp*, Home> home_;
  std::unordered_map<const UOp*, std::vector<const UOp*>> items_;
};

}  // namespace

std::vector<const UOp*> linearize(const UOp* sink) { return Linearizer(sink).run(); }

}  // namespace kiln::codegen
