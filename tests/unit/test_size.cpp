// Binary size: the functions of an ELF object or archive measured (generator/target/object_size.h),
// the sizes kiln gen records in the library's manifest, and kiln size's report and budget check
// (generator/emit/size_report.h). The CLI and the build rules' budgets: tests/cli, tests/consumer.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "generator/emit/library.h"
#include "generator/emit/size_report.h"
#include "generator/target/llvm_compile.h"
#include "generator/target/object_size.h"
#include "generator/target/target.h"

namespace kiln {
namespace {

using target::FunctionSize;

// a table two functions read, a vector constant one reads, and a function that reads none
const char* const kModule =
    "@tbl = internal constant [5 x float] [float 1.0, float 2.0, float 3.0, float 4.0, float 5.0], align 4\n"
    "define void @uses_table(ptr %out, i64 %i) {\n"
    "  %p = getelementptr [5 x float], ptr @tbl, i64 0, i64 %i\n  %v = load float, ptr %p\n"
    "  store float %v, ptr %out\n  ret void\n}\n"
    "define void @also_table(ptr %out, i64 %i) {\n  %j = add i64 %i, 1\n"
    "  %p = getelementptr [5 x float], ptr @tbl, i64 0, i64 %j\n  %v = load float, ptr %p\n"
    "  %w = fmul float %v, %v\n  store float %w, ptr %out\n  ret void\n}\n"
    "define void @adds_vector(ptr %out) {\n  %v = load <8 x float>, ptr %out\n"
    "  %w = fadd <8 x float> %v, <float 1.0, float 2.0, float 3.0, float 4.0, float 5.0, float 6.0, float 7.0, "
    "float 8.0>\n  store <8 x float> %w, ptr %out\n  ret void\n}\n"
    "define void @plain(ptr %out) {\n  store i32 7, ptr %out\n  ret void\n}\n";

std::string object() {
  static const std::string o = target::compile_module(*target::find("x86_64-avx2"), kModule, target::Artifact::Object);
  return o;
}

// an ar archive of these members
std::string archive(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string a = "!<arch>\n";
  for (const auto& [name, bytes] : members) {
    char h[61];
    std::snprintf(h, sizeof h, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", (name + "/").c_str(), "0", "0", "0", "644",
                  bytes.size());
    a += std::string(h, 60) + bytes;
    if (bytes.size() % 2) a += "\n";
  }
  return a;
}

TEST(ObjectSize, CodeIsTheSymbolsSizeAndDataTheConstantsItsCodeReads) {
  std::map<std::string, FunctionSize> f = target::measure_functions(object(), "t.o");
  ASSERT_EQ(f.size(), 4u);
  for (const auto& [name, s] : f) EXPECT_GT(s.code, 0u) << name;
  EXPECT_EQ(target::data_bytes(f["plain"].data), 0u);
  EXPECT_EQ(target::data_bytes(f["adds_vector"].data), 32u);  // one 32-byte entry of .rodata.cst32
  EXPECT_EQ(target::data_bytes(f["uses_table"].data), 20u);   // the table, by its symbol's size
  EXPECT_EQ(f["uses_table"].data, f["also_table"].data);      // the same constant...
  std::map<std::string, uint64_t> both = f["uses_table"].data;
  both.insert(f["also_table"].data.begin(), f["also_table"].data.end());
  EXPECT_EQ(target::data_bytes(both), 20u);  // ...counted once in a total over both
}

// every object target's objects are measured: ELF for the CPUs, WebAssembly's own format
TEST(ObjectSize, EveryObjectTargetsObjectsAreMeasured) {
  const std::string plain = "define void @plain(ptr %out) {\n  store i32 7, ptr %out\n  ret void\n}\n";
  for (const target::Target& t : target::targets()) {
    if (t.output != target::Output::Object) continue;
    std::string o = target::compile_module(t, plain, target::Artifact::Object);
    std::map<std::string, FunctionSize> f = target::measure_functions(o, "p.o");
    ASSERT_EQ(f.count("plain"), 1u) << t.name;
    EXPECT_GT(f["plain"].code, 0u) << t.name;
    EXPECT_LT(f["plain"].code, 64u) << t.name;  // a store and a return
  }
}

TEST(ObjectSize, AnArchiveIsItsMembersAndBadInputAnErrorNamingIt) {
  std::map<std::string, FunctionSize> direct = target::measure_functions(object(), "t.o");
  std::map<std::string, FunctionSize> in_ar = target::measure_functions(archive({{"t.o", object()}}), "lib.a");
  ASSERT_EQ(in_ar.size(), direct.size());
  for (const auto& [name, s] : direct) {
    EXPECT_EQ(in_ar[name].code, s.code) << name;
    EXPECT_EQ(target::data_bytes(in_ar[name].data), target::data_bytes(s.data)) << name;
  }
  auto error = [](const std::string& bytes, const std::string& name) -> std::string {
    try {
      target::measure_functions(bytes, name);
    } catch (const target::ObjectError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error("hello", "x.o").rfind("x.o: ", 0), 0u) << error("hello", "x.o");
  EXPECT_EQ(error(object().substr(0, object().size() / 2), "half.o").rfind("half.o: ", 0), 0u);
  std::string bad = error(archive({{"t.o", object()}, {"notes.txt", "not an object\n"}}), "lib.a");
  EXPECT_EQ(bad.rfind("lib.a(notes.txt): ", 0), 0u) << bad;
  // corrupt bytes anywhere: an error or some sizes, never a crash (the sanitizers watch)
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string o = object();
    for (int j = 0; j < 4; ++j) o[rng() % o.size()] = char(rng());
    try {
      target::measure_functions(o, "c.o");
    } catch (const target::ObjectError&) {
    }
  }
}

class SizeTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("kiln-size-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  }
  static emit::GenOptions opts(std::vector<std::string> specs, emit::Emit e = emit::Emit::All) {
    emit::GenOptions o;
    o.name = "lib";
    o.targets = {"cpu", "x86_64-avx2"};
    o.specs = std::move(specs);
    o.emit = e;
    return o;
  }
  static const std::string& file(const emit::GenResult& r, const std::string& name) {
    for (const auto& [n, text] : r.files)
      if (n == name) return text;
    static const std::string none = "<no such file>";
    return none;
  }
  // gemm's buckets multiply: M's two times N's one, plus the generic ones
  static constexpr const char* kSpec =
      "dim M in 1..512 specialize 1, %16\ndim N in 1..512 specialize %64\ndim K in 1..512\n"
      "kernel gemm(a: f32[M, K], b: f32[K, N]) -> (c: f32[M, N]) {\n  c = a @ b\n}\n"
      "kernel add(x: f32[16], y: f32[16]) -> (z: f32[16]) {\n  z = x + y\n}\n";
};

// The library's manifest has the sizes; a part manifest has none, so writing a spec's files
// (--emit spec) compiles nothing, and the split runs agree with one run byte for byte.
TEST_F(SizeTest, TheLibrarysManifestRecordsEachVariantsSizesPerTarget) {
  emit::GenResult r = emit::generate(opts({write("a.kiln", kSpec)}));
  ASSERT_TRUE(r.ok) << r.errors;
  nlohmann::json lib = nlohmann::json::parse(file(r, "lib.manifest.json"));
  std::map<std::string, FunctionSize> measured = target::measure_functions(file(r, "lib_a_x86_64_avx2.o"), "o");
  const auto& avx2 = lib["targets"][0];
  const auto& cpu = lib["targets"][1];
  ASSERT_EQ(avx2["name"], "x86_64-avx2");
  EXPECT_EQ(avx2["sizes"], "measured in kiln's object");
  EXPECT_TRUE(cpu["code_bytes"].is_null());  // unknown until the build's compiler compiled it: not 0
  EXPECT_TRUE(cpu["data_bytes"].is_null());
  EXPECT_NE(cpu["sizes"].get<std::string>().find("unknown until compiled"), std::string::npos);
  uint64_t code = 0, data = 0, all_code = 0, all_data = 0;
  size_t variants = 0;
  for (const auto& [name, s] : measured) all_code += s.code, all_data += target::data_bytes(s.data);
  for (const auto& k : lib["kernels"])
    for (const auto& v : k["variants"]) {
      if (v["target"] == "cpu") {
        EXPECT_TRUE(v["code_bytes"].is_null()) << v.dump();
        EXPECT_TRUE(v["kernels"][0]["code_bytes"].is_null());
        continue;
      }
      ++variants;
      uint64_t vcode = 0;
      for (const auto& fn : v["kernels"]) {
        const FunctionSize& s = measured.at(fn["symbol"].get<std::string>());
        EXPECT_EQ(fn["code_bytes"], s.code);
        EXPECT_EQ(fn["data_bytes"], target::data_bytes(s.data));
        vcode += s.code;
      }
      EXPECT_EQ(v["code_bytes"], vcode) << v["name"];
      code += v["code_bytes"].get<uint64_t>(), data += v["data_bytes"].get<uint64_t>();
    }
  EXPECT_EQ(variants, 7u);  // gemm's 6, add's 1
  EXPECT_GT(code, 0u);
  EXPECT_EQ(avx2["code_bytes"], code);
  EXPECT_EQ(avx2["code_bytes"], all_code);
  EXPECT_EQ(avx2["data_bytes"], all_data);
  EXPECT_EQ(data, all_data);  // LLVM gives each function its own constants: no sharing to undo here

  // the part manifest: the same kernels, without a size anywhere
  const std::string& part_text = file(r, "lib_a.manifest.json");
  for (const char* field : {"\"code_bytes\"", "\"data_bytes\"", "\"sizes\""})
    EXPECT_EQ(part_text.find(field), std::string::npos) << field;
  nlohmann::json part = nlohmann::json::parse(part_text), sized = lib["kernels"];
  for (auto& k : sized)
    for (auto& v : k["variants"]) {
      v.erase("code_bytes"), v.erase("data_bytes");
      for (auto& fn : v["kernels"]) fn.erase("code_bytes"), fn.erase("data_bytes");
    }
  EXPECT_EQ(sized, part["kernels"]);
  // --emit spec compiles nothing: no object, the same part manifest, byte for byte
  emit::GenResult spec = emit::generate(opts({write("a.kiln", kSpec)}, emit::Emit::Spec));
  ASSERT_TRUE(spec.ok) << spec.errors;
  EXPECT_EQ(file(spec, "lib_a.manifest.json"), part_text);
  EXPECT_EQ(file(spec, "lib_a_x86_64_avx2.o"), "<no such file>");
  EXPECT_EQ(spec.files.size(), 3u);
  // --emit library measures the object --emit kernels wrote: the same library manifest
  std::filesystem::path dir = std::filesystem::path(write("a.kiln", kSpec)).parent_path() / "split";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "lib_a.manifest.json") << part_text;
  std::ofstream(dir / "lib_a_x86_64_avx2.o", std::ios::binary)
      << file(emit::generate(opts({write("a.kiln", kSpec)}, emit::Emit::Kernels)), "lib_a_x86_64_avx2.o");
  emit::GenOptions link = opts({write("a.kiln", kSpec)}, emit::Emit::Library);
  link.parts_dir = dir.string();
  emit::GenResult linked = emit::generate(link);
  ASSERT_TRUE(linked.ok) << linked.errors;
  EXPECT_EQ(file(linked, "lib.manifest.json"), file(r, "lib.manifest.json"));
}

TEST_F(SizeTest, TheLibrarysTotalsAreItsSpecsObjectsSummed) {
  std::string b = write("b.kiln", "dim S in 1..64\nkernel twice(x: f32[S]) -> (y: f32[S]) {\n  y = x * 2.0\n}\n");
  emit::GenResult r = emit::generate(opts({write("a.kiln", kSpec), b}));
  ASSERT_TRUE(r.ok) << r.errors;
  nlohmann::json lib = nlohmann::json::parse(file(r, "lib.manifest.json"));
  uint64_t code = 0, data = 0;
  for (const char* object : {"lib_a_x86_64_avx2.o", "lib_b_x86_64_avx2.o"}) {
    uint64_t c = 0;
    std::map<std::string, uint64_t> constants;  // counted once in an object, not across them
    for (const auto& [name, s] : target::measure_functions(file(r, object), object)) {
      c += s.code;
      constants.insert(s.data.begin(), s.data.end());
    }
    EXPECT_GT(c, 0u) << object;
    code += c, data += target::data_bytes(constants);
  }
  EXPECT_EQ(lib["targets"][0]["code_bytes"], code);
  EXPECT_EQ(lib["targets"][0]["data_bytes"], data);
  for (const char* field : {"code_bytes", "data_bytes"}) EXPECT_TRUE(lib["targets"][1][field].is_null()) << field;
}

TEST_F(SizeTest, TheReportIsPerVariantWithTotalsAndTheBudgetNamesTheLargest) {
  emit::GenResult r = emit::generate(opts({write("a.kiln", kSpec)}));
  ASSERT_TRUE(r.ok) << r.errors;
  const std::string& manifest = file(r, "lib.manifest.json");
  emit::SizeReport rep;
  std::string err;
  ASSERT_TRUE(emit::size_report(manifest, "lib.manifest.json", nullptr, rep, err)) << err;
  ASSERT_EQ(rep.variants.size(), 14u);
  ASSERT_EQ(rep.targets.size(), 2u);
  EXPECT_EQ(rep.targets[0].state, emit::VariantSize::State::Known);
  EXPECT_EQ(rep.targets[1].state, emit::VariantSize::State::Unknown);
  std::string table = emit::size_table(rep);
  EXPECT_EQ(table.rfind("kernel  variant", 0), 0u) << table;
  const emit::VariantSize& first = rep.variants[0];
  ASSERT_EQ(first.variant, "gemm[M1_Nx64]");
  size_t row = table.find("\ngemm    gemm[M1_Nx64]    x86_64-avx2  ");
  ASSERT_NE(row, std::string::npos) << table;
  std::string line = table.substr(row + 1, table.find('\n', row + 1) - row - 1);
  std::istringstream fields(line);
  std::vector<std::string> got{std::istream_iterator<std::string>(fields), {}};
  EXPECT_EQ(got, (std::vector<std::string>{"gemm", "gemm[M1_Nx64]", "x86_64-avx2", std::to_string(first.code),
                                           std::to_string(first.data), std::to_string(first.code + first.data)}));
  EXPECT_NE(table.find("\ntotal                    cpu              ?     ?      ?\n"), std::string::npos) << table;
  EXPECT_NE(table.find("?: unknown until compiled (cpu)"), std::string::npos) << table;
  // a budget cannot be checked on sizes nobody knows
  EXPECT_NE(emit::check_budget(rep, 1u << 30).find("target cpu's kernels are unknown until compiled"),
            std::string::npos);

  // measured in the object alone: cpu is not linked, the object's target is checked
  std::map<std::string, FunctionSize> files = target::measure_functions(file(r, "lib_a_x86_64_avx2.o"), "o");
  ASSERT_TRUE(emit::size_report(manifest, "lib.manifest.json", &files, rep, err)) << err;
  EXPECT_EQ(rep.targets[1].state, emit::VariantSize::State::NotLinked);
  const emit::TargetSize t = rep.targets[0];  // a copy: rep is reused below
  EXPECT_EQ(emit::check_budget(rep, t.code + t.data), "");
  std::string over = emit::check_budget(rep, t.code + t.data - 1);
  EXPECT_EQ(over.rfind("kiln: error: lib: the kernels of target x86_64-avx2 take " + std::to_string(t.code + t.data) +
                           " bytes (code " + std::to_string(t.code) + ", data " + std::to_string(t.data) +
                           "), over the size budget of " + std::to_string(t.code + t.data - 1) + " bytes\n",
                       0),
            0u)
      << over;
  // the kernels by their variants' sum: gemm's bucket list made six of them, so it comes first
  EXPECT_NE(over.find("its largest kernels (all their variants: each bucket list multiplies them):\n    gemm: "),
            std::string::npos)
      << over;
  EXPECT_NE(over.find(" bytes in 6 variants\n    add: "), std::string::npos) << over;
  const emit::VariantSize* largest = nullptr;
  for (const emit::VariantSize& v : rep.variants)
    if (v.target == "x86_64-avx2" && (!largest || v.code + v.data > largest->code + largest->data)) largest = &v;
  EXPECT_NE(over.find("its largest variants:\n    " + largest->variant + ": "), std::string::npos) << over;

  // a spec's manifest has no sizes: unknown, until measured in the files given
  ASSERT_TRUE(emit::size_report(file(r, "lib_a.manifest.json"), "lib_a.manifest.json", nullptr, rep, err)) << err;
  EXPECT_EQ(rep.targets[0].state, emit::VariantSize::State::Unknown);
  EXPECT_EQ(rep.variants[0].state, emit::VariantSize::State::Unknown);
  ASSERT_TRUE(emit::size_report(file(r, "lib_a.manifest.json"), "lib_a.manifest.json", &files, rep, err)) << err;
  EXPECT_EQ(rep.targets[0].state, emit::VariantSize::State::Known);
  EXPECT_EQ(rep.targets[0].code, t.code);

  for (const char* bad : {"", "[1, 2]", "{\"library\": \"x\"}", "{\"library\": \"x\", \"targets\": 3}"}) {
    EXPECT_FALSE(emit::size_report(bad, "m.json", nullptr, rep, err)) << bad;
    EXPECT_EQ(err.rfind("kiln: error: m.json is not a kiln manifest with sizes (", 0), 0u) << err;
  }
  // byte counts that are not (found by the manifest fuzz target: get<uint64_t>() of 1e300 was undefined
  // behaviour, of -5 a wrapped count)
  const std::string field = "\"code_bytes\": ";
  size_t at = manifest.find(field) + field.size();
  ASSERT_NE(at, std::string::npos + field.size());
  for (const char* count : {"1e300", "-5", "1.5", "281474976710657", "\"12\""}) {
    std::string bad = manifest;
    bad.replace(at, bad.find_first_of(",\n", at) - at, count);
    EXPECT_FALSE(emit::size_report(bad, "m.json", nullptr, rep, err)) << count;
    EXPECT_EQ(
        err.rfind(std::string("kiln: error: m.json is not a kiln manifest with sizes (expected a byte count, got "), 0),
        0u)
        << err;
  }
}

}  // namespace
}  // namespace kiln
