// The runtime library (runtime/): the ABI constants, Status, TensorView's dtype deduction, the
// argument checks and their exact messages, Context's pool, hook and workspace, detail::run,
// CPU features and the C API.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/kiln_c.h"

namespace {

using kiln::Context;
using kiln::DType;
using kiln::Status;
using kiln::StatusCode;
using kiln::TensorView;

// ---------------------------------------------------------------- ABI, dtypes, status codes

static_assert(KILN_ABI_VERSION == 1);
static_assert(KILN_MAX_RANK == 8);
static_assert(sizeof(kiln_tensor) == 88);
static_assert(KILN_CPU_X86_AVX2 == 1u && KILN_CPU_X86_AVX512 == 2u);
static_assert(static_cast<int32_t>(DType::Bool) == KILN_BOOL && static_cast<int32_t>(DType::Int8) == KILN_INT8 &&
              static_cast<int32_t>(DType::Uint8) == KILN_UINT8 && static_cast<int32_t>(DType::Int16) == KILN_INT16 &&
              static_cast<int32_t>(DType::Uint16) == KILN_UINT16 && static_cast<int32_t>(DType::Int32) == KILN_INT32 &&
              static_cast<int32_t>(DType::Uint32) == KILN_UINT32 && static_cast<int32_t>(DType::Int64) == KILN_INT64 &&
              static_cast<int32_t>(DType::Uint64) == KILN_UINT64 &&
              static_cast<int32_t>(DType::Float16) == KILN_FLOAT16 &&
              static_cast<int32_t>(DType::BFloat16) == KILN_BFLOAT16 &&
              static_cast<int32_t>(DType::Float32) == KILN_FLOAT32 &&
              static_cast<int32_t>(DType::Float64) == KILN_FLOAT64 && KILN_FLOAT64 == 12);
static_assert(static_cast<int32_t>(StatusCode::Ok) == 0 && static_cast<int32_t>(StatusCode::InvalidArgument) == 1 &&
              static_cast<int32_t>(StatusCode::OutOfRange) == 2 && static_cast<int32_t>(StatusCode::Unsupported) == 3 &&
              static_cast<int32_t>(StatusCode::ResourceExhausted) == 4 &&
              static_cast<int32_t>(StatusCode::Internal) == 5);

TEST(RuntimeDType, NamesAndSizes) {
  const struct {
    DType dtype;
    const char* name;
    size_t size;
  } cases[] = {
      {DType::Bool, "bool", 1},   {DType::Int8, "i8", 1},     {DType::Uint8, "u8", 1},      {DType::Int16, "i16", 2},
      {DType::Uint16, "u16", 2},  {DType::Int32, "i32", 4},   {DType::Uint32, "u32", 4},    {DType::Int64, "i64", 8},
      {DType::Uint64, "u64", 8},  {DType::Float16, "f16", 2}, {DType::BFloat16, "bf16", 2}, {DType::Float32, "f32", 4},
      {DType::Float64, "f64", 8},
  };
  for (const auto& c : cases) {
    EXPECT_STREQ(kiln::dtype_name(c.dtype), c.name);
    EXPECT_EQ(kiln::dtype_size(c.dtype), c.size) << c.name;
  }
  EXPECT_STREQ(kiln::dtype_name(static_cast<DType>(13)), "unknown");
  EXPECT_EQ(kiln::dtype_size(static_cast<DType>(-1)), 0u);
}

TEST(RuntimeStatus, CodeNames) {
  EXPECT_STREQ(kiln::status_code_name(StatusCode::Ok), "OK");
  EXPECT_STREQ(kiln::status_code_name(StatusCode::InvalidArgument), "INVALID_ARGUMENT");
  EXPECT_STREQ(kiln::status_code_name(StatusCode::OutOfRange), "OUT_OF_RANGE");
  EXPECT_STREQ(kiln::status_code_name(StatusCode::Unsupported), "UNSUPPORTED");
  EXPECT_STREQ(kiln::status_code_name(StatusCode::ResourceExhausted), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(kiln::status_code_name(StatusCode::Internal), "INTERNAL");
  for (int32_t code = KILN_OK; code <= KILN_INTERNAL; ++code) {
    EXPECT_STREQ(kiln_status_name(code), kiln::status_code_name(static_cast<StatusCode>(code)));
  }
  EXPECT_STREQ(kiln_status_name(6), "UNKNOWN");
  EXPECT_STREQ(kiln_status_name(-1), "UNKNOWN");
}

// ---------------------------------------------------------------- Status

// The ok path is a code and a null pointer: nothing to allocate or free.
static_assert(sizeof(Status) <= 2 * sizeof(void*));
static_assert(std::is_nothrow_default_constructible_v<Status>);
static_assert(std::is_nothrow_move_constructible_v<Status> && std::is_nothrow_move_assignable_v<Status>);
static_assert(std::is_copy_constructible_v<Status> && std::is_copy_assignable_v<Status>);

TEST(RuntimeStatus, OkPath) {
  const Status a;
  const Status b = Status::Ok();
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(a.code(), StatusCode::Ok);
  EXPECT_EQ(a.message(), "");
  EXPECT_EQ(&a.message(), &b.message());  // the one static empty string
  // An Ok code keeps no message.
  EXPECT_EQ(Status(StatusCode::Ok, "ignored").message(), "");
}

TEST(RuntimeStatus, EveryCode) {
  for (StatusCode code : {StatusCode::InvalidArgument, StatusCode::OutOfRange, StatusCode::Unsupported,
                          StatusCode::ResourceExhausted, StatusCode::Internal}) {
    const Status s(code, "what");
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), code);
    EXPECT_EQ(s.message(), "what");
  }
}

TEST(RuntimeStatus, CopyIsDeepAndMoveEmptiesTheSource) {
  Status a(StatusCode::OutOfRange, "k: too big");
  Status b = a;
  EXPECT_EQ(b.code(), StatusCode::OutOfRange);
  EXPECT_EQ(b.message(), "k: too big");
  EXPECT_NE(&a.message(), &b.message());

  Status c;
  c = a;
  EXPECT_EQ(c.message(), "k: too big");
  c = Status();
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(a.message(), "k: too big");

  Status d = std::move(a);
  EXPECT_EQ(d.code(), StatusCode::OutOfRange);
  EXPECT_EQ(d.message(), "k: too big");
  EXPECT_TRUE(a.ok());  // NOLINT(bugprone-use-after-move): moved-from is ok
  EXPECT_EQ(a.message(), "");

  Status e(StatusCode::Internal, "x");
  e = std::move(d);
  EXPECT_EQ(e.code(), StatusCode::OutOfRange);
  EXPECT_EQ(e.message(), "k: too big");
  EXPECT_TRUE(d.ok());  // NOLINT(bugprone-use-after-move)
}

// ---------------------------------------------------------------- TensorView

static_assert(kiln::dtype_of<bool>() == DType::Bool);
static_assert(kiln::dtype_of<int8_t>() == DType::Int8);
static_assert(kiln::dtype_of<uint8_t>() == DType::Uint8);
static_assert(kiln::dtype_of<int16_t>() == DType::Int16);
static_assert(kiln::dtype_of<uint16_t>() == DType::Uint16);
static_assert(kiln::dtype_of<int32_t>() == DType::Int32);
static_assert(kiln::dtype_of<uint32_t>() == DType::Uint32);
static_assert(kiln::dtype_of<int64_t>() == DType::Int64);
static_assert(kiln::dtype_of<uint64_t>() == DType::Uint64);
static_assert(kiln::dtype_of<kiln::float16>() == DType::Float16);
static_assert(kiln::dtype_of<kiln::bfloat16>() == DType::BFloat16);
static_assert(kiln::dtype_of<float>() == DType::Float32);
static_assert(kiln::dtype_of<double>() == DType::Float64);
// Not element types: TensorView(char*, ...) is a compile error with the static_assert's message.
static_assert(!kiln::DTypeOf<char>::supported && !kiln::DTypeOf<long double>::supported &&
              !kiln::DTypeOf<void>::supported && !kiln::DTypeOf<float*>::supported);

template <class T> void expect_deduced(DType expected) {
  SCOPED_TRACE(kiln::dtype_name(expected));
  T data[6] = {};
  const TensorView v(data, {2, 3});
  EXPECT_EQ(v.data(), static_cast<void*>(data));
  EXPECT_EQ(v.dtype(), expected);
  EXPECT_EQ(v.rank(), 2);
  EXPECT_EQ(v.dim(0), 2);
  EXPECT_EQ(v.dim(1), 3);
  EXPECT_TRUE(v.writable());
  EXPECT_EQ(v.t.dtype, static_cast<int32_t>(expected));
  EXPECT_EQ(v.t.writable, 1);

  const T* cdata = data;
  const TensorView c(cdata, {6});
  EXPECT_EQ(c.dtype(), expected);
  EXPECT_EQ(c.rank(), 1);
  EXPECT_EQ(c.dim(0), 6);
  EXPECT_FALSE(c.writable());
  EXPECT_EQ(c.t.writable, 0);
}

TEST(RuntimeTensorView, DeducesEveryDType) {
  expect_deduced<bool>(DType::Bool);
  expect_deduced<int8_t>(DType::Int8);
  expect_deduced<uint8_t>(DType::Uint8);
  expect_deduced<int16_t>(DType::Int16);
  expect_deduced<uint16_t>(DType::Uint16);
  expect_deduced<int32_t>(DType::Int32);
  expect_deduced<uint32_t>(DType::Uint32);
  expect_deduced<int64_t>(DType::Int64);
  expect_deduced<uint64_t>(DType::Uint64);
  expect_deduced<kiln::float16>(DType::Float16);
  expect_deduced<kiln::bfloat16>(DType::BFloat16);
  expect_deduced<float>(DType::Float32);
  expect_deduced<double>(DType::Float64);
}

TEST(RuntimeTensorView, UntypedAndSpanShapes) {
  float data[24] = {};
  const TensorView a(static_cast<void*>(data), DType::Float32, {2, 3, 4});
  EXPECT_EQ(a.dtype(), DType::Float32);
  EXPECT_EQ(a.rank(), 3);
  EXPECT_EQ(a.dim(2), 4);
  EXPECT_TRUE(a.writable());

  const TensorView b(static_cast<const void*>(data), DType::Int32, {24});
  EXPECT_EQ(b.dtype(), DType::Int32);
  EXPECT_FALSE(b.writable());

  const std::vector<int64_t> shape = {4, 6};
  const TensorView c(data, shape);
  EXPECT_EQ(c.rank(), 2);
  EXPECT_EQ(c.dim(1), 6);
  const TensorView d(static_cast<const void*>(data), DType::Float32, std::span<const int64_t>(shape));
  EXPECT_EQ(d.dim(0), 4);
  EXPECT_FALSE(d.writable());

  // A typed pointer with an explicit DType keeps its constness.
  const float* cdata = data;
  EXPECT_TRUE(TensorView(data, DType::Uint32, {24}).writable());
  EXPECT_FALSE(TensorView(cdata, DType::Uint32, {24}).writable());

  const TensorView scalar(data, {});
  EXPECT_EQ(scalar.rank(), 0);
}

TEST(RuntimeTensorView, RankAboveEightIsRecordedAsMinusOne) {
  float x = 0;
  const TensorView eight(&x, {1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(eight.rank(), 8);
  const TensorView nine(&x, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(nine.rank(), -1);
  for (int64_t d : nine.t.shape) EXPECT_EQ(d, 0);
  const std::vector<int64_t> twenty(20, 2);
  const TensorView many(static_cast<void*>(&x), DType::Float32, twenty);
  EXPECT_EQ(many.rank(), -1);
}

// ---------------------------------------------------------------- argument checks

namespace detail = kiln::detail;

TEST(RuntimeChecks, CheckTensorMessages) {
  float data[6] = {};
  const float* cdata = data;
  EXPECT_TRUE(detail::check_tensor("k", "x", TensorView(data, {2, 3}), DType::Float32, 2, true).ok());
  EXPECT_TRUE(detail::check_tensor("k", "x", TensorView(cdata, {2, 3}), DType::Float32, 2, false).ok());

  const auto expect = [](const Status& s, const char* message) {
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
    EXPECT_EQ(s.message(), message);
  };
  expect(
      detail::check_tensor("matmul", "a", TensorView(static_cast<float*>(nullptr), {2, 3}), DType::Float32, 2, false),
      "matmul: argument a: null data pointer");
  expect(detail::check_tensor("matmul", "a", TensorView(data, {1, 1, 1, 1, 1, 1, 1, 1, 1}), DType::Float32, 2, false),
         "matmul: argument a: more than 8 dims");
  expect(detail::check_tensor("matmul", "b", TensorView(data, {6}), DType::Float32, 2, false),
         "matmul: argument b: expected rank 2, got rank 1");
  expect(detail::check_tensor("matmul", "b", TensorView(reinterpret_cast<int32_t*>(data), {2, 3}), DType::Float32, 2,
                              false),
         "matmul: argument b: expected dtype f32, got i32");
  expect(detail::check_tensor("matmul", "b", TensorView(reinterpret_cast<kiln::bfloat16*>(data), {2, 3}),
                              DType::Float16, 2, false),
         "matmul: argument b: expected dtype f16, got bf16");
  expect(detail::check_tensor("matmul", "out", TensorView(cdata, {2, 3}), DType::Float32, 2, true),
         "matmul: argument out: output is a view of const data");
  expect(detail::check_tensor("matmul", "out", TensorView(data, {2, -3}), DType::Float32, 2, true),
         "matmul: argument out: dim 1 is negative (-3)");
  // The first failing check is the one reported.
  expect(
      detail::check_tensor("k", "x", TensorView(static_cast<const float*>(nullptr), {1, 2, 3}), DType::Int8, 2, true),
      "k: argument x: null data pointer");
  expect(detail::check_tensor("k", "x", TensorView(reinterpret_cast<const int8_t*>(data), {1, 2, 3}), DType::Float32, 2,
                              true),
         "k: argument x: expected rank 2, got rank 3");
  expect(detail::check_tensor("k", "x", TensorView(reinterpret_cast<const int8_t*>(data), {-1, 2}), DType::Float32, 2,
                              true),
         "k: argument x: expected dtype f32, got i8");
}

TEST(RuntimeChecks, CheckExtent) {
  EXPECT_TRUE(detail::check_extent("k", "x", 0, 5, 5).ok());
  const Status s = detail::check_extent("softmax", "y", 1, 7, 8);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "softmax: argument y: dim 1 is 7, expected 8");
}

TEST(RuntimeChecks, BindDim) {
  int64_t n = -1;
  const char* by_arg = nullptr;
  int32_t by_axis = -1;

  Status s = detail::bind_dim("matmul", "a", 0, "M", 0, 1, 4096, &n, &by_arg, &by_axis);
  EXPECT_EQ(s.code(), StatusCode::OutOfRange);
  EXPECT_EQ(s.message(), "matmul: argument a: dim 0 (M) is 0, outside the declared range 1..4096");
  EXPECT_EQ(n, -1);
  s = detail::bind_dim("matmul", "a", 0, "M", 5000, 1, 4096, &n, &by_arg, &by_axis);
  EXPECT_EQ(s.code(), StatusCode::OutOfRange);
  EXPECT_EQ(s.message(), "matmul: argument a: dim 0 (M) is 5000, outside the declared range 1..4096");
  EXPECT_EQ(n, -1);

  EXPECT_TRUE(detail::bind_dim("matmul", "a", 1, "K", 64, 1, 4096, &n, &by_arg, &by_axis).ok());
  EXPECT_EQ(n, 64);
  EXPECT_STREQ(by_arg, "a");
  EXPECT_EQ(by_axis, 1);

  EXPECT_TRUE(detail::bind_dim("matmul", "b", 0, "K", 64, 1, 4096, &n, &by_arg, &by_axis).ok());
  EXPECT_STREQ(by_arg, "a");  // the first binder stays on record
  s = detail::bind_dim("matmul", "b", 0, "K", 63, 1, 4096, &n, &by_arg, &by_axis);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "matmul: argument b: dim 0 (K) is 63, but argument a dim 1 set K = 64");
  EXPECT_EQ(n, 64);
}

// The rest of bind_dim's messages, null names, the int64 extremes and a long message: the text is
// built in a fixed buffer, and a heap build's must come out whole however long.
TEST(RuntimeChecks, MessageEdges) {
  int64_t n = 8;
  Status s = detail::bind_dim("k", "x", 2, "N", 9, 1, 64, &n, nullptr, nullptr);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "k: argument x: dim 2 (N) is 9, but N = 8");  // bound by no argument on record
  const char* none = nullptr;
  int32_t axis = 0;
  EXPECT_EQ(detail::bind_dim("k", "x", 2, "N", 9, 1, 64, &n, &none, &axis).message(),
            "k: argument x: dim 2 (N) is 9, but N = 8");
  s = detail::bind_dim("k", "x", 0, "N", 9, 1, 64, nullptr, nullptr, nullptr);
  EXPECT_EQ(s.code(), StatusCode::Internal);
  EXPECT_EQ(s.message(), "k: argument x: bind_dim without a value to bind");
  EXPECT_EQ(detail::check_extent(nullptr, nullptr, 0, 1, 2).message(),
            "(null): argument (null): dim 0 is 1, expected 2");
  EXPECT_EQ(detail::check_extent("k", "x", 7, INT64_MIN, INT64_MAX).message(),
            "k: argument x: dim 7 is -9223372036854775808, expected 9223372036854775807");
  n = -1;
  EXPECT_EQ(detail::bind_dim("k", "x", 0, nullptr, -1, 0, INT64_MAX, &n, nullptr, nullptr).message(),
            "k: argument x: dim 0 ((null)) is -1, outside the declared range 0..9223372036854775807");
  const std::string name(600, 'k');
  EXPECT_EQ(detail::workspace_overflow(name.c_str()).message(),
            name + ": workspace: the bytes these dims need are too many to count in an int64_t or a size_t");
}

TEST(RuntimeStatus, FromCStringAndView) {
  EXPECT_EQ(Status(StatusCode::Internal, static_cast<const char*>(nullptr)).message(), "");
  EXPECT_EQ(Status(StatusCode::Internal, std::string_view("abc", 2)).message(), "ab");
  EXPECT_EQ(Status(StatusCode::Ok, std::string_view("ignored")).message(), "");
  EXPECT_EQ(Status(StatusCode::Internal, std::string("owned")).message(), "owned");
}

// The bytes a view occupies, for the generated dispatch's overlap checks: itemsize times the
// elements from the data pointer, nothing for no elements, saturating instead of wrapping.
TEST(RuntimeChecks, ExtentAndOverlap) {
  std::vector<float> buf(64);
  const auto at = [&](size_t i) { return reinterpret_cast<uintptr_t>(buf.data() + i); };
  TensorView a(buf.data(), {4, 8}), b(buf.data() + 32, {2, 16}), c(buf.data() + 31, {1}), none(buf.data(), {4, 0});
  detail::Extent ea = detail::extent(a.t, 4), eb = detail::extent(b.t, 4), ec = detail::extent(c.t, 4);
  EXPECT_EQ(ea.begin, at(0));
  EXPECT_EQ(ea.end, at(32));
  EXPECT_EQ(eb.end, at(64));
  EXPECT_FALSE(detail::overlap(ea, eb));  // adjacent
  EXPECT_FALSE(detail::overlap(eb, ea));
  EXPECT_TRUE(detail::overlap(ea, ec));  // one element, a's last
  EXPECT_TRUE(detail::overlap(ec, ea));
  EXPECT_FALSE(detail::overlap(eb, ec));
  EXPECT_TRUE(detail::overlap(ea, ea));
  const detail::Extent empty = detail::extent(none.t, 4);
  EXPECT_EQ(empty.begin, empty.end);
  EXPECT_FALSE(detail::overlap(empty, ea));  // no elements touch nothing, even inside another view
  EXPECT_FALSE(detail::overlap(ea, empty));
  const double scalar = 0;
  const detail::Extent es = detail::extent(TensorView(&scalar, nullptr, 0).t, 8);
  EXPECT_EQ(es.end - es.begin, 8u);
  // 2^40 x 2^40 floats: the end saturates, so the view overlaps everything after its start
  TensorView huge(buf.data(), {int64_t(1) << 40, int64_t(1) << 40});
  const detail::Extent eh = detail::extent(huge.t, 4);
  EXPECT_EQ(eh.end, UINTPTR_MAX);
  EXPECT_TRUE(detail::overlap(eh, eb));
  TensorView near_top(reinterpret_cast<float*>(UINTPTR_MAX - 7), {4});
  EXPECT_EQ(detail::extent(near_top.t, 4).end, UINTPTR_MAX);

  Status s = detail::overlap_error("gemm", "c", "a", false);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(),
            "gemm: argument c: output overlaps input a in memory (a kernel reads and writes its arguments as if they "
            "were apart)");
  EXPECT_EQ(detail::overlap_error("pair", "q", "p", true).message(),
            "pair: argument q: output overlaps output p in memory (a kernel reads and writes its arguments as if they "
            "were apart)");
}

// Workspace sizes at the dims a call gives: every operation's overflow is remembered.
TEST(RuntimeChecks, CheckedSize) {
  {
    detail::CheckedSize c;
    EXPECT_EQ(c.bytes(c.add(c.mul(int64_t(1) << 40, 4096), 64)), (size_t(1) << 52) + 64);
    EXPECT_EQ(c.max(3, 5), 5);
    EXPECT_EQ(c.div(c.add(100, 63), 64), 2);
    EXPECT_EQ(c.mod(100, 64), 36);
    EXPECT_EQ(c.sub(5, 7), -2);
    EXPECT_EQ(c.neg(-9), 9);
    EXPECT_FALSE(c.overflow());
    EXPECT_EQ(c.bytes(-2), SIZE_MAX);  // a negative count is no count
  }
  const int64_t big = int64_t(1) << 51;
  for (auto f : {+[](detail::CheckedSize& c) { return c.mul(big + 1, 4096); },
                 +[](detail::CheckedSize& c) { return c.mul(big, 4096); },
                 +[](detail::CheckedSize& c) { return c.add(INT64_MAX, 1); },
                 +[](detail::CheckedSize& c) { return c.sub(INT64_MIN, 1); },
                 +[](detail::CheckedSize& c) { return c.neg(INT64_MIN); },
                 +[](detail::CheckedSize& c) { return c.div(c.mul(INT64_MAX, 2), 2); }}) {
    detail::CheckedSize c;
    int64_t v = f(c);
    EXPECT_TRUE(c.overflow());
    EXPECT_EQ(c.bytes(v), SIZE_MAX);
    EXPECT_EQ(c.bytes(c.add(v, 1)), SIZE_MAX);  // and stays so
  }
  const Status s = detail::workspace_overflow("wide");
  EXPECT_EQ(s.code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(s.message(), "wide: workspace: the bytes these dims need are too many to count in an int64_t or a size_t");
}

// ---------------------------------------------------------------- Context::parallel_for

struct Counts {
  std::array<std::atomic<int>, 64> hits{};
  std::atomic<int> calls{0};
};

void count_task(void* arg, int32_t i) {
  auto* c = static_cast<Counts*>(arg);
  c->hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
  c->calls.fetch_add(1, std::memory_order_relaxed);
}

TEST(RuntimeContext, ThreadCounts) {
  EXPECT_GE(Context().threads(), 1);
  EXPECT_EQ(Context(3).threads(), 3);
  EXPECT_EQ(Context(0).threads(), 1);
  Context ctx(2);
  ctx.set_threads(1000);
  EXPECT_EQ(ctx.threads(), 256);
  ctx.set_threads(-4);
  EXPECT_EQ(ctx.threads(), 1);
  ctx.set_threads(4);
  EXPECT_EQ(ctx.threads(), 4);
}

TEST(RuntimeContext, ParallelForRunsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    Context ctx(threads);
    for (int32_t n : {1, 2, 3, 7, 64}) {
      for (int rep = 0; rep < 1000; ++rep) {
        Counts counts;
        ctx.parallel_for(n, count_task, &counts);
        ASSERT_EQ(counts.calls.load(), n) << "threads " << threads << " n " << n << " rep " << rep;
        for (int32_t i = 0; i < 64; ++i) {
          ASSERT_EQ(counts.hits[static_cast<size_t>(i)].load(), i < n ? 1 : 0)
              << "threads " << threads << " n " << n << " rep " << rep << " index " << i;
        }
      }
    }
  }
}

TEST(RuntimeContext, ParallelForOfNothing) {
  Context ctx(4);
  Counts counts;
  ctx.parallel_for(0, count_task, &counts);
  ctx.parallel_for(-3, count_task, &counts);
  EXPECT_EQ(counts.calls.load(), 0);
}

struct Threads {
  std::mutex mutex;
  std::multiset<std::thread::id> ids;
};

void record_thread(void* arg, int32_t) {
  auto* t = static_cast<Threads*>(arg);
  std::lock_guard<std::mutex> lock(t->mutex);
  t->ids.insert(std::this_thread::get_id());
}

TEST(RuntimeContext, CallingThreadParticipates) {
  Context ctx(4);
  for (int32_t n : {1, 2, 64}) {
    for (int rep = 0; rep < 100; ++rep) {
      Threads t;
      ctx.parallel_for(n, record_thread, &t);
      ASSERT_EQ(t.ids.size(), static_cast<size_t>(n));
      ASSERT_GE(t.ids.count(std::this_thread::get_id()), 1u) << "n " << n;
      if (n == 1) {
        ASSERT_EQ(t.ids.count(std::this_thread::get_id()), 1u);
      }
    }
  }
}

// Each task waits until all have started: this finishes only if the n tasks run at once.
struct Rendezvous {
  int32_t n;
  std::atomic<int32_t> arrived{0};
};

void rendezvous_task(void* arg, int32_t) {
  auto* r = static_cast<Rendezvous*>(arg);
  r->arrived.fetch_add(1);
  while (r->arrived.load() < r->n) std::this_thread::yield();
}

TEST(RuntimeContext, TasksRunConcurrently) {
  Context ctx(4);
  for (int rep = 0; rep < 20; ++rep) {
    Rendezvous r{4};
    ctx.parallel_for(4, rendezvous_task, &r);
    EXPECT_EQ(r.arrived.load(), 4);
  }
}

TEST(RuntimeContext, ResizeAndDestroyJoinCleanly) {
  for (int rep = 0; rep < 50; ++rep) {
    Context ctx(1 + rep % 4);
    Counts counts;
    ctx.parallel_for(7, count_task, &counts);
    ctx.set_threads(1 + (rep + 1) % 4);
    ctx.parallel_for(7, count_task, &counts);
    EXPECT_EQ(counts.calls.load(), 14);
  }
  Context never_used(8);  // no threads to join
}

struct Nested {
  Context* ctx;
  Counts inner;
};

void nested_task(void* arg, int32_t) {
  auto* n = static_cast<Nested*>(arg);
  n->ctx->parallel_for(3, count_task, &n->inner);
}

TEST(RuntimeContext, NestedAndConcurrentCallsRunOnTheCaller) {
  Context ctx(4);
  Nested nested{&ctx, {}};
  ctx.parallel_for(5, nested_task, &nested);
  EXPECT_EQ(nested.inner.calls.load(), 15);

  Counts a, b;
  std::thread other([&] {
    for (int rep = 0; rep < 200; ++rep) ctx.parallel_for(64, count_task, &a);
  });
  for (int rep = 0; rep < 200; ++rep) ctx.parallel_for(64, count_task, &b);
  other.join();
  EXPECT_EQ(a.calls.load(), 200 * 64);
  EXPECT_EQ(b.calls.load(), 200 * 64);
}

struct Hook {
  int calls = 0;
  int32_t last_n = 0;
};

void serial_hook(void* user, int32_t n, void (*task)(void* arg, int32_t i), void* arg) {
  auto* h = static_cast<Hook*>(user);
  ++h->calls;
  h->last_n = n;
  for (int32_t i = 0; i < n; ++i) task(arg, i);
}

TEST(RuntimeContext, ParallelForHookIsUsedAndCanBeReset) {
  Context ctx(3);
  Hook hook;
  ctx.set_parallel_for(serial_hook, &hook);
  Counts counts;
  ctx.parallel_for(10, count_task, &counts);
  EXPECT_EQ(hook.calls, 1);
  EXPECT_EQ(hook.last_n, 10);
  EXPECT_EQ(counts.calls.load(), 10);

  ctx.set_parallel_for(nullptr, nullptr);
  ctx.parallel_for(10, count_task, &counts);
  EXPECT_EQ(hook.calls, 1);
  EXPECT_EQ(counts.calls.load(), 20);
}

// ---------------------------------------------------------------- detail::run

struct KernelLog {
  std::mutex mutex;
  std::vector<std::pair<int32_t, int32_t>> calls;  // (core, cores)
  std::set<std::thread::id> threads;
  const int64_t* vars = nullptr;
};

void logging_kernel(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores) {
  auto* log = static_cast<KernelLog*>(bufs[0]);
  std::lock_guard<std::mutex> lock(log->mutex);
  log->calls.emplace_back(core, cores);
  log->threads.insert(std::this_thread::get_id());
  log->vars = vars;
}

TEST(RuntimeRun, ParallelCallsOncePerCore) {
  Context ctx(4);
  for (int rep = 0; rep < 100; ++rep) {
    KernelLog log;
    void* const bufs[] = {&log};
    const int64_t vars[] = {7};
    ASSERT_TRUE(detail::run(&ctx, logging_kernel, bufs, vars, true).ok());
    ASSERT_EQ(log.calls.size(), 4u);
    std::set<int32_t> cores;
    for (auto [core, n] : log.calls) {
      EXPECT_EQ(n, 4);
      cores.insert(core);
    }
    EXPECT_EQ(cores, (std::set<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(log.vars, vars);
  }
}

TEST(RuntimeRun, SerialRunsInlineOnce) {
  Context ctx(4);
  Context single(1);
  const int64_t vars[] = {1, 2};
  for (auto [c, parallel] : {std::pair<Context*, bool>{&ctx, false}, {nullptr, true}, {&single, true}}) {
    KernelLog log;
    void* const bufs[] = {&log};
    ASSERT_TRUE(detail::run(c, logging_kernel, bufs, vars, parallel).ok());
    ASSERT_EQ(log.calls.size(), 1u);
    EXPECT_EQ(log.calls[0], (std::pair<int32_t, int32_t>{0, 1}));
    EXPECT_EQ(log.threads, (std::set<std::thread::id>{std::this_thread::get_id()}));
  }
}

TEST(RuntimeRun, UsesTheHook) {
  Context ctx(3);
  Hook hook;
  ctx.set_parallel_for(serial_hook, &hook);
  KernelLog log;
  void* const bufs[] = {&log};
  ASSERT_TRUE(detail::run(&ctx, logging_kernel, bufs, nullptr, true).ok());
  EXPECT_EQ(hook.calls, 1);
  EXPECT_EQ(hook.last_n, 3);
  EXPECT_EQ(log.calls.size(), 3u);
}

// ---------------------------------------------------------------- workspace

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(RuntimeWorkspace, ZeroBytes) {
  Status s(StatusCode::Internal, "stale");
  EXPECT_EQ(detail::workspace(nullptr, 0, &s), nullptr);
  EXPECT_TRUE(s.ok());
  Context ctx(1);
  EXPECT_EQ(detail::workspace(&ctx, 0, &s), nullptr);
  EXPECT_TRUE(s.ok());
}

TEST(RuntimeWorkspace, ThreadLocalWithoutContext) {
  Status s;
  void* a = detail::workspace(nullptr, 1000, &s);
  ASSERT_TRUE(s.ok());
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(aligned64(a));
  EXPECT_EQ(detail::workspace(nullptr, 10, &s), a);   // kept and reused
  void* b = detail::workspace(nullptr, 1 << 20, &s);  // grown
  ASSERT_TRUE(s.ok());
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(aligned64(b));
  std::fill_n(static_cast<char*>(b), 1 << 20, 1);
  EXPECT_EQ(detail::workspace(nullptr, 1000, &s), b);

  void* other = nullptr;
  std::thread([&] {
    Status st;
    other = detail::workspace(nullptr, 1000, &st);
    std::fill_n(static_cast<char*>(other), 1000, 2);
  }).join();
  EXPECT_NE(other, nullptr);
  EXPECT_NE(other, b);
}

TEST(RuntimeWorkspace, ContextsOwnBlockGrows) {
  Context ctx(2);
  Status s;
  void* a = detail::workspace(&ctx, 100, &s);
  ASSERT_TRUE(s.ok());
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(aligned64(a));
  EXPECT_EQ(detail::workspace(&ctx, 64, &s), a);
  void* b = detail::workspace(&ctx, 1 << 16, &s);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(aligned64(b));
  std::fill_n(static_cast<char*>(b), 1 << 16, 3);
  EXPECT_EQ(detail::workspace(&ctx, 100, &s), b);
}

TEST(RuntimeWorkspace, CallerGivenBlock) {
  alignas(64) static char buffer[256];
  Context ctx(2);
  ctx.set_workspace(buffer, sizeof buffer);
  Status s;
  EXPECT_EQ(detail::workspace(&ctx, 256, &s), buffer);
  EXPECT_TRUE(s.ok());

  EXPECT_EQ(detail::workspace(&ctx, 257, &s), nullptr);
  EXPECT_EQ(s.code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(s.message(), "workspace: the call needs 257 bytes, the context's workspace has 256");

  EXPECT_EQ(detail::workspace(&ctx, 8, &s), buffer);
  EXPECT_TRUE(s.ok());  // a later success reports ok

  ctx.set_workspace(nullptr, 0);  // allocates again
  void* own = detail::workspace(&ctx, 4096, &s);
  EXPECT_TRUE(s.ok());
  EXPECT_NE(own, nullptr);
  EXPECT_NE(own, static_cast<void*>(buffer));
}

// ---------------------------------------------------------------- CPU features

TEST(RuntimeCpu, FeaturesAreStableAndConsistent) {
  const uint32_t bits = kiln::cpu_features();
  EXPECT_EQ(bits & ~(KILN_CPU_X86_AVX2 | KILN_CPU_X86_AVX512), 0u);
  EXPECT_TRUE(!(bits & KILN_CPU_X86_AVX512) || (bits & KILN_CPU_X86_AVX2)) << "AVX-512 without AVX2";
  uint32_t seen[4] = {};
  std::vector<std::thread> threads;
  for (uint32_t& s : seen) threads.emplace_back([&s] { s = kiln::cpu_features(); });
  for (std::thread& t : threads) t.join();
  for (uint32_t s : seen) EXPECT_EQ(s, bits);
  EXPECT_EQ(kiln_cpu_features(), bits);

  const std::string name = kiln::cpu_features_string();
  const std::string expected = bits == 0 ? "none" : bits == KILN_CPU_X86_AVX2 ? "avx2" : "avx2 avx512";
  EXPECT_EQ(name, expected);
}

// ---------------------------------------------------------------- C API

// An allocator that counts, and fails its `fail_at`-th request (1-based; 0: never).
struct TestAllocator {
  int allocs = 0, frees = 0, fail_at = 0;
  size_t last_alignment = 0;
  kiln_allocator_t c{this, &TestAllocator::alloc, &TestAllocator::release};
  static void* alloc(void* self, size_t bytes, size_t alignment) {
    auto* t = static_cast<TestAllocator*>(self);
    t->last_alignment = alignment;
    if (++t->allocs == t->fail_at) return nullptr;
    return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  }
  static void release(void* self, void* p) {
    ++static_cast<TestAllocator*>(self)->frees;
    std::free(p);
  }
};

// the status's code and message, then frees it
void expect_c_status(kiln_status_t s, int32_t code, const std::string& message) {
  ASSERT_NE(s, nullptr) << "expected " << message;
  EXPECT_EQ(kiln_status_code(s), code) << kiln_status_message(s);
  EXPECT_EQ(std::string(kiln_status_message(s)), message);
  kiln_status_free(s);
}

TEST(RuntimeCApi, ContextLifecycle) {
  kiln_context* ctx = reinterpret_cast<kiln_context*>(&ctx);  // overwritten: NULL or the context
  ASSERT_EQ(kiln_context_create(0, nullptr, &ctx), nullptr);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(kiln::from_c(ctx)->threads(), Context().threads());
  EXPECT_EQ(kiln_context_set_threads(ctx, 3), nullptr);
  EXPECT_EQ(kiln::from_c(ctx)->threads(), 3);
  EXPECT_EQ(kiln_context_set_threads(ctx, 0), nullptr);
  EXPECT_EQ(kiln::from_c(ctx)->threads(), Context().threads());
  EXPECT_EQ(kiln_context_set_threads(ctx, 100000), nullptr);
  EXPECT_EQ(kiln::from_c(ctx)->threads(), 256);
  expect_c_status(kiln_context_set_threads(ctx, -2), KILN_INVALID_ARGUMENT,
                  "kiln_context_set_threads: threads is -2 (0 for the hardware's concurrency, or 1..256)");
  EXPECT_EQ(kiln::from_c(ctx)->threads(), 256);
  kiln_context_destroy(ctx);
  kiln_context_destroy(nullptr);
  EXPECT_EQ(kiln::from_c(nullptr), nullptr);

  ASSERT_EQ(kiln_context_create(2, nullptr, &ctx), nullptr);
  EXPECT_EQ(kiln::from_c(ctx)->threads(), 2);
  Counts counts;
  kiln::from_c(ctx)->parallel_for(64, count_task, &counts);
  EXPECT_EQ(counts.calls.load(), 64);
  kiln_context_destroy(ctx);
}

TEST(RuntimeCApi, EveryBadCallSaysWhatIsWrong) {
  kiln_context* ctx = reinterpret_cast<kiln_context*>(&ctx);
  expect_c_status(kiln_context_create(-1, nullptr, &ctx), KILN_INVALID_ARGUMENT,
                  "kiln_context_create: threads is -1 (0 for the hardware's concurrency, or 1..256)");
  EXPECT_EQ(ctx, nullptr);
  expect_c_status(kiln_context_create(1, nullptr, nullptr), KILN_INVALID_ARGUMENT,
                  "kiln_context_create: no out-parameter for the context (NULL)");
  TestAllocator t;
  kiln_allocator_t no_free = t.c;
  no_free.free = nullptr;
  expect_c_status(kiln_context_create(1, &no_free, &ctx), KILN_INVALID_ARGUMENT,
                  "kiln_context_create: the allocator lacks its free function");
  kiln_allocator_t no_alloc = t.c;
  no_alloc.alloc = nullptr;
  expect_c_status(kiln_context_create(1, &no_alloc, &ctx), KILN_INVALID_ARGUMENT,
                  "kiln_context_create: the allocator lacks its alloc function");
  EXPECT_EQ(t.allocs, 0);
  expect_c_status(kiln_context_set_threads(nullptr, 2), KILN_INVALID_ARGUMENT,
                  "kiln_context_set_threads: no context (NULL)");
  expect_c_status(kiln_context_set_workspace(nullptr, nullptr, 0), KILN_INVALID_ARGUMENT,
                  "kiln_context_set_workspace: no context (NULL)");
  expect_c_status(kiln_context_set_parallel_for(nullptr, nullptr, nullptr), KILN_INVALID_ARGUMENT,
                  "kiln_context_set_parallel_for: no context (NULL)");
  ASSERT_EQ(kiln_context_create(1, nullptr, &ctx), nullptr);
  expect_c_status(kiln_context_set_workspace(ctx, nullptr, 8), KILN_INVALID_ARGUMENT,
                  "kiln_context_set_workspace: a NULL workspace of 8 bytes (NULL, 0 lets the context allocate)");
  kiln_context_destroy(ctx);
}

TEST(RuntimeCApi, WorkspaceAndHook) {
  kiln_context* ctx = nullptr;
  ASSERT_EQ(kiln_context_create(4, nullptr, &ctx), nullptr);
  alignas(64) static char buffer[128];
  EXPECT_EQ(kiln_context_set_workspace(ctx, buffer, sizeof buffer), nullptr);
  Status s;
  EXPECT_EQ(detail::workspace(kiln::from_c(ctx), 128, &s), buffer);
  EXPECT_EQ(detail::workspace(kiln::from_c(ctx), 129, &s), nullptr);
  EXPECT_EQ(s.code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(kiln_context_set_workspace(ctx, nullptr, 0), nullptr);
  EXPECT_NE(detail::workspace(kiln::from_c(ctx), 129, &s), nullptr);
  EXPECT_TRUE(s.ok());

  Hook hook;
  EXPECT_EQ(kiln_context_set_parallel_for(ctx, serial_hook, &hook), nullptr);
  KernelLog log;
  void* const bufs[] = {&log};
  ASSERT_TRUE(detail::run(kiln::from_c(ctx), logging_kernel, bufs, nullptr, true).ok());
  EXPECT_EQ(hook.calls, 1);
  EXPECT_EQ(log.calls.size(), 4u);
  EXPECT_EQ(kiln_context_set_parallel_for(ctx, nullptr, nullptr), nullptr);
  ASSERT_TRUE(detail::run(kiln::from_c(ctx), logging_kernel, bufs, nullptr, true).ok());
  EXPECT_EQ(hook.calls, 1);
  EXPECT_EQ(log.calls.size(), 8u);
  kiln_context_destroy(ctx);
}

TEST(RuntimeCApi, StatusesCarryACodeAndAMessage) {
  EXPECT_EQ(kiln_status_code(nullptr), KILN_OK);
  EXPECT_STREQ(kiln_status_message(nullptr), "");
  kiln_status_free(nullptr);
  EXPECT_EQ(detail::to_c(Status(), nullptr), nullptr);  // ok allocates nothing: NULL
  expect_c_status(detail::to_c(Status(StatusCode::OutOfRange, "f: dim 0 is 9"), nullptr), KILN_OUT_OF_RANGE,
                  "f: dim 0 is 9");
  const std::string long_message(3000, 'x');  // the heap keeps all of it
  expect_c_status(detail::to_c(Status(StatusCode::Internal, long_message), nullptr), KILN_INTERNAL, long_message);
  // with a context's allocator: from it, and back to it
  TestAllocator t;
  kiln_context* ctx = nullptr;
  ASSERT_EQ(kiln_context_create(1, &t.c, &ctx), nullptr);
  const int made = t.allocs;
  kiln_status_t s = detail::to_c(Status(StatusCode::InvalidArgument, "g: argument x: null data pointer"), ctx);
  EXPECT_EQ(t.allocs, made + 1);
  expect_c_status(s, KILN_INVALID_ARGUMENT, "g: argument x: null data pointer");
  EXPECT_EQ(t.frees, 1);
  // an allocator that gives nothing more: the code stands, the message says it was lost
  t.fail_at = t.allocs + 1;
  s = detail::to_c(Status(StatusCode::Unsupported, "h: no variant"), ctx);
  expect_c_status(s, KILN_UNSUPPORTED, "UNSUPPORTED (kiln: no memory was left for this status's message)");
  kiln_context_destroy(ctx);
  EXPECT_EQ(t.frees, t.allocs - 1);  // all but the request that failed
}

TEST(RuntimeCApi, AContextsMemoryComesFromItsAllocator) {
  TestAllocator t;
  kiln_context* ctx = nullptr;
  ASSERT_EQ(kiln_context_create(1, &t.c, &ctx), nullptr);
  EXPECT_EQ(t.allocs, 2);  // the context, its state
  Status s;
  void* p = detail::workspace(kiln::from_c(ctx), 1000, &s);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(t.allocs, 3);
  EXPECT_EQ(t.last_alignment, 64u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(detail::workspace(kiln::from_c(ctx), 500, &s), p);  // kept and reused
  EXPECT_EQ(t.allocs, 3);
  t.fail_at = 4;
  EXPECT_EQ(detail::workspace(kiln::from_c(ctx), 5000, &s), nullptr);
  EXPECT_EQ(s.code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(s.message(), "workspace: cannot allocate 5000 bytes");
  kiln_context_destroy(ctx);
  EXPECT_EQ(t.frees, 3);

  // kiln::Context takes one too; one that lacks a function is none (its blocks would go to the wrong free)
  {
    TestAllocator c;
    Context with(1, &c.c);
    EXPECT_TRUE(with.ok());
    EXPECT_NE(detail::workspace(&with, 100, &s), nullptr);
    EXPECT_EQ(c.allocs, KILN_HEAP ? 2 : 1);
    kiln_allocator_t half = c.c;
    half.free = nullptr;
    Context without(1, &half);
    EXPECT_NE(detail::workspace(&without, 100, &s), nullptr);
    EXPECT_EQ(c.allocs, KILN_HEAP ? 2 : 1);
  }

  // the allocator fails the context, then its state: a status, and nothing kept
  for (int fail = 1; fail <= 2; ++fail) {
    TestAllocator f;
    f.fail_at = fail;
    ctx = reinterpret_cast<kiln_context*>(&ctx);
    kiln_status_t st = kiln_context_create(1, &f.c, &ctx);
    EXPECT_EQ(ctx, nullptr);
    ASSERT_EQ(kiln_status_code(st), KILN_RESOURCE_EXHAUSTED);
    const std::string message = kiln_status_message(st);
    if (fail == 1) {  // "(<bytes> bytes)": the size of the runtime's kiln_context
      const std::string head = "kiln_context_create: the allocator gave no memory for the context (";
      EXPECT_EQ(message.substr(0, head.size()), head) << message;
      EXPECT_EQ(message.substr(message.size() - 7), " bytes)") << message;
    } else {
      EXPECT_EQ(message, "kiln_context_create: the allocator gave no memory for the context's state");
    }
    kiln_status_free(st);
    EXPECT_EQ(f.frees, f.allocs - 1);
  }
}

TEST(RuntimeCApi, AnotherAbiIsRefusedNamingBothVersions) {
  EXPECT_EQ(kiln_abi_version(), KILN_ABI_VERSION);
  EXPECT_EQ(kiln_abi_check(KILN_ABI_VERSION, "nn"), nullptr);
  expect_c_status(kiln_abi_check(KILN_ABI_VERSION + 1, "nn"), KILN_UNSUPPORTED,
                  "nn: generated for kiln ABI 2, but this runtime speaks ABI 1 (generate it again with the kiln of "
                  "this runtime)");
  expect_c_status(kiln_abi_check(0, nullptr), KILN_UNSUPPORTED,
                  "a kiln library: generated for kiln ABI 0, but this runtime speaks ABI 1 (generate it again with "
                  "the kiln of this runtime)");
  EXPECT_TRUE(detail::abi_check(KILN_ABI_VERSION, "nn").ok());
  EXPECT_EQ(detail::abi_check(7, "nn").code(), StatusCode::Unsupported);
}

TEST(RuntimeCApi, TheCEntryPointsOwnChecks) {
  Status s = detail::no_context("gemm");
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "gemm: no context (a C call needs one: kiln_context_create)");
  s = detail::null_tensor("gemm", "b");
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "gemm: argument b: null kiln_tensor");
  // a C caller's descriptor goes through as it is, its writable flag included
  const float data[4] = {};
  kiln_tensor t = TensorView(data, {2, 2}).t;
  TensorView v(t);
  EXPECT_EQ(v.data(), data);
  EXPECT_EQ(v.rank(), 2);
  EXPECT_FALSE(v.writable());
  t.writable = 1;
  EXPECT_TRUE(TensorView(t).writable());
}

}  // namespace
