// The workspace of a kernel whose reduction is blocked (tests/gen/dispatch.kiln's deep): b's
// blocks are packed into it after the intermediates, one region per thread of the context. The
// size a context's call needs (<kernel>_workspace_size(dims, ctx), the dims in the spec's order;
// C's _workspace_size_for) is at least the one-thread size, and more with threads (each packs
// for its own rows); a call given exactly that much, under a guard page, is exact
// against a float64 reference at shapes across the buckets and the blocks, with the output
// poisoned first; one byte less is refused. Linked into the same executables as test_dispatch.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/gen/library.h"  // kiln_gen_test, or the tuned one
#include "tests/unit/guard_pages.h"

namespace {

using kiln::guard::Array;
using kiln::guard::Side;

TEST(Workspace, EachThreadsRegionOfThePackedOperandIsCountedAndExact) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  bool grew = false;  // a context of threads needed more than one thread does
  // M: 1 (its own variant), a tile's multiple, ragged; P: the smallest, a block and a bit, the
  // largest; N: 1, a bucket's multiple, ragged
  for (auto [m, p, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 100, 64}, {16, 300, 128}, {37, 129, 200}, {64, 128, 1}, {48, 257, 130}, {3, 192, 17}}) {
    const Side side = kiln::guard::kSides[size_t(m % 2)];
    Array<float> a(size_t(m * p), side), b(size_t(p * n), side), c(size_t(m * n), side);
    for (size_t i = 0; i < a.size(); ++i) a[i] = u(rng);
    for (size_t i = 0; i < b.size(); ++i) b[i] = u(rng);
    std::vector<double> want(size_t(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < p; ++k)
        for (int64_t j = 0; j < n; ++j) want[size_t(i * n + j)] += double(a[size_t(i * p + k)]) * b[size_t(k * n + j)];
    const size_t one = kiln_gen_test::deep_workspace_size(m, n, p);
    EXPECT_EQ(kiln_gen_test::deep_workspace_size(m, n, 301), 0u);  // outside the declared range
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("M=" + std::to_string(m) + " P=" + std::to_string(p) + " N=" + std::to_string(n) + ", " +
                   std::to_string(threads) + " threads");
      kiln::Context ctx(threads);
      const size_t need = kiln_gen_test::deep_workspace_size(m, n, p, &ctx);
      ASSERT_GE(need, one);
      if (ctx.threads() == 1) {
        EXPECT_EQ(need, one);
      }
      grew |= need > one;
#if !defined(KILN_GEN_TUNED)  // the C entry point says the same
      kiln_context* cctx = nullptr;
      ASSERT_EQ(kiln_context_create(threads, nullptr, &cctx), nullptr);
      EXPECT_EQ(kiln_gen_test_deep_workspace_size_for(m, n, p, cctx), need);
      EXPECT_EQ(kiln_gen_test_deep_workspace_size_for(m, n, p, nullptr), one);
      kiln_context_destroy(cctx);
#endif
      const float* ca = a.data();
      const float* cb = b.data();
      kiln::TensorView va(ca, {m, p}), vb(cb, {p, n}), vc(c.data(), {m, n});
      // (M = 1's variant tiles no rows, blocks nothing and needs none)
      kiln::guard::Pages small(need > 0 ? need - 1 : 1, side, 64), enough(need > 0 ? need : 1, side, 64);
      if (need > 0) {
        ctx.set_workspace(small.data(), small.size());
        kiln::Status refused = kiln_gen_test::deep(va, vb, vc, &ctx);
        EXPECT_EQ(refused.code(), kiln::StatusCode::ResourceExhausted) << refused.message();
        ctx.set_workspace(enough.data(), enough.size());
      }
      for (size_t i = 0; i < c.size(); ++i) c[i] = std::numeric_limits<float>::quiet_NaN();
      kiln::Status s = kiln_gen_test::deep(va, vb, vc, &ctx);
      ASSERT_TRUE(s.ok()) << s.message();
      kiln::guard::count_run(side);
      for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], want[i], 1e-4 * p) << i;
    }
  }
#if KILN_HEAP
  EXPECT_TRUE(grew);
#else  // no threads without the heap
  EXPECT_FALSE(grew);
#endif
}

}  // namespace
