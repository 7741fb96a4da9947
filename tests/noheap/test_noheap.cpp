// The runtime built without the heap (-DKILN_NO_HEAP: KILN_HEAP 0, as on Cortex-M), on the host,
// compiled together with this file: a Status keeps its message inside it, cut to fit, with the
// same text as a heap build's; a Context is made, used and destroyed, and a failing check or
// workspace reports its status, without one allocation. The count replaces the global operator
// new (the way std::string and std::make_unique reach the heap) and is shown to see the runtime's
// one allocation, the block of a workspace without a context. The C API's statuses are slots of
// the runtime's (or a context allocator's), never the heap's.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "kiln/kiln.h"
#include "kiln/kiln_c.h"

static_assert(!KILN_HEAP, "this test is compiled with -DKILN_NO_HEAP");

// ---------------------------------------------------------------- the count

static size_t news = 0;  // one thread: no threads without the heap

// Sizes past this fail as if the heap were full (an allocation that large would fail anyway, and
// a sanitizer would stop the test at it).
static constexpr size_t kTooBig = size_t(1) << 40;

void* operator new(size_t n) {
  ++news;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  ++news;
  return std::malloc(n ? n : 1);
}
void* operator new(size_t n, std::align_val_t a) {
  if (void* p = operator new(n, a, std::nothrow)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  ++news;
  const size_t align = static_cast<size_t>(a);
  if (n >= kTooBig) return nullptr;
  return std::aligned_alloc(align, (n + align - 1) / align * align);
}
// the matching deletes: what the replacements above return, free() takes. (GCC, once it inlines
// them into a `new T` elsewhere, sees free() of what it takes for the library's operator new and
// warns; here both are ours.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

using kiln::Context;
using kiln::DType;
using kiln::Status;
using kiln::StatusCode;
using kiln::TensorView;
namespace detail = kiln::detail;

// ---------------------------------------------------------------- Status

static_assert(std::is_same_v<decltype(Status().message()), kiln::StatusMessage>);
static_assert(std::is_convertible_v<kiln::StatusMessage, std::string_view>);
static_assert(std::is_nothrow_default_constructible_v<Status>);
static_assert(std::is_nothrow_copy_constructible_v<Status> && std::is_nothrow_move_assignable_v<Status>);
static_assert(sizeof(Status) <= Status::kMessageBytes + 8);

TEST(NoHeapStatus, OkAndEveryCode) {
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(ok.message().empty());
  EXPECT_STREQ(ok.message().c_str(), "");
  EXPECT_EQ(Status(StatusCode::Ok, "ignored").message(), "");
  EXPECT_EQ(Status(StatusCode::Internal, static_cast<const char*>(nullptr)).message(), "");
  for (StatusCode code : {StatusCode::InvalidArgument, StatusCode::OutOfRange, StatusCode::Unsupported,
                          StatusCode::ResourceExhausted, StatusCode::Internal}) {
    const Status s(code, "what");
    EXPECT_EQ(s.code(), code);
    EXPECT_EQ(s.message(), "what");
    EXPECT_EQ(s.message().size(), 4u);
    EXPECT_STREQ(s.message().c_str(), "what");
    EXPECT_EQ(s.message().data(), s.message().c_str());
    EXPECT_EQ(std::string(s.message()), "what");
    std::ostringstream os;
    os << s.message() << '.';
    EXPECT_EQ(os.str(), "what.");
  }
  EXPECT_EQ(Status(StatusCode::Internal, std::string_view("abc", 2)).message(), "ab");
  EXPECT_STREQ(Status(StatusCode::Internal, std::string_view("abc", 2)).message().c_str(), "ab");
  EXPECT_EQ(Status(StatusCode::Internal, std::string("from a std::string")).message(), "from a std::string");
}

TEST(NoHeapStatus, CopyAndMove) {
  Status a(StatusCode::OutOfRange, "k: too big");
  Status b = a;
  EXPECT_EQ(b.code(), StatusCode::OutOfRange);
  EXPECT_EQ(b.message(), "k: too big");
  EXPECT_NE(a.message().data(), b.message().data());
  Status c(StatusCode::Internal, "a longer message, to be overwritten");
  c = a;
  EXPECT_EQ(c.message(), "k: too big");
  Status& same = c;
  c = same;  // self-assignment keeps the message
  EXPECT_EQ(c.message(), "k: too big");
  Status d = std::move(a);
  EXPECT_EQ(d.message(), "k: too big");
  EXPECT_TRUE(a.ok());  // NOLINT(bugprone-use-after-move): moved-from is ok
  EXPECT_EQ(a.message(), "");
  Status e(StatusCode::Internal, "x");
  e = std::move(d);
  EXPECT_EQ(e.code(), StatusCode::OutOfRange);
  EXPECT_EQ(e.message(), "k: too big");
  EXPECT_TRUE(d.ok());  // NOLINT(bugprone-use-after-move)
}

// A message up to kMessageBytes - 1 bytes is kept whole; a longer one is cut to that, ending "...".
TEST(NoHeapStatus, LongMessagesAreCutVisibly) {
  const size_t fits = Status::kMessageBytes - 1;
  const std::string whole(fits, 'a');
  EXPECT_EQ(Status(StatusCode::Internal, whole).message(), whole);
  for (size_t n : {fits + 1, fits + 2, size_t(1000)}) {
    const std::string text(n, 'b');
    const Status s(StatusCode::Internal, text);
    EXPECT_EQ(s.message().size(), fits);
    EXPECT_EQ(s.message(), text.substr(0, fits - 3) + "...");
    EXPECT_EQ(std::string(s.message().c_str()).size(), fits);  // NUL-terminated where it ends
  }
  // the runtime's own messages are cut the same way
  const std::string name(200, 'k');
  const Status s = detail::workspace_overflow(name.c_str());
  EXPECT_EQ(s.code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(s.message(), name.substr(0, fits - 3) + "...");
  const std::string kernel(140, 'k');  // 176 bytes of message
  EXPECT_EQ(detail::check_extent(kernel.c_str(), "x", 1, 7, 8).message(),
            std::string(kernel + ": argument x: dim 1 is 7, expected 8").substr(0, fits - 3) + "...");
}

// ---------------------------------------------------------------- the messages, as a heap build's

TEST(NoHeapChecks, MessagesAsInHeapBuilds) {
  float data[6] = {};
  const float* cdata = data;
  const auto expect = [](const Status& s, StatusCode code, const char* message) {
    EXPECT_EQ(s.code(), code);
    EXPECT_EQ(s.message(), message);
  };
  const StatusCode bad = StatusCode::InvalidArgument;
  expect(
      detail::check_tensor("matmul", "a", TensorView(static_cast<float*>(nullptr), {2, 3}), DType::Float32, 2, false),
      bad, "matmul: argument a: null data pointer");
  expect(detail::check_tensor("matmul", "a", TensorView(data, {1, 1, 1, 1, 1, 1, 1, 1, 1}), DType::Float32, 2, false),
         bad, "matmul: argument a: more than 8 dims");
  expect(detail::check_tensor("matmul", "b", TensorView(data, {6}), DType::Float32, 2, false), bad,
         "matmul: argument b: expected rank 2, got rank 1");
  expect(detail::check_tensor("matmul", "b", TensorView(reinterpret_cast<int32_t*>(data), {2, 3}), DType::Float32, 2,
                              false),
         bad, "matmul: argument b: expected dtype f32, got i32");
  expect(detail::check_tensor("matmul", "out", TensorView(cdata, {2, 3}), DType::Float32, 2, true), bad,
         "matmul: argument out: output is a view of const data");
  expect(detail::check_tensor("matmul", "out", TensorView(data, {2, -3}), DType::Float32, 2, true), bad,
         "matmul: argument out: dim 1 is negative (-3)");
  expect(detail::check_extent("softmax", "y", 1, 7, 8), bad, "softmax: argument y: dim 1 is 7, expected 8");
  expect(detail::check_extent("k", "x", 7, INT64_MIN, INT64_MAX), bad,
         "k: argument x: dim 7 is -9223372036854775808, expected 9223372036854775807");
  int64_t n = -1;
  const char* by_arg = nullptr;
  int32_t by_axis = -1;
  expect(detail::bind_dim("matmul", "a", 0, "M", 5000, 1, 4096, &n, &by_arg, &by_axis), StatusCode::OutOfRange,
         "matmul: argument a: dim 0 (M) is 5000, outside the declared range 1..4096");
  EXPECT_TRUE(detail::bind_dim("matmul", "a", 1, "K", 64, 1, 4096, &n, &by_arg, &by_axis).ok());
  expect(detail::bind_dim("matmul", "b", 0, "K", 63, 1, 4096, &n, &by_arg, &by_axis), bad,
         "matmul: argument b: dim 0 (K) is 63, but argument a dim 1 set K = 64");
  expect(detail::bind_dim("matmul", "b", 0, "K", 63, 1, 4096, &n, nullptr, nullptr), bad,
         "matmul: argument b: dim 0 (K) is 63, but K = 64");
  expect(detail::bind_dim("k", "x", 0, "N", 9, 1, 64, nullptr, nullptr, nullptr), StatusCode::Internal,
         "k: argument x: bind_dim without a value to bind");
  expect(detail::check_extent(nullptr, nullptr, 0, 1, 2), bad, "(null): argument (null): dim 0 is 1, expected 2");
  expect(detail::overlap_error("gemm", "c", "a", false), bad,
         "gemm: argument c: output overlaps input a in memory (a kernel reads and writes its arguments as if they "
         "were apart)");
  expect(detail::overlap_error("pair", "q", "p", true), bad,
         "pair: argument q: output overlaps output p in memory (a kernel reads and writes its arguments as if they "
         "were apart)");
  expect(detail::workspace_overflow("wide"), StatusCode::ResourceExhausted,
         "wide: workspace: the bytes these dims need are too many to count in an int64_t or a size_t");
  expect(detail::run(nullptr, nullptr, nullptr, nullptr, false), StatusCode::Internal, "run: null kernel function");
}

// ---------------------------------------------------------------- nothing allocates

void add_one(void* arg, int32_t i) { static_cast<std::atomic<int>*>(arg)->fetch_add(i + 1); }

TEST(NoHeapContext, NothingAllocates) {
  // the count sees the runtime's one allocation: a workspace without a context takes a block
  size_t before = news;
  Status s;
  void* own = detail::workspace(nullptr, 100, &s);
  ASSERT_TRUE(s.ok());
  ASSERT_NE(own, nullptr);
  ASSERT_EQ(news, before + 1) << "the count does not see the runtime's allocations";

  float data[6] = {};
  alignas(64) static unsigned char buffer[256];
  std::atomic<int> sum{0};
  int64_t n = -1;
  before = news;
  {
    Context ctx(4);  // no threads without the heap: one
    ctx.set_workspace(buffer, sizeof buffer);
    ctx.parallel_for(8, add_one, &sum);
    void* given = detail::workspace(&ctx, 256, &s);
    Status too_big;
    void* none = detail::workspace(&ctx, 257, &too_big);
    Status bad_rank = detail::check_tensor("k", "x", TensorView(data, {6}), DType::Float32, 2, false);
    Status range = detail::bind_dim("k", "x", 0, "M", 0, 1, 8, &n, nullptr, nullptr);
    Status copy = bad_rank;
    Status moved = std::move(range);
    copy = moved;
    const size_t during = news;
    EXPECT_EQ(ctx.threads(), 1);
    EXPECT_EQ(given, static_cast<void*>(buffer));
    EXPECT_TRUE(s.ok());
    EXPECT_EQ(none, nullptr);
    EXPECT_EQ(too_big.message(), "workspace: the call needs 257 bytes, the context's workspace has 256");
    EXPECT_EQ(bad_rank.message(), "k: argument x: expected rank 2, got rank 1");
    EXPECT_EQ(copy.message(), "k: argument x: dim 0 (M) is 0, outside the declared range 1..8");
    EXPECT_EQ(during, before);
    before = news;
  }
  EXPECT_EQ(news, before);  // nor does destroying the Context
  EXPECT_EQ(sum, 36);

  // the block the count saw, failing to grow: its message, still without an allocation of its own
  before = news;
  EXPECT_EQ(detail::workspace(nullptr, kTooBig, &s), nullptr);
  EXPECT_EQ(news, before + 1);  // the attempt, refused
  EXPECT_EQ(s.code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(s.message(), "workspace: cannot allocate " + std::to_string(kTooBig) + " bytes");
}

// ---------------------------------------------------------------- the C API without the heap

// A C status made without an allocator takes one of the runtime's slots, its message cut as a
// Status's; with all of them taken, the fixed status of its code; freeing one gives its slot back.
TEST(NoHeapCApi, StatusesAreSlotsNotTheHeap) {
  const size_t before = news;
  kiln_status_t taken[8];
  for (kiln_status_t& t : taken) t = kiln_abi_check(KILN_ABI_VERSION + 1, "nn");
  EXPECT_EQ(news, before);
  const std::string message =
      "nn: generated for kiln ABI 2, but this runtime speaks ABI 1 (generate it again with the kiln of this runtime)";
  int slots = 0;
  for (kiln_status_t t : taken) {
    EXPECT_EQ(kiln_status_code(t), KILN_UNSUPPORTED);
    if (kiln_status_message(t) == message) ++slots;
  }
  EXPECT_GE(slots, 1);
  EXPECT_LT(slots, 8);  // the slots ran out: the rest keep the code
  EXPECT_STREQ(kiln_status_message(taken[7]), "UNSUPPORTED (kiln: no memory was left for this status's message)");
  for (kiln_status_t t : taken) kiln_status_free(t);
  const std::string long_text(400, 'x'), cut = std::string(Status::kMessageBytes - 4, 'x') + "...";
  const size_t freed = news;
  kiln_status_t again = detail::to_c(Status(StatusCode::Internal, long_text), nullptr);
  EXPECT_EQ(news, freed);
  EXPECT_EQ(kiln_status_code(again), KILN_INTERNAL);  // a slot again, its message cut
  EXPECT_EQ(kiln_status_message(again), cut);
  kiln_status_free(again);
}

// Through the C API with an allocator of the caller's memory: the context and its workspace come
// from there, and the heap is never asked.
TEST(NoHeapCApi, AContextFromTheCallersMemory) {
  struct Arena {
    alignas(64) unsigned char bytes[8192];
    size_t used = 0;
    int frees = 0;
    static void* alloc(void* self, size_t n, size_t align) {
      Arena* a = static_cast<Arena*>(self);
      const size_t at = (a->used + align - 1) / align * align;
      if (at + n > sizeof a->bytes) return nullptr;
      a->used = at + n;
      return a->bytes + at;
    }
    static void release(void* self, void*) { ++static_cast<Arena*>(self)->frees; }
  };
  static Arena arena;
  const kiln_allocator_t allocator{&arena, &Arena::alloc, &Arena::release};
  const size_t before = news;
  kiln_context* ctx = nullptr;
  ASSERT_EQ(kiln_context_create(4, &allocator, &ctx), nullptr);
  EXPECT_GT(arena.used, 0u);
  Status s;
  void* ws = detail::workspace(kiln::from_c(ctx), 1000, &s);
  EXPECT_TRUE(s.ok());
  EXPECT_GE(static_cast<unsigned char*>(ws), arena.bytes);
  EXPECT_LT(static_cast<unsigned char*>(ws), arena.bytes + sizeof arena.bytes);
  kiln_status_t st = kiln_context_set_threads(ctx, -1);
  EXPECT_STREQ(kiln_status_message(st),
               "kiln_context_set_threads: threads is -1 (0 for the hardware's concurrency, or 1..256)");
  kiln_status_free(st);
  kiln_context_destroy(ctx);
  EXPECT_EQ(arena.frees, 3);  // the status, the workspace, the context
  EXPECT_EQ(news, before);
}

}  // namespace
