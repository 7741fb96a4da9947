#include "generator/rewrite/rewrite.h"

#include <algorithm>
#include <memory>

namespace kiln {

// ---------------------------------------------------------------- graph_rewrite

namespace {

using SubMap = std::unordered_map<const UOp*, const UOp*>;

struct Entry {
  const UOp* n;
  int stage;
  const UOp* new_n;
};

class Rewriter {
 public:
  // unchanged_below: the caller knows that no rule changes a node created before this id (nor,
  // as sources are older than their users, anything below it)
  // subst: rewrite by substitute_by() instead of pm's rules (substitute: the same walk, without
  // matching)
  [[gnu::always_inline]] Rewriter(const PatternMatcher& pm, void* ctx, const RewriteOptions& opts, Context& nodes,
                                  uint32_t unchanged_below = 0, bool subst = false)
      : pm_(pm), ctx_(ctx), opts_(opts), ctx_of_nodes_(nodes), unchanged_below_(unchanged_below), subst_(subst) {
    cap_ = opts.max_rewrites ? opts.max_rewrites : 10 * uint64_t(nodes.size()) + 100000;
    // a pure matcher's rules never read the context; with one given, do not trust the marks
    fixed_bit_ = ctx == nullptr ? pm.fixed_bit() : 0;
    fixed_bits_ = fixed_bit_ ? pm.fixed_bits_implying() : 0;
    // every node the walk meets is in the Context now, below one, or made by the walk (fit())
    fit(nodes.size());
  }
  ~Rewriter() {
    scratch_->waits.clear();
    Pool& pool = scratch_pool();
    scratch_->next_free = pool.free;
    pool.free = scratch_;
  }
  Rewriter(const Rewriter&) = delete;
  Rewriter& operator=(const Rewriter&) = delete;

  // substitute mode: `from` becomes `to` (its applied rewrite, kept in its slot before the walk,
  // as a bottom-up rewrite keeps what one application of the rules gives)
  void substitute_by(const UOp* from, const UOp* to) {
    if (from == to) return;
    Slot& s = slot(from);
    s.bpm_done = true;
    cold_at_[from->id].bpm = to;
  }

  const UOp* run(const UOp* root) {
    if (remember_results())
      if (const UOp* r = ctx_of_nodes_.rewritten(root->id, fixed_bit_)) return r;  // rewritten before
    const UOp* r = opts_.bottom_up ? walk<true>(root) : walk<false>(root);
    if (remember_results() && r != root) ctx_of_nodes_.set_rewritten(root->id, fixed_bit_, r);
    return r;
  }

 private:
  template <bool kBottomUp> const UOp* walk(const UOp* root) {
    Entry* sp = base_;  // the top of the stack, kept at hand
    push(sp, {root, 0, root});
    mark_on_stack(root);
    // The entry the next pop would give is kept in `e` instead (the same order, without the
    // push and the pop): a node's stage 1 when stage 0 pushed nothing, a new node's stage 0.
    Entry e;
    while (sp != base_) {
      e = *--sp;
      if (replaced(e.n)) continue;
      if (e.stage == 1) goto stage1;
      if (e.stage == 2) goto stage2;
    stage0 : {
      if (e.n->id < unchanged_below_ || (fixed_bits_ && ctx_of_nodes_.fixed(e.n->id, fixed_bits_))) {
        finish(sp, e.n, e.n);  // nothing below it can change
        continue;
      }
      const UOp* new_n = e.n;
      if constexpr (kBottomUp) new_n = bottom_up_fixed_point(e.n);
      size_t n = new_n->nsrc();
      reserve(sp, n + 1);
      Entry* const mine = sp;
      *sp++ = {e.n, 1, new_n};
      // the sources not on the stack yet (one finished already would be skipped when popped)
      Slot* const slots = slot_at_;
      const uint32_t gen = gen_;
      for (size_t i = n; i-- > 0;) {
        const UOp* x = new_n->src(i);
        Slot& s = slots[x->id];
        if (s.gen == gen) {
          if (s.on_stack || s.replace) continue;
          s.on_stack = true;
        } else {
          s = Slot{gen, true, false, false, nullptr};
        }
        *sp++ = {x, 0, x};
      }
      if (sp != mine + 1) continue;
      sp = mine;  // nothing pushed above it: its stage 1 now
      e.stage = 1;
      e.new_n = new_n;
    }
    stage1 : {
      // every source final? the first that is not is waited for
      std::span<const UOp* const> src = e.new_n->src();
      const Slot* const slots = slot_at_;
      const uint32_t gen = gen_;
      bool changed = false;
      const UOp* wait = nullptr;
      for (const UOp* x : src) {
        const Slot& s = slots[x->id];
        const UOp* rx = s.gen == gen ? s.replace : nullptr;
        if (rx == nullptr) {
          wait = x;
          break;
        }
        changed |= rx != x;
      }
      if (wait) {
        wait_for(wait, e);
        continue;
      }
      const UOp* next;
      if (!changed) {
        const UOp* r = kBottomUp ? nullptr : apply(e.new_n);
        if (r == nullptr) {
          // no rule fires on it (bottom-up: checked before its sources) and its sources are final
          if (fixed_bit_) ctx_of_nodes_.set_fixed(e.new_n->id, fixed_bit_);
          finish(sp, e.n, e.new_n);
          continue;
        }
        next = r;
      } else {
        srcs_.clear();
        for (const UOp* x : src) srcs_.push_back(slot_at_[x->id].replace);
        next = e.new_n->with_src(srcs_);
        fit(next);
      }
      push(sp, {e.n, 2, next});
      e = {next, 0, next};  // popped next
      if (replaced(next)) continue;
      goto stage0;
    }
    stage2 : {
      const UOp* r = get(e.new_n);
      if (r == nullptr) {
        wait_for(e.new_n, e);
      } else {
        finish(sp, e.n, r);
      }
    }
    }
    const UOp* r = get(root);
    if (r == nullptr) throw InternalError(std::string(opts_.name) + ": graph_rewrite did not resolve the root (cycle)");
    return r;
  }

  // The per-node state of this rewrite. A slot belongs to this rewrite when its generation is
  // ours: a new rewrite starts clean without clearing what an earlier one touched. The table
  // covers every id the walk can meet (fit()), so a lookup needs no bounds check.
  struct Slot;
  const Slot* peek(const UOp* u) const {
    const Slot& s = slot_at_[u->id];
    return s.gen == gen_ ? &s : nullptr;
  }
  Slot& slot(const UOp* u) {
    Slot& s = slot_at_[u->id];
    if (s.gen != gen_) s = Slot{gen_, false, false, false, nullptr};
    return s;
  }
  // the tables cover ids below n
  void fit(size_t n) {
    if (n <= nslots_) return;
    size_t m = std::max(n, scratch_->slots.size() * 2);
    scratch_->slots.resize(m);
    scratch_->cold.resize(m);
    slot_at_ = scratch_->slots.data();
    cold_at_ = scratch_->cold.data();
    nslots_ = m;
  }
  void fit(const UOp* made) { fit(size_t(made->id) + 1); }
  // a pure matcher's top-down result for a root is the same in every rewrite: the Context keeps it
  bool remember_results() const { return fixed_bit_ && !opts_.bottom_up; }
  bool replaced(const UOp* u) const { return get(u) != nullptr; }
  const UOp* get(const UOp* u) const {
    const Slot& s = slot_at_[u->id];
    return s.gen == gen_ ? s.replace : nullptr;
  }
  void mark_on_stack(const UOp* u) { slot(u).on_stack = true; }

  // the stack: entries from base_ below the walk's top `sp`, room up to end_
  void push(Entry*& sp, const Entry& e) {
    reserve(sp, 1);
    *sp++ = e;
  }
  void reserve(Entry*& sp, size_t k) {
    if (size_t(end_ - sp) < k) sp = grow(sp, k);
  }
  Entry* grow(Entry* sp, size_t k) {
    std::vector<Entry>& st = scratch_->stack;
    size_t used = size_t(sp - base_);
    st.resize(std::max(used + k, st.size() * 2 + 64));
    base_ = st.data();
    end_ = base_ + st.size();
    return base_ + used;
  }

  void finish(Entry*& sp, const UOp* n, const UOp* r) {
    Slot& s = slot(n);
    s.replace = r;
    if (!s.waiting) return;  // the common case: nobody waits
    s.waiting = false;
    // the waiting entries go back on the stack in the order they came (the list has the last first)
    std::vector<Wait>& waits = scratch_->waits;
    uint32_t head = cold_at_[n->id].wait_head;
    size_t k = 0;
    for (uint32_t w = head; w != kNone; w = waits[w].next) ++k;
    reserve(sp, k);
    Entry* at = sp + k;
    for (uint32_t w = head; w != kNone; w = waits[w].next) *--at = waits[w].e;
    sp += k;
  }
  // `e` continues once `x` is final
  void wait_for(const UOp* x, const Entry& e) {
    Slot& s = slot(x);
    std::vector<Wait>& waits = scratch_->waits;
    uint32_t& head = cold_at_[x->id].wait_head;
    waits.push_back({e, s.waiting ? head : kNone});
    head = uint32_t(waits.size() - 1);
    s.waiting = true;
  }

  const UOp* apply(const UOp* u) {
    const UOp* r = pm_.rewrite(u, ctx_);
    if (r != nullptr) {
      fit(r);
      recent_[nrecent_++ % recent_.size()] = pm_.last_rule();
      if (++count_ > cap_) fail();
    }
    return r;
  }

  const UOp* bottom_up_fixed_point(const UOp* n) {
    const UOp* cur = n;
    while (true) {
      const UOp* next;
      if (const Slot* s = peek(cur); s && s->bpm_done) {
        next = cold_at_[cur->id].bpm;
      } else if (subst_) {
        next = nullptr;  // not a key: substitute_by() filled in every key
      } else {
        next = apply(cur);
        slot(cur).bpm_done = true;  // after apply: it may have grown the tables
        cold_at_[cur->id].bpm = next;
      }
      if (next == nullptr) return cur;
      cur = next;
    }
  }

  [[noreturn]] void fail() {
    std::string names;
    size_t n = std::min<size_t>(nrecent_, recent_.size());
    for (size_t i = 0; i < n; ++i) {
      const Rule* r = recent_[(nrecent_ - n + i) % recent_.size()];
      if (r) names += "\n  " + r->name;
    }
    throw InternalError(std::string(opts_.name) + ": rewrite did not terminate after " + std::to_string(count_) +
                        " rewrites; last rules applied:" + names);
  }

  const PatternMatcher& pm_;
  void* ctx_;
  RewriteOptions opts_;
  Context& ctx_of_nodes_;
  uint32_t unchanged_below_;
  bool subst_;
  uint8_t fixed_bit_ = 0;
  uint8_t fixed_bits_ = 0;  // the marks that prove a fixed point here: ours and our supersets'
  uint64_t cap_ = 0, count_ = 0;
  // Dense tables by node id, reused across calls on this thread (a nested graph_rewrite takes
  // another set), so a small rewrite in a large Context does not pay for the Context's size.
  struct Slot {
    uint32_t gen = 0;
    bool on_stack = false, bpm_done = false;
    bool waiting = false;          // cold.wait_head starts the list of entries that wait for it
    const UOp* replace = nullptr;  // the final result
  };
  // what only some nodes need, valid where the slot says so
  struct Cold {
    const UOp* bpm = nullptr;  // bottom-up, where bpm_done: what one application of the rules gives
    uint32_t wait_head = 0;    // where waiting: the last entry of its list in Scratch::waits
  };
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Wait {
    Entry e;
    uint32_t next;  // the one that came before, or kNone
  };
  struct Scratch {
    std::vector<Slot> slots;
    std::vector<Cold> cold;
    uint32_t gen = 0;
    std::vector<Entry> stack;  // its size is the room: the walk keeps its own top
    std::vector<Wait> waits;
    std::vector<const UOp*> srcs;
    Scratch* next_free = nullptr;  // in the pool
  };
  // the sets not in use on this thread, a list
  struct Pool {
    Scratch* free = nullptr;
    ~Pool() {
      while (Scratch* s = free) {
        free = s->next_free;
        delete s;
      }
    }
  };
  static Pool& scratch_pool() {
    thread_local Pool pool;
    return pool;
  }
  static Scratch* take_scratch() {
    Pool& pool = scratch_pool();
    Scratch* s = pool.free;
    if (s == nullptr) {
      s = new Scratch();
    } else {
      pool.free = s->next_free;
    }
    if (++s->gen == 0) {  // wrapped: forget every generation
      for (Slot& sl : s->slots) sl.gen = 0;
      s->gen = 1;
    }
    return s;
  }
  Scratch* const scratch_ = take_scratch();
  // the tables' data and size, kept at hand
  Slot* slot_at_ = scratch_->slots.data();
  Cold* cold_at_ = scratch_->cold.data();
  size_t nslots_ = scratch_->slots.size();
  const uint32_t gen_ = scratch_->gen;
  Entry* base_ = scratch_->stack.data();
  Entry* end_ = base_ + scratch_->stack.size();
  std::vector<const UOp*>& srcs_ = scratch_->srcs;
  std::array<const Rule*, 8> recent_{};
  size_t nrecent_ = 0;
};

}  // namespace

const UOp* graph_rewrite(const UOp* root, const PatternMatcher& pm, void* ctx, RewriteOptions opts) {
  return Rewriter(pm, ctx, opts, root->ctx()).run(root);
}

// substitute on each of `roots` in place, with one rewrite: what an earlier root finished is
// final for the later ones. `pairs`: (from, to) with distinct keys, in any order.
template <class Pairs> static void substitute_each(std::span<const UOp*> roots, const Pairs& pairs) {
  if (pairs.size() == 0 || roots.empty()) return;
  static const PatternMatcher none;
  RewriteOptions o;
  o.bottom_up = true;
  o.name = "substitute";
  // a node older than every key cannot be one nor reach one: the rewrite skips those subgraphs
  uint32_t oldest_key = UINT32_MAX;
  for (const auto& kv : pairs) oldest_key = std::min(oldest_key, kv.first->id);
  Rewriter rw(none, nullptr, o, roots[0]->ctx(), oldest_key, true);
  for (const auto& [from, to] : pairs) rw.substitute_by(from, to);
  for (const UOp*& r : roots) r = rw.run(r);
}

const UOp* substitute(const UOp* root, const SubMap& map) {
  substitute_each(std::span<const UOp*>(&root, 1), map);
  return root;
}

template <class Pair>
requires std::same_as<Pair, std::pair<const UOp*, const UOp*>>
const UOp* substitute(const UOp* root, std::span<const Pair> pairs) {
  substitute_each(std::span<const UOp*>(&root, 1), pairs);
  return root;
}
template const UOp* substitute(const UOp* root, std::span<const std::pair<const UOp*, const UOp*>> pairs);

const UOp* substitute(const UOp* root, const UOp* from, const UOp* to) {
  // no key that changes anything: the rewrite would make nothing and give root back
  if (from == to) return root;
  std::pair<const UOp*, const UOp*> one{from, to};
  return substitute(root, std::span<const std::pair<const UOp*, const UOp*>>(&one, 1));
}

std::vector<const UOp*> substitute(std::span<const UOp* const> roots, const SubMap& map) {
  std::vector<const UOp*> out(roots.begin(), roots.end());
  substitute_each(out, map);
  return out;
}

}  // namespace kiln
