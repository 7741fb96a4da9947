// Guard pages (tests only, never shipped): memory for the buffers the tests hand to native kernels,
// each flush against a PROT_NONE page, after its end (Side::After) or before its start
// (Side::Before), so a kernel that reads or writes one element outside a buffer faults instead of
// reading or writing whatever lies there. A fault is loud: the handler names the address, the buffer
// and the side, then lets the signal kill the process (or ASan report it) as it would have.
//
// Alignment: a buffer is aligned to `align` (its element size, what the C and LLVM kernels assume:
// their vector loads and stores are memcpy / `align <element>`). After its end, the start is the
// guard page minus the byte count, rounded down to `align` (flush whenever bytes % align == 0,
// which an array of elements always is); before its start, the buffer starts on a page boundary.
//
// Each test binary that uses them counts the kernel runs made under guard pages and prints, at the
// end, "kiln guard pages: N kernel runs (after: X, before: Y), 0 faults"; with KILN_GUARD_LOG set
// (ctest sets it) it appends its counts and any fault to that file, which the guard_pages test sums
// over the whole ctest run (tests/unit/guard_summary.sh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::guard {

enum class Side : uint8_t { After, Before };  // where the PROT_NONE page is: after the end, before the start
inline constexpr Side kSides[] = {Side::After, Side::Before};
const char* side_name(Side s);  // "after", "before"

// `bytes` bytes (at least one page mapped, poisoned with 0xA5) flush against a PROT_NONE page.
class Pages {
 public:
  Pages(size_t bytes, Side side, size_t align = 1);
  Pages(Pages&& other) noexcept;
  Pages& operator=(Pages&& other) noexcept;
  Pages(const Pages&) = delete;
  Pages& operator=(const Pages&) = delete;
  ~Pages();

  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }
  Side side() const { return side_; }

 private:
  void release();

  std::byte* map_ = nullptr;  // the whole mapping, guard page included
  size_t map_bytes_ = 0;
  std::byte* data_ = nullptr;
  size_t bytes_ = 0;
  Side side_ = Side::After;
  int slot_ = -1;  // in the fault handler's table of live buffers
};

// `n` T's under a guard page, for the tests that call kernels through their entry points.
template <class T> class Array {
 public:
  Array(size_t n, Side side, T fill = T()) : pages_(n * sizeof(T), side, alignof(T)), n_(n) {
    for (size_t i = 0; i < n; ++i) data()[i] = fill;
  }
  Array(const std::vector<T>& values, Side side) : Array(values.size(), side) {
    for (size_t i = 0; i < n_; ++i) data()[i] = values[i];
  }
  T* data() const { return reinterpret_cast<T*>(pages_.data()); }
  size_t size() const { return n_; }
  T& operator[](size_t i) const { return data()[i]; }
  T* begin() const { return data(); }
  T* end() const { return data() + n_; }
  std::vector<T> vector() const { return std::vector<T>(begin(), end()); }

 private:
  Pages pages_;
  size_t n_;
};

// One run of a kernel (or of an entry point) on buffers under guard pages on `side`.
void count_run(Side side);
struct Counts {
  int64_t after = 0, before = 0;
};
Counts counts();

// The next fault is one a death test provokes: reported as usual, not logged as a fault of the run.
void expect_fault();

}  // namespace kiln::guard
