// `kiln explain`'s dim list: each line of the input is one --dim value (DIM=VALUE items, commas
// between them), split and bound as the CLI does, for a kernel of tests/gen/dispatch.kiln's dims;
// a first line "@<kernel>" names another kernel than gemm.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "generator/emit/library.h"
#include "generator/tools/commands.h"
#include "tests/fuzz/fuzz.h"

static const char* const kSpec = R"(dim M in 1..64 specialize 1, %16
dim N in 1..200 specialize %64
dim K in 1..64
dim R in 1..9007199254740991

kernel gemm(a: f32[M, K], b: f32[K, N]) -> (c: f32[M, N]) {
  c = a @ b
}

kernel tiny(x: f32[4]) -> (y: f32[4]) {
  y = x + 1.0
}

kernel huge(x: f64[R, 1024]) -> (y: f64[R, 1024]) {
  y = x * 2.0
}
)";

static std::string g_spec;  // kSpec, written once

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char dir[] = "/tmp/kiln-fuzz-explain-XXXXXX";
  if (!mkdtemp(dir)) kiln::fuzz::finding("no temporary directory");
  g_spec = std::string(dir) + "/explain.kiln";
  std::ofstream f(g_spec, std::ios::binary);
  f << kSpec;
  if (!f.flush()) kiln::fuzz::finding("cannot write the spec");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string kernel = "gemm";
  std::vector<std::string> dims;  // what CLI11 gives for repeated --dim options
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    if (start == 0 && !line.empty() && line[0] == '@')
      kernel = line.substr(1);
    else
      dims.push_back(std::move(line));
    start = nl + 1;
  }
  kiln::fuzz::run_as_cli([&] {
    kiln::fuzz::Quiet quiet;
    kiln::emit::GenOptions o;
    o.name = "kiln_explain";
    o.specs = {g_spec};
    for (const kiln::target::Target& t : kiln::target::targets()) o.targets.push_back(t.name);
    int rc =
        kiln::cli::split_commas(dims, "--dim", "DIM=VALUE") ? kiln::cli::run_explain(o, kernel, dims, "avx512") : 1;
    if (rc != 0 && quiet.err_bytes() == 0) kiln::fuzz::finding("kiln explain failed without a message");
  });
  return 0;
}
