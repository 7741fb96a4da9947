#include "tests/unit/guard_pages.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace kiln::guard {

namespace {

// The live buffers, for the fault handler to name the one a faulting address is next to. Slots are
// claimed with a compare-exchange on `guard`; the handler only reads (async-signal-safe).
struct Slot {
  std::atomic<uintptr_t> guard{0};  // the guard page's first byte; 0: a free slot
  std::atomic<uintptr_t> data{0};
  std::atomic<size_t> bytes{0};
  std::atomic<int> side{0};
};
constexpr int kSlots = 4096;
Slot g_slots[kSlots];

std::atomic<int64_t> g_runs[2];
std::atomic<bool> g_expected{false};
int g_log_fd = -1;
struct sigaction g_old_segv, g_old_bus;
size_t g_page = 0;

// ---------------------------------------------------------------- the fault handler (signal-safe)

void put(char*& p, const char* s) {
  while (*s) *p++ = *s++;
}

void put_num(char*& p, uint64_t v, int base) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v % uint64_t(base)];
    v /= uint64_t(base);
  } while (v);
  if (base == 16) put(p, "0x");
  while (n) *p++ = tmp[--n];
}

void on_fault(int sig, siginfo_t* info, void*) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  char msg[512], *p = msg;
  put(p, sig == SIGBUS ? "kiln guard pages: SIGBUS at " : "kiln guard pages: SIGSEGV at ");
  put_num(p, addr, 16);
  bool named = false;
  for (const Slot& s : g_slots) {
    uintptr_t g = s.guard.load(std::memory_order_relaxed);
    if (!g || addr < g || addr >= g + g_page) continue;
    uintptr_t data = s.data.load(std::memory_order_relaxed);
    size_t bytes = s.bytes.load(std::memory_order_relaxed);
    bool after = s.side.load(std::memory_order_relaxed) == int(Side::After);
    put(p, ", ");
    put_num(p, after ? addr - (data + bytes) : data - addr, 10);
    put(p, after ? " bytes past the end of the " : " bytes before the start of the ");
    put_num(p, bytes, 10);
    put(p, "-byte buffer at ");
    put_num(p, data, 16);
    put(p, after ? " (guard page after its end)" : " (guard page before its start)");
    named = true;
    break;
  }
  if (!named) put(p, " (on no guard page of a live buffer)");
  put(p, "\n");
  ssize_t ignored = write(2, msg, size_t(p - msg));
  if (g_log_fd >= 0) {
    char line[64], *q = line;
    put(q, g_expected.load() ? "expected-fault " : "fault ");
    put_num(q, addr, 16);
    put(q, "\n");
    ignored = write(g_log_fd, line, size_t(q - line));
  }
  (void)ignored;
  // Back to what handled the signal before (ASan's report, or the default: death); returning
  // re-runs the access, which faults again.
  sigaction(sig, sig == SIGBUS ? &g_old_bus : &g_old_segv, nullptr);
}

void install() {
  g_page = size_t(sysconf(_SC_PAGESIZE));
  if (const char* log = std::getenv("KILN_GUARD_LOG"); log && *log)
    g_log_fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_old_segv);
  sigaction(SIGBUS, &sa, &g_old_bus);
}

std::once_flag g_installed;

// ---------------------------------------------------------------- the report at the end

class Report : public ::testing::Environment {
 public:
  void TearDown() override {
    Counts c = counts();
    if (c.after + c.before == 0) return;
    std::printf("kiln guard pages: %lld kernel runs (after: %lld, before: %lld), 0 faults\n",
                static_cast<long long>(c.after + c.before), static_cast<long long>(c.after),
                static_cast<long long>(c.before));
    if (g_log_fd < 0) return;
    std::string line = "runs " + std::to_string(c.after) + " " + std::to_string(c.before) + "\n";
    ssize_t ignored = write(g_log_fd, line.data(), line.size());
    (void)ignored;
  }
};

[[maybe_unused]] ::testing::Environment* const g_report = ::testing::AddGlobalTestEnvironment(new Report);

}  // namespace

const char* side_name(Side s) { return s == Side::After ? "after" : "before"; }

Pages::Pages(size_t bytes, Side side, size_t align) : bytes_(bytes), side_(side) {
  std::call_once(g_installed, install);
  if (align == 0 || (align & (align - 1)) != 0) throw std::invalid_argument("guard::Pages: alignment not a power of 2");
  size_t pages = (std::max<size_t>(bytes, 1) + g_page - 1) / g_page;
  map_bytes_ = (pages + 1) * g_page;
  void* m = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  map_ = static_cast<std::byte*>(m);
  std::byte* guard = side == Side::After ? map_ + pages * g_page : map_;
  if (mprotect(guard, g_page, PROT_NONE) != 0) {
    munmap(map_, map_bytes_);
    throw std::runtime_error("guard::Pages: mprotect failed");
  }
  std::byte* open = side == Side::After ? map_ : map_ + g_page;
  std::memset(open, 0xA5, pages * g_page);  // what an under-read or over-read that misses the guard sees
  data_ = side == Side::After ? reinterpret_cast<std::byte*>((uintptr_t(guard) - bytes) & ~uintptr_t(align - 1))
                              : guard + g_page;
  for (int i = 0; i < kSlots; ++i) {
    uintptr_t free_slot = 0;
    if (!g_slots[i].guard.compare_exchange_strong(free_slot, uintptr_t(guard))) continue;
    g_slots[i].data = uintptr_t(data_);
    g_slots[i].bytes = bytes;
    g_slots[i].side = int(side);
    slot_ = i;
    break;
  }
}

Pages::Pages(Pages&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)),
      map_bytes_(std::exchange(other.map_bytes_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      side_(other.side_),
      slot_(std::exchange(other.slot_, -1)) {}

Pages& Pages::operator=(Pages&& other) noexcept {
  if (this == &other) return *this;
  release();
  map_ = std::exchange(other.map_, nullptr);
  map_bytes_ = std::exchange(other.map_bytes_, 0);
  data_ = std::exchange(other.data_, nullptr);
  bytes_ = std::exchange(other.bytes_, 0);
  side_ = other.side_;
  slot_ = std::exchange(other.slot_, -1);
  return *this;
}

Pages::~Pages() { release(); }

void Pages::release() {
  if (slot_ >= 0) g_slots[slot_].guard = 0;
  slot_ = -1;
  if (map_) munmap(map_, map_bytes_);
  map_ = nullptr;
}

void count_run(Side side) { ++g_runs[int(side)]; }

Counts counts() { return {g_runs[int(Side::After)].load(), g_runs[int(Side::Before)].load()}; }

void expect_fault() { g_expected = true; }

}  // namespace kiln::guard
