#include "generator/rewrite/rewrite.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_set>

namespace kiln {

// ---------------------------------------------------------------- rules

std::string Rule::where(const std::source_location& loc) {
  std::string_view f = loc.file_name();
  if (auto s = f.rfind('/'); s != std::string_view::npos) f = f.substr(s + 1);
  return std::string(f) + ":" + std::to_string(loc.line());
}

Rule rw(UPat lhs, UPat rhs, std::source_location loc) {
  Rule r(
      std::move(lhs), [rhs](const Match& m) { return rhs.build(m); }, loc);
  r.rhs = std::move(rhs);
  return r;
}

static std::atomic<bool> g_rule_stats{false};
void set_rule_stats(bool on) { g_rule_stats = on; }
bool rule_stats_enabled() { return g_rule_stats; }

// ---------------------------------------------------------------- PatternMatcher

PatternMatcher::PatternMatcher(std::vector<Rule> rules) {
  rules_.reserve(rules.size());
  for (auto& r : rules) rules_.push_back(std::make_shared<const Rule>(std::move(r)));
  index();
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& o) const {
  PatternMatcher r;
  r.rules_ = rules_;
  r.rules_.insert(r.rules_.end(), o.rules_.begin(), o.rules_.end());
  r.index();
  return r;
}

namespace {

// The remembered matchers by bit: their rules, and per bit the bits of those with all its rules
// (where none of those rules changes a node, none of its own does).
struct Remembered {
  std::mutex mu;
  std::array<std::optional<std::vector<const Rule*>>, 8> rules;  // sorted (a set: the order is never read)
  std::array<std::atomic<uint8_t>, 8> implying{};
};
Remembered& remembered() {
  static Remembered r;
  return r;
}

}  // namespace

PatternMatcher PatternMatcher::remember_fixed_points() && {
  static std::atomic<int> next_bit{0};
  int b = next_bit++;
  if (b >= 8) return std::move(*this);
  fixed_bit_ = uint8_t(1u << b);
  std::vector<const Rule*> mine = rules();
  std::sort(mine.begin(), mine.end());
  Remembered& reg = remembered();
  std::lock_guard<std::mutex> lock(reg.mu);
  uint8_t implying = fixed_bit_;
  for (int o = 0; o < 8; ++o) {
    if (!reg.rules[o]) continue;
    const std::vector<const Rule*>& theirs = *reg.rules[o];
    if (std::includes(theirs.begin(), theirs.end(), mine.begin(), mine.end())) implying |= uint8_t(1u << o);
    if (std::includes(mine.begin(), mine.end(), theirs.begin(), theirs.end())) reg.implying[o] |= fixed_bit_;
  }
  reg.rules[b] = std::move(mine);
  reg.implying[b] |= implying;
  implying_ = &reg.implying[b];
  return std::move(*this);
}

namespace {

OpSet all_ops() {
  OpSet all;
  for (int o = 0; o < kNumOps; ++o) all.add(Op(o));
  return all;
}

// the ops a node matched by `p` may have
OpSet ops_of(const PatNode& p) {
  if (p.alternatives.empty()) return p.ops.empty() ? all_ops() : p.ops;
  OpSet ops;
  for (const UPat& a : p.alternatives) ops = ops | ops_of(a.node());
  return ops;
}

// the source pattern whose head a gate checks, or nullptr where its op check says all (`x`)
const PatNode* head_to_check(const PatNode& p) {
  bool wildcard = p.alternatives.empty() && p.dtypes.empty() && !p.const_num && !p.arg && p.n_reject == 0 &&
                  p.mode == UPat::SrcMode::None;
  return wildcard ? nullptr : &p;
}

}  // namespace

PatternMatcher::Gate PatternMatcher::gate_for(uint32_t rule, const PatNode& p) {
  Gate g;
  g.rule = rule;
  if (!p.alternatives.empty()) return g;  // each alternative has its own needs: the matcher decides
  if (!p.dtypes.empty() && p.dtypes.size() <= g.dt.size()) {
    g.ndt = uint8_t(p.dtypes.size());
    std::copy(p.dtypes.begin(), p.dtypes.end(), g.dt.begin());
  }
  const size_t n = p.src.size();
  // x op x: the two sources must be one node (the capture's binding is the same in any order)
  if ((p.mode == UPat::SrcMode::Ordered || p.mode == UPat::SrcMode::Permute) && n == 2) {
    const PatNode &a = p.src[0].node(), &b = p.src[1].node();
    g.same01 = a.alternatives.empty() && b.alternatives.empty() && a.capture >= 0 && a.capture == b.capture;
  }
  switch (p.mode) {
    case UPat::SrcMode::None:
      break;
    case UPat::SrcMode::Repeat:
      g.kind = Gate::kEach;
      g.src_ops[0] = ops_of(p.src[0].node());
      break;
    case UPat::SrcMode::Ordered:
    case UPat::SrcMode::Permute:
      g.nsrc_lo = uint32_t(n);
      g.nsrc_hi = p.any_len ? UINT32_MAX : uint32_t(n);
      if (p.mode == UPat::SrcMode::Permute && n == 2) {
        g.kind = Gate::kPermute2;
        g.src_ops[0] = ops_of(p.src[0].node());
        g.src_ops[1] = ops_of(p.src[1].node());
        g.src_pat = {head_to_check(p.src[0].node()), head_to_check(p.src[1].node()), nullptr};
      } else if (p.mode == UPat::SrcMode::Permute && n == 3) {  // any order: every source is one of them
        g.kind = Gate::kEach;
        for (const UPat& s : p.src) g.src_ops[0] = g.src_ops[0] | ops_of(s.node());
      } else {  // the matcher takes other permuted patterns in order
        g.kind = Gate::kOrdered;
        g.npos = uint8_t(std::min<size_t>(n, g.src_ops.size()));
        for (size_t i = 0; i < g.npos; ++i) {
          g.src_ops[i] = ops_of(p.src[i].node());
          g.src_pat[i] = head_to_check(p.src[i].node());
        }
      }
      break;
  }
  return g;
}

inline bool PatternMatcher::Gate::admits(const UOp* u) const {
  if (ndt != 0) {
    bool ok = false;
    for (uint8_t i = 0; i < ndt; ++i) ok |= dt[i] == u->dtype;
    if (!ok) return false;
  }
  const size_t n = u->nsrc();
  if (n < nsrc_lo || n > nsrc_hi) return false;
  if (same01 && u->src(0) != u->src(1)) return false;
  switch (kind) {
    case kAny:
      return true;
    case kOrdered:
      for (uint8_t i = 0; i < npos; ++i)
        if (!src_ops[i].has(u->src(i)->op)) return false;
      for (uint8_t i = 0; i < npos; ++i)
        if (!head_ok(i, u->src(i))) return false;
      return true;
    case kPermute2: {
      const UOp *a = u->src(0), *b = u->src(1);
      return (src_ops[0].has(a->op) && src_ops[1].has(b->op) && head_ok(0, a) && head_ok(1, b)) ||
             (src_ops[0].has(b->op) && src_ops[1].has(a->op) && head_ok(0, b) && head_ok(1, a));
    }
    case kEach:
      for (size_t i = 0; i < std::min<size_t>(n, 3); ++i)
        if (!src_ops[0].has(u->src(i)->op)) return false;
      return true;
  }
  return true;
}

void PatternMatcher::index() {
  by_op_.assign(kNumOps, {});
  for (uint32_t i = 0; i < rules_.size(); ++i) {
    const PatNode& p = rules_[i]->pat.node();
    Gate g = gate_for(i, p);
    ops_of(p).for_each([&](Op o) { by_op_[int(o)].push_back(g); });  // a wildcard root is tried on every op
  }
}

namespace {

// The Matches of this thread, one per nesting depth (rule bodies rewrite too), reused: all their
// captures are empty between uses, as the matcher unbinds what it bound when a match fails, so a
// rewrite does not zero 48 slots per node. A lease that ends otherwise (a match, an exception)
// clears its Match.
class MatchLease {
 public:
  MatchLease() {
    if (depth_ == pool_.size()) pool_.push_back(std::make_unique<Match>());
    m_ = pool_[depth_++].get();
  }
  ~MatchLease() {
    if (dirty_) m_->slots_.fill(nullptr);
    --depth_;
  }
  MatchLease(const MatchLease&) = delete;
  MatchLease& operator=(const MatchLease&) = delete;
  Match& get() { return *m_; }
  void clean() { dirty_ = false; }  // no match was left bound

 private:
  static thread_local std::vector<std::unique_ptr<Match>> pool_;
  static thread_local size_t depth_;
  Match* m_;
  bool dirty_ = true;
};
thread_local std::vector<std::unique_ptr<Match>> MatchLease::pool_;
thread_local size_t MatchLease::depth_ = 0;

}  // namespace

const UOp* PatternMatcher::rewrite(const UOp* u, void* ctx) const {
  const auto& list = by_op_[int(u->op)];
  if (list.empty()) return nullptr;
  MatchLease lease;
  Match& m = lease.get();
  bool stats = g_rule_stats.load(std::memory_order_relaxed);
  for (const Gate& g : list) {
    const Rule& r = *rules_[g.rule];
    if (stats) ++r.tries;
    if (!g.admits(u)) continue;
    const UOp* result = nullptr;
    match_each(r.pat, u, m, [&](const Match& mm) {
      const UOp* out = r.fn(mm, ctx);
      if (out != nullptr && out != u) {
        result = out;
        return true;
      }
      return false;
    });
    if (result) {
      if (stats) ++r.hits;
      last_ = &r;
      return result;
    }
  }
  lease.clean();
  return nullptr;
}

std::vector<const Rule*> PatternMatcher::rules() const {
  std::vector<const Rule*> out;
  for (const auto& r : rules_) out.push_back(r.get());
  return out;
}

std::string PatternMatcher::stats() const {
  std::vector<const Rule*> rs;
  for (const auto& r : rules_) rs.push_back(r.get());
  std::stable_sort(rs.begin(), rs.end(), [](const Rule* a, const Rule* b) { return a->hits > b->hits; });
  std::string out;
  for (const Rule* r : rs) {
    if (r->tries == 0) continue;
    out += r->name + ": " + std::to_string(r->hits) + " hits / " + std::to_string(r->tries) + " tries\n";
  }
  return out;
}

void PatternMatcher::reset_stats() const {
  for (const auto& r : rules_) r->tries = r->hits = 0;
}

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
