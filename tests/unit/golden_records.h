// Reader for the golden record files of tests/golden/ (format: tests/golden/tinygrad/README.md)
// and for the known-failures list that goes with them.
//
// A record is a block of `key: value` lines that starts with `# <id>`; blank lines separate
// records. A known-failures file lists `<id> | <CLASS> | <reason>` lines, grouped under
// `## <golden file>` section lines; `#` lines are comments.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::golden {

struct Record {
  std::string id;  // the header without "# ", e.g. "test/null/test_x.py::TestA::test_b #2"
  int line = 0;    // 1-based line of the header in its file
  std::vector<std::pair<std::string, std::string>> fields;  // in file order

  const std::string* get(std::string_view key) const;  // nullptr when absent
  std::string value(std::string_view key) const;       // "" when absent
  bool has(std::string_view key) const { return get(key) != nullptr; }
};

// Reads every record of `path` (or of `text`). On malformed input returns what it read and
// fills `error`.
std::vector<Record> read_records(const std::string& path, std::string* error = nullptr);
std::vector<Record> parse_records(std::string_view text, const std::string& where, std::string* error = nullptr);

// Splits an `args:` value into top-level operands: whole s-expressions and bare atoms.
std::vector<std::string> split_operands(std::string_view s);

// Splits on `sep` and trims spaces around each part; empty parts are dropped.
std::vector<std::string> split_trimmed(std::string_view s, char sep);

struct KnownFailure {
  std::string id, cls, reason;
};

// Known failures by section (the golden file name, e.g. "symbolic.txt"), each in file order.
struct KnownFailures {
  std::vector<std::string> header;  // leading comment lines, kept when the file is rewritten
  std::map<std::string, std::vector<KnownFailure>> sections;

  const KnownFailure* find(const std::string& section, const std::string& id) const;
};

// A missing file reads as an empty list.
KnownFailures read_known_failures(const std::string& path, std::string* error = nullptr);
// Writes sections in the order of `section_order` (others after them, by name).
bool write_known_failures(const std::string& path, const KnownFailures& kf,
                          const std::vector<std::string>& section_order);

}  // namespace kiln::golden
