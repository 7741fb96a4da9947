// The spec front end as `kiln check` runs it: lex, parse, check, lower, schedule (one spec's text).
#include <cstddef>
#include <cstdint>
#include <string>

#include "generator/tools/commands.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  kiln::fuzz::run_as_cli([&] {
    kiln::fuzz::Quiet quiet;
    int64_t proven = 0, unproven = 0;
    bool ok = kiln::cli::check_source("fuzz.kiln", std::move(text), false, proven, unproven);
    if (!ok && quiet.err_bytes() == 0) kiln::fuzz::finding("kiln check failed without a message");
  });
  return 0;
}
