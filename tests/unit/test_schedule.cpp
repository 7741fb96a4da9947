// The scheduler: kernel counts of canonical programs, the form of kernel ASTs, kernel order,
// the workspace plan and determinism. Execution against the oracle is in test_schedule_exec.cpp.
#include <gtest/gtest.h>

#include "generator/ir/text.h"
#include "generator/ir/verify.h"
#include "generator/schedule/schedule.h"
#include "tests/unit/tensor_testing.h"

using namespace kiln;
using namespace kiln::tensor_testing;
using schedule::Buffer;
using schedule::Schedule;

namespace {

struct ScheduleTest : TensorTest {
  std::vector<Tensor> ins;
  Tensor input(std::string_view name, std::vector<Dim> dims, DType d = dtypes::float32) {
    ins.push_back(in(name, std::move(dims), d));
    return ins.back();
  }
  Schedule run(std::vector<Tensor> outs) { return schedule::schedule(ins, outs, "k"); }
  size_t count(std::vector<Tensor> outs) { return run(std::move(outs)).kernels.size(); }
};

// Every kernel is well formed, and reads only buffers that exist before it runs.
void expect_well_formed(const Schedule& s) {
  std::vector<bool> ready(s.buffers.size(), false);
  for (size_t i = 0; i < s.buffers.size(); ++i) ready[i] = s.buffers[i].kind == Buffer::Kind::Input;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const auto& kern = s.kernels[k];
    EXPECT_EQ(verify(kern.ast), std::nullopt) << kern.name;
    std::vector<bool> stored(kern.buffers.size(), false);
    for (const UOp* u : toposort(kern.ast)) {
      if (u->op == Op::STORE) stored[size_t(u->src(0)->src(0)->arg<ParamArg>().slot)] = true;
      if (u->op == Op::PARAM) {
        ASSERT_LT(size_t(u->arg<ParamArg>().slot), kern.buffers.size());
      }
      if (u->op == Op::RANGE) {
        EXPECT_TRUE(u->dtype == dtypes::weakint);
      }
    }
    for (size_t slot = 0; slot < kern.buffers.size(); ++slot) {
      size_t b = size_t(kern.buffers[slot]);
      if (stored[slot]) {
        EXPECT_NE(s.buffers[b].kind, Buffer::Kind::Input) << kern.name << " stores into an input";
        ready[b] = true;
      } else {
        EXPECT_TRUE(ready[b]) << kern.name << " reads " << s.buffers[b].name << " before it is written";
      }
    }
  }
  for (size_t i = 0; i < s.buffers.size(); ++i) EXPECT_TRUE(ready[i]) << s.buffers[i].name << " is never written";
}

}  // namespace

// ---------------------------------------------------------------- kernel counts (tinygrad's in comments)

TEST_F(ScheduleTest, ElementwiseChainIsOneKernel) {  // tinygrad: 1
  Tensor a = input("a", {64, 48}), b = input("b", {64, 48}), c = input("c", {64, 48});
  EXPECT_EQ(count({(a * b + c).relu()}), 1u);
}

TEST_F(ScheduleTest, MatmulBiasReluIsOneKernel) {  // tinygrad: 1
  Tensor a = input("a", {64, 32}), b = input("b", {32, 48}), bias = input("bias", {48});
  Schedule s = run({(a.matmul(b) + bias).relu()});
  ASSERT_EQ(s.kernels.size(), 1u);
  expect_well_formed(s);
  int reduces = 0;
  for (const UOp* u : toposort(s.kernels[0].ast)) reduces += u->op == Op::REDUCE;
  EXPECT_EQ(reduces, 1);
}

TEST_F(ScheduleTest, SoftmaxOverRowsIsOneKernel) {  // tinygrad: 3
  Tensor x = input("x", {64, 48});
  Schedule s = run({x.softmax(-1)});
  ASSERT_EQ(s.kernels.size(), 1u);
  expect_well_formed(s);
  // the row max and the row sum, each computed once per row: two reduces, no intermediate buffer
  int reduces = 0;
  for (const UOp* u : toposort(s.kernels[0].ast)) reduces += u->op == Op::REDUCE;
  EXPECT_EQ(reduces, 2);
  EXPECT_EQ(s.buffers.size(), 2u);
}

TEST_F(ScheduleTest, LayernormIsOneKernel) {  // tinygrad: 3
  Tensor x = input("x", {64, 48});
  EXPECT_EQ(count({x.layernorm(-1)}), 1u);
}

TEST_F(ScheduleTest, MlpIsThreeKernels) {  // tinygrad: 5
  const UOp* m = ctx.var("M", 1, 4096);
  Tensor x = input("x", {m, 784}), w1 = input("w1", {784, 128}), b1 = input("b1", {128}), w2 = input("w2", {128, 10});
  Schedule s = run({(x.matmul(w1) + b1).relu().matmul(w2).softmax(-1)});
  ASSERT_EQ(s.kernels.size(), 3u);
  expect_well_formed(s);
  // the hidden layer is realized after its bias and relu, not as the bare matmul
  const Buffer& h = s.buffers[5];
  EXPECT_EQ(h.kind, Buffer::Kind::Intermediate);
  EXPECT_EQ(shape_str(h.shape), "[M, 128]");
  EXPECT_EQ(s.kernels[0].buffers, (std::vector<int32_t>{5, 0, 1, 2}));  // h, x, w1, b1
}

TEST_F(ScheduleTest, ReduceExpandedAlongAnOuterAxisIsRealized) {  // tinygrad: 3
  // softmax over columns: the column statistics do not depend on an outer axis, so computing them
  // inside the output kernel would repeat them for every row
  Tensor x = input("x", {64, 48});
  EXPECT_EQ(count({x.softmax(0)}), 3u);
}

TEST_F(ScheduleTest, MatmulChainRealizesEachProduct) {  // tinygrad: 2
  Tensor a = input("a", {8, 9}), b = input("b", {9, 10}), c = input("c", {10, 11});
  EXPECT_EQ(count({a.matmul(b).matmul(c)}), 2u);
}

TEST_F(ScheduleTest, ReduceUsedByTwoOutputsIsComputedOnce) {
  Tensor x = input("x", {16, 8});
  Tensor s = x.sum({1});
  Schedule sc = run({s + 1, s * 2});
  EXPECT_EQ(sc.kernels.size(), 3u);  // the sum, then each output from its buffer
  expect_well_formed(sc);
}

TEST_F(ScheduleTest, ConvAndAttentionSchedule) {
  Tensor x = input("x", {2, 3, 9, 9}), w = input("w", {4, 3, 3, 3}), b = input("b", {4});
  Schedule conv = run({x.conv2d(w, &b, 1, {1, 1}, {1, 1}, {0, 0}).relu()});
  EXPECT_EQ(conv.kernels.size(), 1u);
  expect_well_formed(conv);
  Context local;
  Tensor q = Tensor::input(local, "q", dtypes::float32, {2, 5, 8}),
         k = Tensor::input(local, "k", dtypes::float32, {2, 7, 8}),
         v = Tensor::input(local, "v", dtypes::float32, {2, 7, 8});
  std::vector<Tensor> qkv{q, k, v}, out{q.scaled_dot_product_attention(k, v)};
  Schedule att = schedule::schedule(qkv, out, "att");
  EXPECT_EQ(att.kernels.size(), 3u);  // the scores, the softmax, the product with v
  expect_well_formed(att);
}

// Overlapping windows over padding read the padded tensor from a buffer of its own, ungated: the
// pad is a kernel, the windows another. A window that reads each element once, and a pad of
// constants, stay in their kernel.
TEST_F(ScheduleTest, PaddingUnderOverlappingWindowsIsRealized) {
  Tensor x = input("x", {2, 3, 9, 9}), w = input("w", {4, 3, 3, 3});
  auto gated_reads = [](const schedule::Kernel& k) {
    size_t n = 0;
    for (const UOp* u : toposort(k.ast))
      n += u->op == Op::INDEX && u->src(1)->op == Op::WHERE && u->src(1)->src(2)->is_invalid();
    return n;
  };
  for (int64_t stride : {1, 2}) {
    Schedule s = run({x.conv2d(w, nullptr, 1, {stride, stride}, {1, 1}, {1, 1})});
    ASSERT_EQ(s.kernels.size(), 2u) << stride;
    expect_well_formed(s);
    const Buffer& padded = s.buffers[size_t(s.kernels[0].buffers[0])];
    EXPECT_EQ(padded.kind, Buffer::Kind::Intermediate);
    EXPECT_EQ(shape_str(padded.shape), "[2, 3, 11, 11]");
    EXPECT_GT(gated_reads(s.kernels[0]), 0u);  // the copy reads x gated
    EXPECT_EQ(gated_reads(s.kernels[1]), 0u);  // the windows read the copy as it is
  }
  // a 2x2 max pool of stride 2 over padding reads each element once: one kernel
  Schedule pool = run({x.max_pool2d({2, 2}, {2, 2}, {1, 1})});
  EXPECT_EQ(pool.kernels.size(), 1u);
  // a sum over a padded axis: one kernel
  Schedule sum = run({x.pad_value({{0, 0}, {0, 0}, {0, 0}, {2, 3}}, 0).sum({3})});
  EXPECT_EQ(sum.kernels.size(), 1u);
  // avg_pool2d without the padding in its count: x's pad realized, the count's (of constants) not
  Schedule avg = run({x.avg_pool2d({3, 3}, {1, 1}, {1, 1}, {1, 1}, false, false)});
  EXPECT_EQ(avg.kernels.size(), 2u);
  expect_well_formed(avg);
}

// ---------------------------------------------------------------- outputs and buffers

TEST_F(ScheduleTest, OutputThatIsAnInputIsCopied) {
  Tensor x = input("x", {4, 5});
  Schedule s = run({x, x.transpose()});
  ASSERT_EQ(s.kernels.size(), 2u);
  expect_well_formed(s);
  EXPECT_EQ(s.buffers[1].kind, Buffer::Kind::Output);
  EXPECT_EQ(s.buffers[2].kind, Buffer::Kind::Output);
}

TEST_F(ScheduleTest, SameNodeTwiceIsOneKernelWithTwoStores) {
  Tensor x = input("x", {4, 5});
  Tensor y = x.exp();
  Schedule s = run({y, y});
  ASSERT_EQ(s.kernels.size(), 1u);
  int stores = 0;
  for (const UOp* u : toposort(s.kernels[0].ast)) stores += u->op == Op::STORE;
  EXPECT_EQ(stores, 2);
}

TEST_F(ScheduleTest, WeakOutputIsStoredConcrete) {
  Tensor x = input("x", {3}, dtypes::int32);
  Schedule s = run({Tensor::full(ctx, {3}, 2.5, dtypes::weakfloat) + x.cast(dtypes::weakfloat)});
  EXPECT_EQ(s.buffers[1].dtype, dtypes::float32);
  expect_well_formed(s);
}

TEST_F(ScheduleTest, ScalarOutputHasNoRanges) {
  Tensor x = input("x", {7});
  Schedule s = run({x.sum()});
  ASSERT_EQ(s.kernels.size(), 1u);
  const UOp* sink = s.kernels[0].ast;
  ASSERT_EQ(sink->nsrc(), 1u);
  EXPECT_EQ(sink->src(0)->op, Op::STORE);
}

TEST_F(ScheduleTest, KernelAstGoldenText) {
  Tensor a = input("a", {4, 3}), b = input("b", {3});
  Schedule s = run({(a + b).relu()});
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(print_graph(s.kernels[0].ast),
            "%0 = (CONST:weakint 12)\n"
            "%1 = (PARAM:float* slot=0 name=out0 %0)\n"
            "%2 = (CONST:weakint 4)\n"
            "%3 = (RANGE:weakint 0 loop %2)\n"
            "%4 = (CONST:weakint 3)\n"
            "%5 = (MUL:weakint %3 %4)\n"
            "%6 = (RANGE:weakint 1 loop %4)\n"
            "%7 = (ADD:weakint %5 %6)\n"
            "%8 = (INDEX:float %1 %7)\n"
            "%9 = (CONST:float 0.0)\n"
            "%10 = (PARAM:float* slot=1 name=a %0)\n"
            "%11 = (INDEX:float %10 %7)\n"
            "%12 = (PARAM:float* slot=2 name=b %4)\n"
            "%13 = (INDEX:float %12 %6)\n"
            "%14 = (ADD:float %11 %13)\n"
            "%15 = (CMPLT:bool %9 %14)\n"
            "%16 = (WHERE:float %15 %14 %9)\n"
            "%17 = (STORE:void %8 %16)\n"
            "%18 = (END:void %17 %3 %6)\n"
            "%19 = (SINK:void k_0 %18)\n");
}

TEST_F(ScheduleTest, PaddedReadIsGated) {
  Tensor x = input("x", {4});
  Schedule s = run({x.pad({{Dim(1), Dim(2)}}).exp()});
  ASSERT_EQ(s.kernels.size(), 1u);
  expect_well_formed(s);
  bool gated = false;
  for (const UOp* u : toposort(s.kernels[0].ast))
    if (u->op == Op::INDEX && u->src(1)->op == Op::WHERE && u->src(1)->src(2)->is_invalid()) gated = true;
  EXPECT_TRUE(gated);
}

// ---------------------------------------------------------------- the workspace plan

TEST_F(ScheduleTest, WorkspaceReusesSpaceWhoseLifetimeEnded) {
  Tensor a = input("a", {8, 8}), b = input("b", {8, 8}), c = input("c", {8, 8}), d = input("d", {8, 8}),
         e = input("e", {8, 8});
  Schedule s = run({a.matmul(b).matmul(c).matmul(d).matmul(e)});
  ASSERT_EQ(s.kernels.size(), 4u);
  expect_well_formed(s);
  std::vector<const Buffer*> t;
  for (const Buffer& buf : s.buffers)
    if (buf.kind == Buffer::Kind::Intermediate) t.push_back(&buf);
  ASSERT_EQ(t.size(), 3u);                       // t0 (k0 -> k1), t1 (k1 -> k2), t2 (k2 -> k3)
  EXPECT_EQ(t[0]->offset, t[2]->offset);         // t0 is dead when t2 is written
  EXPECT_NE(t[0]->offset, t[1]->offset);         // k1 reads t0 while it writes t1
  EXPECT_EQ(dim_str(s.workspace_bytes), "512");  // two slots of 8*8 floats
}

TEST_F(ScheduleTest, WorkspaceIsSymbolicInTheDims) {
  const UOp* m = ctx.var("M", 1, 1000);
  Tensor a = input("a", {m, 8}), b = input("b", {8, 8}), c = input("c", {8, 8});
  Schedule s = run({a.matmul(b).matmul(c)});
  ASSERT_EQ(s.kernels.size(), 2u);
  // one intermediate of M*8 floats, M*32 bytes rounded up to 64
  EXPECT_EQ(dim_str(s.workspace_bytes), "(M+1)//2*64");
  EXPECT_EQ(s.vars, (std::vector<const UOp*>{m}));
}

// ---------------------------------------------------------------- determinism

TEST(ScheduleDeterminism, SameProgramSameText) {
  auto text = [] {
    Context ctx;
    const UOp* m = ctx.var("M", 1, 64);
    Tensor x = Tensor::input(ctx, "x", dtypes::float32, {m, 784}),
           w1 = Tensor::input(ctx, "w1", dtypes::float32, {784, 128}),
           b1 = Tensor::input(ctx, "b1", dtypes::float32, {128}),
           w2 = Tensor::input(ctx, "w2", dtypes::float32, {128, 10});
    std::vector<Tensor> ins{x, w1, b1, w2}, outs{(x.matmul(w1) + b1).relu().matmul(w2).softmax(-1)};
    return schedule::describe(schedule::schedule(ins, outs, "mlp"));
  };
  EXPECT_EQ(text(), text());
}
