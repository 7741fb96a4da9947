// The native runner (tests only, never shipped): compiles generated C kernels with the system C
// compiler into a shared object (or links an object kiln compiled with LLVM into one), loads it, and runs a whole
// schedule natively, laid out exactly as the kernel-AST interpreter lays it out (inputs and outputs in their own
// memory, every intermediate at its planned offset in one poisoned 64-byte aligned arena). Its outputs are comparable
// with interp::run_schedule's, value for value.
//
// The kernel ABI (C99): every kernel is one function of the translation unit,
//   void <kernel name>(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores);
// bufs[i] is the buffer of PARAM slot i (Kernel::buffers[i]); vars[j] is the value of
// Schedule::vars[j], the same array for every kernel of the schedule.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "generator/schedule/schedule.h"
#include "tests/unit/guard_pages.h"
#include "tests/unit/kernel_interp.h"

namespace kiln::crun {

// The C compiler rejected the source (the message has its command and output), or the shared
// object would not load.
struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One C translation unit compiled into a loaded shared object, in a temporary directory that
// lives as long as the Library.
class Library {
 public:
  using KernelFn = void (*)(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores);

  // Compiles with `$CC` (else `cc`) -std=c99 -O2 -fPIC -shared ... -lm, plus `extra_flags`, and
  // with ASan and UBSan where the tests are built with them (KILN_SANITIZE).
  static Library compile(const std::string& c_source, const std::vector<std::string>& extra_flags = {});
  // Links an object file's bytes (an LLVM-compiled module) with `$CC` (else `cc`) -shared ... -lm.
  static Library link_object(const std::string& object);

  Library(Library&& other) noexcept;
  Library& operator=(Library&& other) noexcept;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library();

  KernelFn get(const std::string& name) const;                     // throws std::runtime_error for a missing symbol
  const std::string& source_path() const { return source_path_; }  // the C, or the object

 private:
  Library() = default;
  void release();

  std::string dir_;
  std::string source_path_;
  void* handle_ = nullptr;
};

// Runs every kernel of `s` in order with the kernels of `lib`, as interp::run_schedule does: inputs
// by input position, outputs by output position, outputs and the workspace poisoned first. It runs
// once per side in `sides`, every buffer against a guard page there (an access outside a buffer
// faults), and throws std::runtime_error if two runs' outputs differ in a bit. With no sides, once
// in the interpreter's memory (intermediates in the arena), the plan unchecked: what a bad plan does.
std::vector<interp::Output> run_schedule(const schedule::Schedule& s, const Library& lib, const interp::Vars& vars,
                                         const std::vector<std::vector<double>>& inputs,
                                         std::span<const guard::Side> sides = guard::kSides);

}  // namespace kiln::crun
