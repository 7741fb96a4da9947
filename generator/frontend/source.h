// Spec source files, source locations and user-facing diagnostics (docs/style.md, rule 9): every
// user error is data, rendered as `file:line:col: error: what (expected X, got Y)` plus the
// source line and a caret, like clang.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::frontend {

struct Loc;

// A spec's text with its line starts. Locations point at it, so it neither copies nor moves:
// keep it alive as long as anything parsed from it.
class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  SourceFile(const SourceFile&) = delete;
  SourceFile& operator=(const SourceFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  int line_count() const { return static_cast<int>(line_starts_.size()); }
  // The 1-based line's text, without its line terminator (CRLF included).
  std::string_view line_text(int line) const;
  // The location of a byte offset (one past the end is allowed: it is where end of file is).
  Loc loc_at(size_t offset) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

// A position in a SourceFile; line and col are 1-based and a tab counts as one column.
struct Loc {
  const SourceFile* file = nullptr;
  int line = 0;
  int col = 0;
  size_t offset = 0;
};

struct Diagnostic {
  Loc loc;
  std::string message;
  std::string expected;  // both empty, or both set: rendered as "(expected X, got Y)"
  std::string got;
  int length = 1;  // columns to underline, the caret plus `~` for the rest of the token
};

// A diagnostic underlining `length` columns (at least the caret).
Diagnostic diagnostic(Loc loc, size_t length, std::string message, std::string expected = {}, std::string got = {});

// The clang-style text of one diagnostic, three lines each ending in '\n'.
std::string render(const Diagnostic& d);
std::string render(const std::vector<Diagnostic>& ds);

// Stable sort by position, so that errors read top to bottom whichever stage found them.
void sort_by_location(std::vector<Diagnostic>& ds);

// The most bytes kiln reads from one input file: specs are text people write, and a device like
// /dev/zero never ends.
inline constexpr size_t kMaxInputBytes = size_t(16) << 20;

// A whole input file: a regular file, a pipe or a device, at most `limit` bytes. `error` is empty
// on success, else the diagnostic `<path>: error: <why>` (with its '\n'): the file cannot be
// opened or read, is a directory, or is larger than `limit`.
struct InputFile {
  std::string text;
  std::string error;
  bool ok() const { return error.empty(); }
};
InputFile read_input_file(const std::string& path, size_t limit = kMaxInputBytes);

}  // namespace kiln::frontend
