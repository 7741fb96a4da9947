// Prints kiln's target table as JSON (what `kiln targets --json` prints). The CMake rules compile
// this with targets.cpp at configure time when kiln itself is not built yet (kiln's own build and
// add_subdirectory(kiln)); the Bazel rules at loading time (bazel/deps.bzl).
#include <cstdio>

#include "generator/target/target.h"

int main() {
  std::fputs(kiln::target::table_json().c_str(), stdout);
  return 0;
}
