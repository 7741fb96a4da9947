// The manifest readers: `kiln size` (a library's or a spec's manifest, with and without measured
// files), `kiln gen` (the last run's manifest, for its stale files) and `kiln gen --emit library`
// (a spec's part manifest, merged into the library's).
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>

#include "generator/emit/library.h"
#include "generator/emit/size_report.h"
#include "tests/fuzz/fuzz.h"

static std::string g_parts;  // this process's directory for the part manifest --emit library reads

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char dir[] = "/tmp/kiln-fuzz-manifest-XXXXXX";
  if (!mkdtemp(dir)) kiln::fuzz::finding("no temporary directory");
  g_parts = dir;
  return 0;
}

static void size(const std::string& text, const std::map<std::string, kiln::target::FunctionSize>* files) {
  kiln::emit::SizeReport r;
  std::string err;
  if (!kiln::emit::size_report(text, "fuzz.manifest.json", files, r, err)) {
    if (err.empty()) kiln::fuzz::finding("kiln size refused a manifest without a message");
    return;
  }
  std::string out = kiln::emit::size_table(r) + kiln::emit::size_json(r);
  out += kiln::emit::check_budget(r, 0) + kiln::emit::check_budget(r, UINT64_MAX);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size_) {
  std::string text(reinterpret_cast<const char*>(data), size_);
  kiln::fuzz::run_as_cli([&] {
    kiln::fuzz::Quiet quiet;
    size(text, nullptr);
    std::map<std::string, kiln::target::FunctionSize> none;  // files that define no function
    size(text, &none);
    kiln::emit::stale_files(text, kiln::emit::GenResult{});
    // the part manifest of spec dispatch.kiln in library fuzz, target cpu (no object to read)
    {
      std::ofstream f(g_parts + "/fuzz_dispatch.manifest.json", std::ios::binary | std::ios::trunc);
      f << text;
      if (!f.flush()) kiln::fuzz::finding("cannot write the part manifest");
    }
    kiln::emit::GenOptions o;
    o.name = "fuzz";
    o.targets = {"cpu"};
    o.specs = {"dispatch.kiln"};
    o.emit = kiln::emit::Emit::Library;
    o.parts_dir = g_parts;
    kiln::emit::GenResult r = kiln::emit::generate(o);
    if (!r.ok && r.errors.empty()) kiln::fuzz::finding("kiln gen --emit library failed without a message");
  });
  return 0;
}
