// What each function of an ELF or WebAssembly object (or of an ar archive of them) costs in the
// binary: its code bytes (the symbol's st_size; a wasm function's body) and the data it reads (the constants its code's
// relocations point at). kiln gen measures the objects it makes; `kiln size` measures the objects a compiler made from
// a C target's kernels, or the library archive a build linked.
//
// The rule for data: a relocation inside a function's code that points into an allocated section
// that is not code (constant pools, .rodata; not unwind tables) makes the function use one
// constant there: in a mergeable constant section (.rodata.cstN) the N-byte entry it points into,
// elsewhere the bytes from the symbol it names to that symbol's end (st_size), or when it has none,
// to the next symbol or reference in the section. A constant several functions share (GCC shares
// them within a file; LLVM gives each function its own pool) is counted for each of them, and once
// in a total over them (data_bytes of the union).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace kiln::target {

// A file that is not an ELF object or an archive of them, or one that is corrupt. The message
// names the file (and the archive member).
class ObjectError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// the most bytes of an object or archive kiln measures: a library's archive with debug info outgrows a
// spec's 16 MiB
inline constexpr size_t kMaxObjectBytes = size_t(1) << 30;

struct FunctionSize {
  uint64_t code = 0;
  // the constants it reads: where each lies (file, member, section, offset) -> its bytes
  std::map<std::string, uint64_t> data;
};

// Every defined function symbol of the object or archive `bytes` (named `name` in messages), by
// its name; a name defined twice keeps the first.
std::map<std::string, FunctionSize> measure_functions(const std::string& bytes, const std::string& name);

// the bytes of the constants in `data`, each counted once
uint64_t data_bytes(const std::map<std::string, uint64_t>& data);

}  // namespace kiln::target
