// kiln gen (generator/emit/library.h): the files, their determinism, the variants and their
// order, explain, and the errors a user can make. The generated code itself is compiled and run
// by tests/gen (dispatch, statuses) and tests/consumer (an installed kiln, as a user builds).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "generator/emit/library.h"

namespace kiln {
namespace {

class GenTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("kiln-gen-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  }
  const std::string& file(const emit::GenResult& r, const std::string& name) {
    for (const auto& [n, text] : r.files)
      if (n == name) return text;
    static const std::string none = "<no such file>";
    return none;
  }
  static constexpr const char* kSpec =
      "dim M in 1..512 specialize 1, %16\n"
      "dim N in 1..512 specialize %64\n"
      "dim K in 1..512\n"
      "kernel gemm(a: f32[M, K], b: f32[K, N]) -> (c: f32[M, N]) {\n  c = a @ b\n}\n"
      "kernel mlp(x: f32[M, 8], w: f32[8, 16], v: f32[16, 4]) -> (y: f32[M, 4]) {\n  y = relu(x @ w) @ v\n}\n";
};

TEST_F(GenTest, WritesEveryFileTheSameWayTwice) {
  emit::GenOptions o{"lib", {"cpu", "x86_64-avx512", "x86_64-avx2"}, {write("a.kiln", kSpec)}};
  emit::GenResult r1 = emit::generate(o), r2 = emit::generate(o);
  ASSERT_TRUE(r1.ok) << r1.errors;
  std::vector<std::string> names;
  for (const auto& f : r1.files) names.push_back(f.first);
  // the targets best first, whatever order they were given in
  EXPECT_EQ(names, (std::vector<std::string>{"lib.h", "lib_dispatch.cpp", "lib_x86_64_avx512.c", "lib_x86_64_avx2.c",
                                             "lib_cpu.c", "lib.manifest.json"}));
  ASSERT_EQ(r1.files.size(), r2.files.size());
  for (size_t i = 0; i < r1.files.size(); ++i) EXPECT_EQ(r1.files[i], r2.files[i]) << r1.files[i].first;
  // no generated file names a path (the same spec elsewhere gives the same bytes)
  for (const auto& [name, text] : r1.files) EXPECT_EQ(text.find("/tmp"), std::string::npos) << name;
  const std::string& h = file(r1, "lib.h");
  EXPECT_NE(h.find("kiln::Status gemm(kiln::TensorView a, kiln::TensorView b, kiln::TensorView c, "
                   "kiln::Context* ctx = nullptr);"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("std::size_t mlp_workspace_size(int64_t M);"), std::string::npos) << h;
  EXPECT_NE(h.find("std::string gemm_explain(kiln::TensorView a, kiln::TensorView b, kiln::TensorView c);"),
            std::string::npos);
  // the x86 kernels exist only on x86, with the flags they need named
  const std::string& avx2 = file(r1, "lib_x86_64_avx2.c");
  EXPECT_NE(avx2.find("#if defined(__x86_64__)"), std::string::npos);
  EXPECT_NE(avx2.find("compile with: -mavx2 -mfma"), std::string::npos);
}

TEST_F(GenTest, VariantsAreEveryBucketCombinationMostSpecificFirst) {
  emit::GenOptions o{"lib", {"cpu", "x86_64-avx2"}, {write("b.kiln", kSpec)}};
  emit::GenResult r = emit::generate(o);
  ASSERT_TRUE(r.ok) << r.errors;
  nlohmann::json m = nlohmann::json::parse(file(r, "lib.manifest.json"));
  const auto& gemm = m["kernels"][0];
  ASSERT_EQ(gemm["name"], "gemm");
  std::vector<std::string> got;
  for (const auto& v : gemm["variants"])
    got.push_back(v["target"].get<std::string>() + " " + v["guard"].get<std::string>());
  std::vector<std::string> guards = {"M == 1 && N % 64 == 0", "M == 1",      "M % 16 == 0 && N % 64 == 0",
                                     "M % 16 == 0",           "N % 64 == 0", "any shape in range"};
  std::vector<std::string> want;
  for (const char* t : {"x86_64-avx2", "cpu"})
    for (const auto& g : guards) want.push_back(std::string(t) + " " + g);
  EXPECT_EQ(got, want);
  // each variant says what it costs; the mlp's two kernels need a workspace for the hidden layer
  EXPECT_EQ(gemm["variants"][1]["kernels"][0]["flops"], "((K * N) * 2)");  // M == 1: a vector-matrix product
  const auto& mlp = m["kernels"][1];
  EXPECT_EQ(mlp["variants"][0]["kernels"].size(), 2u);
  EXPECT_NE(mlp["variants"].back()["workspace_bytes"], "0");
  EXPECT_EQ(mlp["inputs"][0]["dtype"], "f32");
}

TEST_F(GenTest, ExplainSaysWhichVariantACallTakesAndWhy) {
  emit::GenOptions o{"lib", {"cpu", "x86_64-avx2", "x86_64-avx512"}, {write("c.kiln", kSpec)}};
  bool ok = false;
  std::string s = emit::explain(o, "gemm", {{"M", 1}, {"K", 5}, {"N", 128}}, 3u, &ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(s, "gemm with M=1 N=128 K=5:\n  gemm[M1_Nx64] on x86_64-avx512 (M == 1 && N % 64 == 0): taken\n");
  s = emit::explain(o, "gemm", {{"M", 32}, {"K", 5}, {"N", 100}}, 1u, &ok);
  EXPECT_TRUE(ok);
  EXPECT_NE(s.find("gemm[M1_Nx64] on x86_64-avx512 (M == 1 && N % 64 == 0): skipped, this CPU lacks avx512"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("gemm[Mx16_Nx64] on x86_64-avx2 (M % 16 == 0 && N % 64 == 0): skipped, N = 100 is not a multiple "
                   "of 64"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("gemm[Mx16] on x86_64-avx2 (M % 16 == 0): taken"), std::string::npos) << s;
  s = emit::explain(o, "gemm", {{"M", 3}, {"K", 5}, {"N", 7}}, 0u, &ok);
  EXPECT_NE(s.find("gemm[any] on cpu (any shape in range): taken"), std::string::npos) << s;
  s = emit::explain(o, "gemm", {{"M", 0}, {"K", 5}, {"N", 7}}, 0u, &ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(s, "kiln: error: M = 0 is outside the declared range 1..512\n");
  s = emit::explain(o, "gemm", {{"M", 1}, {"N", 7}}, 0u, &ok);
  EXPECT_EQ(s, "kiln: error: gemm needs a value for dim K\n");
  s = emit::explain(o, "gemm", {{"M", 1}, {"N", 7}, {"K", 1}, {"Q", 1}}, 0u, &ok);
  EXPECT_EQ(s, "kiln: error: gemm has no dim Q\n");
  s = emit::explain(o, "nope", {}, 0u, &ok);
  EXPECT_EQ(s, "kiln: error: no kernel named 'nope'\n");
}

TEST_F(GenTest, UserErrorsAreReportedNotThrown) {
  std::string spec = write("d.kiln", kSpec);
  auto error = [](const emit::GenOptions& o) {
    emit::GenResult r = emit::generate(o);
    EXPECT_FALSE(r.ok);
    return r.errors;
  };
  EXPECT_EQ(error({"lib", {"gpu"}, {spec}}),
            "kiln: error: unknown target 'gpu' (known: cpu, x86_64-avx2, x86_64-avx512)\n");
  EXPECT_EQ(error({"lib", {"cpu", "cpu"}, {spec}}), "kiln: error: target 'cpu' given twice\n");
  EXPECT_EQ(error({"2lib", {"cpu"}, {spec}}), "kiln: error: --name '2lib' is not a C identifier\n");
  EXPECT_EQ(error({"class", {"cpu"}, {spec}}), "kiln: error: --name 'class' is not a C identifier\n");
  EXPECT_EQ(error({"lib", {"cpu"}, {spec + ".missing"}}), "kiln: error: cannot open " + spec + ".missing\n");
  std::string twice = error({"lib", {"cpu"}, {spec, write("e.kiln", kSpec)}});
  EXPECT_NE(twice.find("e.kiln:4:8: error: kernel 'gemm' is also defined in " + spec), std::string::npos) << twice;
  std::string bad =
      error({"lib", {"cpu"}, {write("f.kiln", "dim M in 1..4\nkernel k(a: f32[M]) -> (b: f32[M]) {\n  b = a +\n}\n")}});
  EXPECT_NE(bad.find("f.kiln:3:"), std::string::npos) << bad;
  // names the generated C++ could not have
  std::string word =
      error({"lib", {"cpu"}, {write("g.kiln", "kernel delete(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n")}});
  EXPECT_NE(word.find("g.kiln:1:8: error: kernel 'delete' cannot be a C++ function name (it is a keyword)"),
            std::string::npos)
      << word;
  std::string twin = error({"lib",
                            {"cpu"},
                            {write("h.kiln",
                                   "kernel k(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n"
                                   "kernel k_explain(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n")}});
  EXPECT_NE(twin.find("error: kernel 'k_explain' clashes with the generated function k_explain of kernel 'k'"),
            std::string::npos)
      << twin;
  // a dim or an argument named like a keyword is a parameter with an underscore
  emit::GenResult ok = emit::generate(
      {"lib",
       {"cpu"},
       {write("i.kiln", "dim int in 1..8\nkernel k(new: f32[int]) -> (b: f32[int]) {\n  b = new\n}\n")}});
  ASSERT_TRUE(ok.ok) << ok.errors;
  EXPECT_NE(file(ok, "lib.h").find("std::size_t k_workspace_size(int64_t int_);"), std::string::npos)
      << file(ok, "lib.h");
  EXPECT_NE(file(ok, "lib.h").find("kiln::Status k(kiln::TensorView new_, kiln::TensorView b"), std::string::npos)
      << file(ok, "lib.h");
}

TEST_F(GenTest, DepfileNamesEverySpecAndKiln) {
  EXPECT_EQ(emit::depfile("/o/lib.h", {"/s/a b.kiln", "/s/c.kiln"}, "/bin/kiln"),
            "/o/lib.h: \\\n  /s/a\\ b.kiln \\\n  /s/c.kiln \\\n  /bin/kiln\n");
}

}  // namespace
}  // namespace kiln
