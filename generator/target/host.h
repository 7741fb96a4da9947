// Which targets this machine runs itself: `kiln tune` times a target's kernels here only where
// it does (else through a runner), and the tests run the kernels they compile where it does.
#pragma once

#include <string>

#include "generator/target/target.h"

namespace kiln::target {

// Why this machine cannot run t's kernels ("" where it can): another architecture, or an x86
// target whose features the CPU lacks (x86_64-avx512's kernels on an AVX2-only CPU would die on
// their first AVX-512 instruction). The portable cpu target runs anywhere.
std::string cannot_run_here(const Target& t);

inline bool runs_here(const Target& t) { return cannot_run_here(t).empty(); }

}  // namespace kiln::target
