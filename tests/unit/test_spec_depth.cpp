// Expressions of any depth get a diagnostic, never a stack overflow (issue 19, item 9): chains of
// operators and methods, parsed by loops rather than by nesting, are capped at 500 nested
// operations, so every later pass (check, lowering) recurses at most that deep; a deeper tree is
// freed without recursing. Chains of locals are the scheduler's to cap (tests/cli/run.sh).
#include <gtest/gtest.h>
#include <pthread.h>

#include <string>

#include "generator/frontend/parser.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"

namespace kiln::frontend {
namespace {

std::string kernel_of(const std::string& value) {
  return "dim M in 1..64\nkernel k(x: f32[M]) -> (y: f32[M]) {\n  y = " + value + "\n}\n";
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Runs f on a thread with the stack the CLI gives its work (generator/tools/kiln.cpp): 500 nested
// lowerings take more than a default 8 MiB stack under ASan.
template <class F> void on_cli_stack(F f) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, size_t(1) << 30), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* p) -> void* {
                  (*static_cast<F*>(p))();
                  return nullptr;
                },
                &f),
            0);
  pthread_attr_destroy(&attr);
  pthread_join(thread, nullptr);
}

TEST(SpecDepth, FiveHundredNestedOperationsCheckAndLower) {
  on_cli_stack([] {
    for (const std::string& value : {"x" + repeat(".exp()", 499), "x" + repeat(" + x", 499)}) {
      SourceFile file("t.kiln", kernel_of(value));
      ParseResult parsed = parse_spec(file);
      ASSERT_TRUE(parsed.diagnostics.empty()) << render(parsed.diagnostics);
      ASSERT_TRUE(check_spec(parsed.spec).empty());
      Context ctx;
      LowerResult lowered = lower_spec(ctx, parsed.spec, file);
      ASSERT_TRUE(lowered.ok()) << render(lowered.diagnostics);
      EXPECT_EQ(lowered.kernels.size(), 1u);
    }
  });
}

TEST(SpecDepth, DeeperChainsAreRefusedAtTheirOutermostOperator) {
  struct Case {
    std::string value, message;
  } cases[] = {
      {"x" + repeat(".exp()", 500),
       "t.kiln:3:3003: error: expression too deep (expected at most 500 nested operations, got 501)"},
      {"x" + repeat(" + x", 500),
       "t.kiln:3:2005: error: expression too deep (expected at most 500 nested operations, got 501)"},
      {"x" + repeat(" * x", 20000) + ".relu()",  // the method binds to the last x: the root is the last *
       "t.kiln:3:80005: error: expression too deep (expected at most 500 nested operations, got 20001)"},
      // a million methods: parsed by a loop, measured and freed without recursing
      {"x" + repeat(".relu()", 1000000),
       "t.kiln:3:7000002: error: expression too deep (expected at most 500 nested operations, got 1000001)"},
  };
  for (const Case& c : cases) {
    SourceFile file("t.kiln", kernel_of(c.value));
    ParseResult parsed = parse_spec(file);
    ASSERT_EQ(parsed.diagnostics.size(), 1u);
    std::string text = render(parsed.diagnostics);
    EXPECT_EQ(text.substr(0, text.find('\n')), c.message);
  }
}

}  // namespace
}  // namespace kiln::frontend
