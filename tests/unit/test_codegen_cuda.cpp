// The codegen pipeline to CUDA C++: scheduled kernels through the GPU stages (Global loops, gpu
// dims' thread ids, each gated at the launch's extent) and the CUDA dialect of the C renderer, for
// the cuda-sm80 and cuda-sm90 targets: the kernel kinds the other renderers run and random
// programs, each test's kernels compiled by the CUDA toolkit's nvcc into one fatbin holding a cubin
// for sm_80 and one for sm_90 (ptxas assembles and checks each). No GPU runs them here (where one
// is lent, scripts/gpu-check.sh does). Without nvcc ($KILN_NVCC, PATH, /usr/local/cuda/bin) the
// tests are skipped with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "generator/codegen/pipeline.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "generator/target/target.h"
#include "tests/unit/kernel_kinds.h"
#include "tests/unit/random_program.h"

using namespace kiln;
using namespace kiln::testing_programs;

namespace {

int64_t kernels_compiled = 0;  // for the summary line

struct Summary : ::testing::Environment {
  void TearDown() override {
    if (kernels_compiled > 0)
      std::cout << kernels_compiled << " kernels compiled by nvcc and checked by ptxas for sm_80 and sm_90\n";
  }
};
[[maybe_unused]] auto* const summary = ::testing::AddGlobalTestEnvironment(new Summary);

// the toolkit's compiler: $KILN_NVCC, else nvcc on PATH, else the toolkit's usual place; "" for none
std::string nvcc() {
  if (const char* e = std::getenv("KILN_NVCC"); e != nullptr && *e != '\0') return e;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty() && access((d + "/nvcc").c_str(), X_OK) == 0) return d + "/nvcc";
  }
  return access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : "";
}

std::string numbered(const std::string& src) {
  std::istringstream in(src);
  std::string line, out;
  for (int n = 1; std::getline(in, line); ++n) out += std::to_string(n) + ": " + line + "\n";
  return out;
}

// `source` compiled into a fatbin for sm_80 and sm_90: "" where it compiled, else what nvcc said
std::string compile_cuda(const std::string& source) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kiln-cuda-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "k.cu") << source;
  std::string cmd =
      "'" + nvcc() + "' -fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 " +
      "-Xptxas -warn-spills -o '" + (dir / "k.fatbin").string() + "' '" + (dir / "k.cu").string() + "' 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf;
    for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
    if (pclose(p) != 0 && out.empty()) out = "nvcc failed";
  } else {
    out = "cannot run " + cmd;
  }
  std::error_code ec;
  bool made = fs::exists(dir / "k.fatbin") && fs::file_size(dir / "k.fatbin", ec) > 0;
  fs::remove_all(dir, ec);
  return made && out.find("error") == std::string::npos ? "" : out.empty() ? "no fatbin" : out;
}

const target::Target& sm80() { return *target::find("cuda-sm80"); }

// A test's kernels gathered into one translation unit, compiled at the end of the test
struct CudaTest : ::testing::Test, ProgramInputs {
  std::string source = render::cuda_preamble();
  int64_t kernels = 0;
  std::optional<codegen::TunedOpts> tuned;  // a database's opts for every kernel, instead of the heuristics'
  void expect_matches(const std::vector<Tensor>& outs, const std::vector<std::map<std::string, int64_t>>& = {{}}) {
    schedule::Schedule s = schedule::schedule(ins, outs, "k" + std::to_string(programs++));
    codegen::PipelineOptions o;
    o.target = &sm80();
    o.tuned = tuned;
    for (const auto& k : s.kernels) {
      source += codegen::compile_to_c(k.ast, s.vars, o).source;
      ++kernels;
    }
  }
  void compile() {
    if (nvcc().empty()) GTEST_SKIP() << "no nvcc (the CUDA toolkit): set KILN_NVCC or put it on PATH";
    std::string err = compile_cuda(source);
    EXPECT_EQ(err, "") << numbered(source);
    if (err.empty()) kernels_compiled += kernels;
  }
};

}  // namespace

TEST_F(CudaTest, ElementwiseAndBroadcast) {
  kinds::elementwise_and_broadcast(*this);
  compile();
}
TEST_F(CudaTest, ReductionsOverEachAxis) {
  kinds::reductions_over_each_axis(*this);
  compile();
}
TEST_F(CudaTest, LongReductionsOfFewOutputs) {
  kinds::long_reductions_of_few_outputs(*this);
  compile();
}
TEST_F(CudaTest, SoftmaxLayernormAtSymbolicBounds) {
  kinds::softmax_layernorm_at_symbolic_bounds(*this);
  compile();
}
// (the first kernel's reduction over 784 updates one vector of sums a step: a loop nvcc keeps, not
// 784 copies of its body, which took nvcc 38 s)
TEST_F(CudaTest, MlpAtTheBoundsOfItsBatch) {
  kinds::mlp(*this);
  EXPECT_NE(source.find("ridx2 < 784"), std::string::npos) << source;
  EXPECT_EQ(source.find("#pragma unroll 784"), std::string::npos) << source;
  compile();
}
TEST_F(CudaTest, MatmulShapes) {
  kinds::matmul_shapes(*this);
  compile();
}
TEST_F(CudaTest, TiledMatmulBuckets) {
  kinds::tiled_matmul_buckets(*this);
  compile();
}
TEST_F(CudaTest, ConvolutionsPoolingAttention) {
  kinds::convolutions_pooling_attention(*this);
  compile();
}
// A database's LANES on CUDA: the lane loop as kiln_vec<T, 4> (an aligned struct of lanes with
// lanewise operators: nvcc has no vector arithmetic), loads and stores of 16 bytes where aligned,
// every op the vectorizer takes (comparisons as masks, selects, NaN-propagating max, exp's bit
// casts and integer shifts, casts to and from int, integer math that wraps) compiled by nvcc and
// ptxas; a matmul's tile (the heuristics' LANES of its columns) is one ld.global.v4 of b a step.
// (The fake CUDA driver runs the vectors of the consumer library's matmuls against references.)
TEST_F(CudaTest, LanesAreCudaVectors) {
  Tensor x = input("x", {6, 32}), y = input("y", {6, 32}), i = input("i", {6, 32}, dtypes::int32),
         z = input("z", {6, 32});
  tuned = codegen::TunedOpts{{{codegen::Opt::Kind::Lane, 0, 8}}, 0};  // the loops merged: one of 6 * 32
  expect_matches({x.maximum(y), x.gt(y).where(x, y.exp()) + z.cast(dtypes::int32).cast(dtypes::float32),
                  (i * 3 + i).cast(dtypes::float32) + x.relu(), x.exp2() * y.neg()});
  for (const char* text :
       {"typedef kiln_vec<float, 4> kiln_vf32x4;", "kiln_load_vf32x4(&data", "kiln_store_vf32x4(&data",
        "kiln_max_vf32x4(", "kiln_select_vf32x4(", "kiln_convert<kiln_vi32x4>(", "kiln_convert<kiln_vf32x4>(",
        "kiln_bitcast<kiln_vi32x4>(", "kiln_bitcast<kiln_vf32x4>("})
    EXPECT_NE(source.find(text), std::string::npos) << text << "\n" << source;
  EXPECT_EQ(source.find("__builtin_convertvector"), std::string::npos) << source;
  compile();
}

// Matmuls of half inputs take the tensor cores (TC): float16 into a float sum, and bfloat16 in and
// out, batched (a batch loop beside the tile's), fragments loaded a 16-step of K at a time, and
// mma.sync.m16n8k16 of PTX. 64 x 48: blocks of 64 x 16, 2 warps (4 x 8 x 2 items), each 2 x 2
// products a step. Rows and columns that are not whole tiles are padded to them (20 x 13: PADTO,
// the reads past the ends gated to 0, the stores there off). Not where K is not a multiple of 16
// (24), a dim is never a tile long (M = 1: a matrix-vector product) or the inputs are float.
TEST_F(CudaTest, HalfMatmulsInWholeTilesTakeTheTensorCores) {
  std::vector<std::string> applied;
  codegen::CKernel last;
  auto opts_of = [&](const std::vector<Tensor>& outs) {
    schedule::Schedule s = schedule::schedule(ins, outs, "t" + std::to_string(programs++));
    codegen::PipelineOptions o;
    o.target = &sm80();
    applied.clear();
    o.applied_opts = &applied;
    std::string joined;
    for (const auto& k : s.kernels) {
      last = codegen::compile_to_c(k.ast, s.vars, o);
      source += last.source;
      ++kernels;
      for (const std::string& a : applied) joined += a + " ";
    }
    return joined;
  };
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  Tensor a = input("a", {64, 32}, dtypes::float16), b = input("b", {32, 48}, dtypes::float16);
  EXPECT_EQ(opts_of({a.cast(dtypes::float32).matmul(b.cast(dtypes::float32))}), "TC(2, 0) ");
  EXPECT_EQ(count(last.source, "kiln_mma_m16n8k16_f16(vec"), 4u) << last.source;
  for (auto [size, want] : {std::pair{last.local_size, std::array<int64_t, 3>{4, 8, 2}}, {last.global_size, {3, 1, 1}}})
    for (size_t d = 0; d < 3; ++d)
      if (size[d] != nullptr) {
        ASSERT_EQ(size[d]->op, Op::CONST);
        EXPECT_EQ(size[d]->ival(), want[d]) << d;
      } else {
        EXPECT_EQ(want[d], 1) << d;
      }
  Tensor x = input("x", {3, 32, 16}, dtypes::bfloat16), y = input("y", {3, 16, 24}, dtypes::bfloat16);
  EXPECT_EQ(opts_of({x.matmul(y)}), "TC(3, 0) ");
  Tensor p = input("p", {16, 24}, dtypes::float16), q = input("q", {24, 8}, dtypes::float16);
  EXPECT_EQ(opts_of({p.cast(dtypes::float32).matmul(q.cast(dtypes::float32))}).find("TC"), std::string::npos);
  Tensor u = input("u", {20, 32}, dtypes::float16), v = input("v", {32, 13}, dtypes::float16);
  EXPECT_EQ(opts_of({u.cast(dtypes::float32).matmul(v.cast(dtypes::float32))}), "PADTO(0, 16) PADTO(1, 8) TC(2, 0) ");
  Tensor r = input("r", {1, 64}, dtypes::float16), w = input("w", {64, 64}, dtypes::float16);
  EXPECT_EQ(opts_of({r.cast(dtypes::float32).matmul(w.cast(dtypes::float32))}).find("TC"), std::string::npos);
  Tensor f = input("f", {64, 32}), g = input("g", {32, 48});
  EXPECT_EQ(opts_of({f.matmul(g)}).find("TC"), std::string::npos);
  for (const char* text :
       {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "kiln_mma_m16n8k16_f16(", "kiln_mma_m16n8k16_bf16(", "threadIdx.x"})
    EXPECT_NE(source.find(text), std::string::npos) << text << "\n" << source;
  compile();
}

// A database's TC (kiln gen --tune-db): the same rewrite as the heuristics', after its PADTOs; an
// error that says why where the axis is not the reduction's or the kernel does not qualify
TEST_F(CudaTest, ADatabasesTensorCoresApplyOrSayWhyNot) {
  Tensor a = input("a", {20, 32}, dtypes::float16), b = input("b", {32, 13}, dtypes::float16);
  Tensor f = input("f", {64, 32}), g = input("g", {32, 48});
  auto compile_with = [&](const std::vector<Tensor>& outs, std::vector<codegen::Opt> opts) -> std::string {
    schedule::Schedule s = schedule::schedule(ins, outs, "d" + std::to_string(programs++));
    codegen::PipelineOptions o;
    o.target = &sm80();
    o.tuned = codegen::TunedOpts{std::move(opts), 0};
    try {
      std::string src = codegen::compile_to_c(s.kernels.at(0).ast, s.vars, o).source;
      source += src;
      ++kernels;
      return src.find("kiln_mma_m16n8k16_f16(") != std::string::npos ? "mma" : "no mma";
    } catch (const codegen::OptError& e) {
      return e.what();
    }
  };
  using K = codegen::Opt::Kind;
  const Tensor half = a.cast(dtypes::float32).matmul(b.cast(dtypes::float32));
  EXPECT_EQ(compile_with({half}, {{K::Padto, 0, 16}, {K::Padto, 1, 8}, {K::Tc, 2, 0}}), "mma");
  EXPECT_EQ(compile_with({half}, {{K::Tc, 2, 0}}),
            "TC(2, 0): TC: the rows, columns and reduction are not known multiples of 16, 8 and 16");
  EXPECT_EQ(compile_with({half}, {{K::Tc, 1, 0}}),
            "TC(1, 0): TC(<axis>, 0) names the axis of the kernel's one reduction");
  EXPECT_EQ(compile_with({f.matmul(g)}, {{K::Tc, 2, 0}}),
            "TC(2, 0): TC: the products are not of two float16 (or bfloat16) inputs");
  compile();
}

TEST_F(CudaTest, MovementOps) {
  kinds::movement_ops(*this);
  compile();
}
TEST_F(CudaTest, IntegersBoolsHalfAndBfloat16) {
  kinds::integers_bools_half_and_bfloat16(*this);
  compile();
}

TEST_F(CudaTest, RandomPrograms) {
  for (int seed = 0; seed < 60; ++seed) {
    std::vector<Tensor> outs;
    std::map<std::string, int64_t> vars;
    ins.clear();
    RandomProgram(uint64_t(seed)).build(ctx, ins, outs, vars);
    expect_matches(outs);
  }
  compile();
}

// The check itself: nvcc's errors reach the test, and a kernel whose extent is wrong fails to
// compile where its code does not (the harness is not a pass-through)
TEST(CudaRender, TheCompileCheckFailsOnABrokenKernel) {
  if (nvcc().empty()) GTEST_SKIP() << "no nvcc (the CUDA toolkit): set KILN_NVCC or put it on PATH";
  EXPECT_EQ(compile_cuda(render::cuda_preamble() + "extern \"C\" __global__ void ok(float* d) { d[0] = 1.0f; }\n"), "");
  EXPECT_NE(compile_cuda(render::cuda_preamble() + "extern \"C\" __global__ void bad(float* d) { d[0] = nope; }\n"),
            "");
}

// The kernel's shape: extern "C" __global__, the buffers then the dims, and each id gated at its
// extent (the launch rounds the grid up to whole blocks)
TEST(CudaRender, KernelSignatureAndGatedIds) {
  Context ctx;
  const UOp* n = ctx.var("N", 1, 100000);
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {n});
  std::vector<Tensor> ins{x}, outs{x * 2};
  schedule::Schedule s = schedule::schedule(ins, outs, "g");
  codegen::PipelineOptions o;
  o.target = &sm80();
  codegen::CKernel k = codegen::compile_to_c(s.kernels[0].ast, s.vars, o);
  EXPECT_NE(
      k.source.find("extern \"C\" __global__ void g_0(float* __restrict__ data0, const float* __restrict__ data1, "
                    "int64_t varg0)"),
      std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("blockIdx.x"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find(") return;"), std::string::npos) << k.source;
  ASSERT_NE(k.global_size[0], nullptr);
}
