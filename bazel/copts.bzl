"""The compile flags of kiln's own code, as the CMake build gives them (CMakeLists.txt)."""

# C++20 with the CMake build's warnings (-Werror: `--config=werror`, .bazelrc). -O2 in every
# compilation mode: kiln is a compiler run inside builds, and the runtime sits under app calls.
KILN_COPTS = [
    "-std=c++20",
    "-O2",
    "-Wall",
    "-Wextra",
    "-Wpedantic",
]
