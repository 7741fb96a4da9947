// Lowering specs to tensor graphs: kernels/examples.kiln evaluates like the same computation
// written with the Tensor API (or a plain loop), and each type and shape error is a golden
// diagnostic at the node that caused it.
#include "generator/frontend/spec_lower.h"

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "generator/frontend/parser.h"
#include "generator/frontend/spec_check.h"
#include "tests/unit/tensor_testing.h"

namespace kiln::frontend {
namespace {

using tensor_testing::Bindings;

// What `kiln check t.kiln` prints to stderr.
std::string errors_of(const std::string& text) {
  SourceFile file("t.kiln", text);
  ParseResult parsed = parse_spec(file);
  std::vector<Diagnostic> errors = std::move(parsed.diagnostics);
  if (errors.empty()) errors = check_spec(parsed.spec);
  Context ctx;
  if (errors.empty()) errors = lower_spec(ctx, parsed.spec, file).diagnostics;
  return render(errors);
}

// A one-kernel spec over dims M and N with `A: f32[M, N]`, the given outputs and body.
std::string kernel(const std::string& outputs, const std::string& body) {
  return "dim M in 1..64\ndim N in 1..64\nkernel k(A: f32[M, N], B: f32[N, M]) -> (" + outputs + ") {\n  " + body +
         "\n}\n";
}

struct ExamplesTest : ::testing::Test {
  Context ctx;
  std::string text = [] {
    std::ifstream in(std::string(KILN_SOURCE_DIR) + "/kernels/examples.kiln");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  SourceFile file{"examples.kiln", text};
  ParseResult parsed = parse_spec(file);
  LowerResult lowered = lower_spec(ctx, parsed.spec, file);

  const LoweredKernel& get(const std::string& name) {
    for (const LoweredKernel& k : lowered.kernels)
      if (k.name == name) return k;
    throw std::runtime_error("no kernel " + name);
  }
  // Random non-zero inputs for every slot of `k` under the dim values of `vars`.
  Bindings bind(const LoweredKernel& k, std::map<std::string, int64_t> vars, uint64_t seed) {
    Bindings b;
    b.vars = std::move(vars);
    for (const Tensor& t : k.inputs) {
      size_t n = 1;
      for (int64_t d : oracle::eval_shape(t.shape(), b)) n *= static_cast<size_t>(d);
      std::vector<double> v = tensor_testing::random_values(n, seed++, 0.1, 2);
      b.inputs[t.uop()->arg<ParamArg>().slot] = v;
    }
    return b;
  }
};

const std::vector<std::map<std::string, int64_t>> kSettings = {{{"M", 1}, {"N", 1}, {"K", 1}, {"D", 1}},
                                                               {{"M", 5}, {"N", 16}, {"K", 7}, {"D", 32}}};

TEST_F(ExamplesTest, LowersWithoutDiagnostics) {
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(render(lowered.diagnostics), "");
  ASSERT_EQ(lowered.kernels.size(), 6u);
  const LoweredKernel& ln = get("layernorm");
  ASSERT_EQ(ln.inputs.size(), 3u);
  ASSERT_EQ(ln.outputs.size(), 3u);
  for (size_t i = 0; i < ln.inputs.size(); ++i) EXPECT_EQ(ln.inputs[i].uop()->arg<ParamArg>().slot, int32_t(i));
  EXPECT_EQ(ln.outputs[1].dtype(), dtypes::float32);
}

TEST_F(ExamplesTest, GemmIsALoop) {
  const LoweredKernel& k = get("gemm");
  for (const auto& vars : kSettings) {
    Bindings b = bind(k, vars, 1);
    int64_t m = vars.at("M"), n = vars.at("N"), kk = vars.at("K");
    const auto &a = b.inputs[0], &w = b.inputs[1];
    std::vector<double> want(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t r = 0; r < kk; ++r) want[size_t(i * n + j)] += a[size_t(i * kk + r)] * w[size_t(r * n + j)];
    tensor_testing::expect_near(tensor_testing::eval(k.outputs[0], b), want, 1e-5);
  }
}

TEST_F(ExamplesTest, KernelsMatchTheTensorApi) {
  auto check = [&](const std::string& name, const std::vector<Tensor>& want) {
    const LoweredKernel& k = get(name);
    ASSERT_EQ(k.outputs.size(), want.size()) << name;
    for (const auto& vars : kSettings) {
      Bindings b = bind(k, vars, 7);
      for (size_t i = 0; i < want.size(); ++i)
        tensor_testing::expect_near(tensor_testing::eval(k.outputs[i], b), tensor_testing::eval(want[i], b), 1e-5);
    }
  };
  const auto& in = [&](const std::string& name) { return get(name).inputs; };
  const UOp* m = ctx.var("M", 1, 4096);
  {
    auto x = in("mlp");
    check("mlp", {(x[0].matmul(x[1]) + x[2]).relu().matmul(x[3]).softmax(-1)});
  }
  {
    auto x = in("softmax_rows");
    check("softmax_rows", {x[0].softmax(1)});
  }
  {
    auto x = in("layernorm");
    Tensor xf = x[0].cast(dtypes::float32), mean = xf.mean({1});
    Tensor centered = xf - mean.reshape({m, 1});
    Tensor rstd = ((centered * centered).mean({1}) + 1e-5).rsqrt();
    check("layernorm", {(centered * rstd.reshape({m, 1}) * x[1] + x[2]).cast(dtypes::float16), mean, rstd});
  }
  {
    auto x = in("rmsnorm");
    Tensor xf = x[0].cast(dtypes::float32);
    Tensor ms = (xf * xf).mean({-1}, true);
    check("rmsnorm", {(x[0] * (ms + 0.000001).rsqrt()).cast(dtypes::bfloat16) * x[1]});
  }
  {
    auto x = in("gelu_tanh");
    check("gelu_tanh", {0.5 * x[0] * (1 + (0.7978845608 * (x[0] + 0.044715 * x[0] * x[0] * x[0])).tanh())});
  }
}

TEST(SpecLowerErrors, ShapeErrorAtOperator) {
  EXPECT_EQ(errors_of(kernel("C: f32[M, M]", "C = A @ A")),
            "t.kiln:4:9: error: matmul: expected the inner dims to match, got [M, N] @ [M, N]\n"
            "  C = A @ A\n"
            "        ^\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A + B")),
            "t.kiln:4:9: error: broadcast: expected compatible shapes, got [M, N] and [N, M]\n"
            "  C = A + B\n"
            "        ^\n");
}

TEST(SpecLowerErrors, ShapeErrorAtCall) {
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = matmul(A, A)")),
            "t.kiln:4:7: error: matmul: expected the inner dims to match, got [M, N] @ [M, N]\n"
            "  C = matmul(A, A)\n"
            "      ^~~~~~\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M]", "C = A.sum(axis=2)")),
            "t.kiln:4:9: error: axis: expected an axis in [-2, 2) for shape [M, N], got 2\n"
            "  C = A.sum(axis=2)\n"
            "        ^~~\n");
}

TEST(SpecLowerErrors, DtypeRefused) {
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A.bitcast(dtype=f16)")),
            "t.kiln:4:9: error: bitcast: expected a dtype of 4 bytes like float, got half\n"
            "  C = A.bitcast(dtype=f16)\n"
            "        ^~~~~~~\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = idiv(A, A)")),
            "t.kiln:4:7: error: idiv: expected integer operands, got float and float\n"
            "  C = idiv(A, A)\n"
            "      ^~~~\n");
}

TEST(SpecLowerErrors, UnknownOp) {
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = foo(A)")),
            "t.kiln:4:7: error: unknown op 'foo'\n"
            "  C = foo(A)\n"
            "      ^~~\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A.relux()")),
            "t.kiln:4:9: error: unknown op 'relux'\n"
            "  C = A.relux()\n"
            "        ^~~~~\n");
}

TEST(SpecLowerErrors, WrongArity) {
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A.softmax(1, 2)")),
            "t.kiln:4:9: error: wrong number of arguments to 'softmax' (expected 1 to 2, got 3)\n"
            "  C = A.softmax(1, 2)\n"
            "        ^~~~~~~\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = where(A > 0, A)")),
            "t.kiln:4:7: error: wrong number of arguments to 'where' (expected 3, got 2)\n"
            "  C = where(A > 0, A)\n"
            "      ^~~~~\n");
}

TEST(SpecLowerErrors, UnknownKeyword) {
  EXPECT_EQ(errors_of(kernel("C: f32[M]", "C = A.sum(axes=1)")),
            "t.kiln:4:13: error: unknown keyword 'axes' for 'sum' (expected one of axis, keepdim, got 'axes')\n"
            "  C = A.sum(axes=1)\n"
            "            ^~~~\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = relu(A, axis=1)")),
            "t.kiln:4:15: error: unknown keyword 'axis' for 'relu' (expected no keywords, got 'axis')\n"
            "  C = relu(A, axis=1)\n"
            "              ^~~~\n");
}

TEST(SpecLowerErrors, MissingKeyword) {
  // a required argument is positional or keyword, as in tinygrad: missing, the count is wrong
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A.cast()")),
            "t.kiln:4:9: error: wrong number of arguments to 'cast' (expected 2, got 1)\n"
            "  C = A.cast()\n"
            "        ^~~~\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = flip(A)")),
            "t.kiln:4:7: error: wrong number of arguments to 'flip' (expected at least 2, got 1)\n"
            "  C = flip(A)\n"
            "      ^~~~\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = where(A > 0, y=A)")),
            "t.kiln:4:7: error: missing argument 'x' for 'where'\n"
            "  C = where(A > 0, y=A)\n"
            "      ^~~~~\n");
}

TEST(SpecLowerErrors, ArgumentType) {
  EXPECT_EQ(errors_of(kernel("C: f32[M]", "C = A.sum(axis=1.5)")),
            "t.kiln:4:18: error: wrong type for keyword 'axis' of 'sum' (expected an integer or a tuple of integers, "
            "got 1.5)\n"
            "  C = A.sum(axis=1.5)\n"
            "                 ^~~\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A.reshape(A)")),
            "t.kiln:4:17: error: wrong type for argument 'shape' of 'reshape' (expected a tuple of sizes, got a tensor "
            "f32[M, N])\n"
            "  C = A.reshape(A)\n"
            "                ^\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A.cast(dtype=M)")),
            "t.kiln:4:20: error: wrong type for keyword 'dtype' of 'cast' (expected a dtype, got dim 'M')\n"
            "  C = A.cast(dtype=M)\n"
            "                   ^\n");
}

TEST(SpecLowerErrors, WrongOperand) {
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A + (A, A)")),
            "t.kiln:4:11: error: wrong operand for '+' (expected a tensor or a number, got a tuple of 2 items)\n"
            "  C = A + (A, A)\n"
            "          ^\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = -f16")),
            "t.kiln:4:8: error: wrong operand for '-' (expected a tensor or a number, got dtype f16)\n"
            "  C = -f16\n"
            "       ^~~\n");
}

TEST(SpecLowerErrors, AssignedNonTensor) {
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = f32")),
            "t.kiln:4:7: error: cannot assign to 'C' (expected a tensor or a number, got dtype f32)\n"
            "  C = f32\n"
            "      ^~~\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "t = (A, A)\n  C = A")),
            "t.kiln:4:7: error: cannot assign to 't' (expected a tensor or a number, got a tuple of 2 items)\n"
            "  t = (A, A)\n"
            "      ^\n");
}

TEST(SpecLowerErrors, OutputShape) {
  EXPECT_EQ(errors_of(kernel("C: f32[M]", "C = A.sum(axis=0)")),
            "t.kiln:4:3: error: output 'C' has the wrong shape (expected [M], got [N])\n"
            "  C = A.sum(axis=0)\n"
            "  ^\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A.sum(axis=1, keepdim=true)")),
            "t.kiln:4:3: error: output 'C' has the wrong shape (expected [M, N], got [M, 1])\n"
            "  C = A.sum(axis=1, keepdim=true)\n"
            "  ^\n");
}

TEST(SpecLowerErrors, OutputDtype) {
  EXPECT_EQ(errors_of(kernel("C: f16[M, N]", "C = A + 1")),
            "t.kiln:4:3: error: output 'C' has the wrong dtype (expected f16, got f32)\n"
            "  C = A + 1\n"
            "  ^\n");
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A > 0")),
            "t.kiln:4:3: error: output 'C' has the wrong dtype (expected f32, got bool)\n"
            "  C = A > 0\n"
            "  ^\n");
}

TEST(SpecLowerErrors, FirstErrorPerKernel) {
  EXPECT_EQ(errors_of("dim M in 1..8\nkernel a(A: f32[M]) -> (C: f32[M]) {\n  t = foo(A)\n  C = bar(t)\n}\n"
                      "kernel b(A: f32[M]) -> (C: f32[M]) {\n  C = A.sum(axis=0)\n}\n"),
            "t.kiln:3:7: error: unknown op 'foo'\n"
            "  t = foo(A)\n"
            "      ^~~\n"
            "t.kiln:7:3: error: output 'C' has the wrong shape (expected [M], got [])\n"
            "  C = A.sum(axis=0)\n"
            "  ^\n");
}

TEST(SpecLowerDims, DimsAsSizesAndScalars) {
  EXPECT_EQ(errors_of(kernel("C: f32[M, N]", "C = A.reshape((M * N, 1)).reshape((M, N)) * M + B.transpose()")), "");
}

// tinygrad's call forms lower to exactly the graph of the Tensor API call they spell: positional
// or keyword arguments, separate values or one tuple or list.
TEST(SpecLowerForms, SameGraphAsTheTensorApi) {
  Context ctx;
  auto value = [&](const std::string& expr, const std::string& out) -> const UOp* {
    std::string text =
        "kernel k(A: f32[4, 6], I: i32[4, 6], X: f32[2, 16, 8, 8], W: f32[16, 16, 3, 3], b: f32[16]) -> "
        "(y: " +
        out + ") {\n  y = " + expr + "\n}\n";
    SourceFile file("t.kiln", text);
    ParseResult parsed = parse_spec(file);
    LowerResult r = lower_spec(ctx, parsed.spec, file);
    EXPECT_EQ(render(parsed.diagnostics) + render(r.diagnostics), "") << expr;
    return r.ok() && !r.kernels.empty() ? r.kernels[0].outputs[0].uop() : nullptr;
  };
  // the inputs the kernels above declare, in this Context: the same nodes, so equal graphs are equal pointers
  auto param = [&](const char* name, int32_t slot, DType d, std::vector<kiln::Dim> dims) {
    Tensor t = Tensor::input(ctx, name, d, dims);
    return Tensor(&ctx, ctx.make(Op::PARAM, t.dtype(), {t.uop()->src(0)}, ParamArg{slot, -1, ctx.intern(name)}));
  };
  Tensor a = param("A", 0, dtypes::float32, {4, 6}), i = param("I", 1, dtypes::int32, {4, 6});
  Tensor x = param("X", 2, dtypes::float32, {2, 16, 8, 8}), w = param("W", 3, dtypes::float32, {16, 16, 3, 3});
  Tensor b = param("b", 4, dtypes::float32, {16});
  struct Case {
    std::string expr, out;
    Tensor want;
  };
  for (const Case& c : std::vector<Case>{
           {"conv2d(X, W, stride=2) + b.reshape(1, 16, 1, 1)", "f32[2, 16, 3, 3]",
            x.conv2d(w, nullptr, 1, {2, 2}) + b.reshape({1, 16, 1, 1})},
           {"X.conv2d(weight=W, padding=(1, 1, 0, 2))", "f32[2, 16, 8, 8]",
            x.conv2d(w, nullptr, 1, {1}, {1}, {1, 1, 0, 2})},
           {"A.reshape(1, 24)", "f32[1, 24]", a.reshape({1, 24})},
           {"A.reshape((1, 24))", "f32[1, 24]", a.reshape({1, 24})},
           {"A.reshape([1, 24])", "f32[1, 24]", a.reshape({1, 24})},
           {"A.reshape(shape=(24,))", "f32[24]", a.reshape({24})},
           {"A.reshape(-1, 12)", "f32[2, 12]", a.reshape({2, 12})},
           {"A.reshape(None, 2, 3)", "f32[4, 2, 3]", a.reshape({4, 2, 3})},
           {"A.expand(2, None, None)", "f32[2, 4, 6]", a.expand({2, 4, 6})},
           {"A.shrink((None, (1, 3)))", "f32[4, 2]", a.shrink({{0, 4}, {1, 3}})},
           {"A.pad((None, (1, 1)), value=2)", "f32[4, 8]", a.pad_value({{0, 0}, {1, 1}}, 2)},
           {"A.reshape(4, 1, 6).flatten(1)", "f32[4, 6]", a.reshape({4, 1, 6}).reshape({4, 6})},
           {"A.permute(1, 0)", "f32[6, 4]", a.permute({1, 0})},
           {"A.permute(order=[1, 0])", "f32[6, 4]", a.permute({1, 0})},
           {"A.transpose()", "f32[6, 4]", a.transpose(1, 0)},
           {"A.T @ A", "f32[6, 6]", a.transpose(1, 0).matmul(a)},
           {"A.expand(2, 4, -1)", "f32[2, 4, 6]", a.expand({2, 4, 6})},
           {"A.flip(0)", "f32[4, 6]", a.flip({0})},
           {"A.flip(0, 1)", "f32[4, 6]", a.flip({0, 1})},
           {"A.flip((0, 1))", "f32[4, 6]", a.flip({0, 1})},
           {"A.sum(1)", "f32[4]", a.sum({1})},
           {"A.sum(1, true)", "f32[4, 1]", a.sum({1}, true)},
           {"A.max((0, 1))", "f32[]", a.max({0, 1})},
           {"A.softmax(0)", "f32[4, 6]", a.softmax(0)},
           {"cat(A, A, dim=1)", "f32[4, 12]", Tensor::cat({a, a}, 1)},
           {"A.cat(A)", "f32[8, 6]", Tensor::cat({a, a}, 0)},
           {"A.pad((1, 2))", "f32[4, 9]", a.pad_value({{0, 0}, {1, 2}}, 0)},
           {"A.pad(((1, 0), (2, 3)), mode=\"reflect\")", "f32[5, 11]", a.pad_mode({{1, 0}, {2, 3}}, "reflect")},
           {"A.pad((1, 1), \"circular\")", "f32[4, 8]", a.pad_mode({{0, 0}, {1, 1}}, "circular")},
           {"A.pad(((0, -1), (2, 0)), value=1.5)", "f32[3, 8]", a.pad_value({{0, -1}, {2, 0}}, 1.5)},
           {"A[1:3, ::-2]", "f32[2, 3]", a.getitem({Slice{1, 3}, Slice{std::nullopt, std::nullopt, -2}})},
           {"A[-1]", "f32[6]", a.getitem({-1})},
           {"A[:, 2]", "f32[4]", a.getitem({Slice{}, 2})},
           {"A[:, None, 1:]", "f32[4, 1, 5]", a.getitem({Slice{}, std::nullopt, Slice{1, std::nullopt}})},
           {"X[..., 0]", "f32[2, 16, 8]", x.getitem({Ellipsis{}, 0})},
           {"X[1, ..., 2:, None]", "f32[16, 8, 6, 1]",
            x.getitem({1, Ellipsis{}, Slice{2, std::nullopt}, std::nullopt})},
           {"A.sum(axis=None)", "f32[]", a.sum()},
           {"A.argmax(None, true)", "i32[]", a.argmax()},
           {"conv2d(X, W, None, 1, 2)", "f32[2, 16, 3, 3]", x.conv2d(w, nullptr, 1, {2})},
           {"div(I, 3, rounding_mode=\"floor\")", "i32[4, 6]", i.div(i.lift(3), "floor")},
           {"A.div(2, \"trunc\")", "f32[4, 6]", a.div(a.lift(2), "trunc")},
           {"A.div(2, rounding_mode=None)", "f32[4, 6]", a / 2},
           {"I & 3 | I >> 1 ^ ~I", "i32[4, 6]", (i & 3) | ((i >> 1) ^ ~i)},
           {"I << 2 < I", "bool[4, 6]", (i << 2) < i},
           {"bitwise_xor(I, lshift(I, 1))", "i32[4, 6]", i ^ (i << 1)},
           {"A.argmin(1)", "i32[4]", a.argmin(1)},
           {"A.argmax(1, true)", "i32[4, 1]", a.argmax(1, true)},
           {"A.argmax(axis=0, keepdim=true)", "i32[1, 6]", a.argmax(0, true)},
           {"argmax(A, -1, keepdim=false)", "i32[4]", a.argmax(-1, false)},
           {"A.argmin(0, keepdim=true)", "i32[1, 6]", a.argmin(0, true)},
           {"argmin(X, 2, true)", "i32[2, 16, 1, 8]", x.argmin(2, true)},
           {"argmin(A)", "i32[]", a.argmin()},
           {"gelu(A, approximate=\"none\")", "f32[4, 6]", a.gelu("none")},
           {"A.gelu('none')", "f32[4, 6]", a.gelu("none")},
           {"X.max_pool2d(3, 2, 2, 1, true)", "f32[2, 16, 4, 4]", x.max_pool2d({3}, {2}, {1}, {2}, true)},
           {"X.avg_pool2d(kernel_size=(2, 3), padding=(1, 0, 1, 1), count_include_pad=false)", "f32[2, 16, 5, 3]",
            x.avg_pool2d({2, 3}, {}, {1, 0, 1, 1}, {1}, false, false)},
       }) {
    const UOp* got = value(c.expr, c.out);
    EXPECT_EQ(got, c.want.uop()) << c.expr;
  }
}

}  // namespace
}  // namespace kiln::frontend
