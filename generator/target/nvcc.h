// The CUDA toolkit's nvcc, which kiln gen runs for the CUDA targets: a part's CUDA C++ into one
// fatbin that holds the cubin for the target's architecture and its PTX, which the driver compiles
// for newer GPUs. The library embeds the fatbin; nvcc gives the same bytes for the same source.
#pragma once

#include <stdexcept>
#include <string>

#include "generator/target/target.h"

namespace kiln::target {

// nvcc did not run or did not compile the source (its own words, cut short)
struct NvccError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The nvcc kiln gen runs: `given` where it is not empty (a path, or a name looked up on PATH),
// else $KILN_NVCC, $CUDA_PATH/bin/nvcc, $CUDA_HOME/bin/nvcc, nvcc on PATH, /usr/local/cuda/bin/nvcc;
// "" where none is an executable file.
std::string find_nvcc(const std::string& given);
// where find_nvcc looks, for an error that says none was found
std::string nvcc_places();

// `source` (CUDA C++, the CUDA dialect's kernels) compiled by `nvcc` for target t (t.cuda_arch):
// the fatbin's bytes. Throws NvccError.
std::string compile_cuda(const Target& t, const std::string& nvcc, const std::string& source);

}  // namespace kiln::target
