// The kiln command line. The only place that reads argv or the environment.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "generator/ir/text.h"
#include "generator/symbolic/symbolic.h"

namespace {

// Bounds are numbers: a bool's are 0 or 1 (the seeds' False/True compare equal to 0/1).
std::string bound(const kiln::ConstValue& v, kiln::DType d) {
  if (kiln::is_bool(d) && !v.is_invalid()) return v.i ? "1" : "0";
  return kiln::to_string(v, d);
}

// A division whose divisor can only be zero is the user's error, not something to fold around.
std::optional<std::string> division_by_zero(const kiln::UOp* root) {
  for (const kiln::UOp* u : kiln::toposort(root)) {
    bool div = u->op == kiln::Op::FLOORDIV || u->op == kiln::Op::FLOORMOD || u->op == kiln::Op::CDIV ||
               u->op == kiln::Op::CMOD;
    if (div && kiln::is_int(u->src(1)->dtype) && u->src(1)->imin() == 0 && u->src(1)->imax() == 0)
      return "division by zero in " + kiln::print(u);
  }
  return std::nullopt;
}

// One expression per line in, `<simplified> [<vmin>, <vmax>]` per line out. Bad lines are
// reported as `line N: error: ...` and skipped. Exit code: 0 all good, 1 a line was bad, 70 an
// internal error (a rewrite that did not terminate) happened.
int run_simplify(std::istream& in, const std::string& source, bool stats) {
  if (stats) kiln::set_rule_stats(true);
  const kiln::PatternMatcher pm = kiln::sym() + kiln::pm_cast_weak();
  int failed = 0, internal = 0;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    kiln::Context ctx;
    kiln::ParseError err;
    const kiln::UOp* u = kiln::parse(ctx, line, &err);
    if (!u) {
      std::cerr << source << "line " << lineno << ": error: " << err.message << " (column " << err.offset + 1 << ")\n";
      ++failed;
      continue;
    }
    if (auto e = division_by_zero(u)) {
      std::cerr << source << "line " << lineno << ": error: " << *e << "\n";
      ++failed;
      continue;
    }
    try {
      kiln::RewriteOptions opts;
      opts.name = "simplify";
      const kiln::UOp* s = kiln::graph_rewrite(u, pm, nullptr, opts);
      std::cout << kiln::print(s) << " [" << bound(s->vmin(), s->dtype) << ", " << bound(s->vmax(), s->dtype) << "]\n";
    } catch (const kiln::InternalError& e) {
      std::cerr << source << "line " << lineno << ": internal error: " << e.what() << "\n";
      ++internal;
    }
  }
  std::cout.flush();
  if (stats) std::cerr << pm.stats();
  return internal ? 70 : failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln: an ahead-of-time kernel generator"};
  app.require_subcommand(1);

  auto* simplify = app.add_subcommand("simplify", "simplify index expressions, one s-expression per line");
  std::vector<std::string> files;
  bool stats = false;
  simplify->add_option("files", files, "input files (default: standard input; '-' also reads it)");
  simplify->add_flag("--stats", stats, "print per-rule hit counts to stderr");
  simplify->footer(
      "Grammar: (CONST:<dtype> <value>) | (VAR:<dtype> <name> <min> <max>) | (<OP>:<dtype> <src>...)\n"
      "Output: <simplified s-expression> [<vmin>, <vmax>] per input line.");

  CLI11_PARSE(app, argc, argv);

  if (simplify->parsed()) {
    if (files.empty()) return run_simplify(std::cin, "", stats);
    int rc = 0;
    for (const auto& f : files) {
      if (f == "-") {
        rc = std::max(rc, run_simplify(std::cin, "", stats));
        continue;
      }
      std::ifstream in(f);
      if (!in) {
        std::cerr << "kiln: error: cannot open " << f << "\n";
        rc = std::max(rc, 1);
        continue;
      }
      rc = std::max(rc, run_simplify(in, files.size() > 1 ? f + ": " : "", stats));
    }
    return rc;
  }
  return 0;
}
