// A tuned kernel's opts (kiln tune's database), applied in the heuristics' place: the same
// rewrites around them as hand_coded_optimizations makes, with the Opt list and the reduction
// block given instead of chosen.
#include <algorithm>
#include <charconv>

#include "generator/codegen/opt/opts.h"
#include "generator/rewrite/rewrite.h"

namespace kiln::codegen {

std::optional<Opt> parse_opt(std::string_view text) {
  std::string t;
  for (char c : text)
    if (c != ' ') t += c;
  size_t open = t.find('(');
  if (open == std::string::npos || t.back() != ')') return std::nullopt;
  for (Opt::Kind k : {Opt::Kind::Upcast, Opt::Kind::Unroll, Opt::Kind::Lane, Opt::Kind::Thread, Opt::Kind::Local,
                      Opt::Kind::Group, Opt::Kind::GroupTop, Opt::Kind::Padto, Opt::Kind::Swap, Opt::Kind::Tc}) {
    std::string name = Opt{k, 0, 0}.str();
    if (t.compare(0, open, name, 0, name.find('(')) != 0 || name.find('(') != open) continue;
    std::string_view args(t.data() + open + 1, t.size() - open - 2);
    Opt o{k, 0, 0};
    size_t comma = args.find(',');
    auto num = [](std::string_view s, auto& v) {
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      return ec == std::errc() && p == s.data() + s.size() && !s.empty();
    };
    if (k == Opt::Kind::Thread) {
      if (comma != std::string_view::npos || !num(args, o.axis)) return std::nullopt;
      return o;
    }
    if (comma == std::string_view::npos || !num(args.substr(0, comma), o.axis) ||
        !num(args.substr(comma + 1), o.amount))
      return std::nullopt;
    return o;
  }
  return std::nullopt;
}

const UOp* apply_tuned_opts(const UOp* sink, const TunedOpts& t, std::string* why, bool pack, int64_t l2_bytes) {
  bool reduces = false;
  for (const UOp* u : toposort(sink)) reduces |= u->op == Op::REDUCE;
  // as the heuristics: softmax's shared term first, so the opts see the kernel they saw
  if (reduces)
    if (const UOp* s = store_shared_term(sink)) sink = s;
  for (const Opt& o : t.opts) {
    sink = apply_opt(sink, o, why);
    if (!sink) return nullptr;
  }
  sink = split_store_lanes(sink);
  if (!reduces) return sink;
  if (t.reduce_block > 0) {
    // with a scratch, the heuristics' blocks (block_for_caches: the columns in chunks whose packed
    // block takes a quarter of L2); else, or where those do not apply, blocks over all columns
    if (const UOp* c = pack ? block_for_caches(sink, t.reduce_block, l2_bytes) : nullptr)
      return split_reduce_lanes(c, 64);
    const UOp* s = tile_reduction(sink, t.reduce_block);
    if (!s) {
      if (why) *why = "the reduction cannot be tiled in blocks of " + std::to_string(t.reduce_block);
      return nullptr;
    }
    sink = s;
    if (const UOp* p = pack ? pack_shared_operand(sink) : nullptr) sink = p;
  }
  return split_reduce_lanes(sink, 64);
}

}  // namespace kiln::codegen
