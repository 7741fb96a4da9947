// Rules and PatternMatcher: rules indexed by root op, each behind a gate on what its pattern
// needs of a node and its direct sources, so most rules tried on a node cost a few instructions.
// graph_rewrite (rewrite.cpp) drives a matcher over a graph.
#include "generator/rewrite/rewrite.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

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

// A rewrite of integer math must not make a value that leaves the int64 carrying weakint where the
// original had none: (x+c)*-1 -> x*-1 + -c overflows at x = INT64_MIN though (x+c)*-1 does not.
// Only graphs with a saturated range somewhere (values near the int64 limits) are searched.
static bool leaves_carrier(const UOp* u, const UOp* out) {
  if (!(is_int(u->dtype) || is_bool(u->dtype)) || u->dtype.ptr || !out->saturated_below()) return false;
  for (const UOp* n : toposort(out))
    if (n->saturated() && !contains(u, n)) return true;
  return false;
}

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
      if (out != nullptr && out != u && !leaves_carrier(u, out)) {
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

}  // namespace kiln
