// Symbolic parity with tinygrad: random index expressions (tests/golden/tinygrad/parity.txt,
// written by scripts/symbolic_parity.py with tinygrad's UOp.simplify() of each) simplified by
// kiln. Each of kiln's results must keep the expression's value (compared exactly, exhaustively
// where the variables' box is small); the share of records where kiln's form has no more nodes
// than tinygrad's must stay at or above kMinShare. KILN_PARITY_VERBOSE=1 prints the records where
// kiln leaves more.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "generator/ir/text.h"
#include "generator/ir/uop.h"
#include "generator/symbolic/symbolic.h"
#include "tests/unit/exact_eval.h"
#include "tests/unit/golden_records.h"

namespace kiln {
namespace {

constexpr double kMinShare = 0.97;

const UOp* parse_or_fail(Context& ctx, const golden::Record& r, const char* field) {
  ParseError err;
  const UOp* u = parse(ctx, r.value(field), &err);
  EXPECT_NE(u, nullptr) << r.id << " " << field << ": " << err.message << " at byte " << err.offset;
  return u;
}

TEST(TinygradParity, NoLargerThanTinygradsAndTheSameValue) {
  std::string error;
  std::vector<golden::Record> records =
      golden::read_records(std::string(KILN_SOURCE_DIR) + "/tests/golden/tinygrad/parity.txt", &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_GE(records.size(), 2000u);
  const char* v = std::getenv("KILN_PARITY_VERBOSE");
  bool verbose = v && std::string(v) == "1";
  size_t no_larger = 0, smaller = 0, same = 0, wrong = 0;
  for (const golden::Record& r : records) {
    Context ctx;
    const UOp* in = parse_or_fail(ctx, r, "in");
    const UOp* theirs = parse_or_fail(ctx, r, "tinygrad_out");
    if (!in || !theirs) return;
    const UOp* ours = simplify(in);
    // exhaustive on boxes of up to 1,024 points, else 256 samples with the box's corners
    exact::Comparison c = exact::compare(ours, in, std::hash<std::string>()(r.id), 1024, 256);
    if (c.result != exact::Comparison::Result::Equal) {
      ++wrong;
      ADD_FAILURE() << r.id << ": kiln's simplified form "
                    << (c.result == exact::Comparison::Result::Differ ? "differs " : "cannot be evaluated: ") << c.why
                    << "\nin:   " << print(in) << "\nours: " << print(ours);
      continue;
    }
    size_t n_ours = toposort(ours).size(), n_theirs = toposort(theirs).size();
    if (ours == theirs) ++same;
    if (n_ours <= n_theirs) ++no_larger;
    if (n_ours < n_theirs) ++smaller;
    if (n_ours > n_theirs && verbose)
      std::cout << r.id << ": " << n_ours << " nodes, tinygrad " << n_theirs << "\n  in:       " << print(in)
                << "\n  ours:     " << print(ours) << "\n  tinygrad: " << print(theirs) << "\n";
  }
  double share = double(no_larger) / double(records.size());
  std::cout << "symbolic parity: kiln's form no larger than tinygrad's in " << no_larger << " of " << records.size()
            << " (" << share * 100 << "%; the same node in " << same << ", smaller in " << smaller << "), " << wrong
            << " wrong values\n";
  EXPECT_EQ(wrong, 0u);
  EXPECT_GE(share, kMinShare) << "KILN_PARITY_VERBOSE=1 lists the records where kiln leaves more";
}

}  // namespace
}  // namespace kiln
