#include "generator/frontend/source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kiln::frontend {

Diagnostic diagnostic(Loc loc, size_t length, std::string message, std::string expected, std::string got) {
  Diagnostic d;
  d.loc = loc;
  d.length = static_cast<int>(std::max<size_t>(1, length));
  d.message = std::move(message);
  d.expected = std::move(expected);
  d.got = std::move(got);
  return d;
}

SourceFile::SourceFile(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

std::string_view SourceFile::line_text(int line) const {
  if (line < 1 || line > line_count()) return {};
  size_t begin = line_starts_[line - 1];
  size_t end = line < line_count() ? line_starts_[line] - 1 : text_.size();
  std::string_view s(text_.data() + begin, end - begin);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

Loc SourceFile::loc_at(size_t offset) const {
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  int line = static_cast<int>(it - line_starts_.begin());
  int col = static_cast<int>(offset - line_starts_[line - 1]) + 1;
  return Loc{this, line, col, offset};
}

std::string render(const Diagnostic& d) {
  std::string out;
  out += d.loc.file ? d.loc.file->path() : std::string("<unknown>");
  out += ":" + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": error: " + d.message;
  if (!d.expected.empty() || !d.got.empty()) out += " (expected " + d.expected + ", got " + d.got + ")";
  out += "\n";
  if (!d.loc.file) return out;
  std::string_view line = d.loc.file->line_text(d.loc.line);
  out += line;
  out += "\n";
  // Tabs stay tabs under the source so the caret lines up however wide the terminal's tabs are.
  std::string caret;
  for (int i = 1; i < d.loc.col; ++i)
    caret += static_cast<size_t>(i - 1) < line.size() && line[i - 1] == '\t' ? '\t' : ' ';
  caret += '^';
  int room = static_cast<int>(line.size()) - d.loc.col;
  for (int i = 1; i < std::min(d.length, room + 1); ++i) caret += '~';
  out += caret + "\n";
  return out;
}

std::string render(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (const Diagnostic& d : ds) out += render(d);
  return out;
}

void sort_by_location(std::vector<Diagnostic>& ds) {
  std::stable_sort(ds.begin(), ds.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.loc.offset < b.loc.offset; });
}

InputFile read_input_file(const std::string& path, size_t limit) {
  InputFile r;
  auto fail = [&](const std::string& why) {
    r.text.clear();
    r.error = path + ": error: " + why + "\n";
    return r;
  };
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return fail(std::string("cannot open (") + std::strerror(errno) + ")");
  struct Close {
    std::FILE* f;
    ~Close() { std::fclose(f); }
  } close{f};
  // opening a directory succeeds; reading it would give nothing and look like an empty spec
  struct stat st;
  if (::fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) return fail("is a directory, not a file");
  char buf[1 << 16];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) {
    if (r.text.size() + n > limit)
      return fail("is larger than " +
                  (limit % (1 << 20) ? std::to_string(limit) + " bytes" : std::to_string(limit >> 20) + " MiB") +
                  ", the most kiln reads from an input file");
    r.text.append(buf, n);
  }
  if (std::ferror(f)) return fail(std::string("cannot read (") + std::strerror(errno) + ")");
  return r;
}

}  // namespace kiln::frontend
