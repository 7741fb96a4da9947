// The IR's text parser and the symbolic rules as `kiln simplify` runs them: one s-expression a line.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "generator/tools/commands.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  kiln::fuzz::run_as_cli([&] {
    kiln::fuzz::Quiet quiet;
    int rc = kiln::cli::run_simplify(in, "", false);
    // 70: a rewrite that did not terminate, on input a user may write
    if (rc == 70) kiln::fuzz::finding("kiln simplify: an internal error");
    if (rc != 0 && quiet.err_bytes() == 0) kiln::fuzz::finding("kiln simplify failed without a message");
  });
  return 0;
}
