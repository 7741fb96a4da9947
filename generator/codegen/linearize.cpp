// linearize: the kernel graph as a list in execution order.
//
// Loops nest as their ENDs say: a range's loop sits inside the innermost range its END still
// depends on. Every other node goes into the innermost loop among the ranges it depends on, so
// code that does not depend on a loop runs outside it (the row statistics of a fused softmax run
// once per row, not once per element). Within one loop body the nodes and the child loops are
// ordered by their dependencies, ties broken by the graph's own order, so the list is
// deterministic.
#include <algorithm>
#include <functional>
#include <memory>
#include <queue>
#include <span>

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
    // not cleared: every node looked up is in the toposort, and clearing a table as large as the
    // Context costs more than the rest of the pass
    pos_ = std::make_unique_for_overwrite<uint32_t[]>(size_t(max_id) + 1);
    for (size_t i = 0; i < topo_.size(); ++i) pos_[topo_[i]->id] = uint32_t(i);
    find_loops();
    compute_deps();
    nest_loops();
    place_nodes();
    order_items();
    std::vector<const UOp*> out;
    out.reserve(topo_.size() + ranges_.size());
    emit(kTop, out);
    out.push_back(sink_);
    return out;
  }

 private:
  // Every table is dense: nodes by toposort position, loops by range index (kTop: the kernel's
  // top level), so the passes below cost no hashing.
  static constexpr uint32_t kTop = ~uint32_t(0);
  static constexpr uint32_t kNone = ~uint32_t(0);
  uint32_t pos(const UOp* u) const { return pos_[u->id]; }
  uint32_t rid(const UOp* r) const { return range_id_[pos(r)]; }

  // Range sets are bitsets of `words_` 64-bit words, one row per node (by toposort position).
  const uint64_t* deps(const UOp* u) const { return &deps_[size_t(pos(u)) * words_]; }
  bool has(const uint64_t* d, size_t i) const { return (d[i / 64] >> (i % 64)) & 1; }

  void find_loops() {
    range_id_.assign(topo_.size(), kNone);
    for (const UOp* u : topo_) {
      if (u->op == Op::RANGE) {
        range_id_[pos(u)] = uint32_t(ranges_.size());
        ranges_.push_back(u);
      }
    }
    end_of_.assign(ranges_.size(), nullptr);
    for (const UOp* u : topo_) {
      if (u->op != Op::END) continue;
      if (u->nsrc() != 2 || u->src(1)->op != Op::RANGE) throw InternalError("linearize: END must close one range");
      const UOp*& e = end_of_[rid(u->src(1))];
      if (e) throw InternalError("linearize: range closed twice: " + print(u->src(1)));
      e = u;
    }
    for (size_t i = 0; i < ranges_.size(); ++i)
      if (!end_of_[i]) throw InternalError("linearize: range never closed: " + print(ranges_[i]));
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
        size_t r = rid(u);
        d[r / 64] |= uint64_t(1) << (r % 64);
      }
      if (u->op == Op::END) {
        size_t r = rid(u->src(1));
        d[r / 64] &= ~(uint64_t(1) << (r % 64));
      }
    }
  }

  // depth and parent of each loop: inside the deepest range its END depends on
  size_t depth(uint32_t r) {
    if (depth_[r] != 0) return depth_[r];
    const uint64_t* d = deps(end_of_[r]);
    uint32_t parent = kTop;
    size_t best = 0;
    for (uint32_t i = 0; i < ranges_.size(); ++i) {
      if (!has(d, i)) continue;
      size_t di = depth(i);
      if (di >= best) best = di, parent = i;
    }
    parent_[r] = parent;
    depth_[r] = best + 1;
    return best + 1;
  }
  size_t scope_depth(uint32_t scope) const { return scope == kTop ? 0 : depth_[scope]; }

  void nest_loops() {
    depth_.assign(ranges_.size(), 0);
    parent_.assign(ranges_.size(), kTop);
    for (uint32_t r = 0; r < ranges_.size(); ++r) depth(r);
    // each range with its ancestors, for the nesting checks
    anc_.assign(ranges_.size() * words_, 0);
    for (size_t i = 0; i < ranges_.size(); ++i)
      for (uint32_t j = uint32_t(i); j != kTop; j = parent_[j]) anc_[i * words_ + j / 64] |= uint64_t(1) << (j % 64);
    for (uint32_t r = 0; r < ranges_.size(); ++r) check_chain(deps(end_of_[r]), parent_[r], ranges_[r]);
  }

  // every range in d must enclose `inner` (or be it): otherwise no loop order exists
  void check_chain(const uint64_t* d, uint32_t inner, const UOp* who) const {
    const uint64_t* a = inner != kTop ? &anc_[inner * words_] : nullptr;
    for (size_t w = 0; w < words_; ++w)
      if (d[w] & ~(a ? a[w] : 0))
        throw InternalError("linearize: " + print(who).substr(0, 200) + " uses ranges that do not nest");
  }

  uint32_t deepest(const uint64_t* d) const {
    uint32_t best = kTop;
    for (size_t w = 0; w < words_; ++w)
      for (uint64_t bits = d[w]; bits; bits &= bits - 1) {
        uint32_t r = uint32_t(w * 64 + size_t(__builtin_ctzll(bits)));
        if (best == kTop || depth_[r] > depth_[best]) best = r;
      }
    return best;
  }

  // An item of a loop body: a node, or a child loop (its RANGE stands for it).
  struct Home {
    uint32_t scope;  // a range index, or kTop
    const UOp* item;
  };
  // The bodies are one array, scope after scope (the top level last), each in the graph's order.
  size_t body(uint32_t scope) const { return scope == kTop ? ranges_.size() : scope; }
  std::span<const UOp*> items(uint32_t scope) {
    size_t k = body(scope);
    return {items_.data() + items_at_[k], items_at_[k + 1] - items_at_[k]};
  }

  void place_nodes() {
    home_.assign(topo_.size(), Home{kTop, nullptr});
    items_at_.assign(ranges_.size() + 2, 0);  // counts first, then where each body starts
    for (const UOp* u : topo_) {
      if (u == sink_) continue;
      Home& h = home_[pos(u)];
      if (u->op == Op::RANGE) {
        h = {parent_[rid(u)], u};
      } else if (u->op == Op::END) {
        const UOp* r = u->src(1);
        h = {parent_[rid(r)], r};
      } else {
        uint32_t s = deepest(deps(u));
        check_chain(deps(u), s, u);
        h = {s, u};
      }
      // each node is its own item once; an END stands for its range, which is an item already
      if (h.item == u) ++items_at_[body(h.scope) + 1];
    }
    for (size_t k = 0; k + 1 < items_at_.size(); ++k) items_at_[k + 1] += items_at_[k];
    items_.resize(items_at_.back());
    std::vector<uint32_t> fill(items_at_.begin(), items_at_.end() - 1);
    for (const UOp* u : topo_) {
      const Home& h = home_[pos(u)];
      if (u != sink_ && h.item == u) items_[fill[body(h.scope)]++] = u;
    }
  }

  void order_items() {
    // dependency edges between items of the same scope, at the scopes where user and source meet
    std::vector<std::pair<uint32_t, uint32_t>> edges;  // (source item, user item) by position
    size_t most = 0;
    for (const UOp* u : topo_) most += u->nsrc();
    edges.reserve(most);
    indeg_.assign(topo_.size(), 0);
    for (const UOp* u : topo_) {
      if (u == sink_) continue;
      for (const UOp* s : u->src()) {
        Home hu = home_[pos(u)], hs = home_[pos(s)];
        // walk both up to a common scope
        while (hu.scope != hs.scope) {
          size_t du = scope_depth(hu.scope), ds = scope_depth(hs.scope);
          if (du >= ds) hu = {parent_[hu.scope], ranges_[hu.scope]};
          if (ds >= du) hs = {parent_[hs.scope], ranges_[hs.scope]};
        }
        if (hu.item == hs.item) continue;
        edges.emplace_back(pos(hs.item), pos(hu.item));
        ++indeg_[pos(hu.item)];
      }
    }
    // the successors of every item, as one array (counting sort by source)
    std::vector<uint32_t> first(topo_.size() + 1, 0), succ(edges.size());
    for (const auto& e : edges) ++first[e.first + 1];
    for (size_t i = 0; i < topo_.size(); ++i) first[i + 1] += first[i];
    std::vector<uint32_t> fill(first.begin(), first.end() - 1);
    for (const auto& e : edges) succ[fill[e.first]++] = e.second;
    // Within a scope, the ready item that comes first in the graph's order goes first. The list is
    // in that order, and most edges point forward in it: a cursor walks the list, and only an item
    // that becomes ready behind the cursor waits in the heap.
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> behind;
    std::vector<const UOp*> sorted;
    auto sort_scope = [&](std::span<const UOp*> list) {
      sorted.clear();
      size_t c = 0;  // every ready item before the cursor is in `behind`
      auto ahead = [&](uint32_t p) { return c < list.size() && p >= pos(list[c]); };
      while (sorted.size() < list.size()) {
        while (c < list.size() && indeg_[pos(list[c])] != 0) ++c;
        uint32_t it;
        if (!behind.empty() && (c == list.size() || behind.top() < pos(list[c]))) {
          it = behind.top();
          behind.pop();
        } else if (c < list.size()) {
          it = pos(list[c++]);
        } else {
          throw InternalError("linearize: the loop bodies depend on each other in a cycle");
        }
        sorted.push_back(topo_[it]);
        // every edge joins two items of one scope
        for (uint32_t k = first[it]; k < first[it + 1]; ++k)
          if (--indeg_[succ[k]] == 0 && !ahead(succ[k])) behind.push(succ[k]);
      }
      std::copy(sorted.begin(), sorted.end(), list.begin());
    };
    for (uint32_t r = 0; r < ranges_.size(); ++r) sort_scope(items(r));
    sort_scope(items(kTop));
  }

  void emit(uint32_t scope, std::vector<const UOp*>& out) {
    for (const UOp* it : items(scope)) {
      out.push_back(it);
      if (it->op != Op::RANGE) continue;
      emit(rid(it), out);
      out.push_back(end_of_[rid(it)]);
    }
  }

  const UOp* sink_;
  std::vector<const UOp*> topo_;
  std::unique_ptr<uint32_t[]> pos_;  // node id -> toposort position
  std::vector<uint32_t> range_id_;   // position -> range index (kNone for other nodes)
  std::vector<const UOp*> ranges_;   // by range index
  std::vector<const UOp*> end_of_;   // by range index
  std::vector<uint32_t> parent_;     // by range index: the enclosing loop, or kTop
  std::vector<size_t> depth_;        // by range index: 1 for an outermost loop
  size_t words_ = 0;
  std::vector<uint64_t> deps_, anc_;  // per node / per range: range bitsets
  std::vector<Home> home_;            // by position
  std::vector<uint32_t> indeg_;       // by position
  std::vector<const UOp*> items_;     // the loop bodies (items())
  std::vector<uint32_t> items_at_;    // by body(): where the body starts in items_, and one past the last
};

}  // namespace

std::vector<const UOp*> linearize(const UOp* sink) { return Linearizer(sink).run(); }

}  // namespace kiln::codegen
