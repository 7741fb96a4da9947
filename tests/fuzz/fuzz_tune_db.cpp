// kiln tune's database as `kiln gen --tune-db` and `kiln tune --db` read it; what it reads, printed,
// must read back as the same entries.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "generator/emit/tune_db.h"
#include "tests/fuzz/fuzz.h"

static std::string entry_text(const kiln::emit::TuneEntry& e) {
  return e.hash + " " + e.target + " " + e.variant + " " + e.kernel + " " + kiln::emit::tune_opts_text(e.opts) + " " +
         std::to_string(e.opts.reduce_block);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  kiln::fuzz::run_as_cli([&] {
    std::vector<kiln::emit::TuneEntry> db;
    std::string err;
    if (!kiln::emit::parse_tune_db(text, "fuzz.tunedb", db, err)) {
      if (err.rfind("fuzz.tunedb:", 0) != 0 || err.find(": error: ") == std::string::npos || err.back() != '\n')
        kiln::fuzz::finding("a database error not as file:line:col: error: ...: " + err);
      return;
    }
    std::string printed = kiln::emit::print_tune_db(db);
    std::vector<kiln::emit::TuneEntry> again;
    if (!kiln::emit::parse_tune_db(printed, "printed.tunedb", again, err))
      kiln::fuzz::finding("the printed database does not read back: " + err + printed);
    if (again.size() != db.size()) kiln::fuzz::finding("the printed database has another entry count:\n" + printed);
    for (const kiln::emit::TuneEntry& e : db) {
      const kiln::emit::TuneEntry* f = kiln::emit::find_tune_entry(again, e.hash, e.target, e.variant);
      if (!f || entry_text(*f) != entry_text(e))
        kiln::fuzz::finding("the entry '" + entry_text(e) + "' reads back as '" + (f ? entry_text(*f) : "none") + "'");
    }
  });
  return 0;
}
