// Specs with many kernels: the work per kernel must not grow with the spec. `kiln gen` lowered
// the whole spec for each variant of each kernel, and every input scanned the whole Context for
// its slot, so 400 kernels in one spec took 50 s (issue 19, item 12). These tests count nodes,
// not seconds: a variant's lowering makes only that kernel's nodes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "generator/emit/library.h"
#include "generator/frontend/parser.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"

namespace kiln {
namespace {

// `n` kernels over one bucketed dim, each its own product.
std::string many_kernels(int n) {
  std::string text = "dim M in 1..64 specialize %16\n";
  for (int i = 0; i < n; ++i)
    text += "kernel k" + std::to_string(i) + "(x: f32[M], w: f32[M]) -> (y: f32[M]) { y = x * w + " +
            std::to_string(i + 1) + " }\n";
  return text;
}

TEST(SpecScale, LoweringOneKernelMakesOnlyItsNodes) {
  for (int n : {10, 1000}) {
    frontend::SourceFile file("many.kiln", many_kernels(n));
    frontend::ParseResult parsed = frontend::parse_spec(file);
    ASSERT_TRUE(parsed.diagnostics.empty());
    ASSERT_TRUE(frontend::check_spec(parsed.spec).empty());
    Context ctx;
    frontend::LowerResult one = frontend::lower_spec(ctx, parsed.spec, file, {}, "k7");
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one.kernels.size(), 1u);
    EXPECT_EQ(one.kernels[0].name, "k7");
    // the same few nodes whether the spec has 10 kernels or 1,000
    EXPECT_LT(ctx.size(), 40u) << n << " kernels";
    // inputs are numbered within their kernel, from 0
    ASSERT_EQ(one.kernels[0].inputs.size(), 2u);
    EXPECT_EQ(one.kernels[0].inputs[1].uop()->arg<ParamArg>().slot, 1);
  }
}

TEST(SpecScale, InputSlotsDoNotDependOnTheContext) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {4});
  Tensor b = Tensor::input(ctx, "b", dtypes::float32, {4});
  EXPECT_EQ(a.uop()->arg<ParamArg>().slot, 0);  // numbered by what the Context holds
  EXPECT_EQ(b.uop()->arg<ParamArg>().slot, 1);
  Tensor c = Tensor::input(ctx, 0, "c", dtypes::float32, {4});  // numbered by the caller
  EXPECT_EQ(c.uop()->arg<ParamArg>().slot, 0);
  EXPECT_NE(c.uop(), a.uop());  // another name: another input
}

TEST(SpecScale, GenTwoThousandKernelsInOneSpec) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln-scale-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "many.kiln").string();
  std::ofstream(path) << many_kernels(2000);
  emit::GenOptions o;
  o.name = "big";
  o.targets = {"cpu"};
  o.specs = {path};
  emit::GenResult r = emit::generate(o);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(r.ok) << r.errors;
  const std::string* manifest = nullptr;
  for (const auto& [name, text] : r.files)
    if (name == "big_many.manifest.json") manifest = &text;
  ASSERT_NE(manifest, nullptr);
  nlohmann::json m = nlohmann::json::parse(*manifest);
  ASSERT_EQ(m["kernels"].size(), 2000u);
  // each kernel: the M % 16 == 0 variant and the generic one
  for (const auto& k : m["kernels"]) ASSERT_EQ(k["variants"].size(), 2u) << k["name"];
  EXPECT_EQ(m["kernels"][1999]["name"], "k1999");
}

}  // namespace
}  // namespace kiln
