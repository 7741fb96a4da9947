// PatternMatcher (rules indexed by root op, composed with +) and graph_rewrite (rewrite a graph
// to a fixed point with memoization, top-down or bottom-up, iteratively).
#pragma once

#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "generator/rewrite/upat.h"

namespace kiln {

// A rewrite function returns the replacement, or nullptr for "no change". `ctx` is the
// graph_rewrite context (may be null).
using RewriteFn = std::function<const UOp*(const Match&, void* ctx)>;

struct Rule {
  UPat pat;
  RewriteFn fn;
  std::string name;         // where the rule was written, file:line
  std::optional<UPat> rhs;  // set for rules as data (rw): both sides are patterns, a solver can check them
  mutable uint64_t tries = 0, hits = 0;

  template <class F>
  Rule(UPat p, F f, std::source_location loc = std::source_location::current()) : pat(std::move(p)), name(where(loc)) {
    if constexpr (std::is_invocable_v<F, const Match&, void*>)
      fn = std::move(f);
    else
      fn = [f = std::move(f)](const Match& m, void*) -> const UOp* { return f(m); };
  }
  static std::string where(const std::source_location& loc);
};

// A rule whose both sides are patterns: data a solver can check.
Rule rw(UPat lhs, UPat rhs, std::source_location loc = std::source_location::current());

class PatternMatcher {
 public:
  PatternMatcher() = default;
  PatternMatcher(std::vector<Rule> rules);  // NOLINT
  PatternMatcher operator+(const PatternMatcher& o) const;

  // The first rule (in order) that matches `u` and returns something other than nullptr or u.
  const UOp* rewrite(const UOp* u, void* ctx = nullptr) const;
  const Rule* last_rule() const { return last_; }  // the rule that produced the last rewrite
  size_t size() const { return rules_.size(); }
  std::vector<const Rule*> rules() const;  // in order, for tools (e.g. proving the rules as data)
  std::string stats() const;               // per-rule tries/hits, when stats are on
  void reset_stats() const;

  // Declares the matcher pure: every rule's result depends only on the node it matched (no
  // graph_rewrite context, no outside state). graph_rewrite then remembers, in the Context, the
  // nodes no rule changes (with their whole graphs) and skips them in later rewrites with this
  // matcher: the index math every symbolic pass and every nested simplify() meets again. It also
  // remembers what a top-down rewrite made of its root: the same rewrite again ends there at once.
  // At most 8 matchers in a process; past that a matcher is just not remembered.
  // A node a remembered matcher with all of this one's rules left alone is a fixed point here too:
  // simplify() inside a sym() rewrite skips the graphs sym() already finished.
  PatternMatcher remember_fixed_points() &&;
  uint8_t fixed_bit() const { return fixed_bit_; }  // 0: not remembered
  // fixed_bit() and the bits of those supersets
  uint8_t fixed_bits_implying() const { return implying_ ? implying_->load(std::memory_order_relaxed) : 0; }

 private:
  // A rule as its root op's list holds it: the rule, and what its pattern needs of a node's dtype,
  // source count and direct sources' ops. A necessary condition, checked before the matcher runs:
  // most rules tried on a node fail there, for a few instructions.
  struct Gate {
    enum Kind : uint8_t { kAny, kOrdered, kPermute2, kEach };
    uint32_t rule = 0;
    Kind kind = kAny;
    uint8_t npos = 0;     // kOrdered: the source positions checked (at most 3)
    uint8_t ndt = 0;      // 0: any dtype
    bool same01 = false;  // the first two sources must be the same node (x op x)
    uint32_t nsrc_lo = 0, nsrc_hi = UINT32_MAX;
    std::array<DType, 4> dt{};       // the dtypes the node may have
    std::array<OpSet, 3> src_ops{};  // per position (kEach: every position takes src_ops[0])
    // kOrdered, kPermute2: the source patterns whose heads (dtype, constant, ...) a source must pass
    std::array<const PatNode*, 3> src_pat{};  // nullptr: nothing beyond the op
    bool head_ok(size_t i, const UOp* s) const { return src_pat[i] == nullptr || detail::head_matches(*src_pat[i], s); }
    bool admits(const UOp* u) const;
  };
  static Gate gate_for(uint32_t rule, const PatNode& root);
  void index();
  uint8_t fixed_bit_ = 0;
  const std::atomic<uint8_t>* implying_ = nullptr;  // kept up to date as later matchers are remembered
  std::vector<std::shared_ptr<const Rule>> rules_;
  std::vector<std::vector<Gate>> by_op_;  // the rules per root op, in order
  mutable const Rule* last_ = nullptr;
};

// Per-rule hit counting (off by default; a flag of the CLI turns it on).
void set_rule_stats(bool on);
bool rule_stats_enabled();

struct RewriteOptions {
  bool bottom_up = false;
  // fail loudly after this many successful rule applications (0: 10x the graph size + 100000)
  uint64_t max_rewrites = 0;
  const char* name = "graph_rewrite";  // the stage, for error messages
};

// The seeds' graph_rewrite semantics: every node is rewritten to a fixed point, sources first
// (top-down: after its sources are final, the node itself is rewritten; bottom-up: a node is
// rewritten before its sources are visited), results memoized per node. Never recursive.
const UOp* graph_rewrite(const UOp* root, const PatternMatcher& pm, void* ctx = nullptr, RewriteOptions opts = {});

// Replace nodes by others everywhere below root (the replacements are visited too).
const UOp* substitute(const UOp* root, const std::unordered_map<const UOp*, const UOp*>& map);
// The same with (from, to) pairs in place of the map, none built: their keys are distinct. (A
// template only so that a braced list of pairs still means the map.)
template <class Pair>
requires std::same_as<Pair, std::pair<const UOp*, const UOp*>>
const UOp* substitute(const UOp* root, std::span<const Pair> pairs);
const UOp* substitute(const UOp* root, const UOp* from, const UOp* to);
// The same on each root in turn (the same results, the same nodes made in the same order), the
// graph the roots share walked once.
std::vector<const UOp*> substitute(std::span<const UOp* const> roots,
                                   const std::unordered_map<const UOp*, const UOp*>& map);

}  // namespace kiln
