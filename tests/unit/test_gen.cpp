// kiln gen (generator/emit/library.h): the files, their determinism, the variants and their
// order, explain, and the errors a user can make. The generated code itself is compiled and run
// by tests/gen (dispatch, statuses) and tests/consumer (an installed kiln, as a user builds).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
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
  static emit::GenOptions opts(std::string name, std::vector<std::string> targets, std::vector<std::string> specs,
                               emit::Emit emit = emit::Emit::All, std::string parts_dir = {}) {
    emit::GenOptions o;
    o.name = std::move(name);
    o.targets = std::move(targets);
    o.specs = std::move(specs);
    o.emit = emit;
    o.parts_dir = std::move(parts_dir);
    return o;
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
  emit::GenOptions o = opts("lib", {"cpu", "x86_64-avx512", "x86_64-avx2"}, {write("a.kiln", kSpec)});
  emit::GenResult r1 = emit::generate(o), r2 = emit::generate(o);
  ASSERT_TRUE(r1.ok) << r1.errors;
  std::vector<std::string> names;
  for (const auto& f : r1.files) names.push_back(f.first);
  // the targets best first, whatever order they were given in
  // the x86 targets are objects kiln compiled, cpu is C (generator/target/targets.cpp)
  EXPECT_EQ(names, (std::vector<std::string>{"lib.h", "lib_a.h", "lib_a_dispatch.cpp", "lib_a_x86_64_avx512.o",
                                             "lib_a_x86_64_avx2.o", "lib_a_cpu.c", "lib_a.manifest.json",
                                             "lib.manifest.json"}));
  ASSERT_EQ(r1.files.size(), r2.files.size());
  for (size_t i = 0; i < r1.files.size(); ++i) EXPECT_EQ(r1.files[i], r2.files[i]) << r1.files[i].first;
  // no generated file names a path (the same spec elsewhere gives the same bytes)
  for (const auto& [name, text] : r1.files) EXPECT_EQ(text.find("/tmp"), std::string::npos) << name;
  EXPECT_NE(file(r1, "lib.h").find("#include \"lib_a.h\""), std::string::npos) << file(r1, "lib.h");
  const std::string& h = file(r1, "lib_a.h");
  EXPECT_NE(h.find("kiln::Status gemm(kiln::TensorView a, kiln::TensorView b, kiln::TensorView c, "
                   "kiln::Context* ctx = nullptr);"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("std::size_t mlp_workspace_size(int64_t M);"), std::string::npos) << h;
  EXPECT_NE(h.find("std::string gemm_explain(kiln::TensorView a, kiln::TensorView b, kiln::TensorView c);"),
            std::string::npos);
  // the x86 kernels are x86-64 ELF objects defining the functions the C of `cpu` defines, under
  // their target's names; the dispatch declares and calls them only on x86
  const std::string& avx2 = file(r1, "lib_a_x86_64_avx2.o");
  ASSERT_GT(avx2.size(), 20u);
  EXPECT_EQ(avx2.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(uint8_t(avx2[4]), 2u);                             // 64-bit
  EXPECT_EQ(uint8_t(avx2[18]) | uint8_t(avx2[19]) << 8, 62u);  // EM_X86_64
  const std::string& cpu = file(r1, "lib_a_cpu.c");
  size_t functions = 0;
  for (size_t at = 0; (at = cpu.find("\nvoid ", at)) != std::string::npos; ++at, ++functions) {
    std::string fn = cpu.substr(at + 6, cpu.find('(', at) - at - 6);
    ASSERT_TRUE(fn.ends_with("_cpu")) << fn;
    std::string obj_fn = fn.substr(0, fn.size() - 3) + "x86_64_avx2";
    EXPECT_NE(avx2.find(std::string(1, '\0') + obj_fn + std::string(1, '\0')), std::string::npos) << obj_fn;
  }
  EXPECT_GT(functions, 4u);
  const std::string& dispatch = file(r1, "lib_a_dispatch.cpp");
  EXPECT_NE(dispatch.find("#if defined(__x86_64__)\nextern \"C\" {\nvoid lib_gemm_"), std::string::npos) << dispatch;
  // --keep-ir: each object's LLVM IR beside it, listed with the library's files
  o.keep_ir = true;
  emit::GenResult ir = emit::generate(o);
  ASSERT_TRUE(ir.ok) << ir.errors;
  EXPECT_EQ(file(ir, "lib_a_x86_64_avx2.o"), avx2);
  EXPECT_NE(file(ir, "lib_a_x86_64_avx2.ll").find("define void @lib_gemm_"), std::string::npos);
  EXPECT_NE(file(ir, "lib.manifest.json").find("\"lib_a_x86_64_avx512.ll\""), std::string::npos);
}

TEST_F(GenTest, VariantsAreEveryBucketCombinationMostSpecificFirst) {
  emit::GenOptions o = opts("lib", {"cpu", "x86_64-avx2"}, {write("b.kiln", kSpec)});
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
  emit::GenOptions o = opts("lib", {"cpu", "x86_64-avx2", "x86_64-avx512"}, {write("c.kiln", kSpec)});
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

// multiples of half a bucket (M = 8 mod 16, N = 32 mod 64) are in no bucket: each guard says why
TEST_F(GenTest, ExplainAtMultiplesOfHalfABucket) {
  emit::GenOptions o = opts("lib", {"cpu"}, {write("h.kiln", kSpec)});
  bool ok = false;
  EXPECT_EQ(emit::explain(o, "gemm", {{"M", 24}, {"K", 5}, {"N", 96}}, 0u, &ok),
            "gemm with M=24 N=96 K=5:\n"
            "  gemm[M1_Nx64] on cpu (M == 1 && N % 64 == 0): skipped, M = 24 is not 1\n"
            "  gemm[M1] on cpu (M == 1): skipped, M = 24 is not 1\n"
            "  gemm[Mx16_Nx64] on cpu (M % 16 == 0 && N % 64 == 0): skipped, M = 24 is not a multiple of 16\n"
            "  gemm[Mx16] on cpu (M % 16 == 0): skipped, M = 24 is not a multiple of 16\n"
            "  gemm[Nx64] on cpu (N % 64 == 0): skipped, N = 96 is not a multiple of 64\n"
            "  gemm[any] on cpu (any shape in range): taken\n");
  EXPECT_TRUE(ok);
  EXPECT_EQ(emit::explain(o, "gemm", {{"M", 1}, {"K", 5}, {"N", 32}}, 0u, &ok),
            "gemm with M=1 N=32 K=5:\n"
            "  gemm[M1_Nx64] on cpu (M == 1 && N % 64 == 0): skipped, N = 32 is not a multiple of 64\n"
            "  gemm[M1] on cpu (M == 1): taken\n");
  EXPECT_TRUE(ok);
}

TEST_F(GenTest, UserErrorsAreReportedNotThrown) {
  std::string spec = write("d.kiln", kSpec);
  auto error = [](const emit::GenOptions& o) {
    emit::GenResult r = emit::generate(o);
    EXPECT_FALSE(r.ok);
    return r.errors;
  };
  EXPECT_EQ(error(opts("lib", {"gpu"}, {spec})),
            "kiln: error: unknown target 'gpu' (known: aarch64-neon, aarch64-sve256, armv7-neon, cortex-m4, cpu, "
            "cuda-sm80, cuda-sm90, opencl, riscv64-rvv, "
            "wasm32-simd128, x86_64-avx2, x86_64-avx512)\n");
  EXPECT_EQ(error(opts("lib", {"cpu", "cpu"}, {spec})), "kiln: error: target 'cpu' given twice\n");
  {  // the GPU target: its kernels in a .cl file, and embedded in the dispatch as the same text
    emit::GenResult r = emit::generate(opts("lib", {"cpu", "opencl"}, {spec}));
    ASSERT_TRUE(r.ok) << r.errors;
    std::string cl, dispatch;
    for (const auto& [name, text] : r.files) {
      if (name == "lib_d_opencl.cl") cl = text;
      if (name == "lib_d_dispatch.cpp") dispatch = text;
    }
    EXPECT_NE(cl.find("__kernel void "), std::string::npos);
    EXPECT_NE(dispatch.find("const char* const kProgram_opencl[] = {\n"), std::string::npos);
    EXPECT_NE(dispatch.find("kiln::detail::DeviceCall call("), std::string::npos);
  }
  {  // a CUDA target's kernels are compiled by nvcc: one that is not there is named, and nothing is written
    emit::GenOptions o = opts("lib", {"cpu", "cuda-sm80"}, {spec});
    o.nvcc = "/nonexistent/nvcc";
    EXPECT_EQ(error(o),
              "kiln: error: target 'cuda-sm80': kiln gen compiles its kernels with the CUDA toolkit's nvcc, "
              "and --nvcc /nonexistent/nvcc is not an executable\n");
    o.emit = emit::Emit::Kernels;  // the kernel sources alone need no nvcc
    emit::GenResult r = emit::generate(o);
    ASSERT_TRUE(r.ok) << r.errors;
    EXPECT_NE(file(r, "lib_d_cuda_sm80.cu").find("extern \"C\" __global__ void "), std::string::npos);
  }
  EXPECT_EQ(error(opts("2lib", {"cpu"}, {spec})), "kiln: error: --name '2lib' is not a C identifier\n");
  EXPECT_EQ(error(opts("class", {"cpu"}, {spec})), "kiln: error: --name 'class' is not a C identifier\n");
  EXPECT_EQ(error(opts("lib", {"cpu"}, {spec + ".missing"})),
            spec + ".missing: error: cannot open (No such file or directory)\n");
  // a directory is not an empty spec, and a device that never ends is not read to its end
  std::string dir = spec.substr(0, spec.size() - 6) + "dir.kiln";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(error(opts("lib", {"cpu"}, {dir})), dir + ": error: is a directory, not a file\n");
  EXPECT_EQ(error(opts("lib", {"cpu"}, {"/dev/zero"})),
            "/dev/zero: error: is larger than 16 MiB, the most kiln reads from an input file\n");
  std::string twice = error(opts("lib", {"cpu"}, {spec, write("e.kiln", kSpec)}));
  EXPECT_NE(twice.find("e.kiln:4:8: error: kernel 'gemm' is also defined in " + spec), std::string::npos) << twice;
  std::string bad = error(
      opts("lib", {"cpu"}, {write("f.kiln", "dim M in 1..4\nkernel k(a: f32[M]) -> (b: f32[M]) {\n  b = a +\n}\n")}));
  EXPECT_NE(bad.find("f.kiln:3:"), std::string::npos) << bad;
  // names the generated C++ could not have
  std::string word =
      error(opts("lib", {"cpu"}, {write("g.kiln", "kernel delete(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n")}));
  EXPECT_NE(word.find("g.kiln:1:8: error: kernel 'delete' cannot be a C++ function name (it is a keyword)"),
            std::string::npos)
      << word;
  std::string twin = error(opts("lib", {"cpu"},
                                {write("h.kiln",
                                       "kernel k(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n"
                                       "kernel k_explain(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n")}));
  EXPECT_NE(twin.find("error: kernel 'k_explain' clashes with the generated function k_explain of kernel 'k'"),
            std::string::npos)
      << twin;
  // a dim or an argument named like a keyword is a parameter with an underscore
  emit::GenResult ok = emit::generate(
      opts("lib", {"cpu"},
           {write("i.kiln", "dim int in 1..8\nkernel k(new: f32[int]) -> (b: f32[int]) {\n  b = new\n}\n")}));
  ASSERT_TRUE(ok.ok) << ok.errors;
  EXPECT_NE(file(ok, "lib_i.h").find("std::size_t k_workspace_size(int64_t int_);"), std::string::npos)
      << file(ok, "lib_i.h");
  EXPECT_NE(file(ok, "lib_i.h").find("kiln::Status k(kiln::TensorView new_, kiln::TensorView b"), std::string::npos)
      << file(ok, "lib_i.h");
  // across the specs of a library too
  std::string across =
      error(opts("lib", {"cpu"},
                 {write("j.kiln", "kernel k(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n"),
                  write("k.kiln", "kernel k_workspace_size(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n")}));
  EXPECT_NE(across.find("k.kiln:1:8: error: kernel 'k_workspace_size' clashes with the generated function "
                        "k_workspace_size of kernel 'k' in " +
                        spec.substr(0, spec.size() - 6) + "j.kiln"),
            std::string::npos)
      << across;
  // two specs whose files would have the same names
  std::filesystem::create_directories(spec.substr(0, spec.size() - 6) + "sub");
  EXPECT_NE(error(opts("lib", {"cpu"}, {spec, write("sub/d.kiln", kSpec)})).find("would both write files named lib_d*"),
            std::string::npos);
}

// Names a spec may use that the generated C++ cannot: keywords of C++17 and C++20, the standard
// library's macros (and the names reserved for them), GNU's predefined macros and the names
// reserved to the implementation. A kernel's name is refused; an argument's or a dim's is respelled
// in the header, and the library compiles after every standard header, in every dialect.
TEST_F(GenTest, NamesTheGeneratedCodeCannotHaveAreRefusedOrRespelled) {
  for (const char* name : {"NULL", "errno", "INT_MAX", "assert", "co_await", "requires", "concept", "char8_t", "EOF",
                           "stdin", "linux", "SIGINT", "PRIi64", "INT8_C", "size_t", "_Foo", "a__b"}) {
    emit::GenResult r = emit::generate(
        opts("lib", {"cpu"},
             {write("n.kiln", std::string("kernel ") + name + "(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n")}));
    EXPECT_FALSE(r.ok) << name;
    EXPECT_NE(r.errors.find("n.kiln:1:8: error: kernel '" + std::string(name) + "' cannot be a C++ function name ("),
              std::string::npos)
        << r.errors;
  }
  std::string plain = write("plain.kiln", "kernel k(a: f32[4]) -> (b: f32[4]) {\n  b = a\n}\n");
  EXPECT_EQ(emit::generate(opts("NULL", {"cpu"}, {plain})).errors,
            "kiln: error: --name 'NULL' cannot be the library's namespace (it is a macro of the C or C++ standard "
            "library)\n");
  EXPECT_EQ(emit::generate(opts("requires", {"cpu"}, {plain})).errors,
            "kiln: error: --name 'requires' is not a C identifier\n");

  // kernels named like the dispatch's own functions and tables, like kiln's namespaces and like the
  // context parameter; arguments and dims named like keywords, macros and reserved names, and like
  // each other's respellings
  std::string spec =
      write("names.kiln",
            "dim NULL in 1..8\ndim errno in 1..8\ndim INT_MAX in 1..4\ndim co_await in 1..4\n"
            "dim int64_t in 1..4\ndim __d in 1..4\ndim linux in 1..4\ndim EOF in 1..4 specialize 2\n"
            "kernel pick(assert: f32[NULL, errno], requires: f32[errno]) -> (concept: f32[NULL, errno]) "
            "{\n  concept = assert + requires\n}\n"
            "kernel explain(char8_t: f32[INT_MAX, co_await], ctx: f32[co_await]) -> (new: f32[INT_MAX, "
            "co_await]) {\n  new = char8_t * ctx\n}\n"
            "kernel Variant(new_: f32[int64_t], new: f32[int64_t]) -> (stdin: f32[int64_t]) {\n"
            "  stdin = new_ - new\n}\n"
            "kernel std(_Foo: f32[__d, linux]) -> (SIZE_MAX: f32[__d]) {\n  SIZE_MAX = _Foo.sum(axis=1)\n}\n"
            "kernel kiln(unix: i32[EOF]) -> (ctx: i32[EOF]) {\n  ctx = unix + unix\n}\n"
            "kernel bind_pick(x: f32[EOF]) -> (y: f32[EOF]) {\n  y = x * 2.0\n}\n");
  emit::GenResult r = emit::generate(opts("names", {"cpu", "x86_64-avx2"}, {spec}));
  ASSERT_TRUE(r.ok) << r.errors;
  const std::string& h = file(r, "names_names.h");
  EXPECT_NE(h.find("kiln::Status pick(kiln::TensorView assert_, kiln::TensorView requires_, kiln::TensorView "
                   "concept_, kiln::Context* ctx = nullptr);"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("std::size_t pick_workspace_size(int64_t NULL_, int64_t errno_);"), std::string::npos) << h;
  EXPECT_NE(h.find("kiln::Status Variant(kiln::TensorView new_, kiln::TensorView new_2, kiln::TensorView stdin_,"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("std::size_t std_workspace_size(int64_t p_d, int64_t linux_);"), std::string::npos) << h;
  EXPECT_NE(h.find("std::size_t kiln_workspace_size(int64_t p_EOF);"), std::string::npos) << h;

  std::filesystem::path dir = std::filesystem::path(spec).parent_path() / "names-lib";
  std::filesystem::create_directories(dir);
  for (const auto& [name, text] : r.files) std::ofstream(dir / name) << text;
  const char* cxx = std::getenv("CXX");
  const char* cc = std::getenv("CC");
  std::string include = std::string(KILN_SOURCE_DIR) + "/runtime/include";
  ASSERT_TRUE(std::filesystem::exists(include + "/kiln/kiln.h")) << include;
  std::string cxx_headers, c_headers;
  for (const char* hd :
       {"cassert", "cerrno",    "cfenv",   "cfloat",  "cinttypes", "climits", "clocale", "cmath", "csetjmp",
        "csignal", "cstdarg",   "cstddef", "cstdint", "cstdio",    "cstdlib", "cstring", "ctime", "cwchar",
        "cuchar",  "algorithm", "string",  "vector",  "memory",    "thread",  "atomic"})
    cxx_headers += std::string(" -include ") + hd;
  for (const char* hd : {"assert.h", "errno.h",  "fenv.h",   "float.h",  "inttypes.h", "limits.h", "locale.h",
                         "math.h",   "setjmp.h", "signal.h", "stdarg.h", "stdbool.h",  "stddef.h", "stdint.h",
                         "stdio.h",  "stdlib.h", "string.h", "time.h",   "wchar.h",    "iso646.h"})
    c_headers += std::string(" -include ") + hd;
  auto compiles = [&](const std::string& command) {
    std::string log = (dir / "compile.log").string();
    int rc = std::system((command + " > '" + log + "' 2>&1").c_str());
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(rc, 0) << command << "\n" << text.substr(0, 4000);
  };
  for (const char* dialect : {"c++17", "c++20", "gnu++17", "gnu++20"})
    compiles(std::string(cxx ? cxx : "c++") + " -std=" + dialect + " -Wall -Wextra -Werror -fsyntax-only -I'" +
             include + "'" + cxx_headers + " '" + (dir / "names_names_dispatch.cpp").string() + "'");
  compiles(std::string(cc ? cc : "cc") + " -std=c99 -Wall -Wextra -Werror -fsyntax-only -I'" + include + "'" +
           c_headers + " '" + (dir / "names_names_cpu.c").string() + "'");
  // the object's functions link under the names the dispatch declares: both in one program
  compiles(std::string(cxx ? cxx : "c++") + " -std=c++17 -I'" + include + "' -c -o '" + (dir / "d.o").string() + "' '" +
           (dir / "names_names_dispatch.cpp").string() + "' && " + (cc ? cc : "cc") + " -r -nostdlib -o '" +
           (dir / "all.o").string() + "' '" + (dir / "d.o").string() + "' '" +
           (dir / "names_names_x86_64_avx2.o").string() + "' && ! nm -u '" + (dir / "all.o").string() +
           "' | grep -E '_x86_64_avx2$'");
}

// A build may write each spec's files in its own run (Bazel: one action per spec and per spec and
// target) and the library's two files from the parts and the objects: the bytes are those of one
// run, manifests included (only the library's has sizes, measured in the objects).
TEST_F(GenTest, SplitRunsWriteTheSameBytesAsOneRun) {
  std::string a = write("my-net.kiln", kSpec),
              b = write("other.kiln", "dim S in 1..64\nkernel scale(x: f32[S]) -> (y: f32[S]) {\n  y = x * 2.0\n}\n");
  std::vector<std::string> targets = {"cpu", "x86_64-avx2", "x86_64-avx512"};
  emit::GenResult all = emit::generate(opts("lib", targets, {a, b}));
  ASSERT_TRUE(all.ok) << all.errors;
  std::map<std::string, std::string> split;
  std::string dir = std::filesystem::path(a).parent_path().string(), kernels_dir = dir + "/kernels";
  std::filesystem::create_directories(kernels_dir);
  for (const std::string& spec : {a, b}) {
    emit::GenResult s = emit::generate(opts("lib", targets, {spec}, emit::Emit::Spec));
    ASSERT_TRUE(s.ok) << s.errors;
    EXPECT_EQ(s.files.size(), 3u);  // no kernel file: --emit spec compiles nothing
    for (const auto& [n, text] : s.files) {
      split[n] = text;
      if (n.ends_with(".manifest.json")) std::ofstream(dir + "/" + n) << text;  // the library run reads them
    }
  }
  // the library's sizes are the objects': without them, an error naming the run that writes one
  std::string no_objects = emit::generate(opts("lib", targets, {a, b}, emit::Emit::Library, dir)).errors;
  EXPECT_EQ(no_objects, dir +
                            "/lib_my_net_x86_64_avx512.o: error: cannot open (No such file or directory) (kiln gen "
                            "--emit kernels --target x86_64-avx512 " +
                            a + " writes it)\n");
  for (const std::string& spec : {a, b})
    for (const std::string& t : targets) {
      emit::GenResult k = emit::generate(opts("lib", {t}, {spec}, emit::Emit::Kernels));
      ASSERT_TRUE(k.ok) << k.errors;
      ASSERT_EQ(k.files.size(), 1u);
      split[k.files[0].first] = k.files[0].second;
      if (k.files[0].first.ends_with(".o"))
        std::ofstream(kernels_dir + "/" + k.files[0].first, std::ios::binary) << k.files[0].second;
    }
  emit::GenOptions link = opts("lib", targets, {a, b}, emit::Emit::Library, dir);
  link.kernels_dir = kernels_dir;
  emit::GenResult lib = emit::generate(link);
  ASSERT_TRUE(lib.ok) << lib.errors;
  for (const auto& [n, text] : lib.files) split[n] = text;
  ASSERT_EQ(split.size(), all.files.size());
  for (const auto& [n, text] : all.files) EXPECT_EQ(split[n], text) << n;
  EXPECT_NE(split["lib.manifest.json"].find("\"code_bytes\""), std::string::npos);
  EXPECT_EQ(split["lib_my_net.manifest.json"].find("\"code_bytes\""), std::string::npos);
  // an object that is not the part's: a clear error, not an internal one
  std::ofstream(kernels_dir + "/lib_other_x86_64_avx2.o", std::ios::binary) << split["lib_my_net_x86_64_avx2.o"];
  std::string foreign = emit::generate(link).errors;
  EXPECT_EQ(foreign.find("kiln: error: " + kernels_dir + "/lib_other_x86_64_avx2.o has no function lib_scale_"), 0u)
      << foreign;
  EXPECT_NE(foreign.find("(kiln gen --emit kernels --target x86_64-avx2 " + b + " writes it)\n"), std::string::npos)
      << foreign;
  std::ofstream(kernels_dir + "/lib_other_x86_64_avx2.o", std::ios::binary) << "not an object";
  std::string corrupt = emit::generate(link).errors;
  EXPECT_EQ(corrupt.find("kiln: error: " + kernels_dir + "/lib_other_x86_64_avx2.o: "), 0u) << corrupt;
  EXPECT_EQ(split.count("lib_my_net_x86_64_avx2.o"), 1u);  // the part name: the file name, an identifier
  EXPECT_EQ(emit::part_name("x/y/my-net.v2.kiln"), "my_net_v2");

  // the library run finds what one run finds: a kernel two specs define, stale or foreign parts
  std::ofstream(dir + "/lib_twin.manifest.json") << split["lib_my_net.manifest.json"];
  std::string twin = emit::generate(opts("lib", targets, {a, dir + "/twin.kiln"}, emit::Emit::Library, dir)).errors;
  EXPECT_EQ(twin.find("kiln: error: lib_twin.manifest.json was written for spec \"my-net.kiln\""), 0u) << twin;
  std::string renamed = split["lib_my_net.manifest.json"];
  const std::string from = "\"spec\": \"my-net.kiln\"";
  for (size_t at; (at = renamed.find(from)) != std::string::npos;)
    renamed.replace(at, from.size(), "\"spec\": \"twin.kiln\"");
  std::ofstream(dir + "/lib_twin.manifest.json") << renamed;
  twin = emit::generate(opts("lib", targets, {a, dir + "/twin.kiln"}, emit::Emit::Library, dir)).errors;
  EXPECT_EQ(twin,
            "kiln: error: kernel 'gemm' is defined at my-net.kiln:4:8 and at twin.kiln:4:8 (one library, one "
            "namespace)\n");
  // a line no int holds (found by the manifest fuzz target: get<int>() of 1e300 was undefined behaviour)
  for (const char* line : {"1e300", "-1", "4294967296"}) {
    std::string far = renamed;
    far.replace(far.find("\"line\": 4"), std::string("\"line\": 4").size(), std::string("\"line\": ") + line);
    std::ofstream(dir + "/lib_twin.manifest.json") << far;
    twin = emit::generate(opts("lib", targets, {a, dir + "/twin.kiln"}, emit::Emit::Library, dir)).errors;
    EXPECT_EQ(twin.find("kiln: error: lib_twin.manifest.json is not a kiln part manifest (expected a line or column, "
                        "got "),
              0u)
        << twin;
  }
  std::string other = emit::generate(opts("lib", {"cpu"}, {a}, emit::Emit::Library, dir)).errors;
  EXPECT_EQ(other,
            "kiln: error: lib_my_net.manifest.json was written for other targets: write it again with these "
            "options\n");
  std::string missing = emit::generate(opts("lib", {"cpu"}, {dir + "/none.kiln"}, emit::Emit::Library, dir)).errors;
  EXPECT_EQ(missing,
            dir + "/lib_none.manifest.json: error: cannot open (No such file or directory) (kiln gen --emit spec " +
                dir + "/none.kiln writes it)\n");
  EXPECT_EQ(emit::generate(opts("lib", targets, {a, b}, emit::Emit::Spec)).errors,
            "kiln: error: --emit spec writes the files of one spec (got 2)\n");
}

TEST_F(GenTest, DepfileNamesEverySpecAndKiln) {
  EXPECT_EQ(emit::depfile("/o/lib.h", {"/s/a b.kiln", "/s/c.kiln"}, "/bin/kiln"),
            "/o/lib.h: \\\n  /s/a\\ b.kiln \\\n  /s/c.kiln \\\n  /bin/kiln\n");
}

}  // namespace
}  // namespace kiln
