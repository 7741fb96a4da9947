// The target table (generator/target/): its invariants and the JSON the build rules read.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "generator/target/target.h"
#include "kiln/kernel_abi.h"

namespace kiln::target {
namespace {

TEST(Targets, NamesAreUniqueAndSymbolsAreNamesWithUnderscores) {
  std::set<std::string> names, symbols;
  for (const Target& t : targets()) {
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_TRUE(symbols.insert(t.symbol).second) << t.symbol;
    std::string s = t.name;
    for (char& c : s)
      if (c == '-') c = '_';
    EXPECT_EQ(t.symbol, s);
    EXPECT_EQ(find(t.name), &t);
  }
  EXPECT_EQ(find("x86_64_avx2"), nullptr);  // the symbol is not a name
  EXPECT_EQ(find(""), nullptr);
  EXPECT_EQ(known_names(),
            "aarch64-neon, aarch64-sve256, armv7-neon, cortex-m4, cpu, cuda-sm80, cuda-sm90, opencl, riscv64-rvv, "
            "wasm32-simd128, "
            "x86_64-avx2, x86_64-avx512");
}

// targets.cpp includes nothing of kiln's (a build system compiles it alone), so it spells the
// runtime's feature bits itself: they must be kernel_abi.h's
TEST(Targets, RuntimeBitsAreTheRuntimes) {
  EXPECT_EQ(find("x86_64-avx2")->runtime_mask, uint32_t(KILN_CPU_X86_AVX2));
  EXPECT_EQ(find("x86_64-avx512")->runtime_mask, uint32_t(KILN_CPU_X86_AVX512));
  EXPECT_EQ(find("armv7-neon")->runtime_mask, uint32_t(KILN_CPU_ARM_NEON));
  EXPECT_EQ(find("aarch64-neon")->runtime_mask, 0u);  // AArch64 always has Advanced SIMD
  EXPECT_EQ(find("riscv64-rvv")->runtime_mask, uint32_t(KILN_CPU_RISCV_V));
  EXPECT_EQ(find("aarch64-sve256")->runtime_mask, uint32_t(KILN_CPU_ARM_SVE256));
  EXPECT_EQ(find("cpu")->runtime_mask, 0u);
  EXPECT_EQ(find("x86_64-avx512")->runtime_bits, "KILN_CPU_X86_AVX512");
}

TEST(Targets, PortableCIsLastAndNeedsNothing) {
  const Target& last = targets().back();
  EXPECT_EQ(last.name, "cpu");
  EXPECT_EQ(last.output, Output::CSource);
  EXPECT_TRUE(last.c_flags.empty());
  EXPECT_TRUE(last.arch_guard.empty());
  EXPECT_TRUE(last.runtime_features.empty());
}

TEST(Targets, JsonHasEveryTargetAndField) {
  auto j = nlohmann::json::parse(table_json());
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), targets().size());
  for (size_t i = 0; i < j.size(); ++i) {
    const Target& t = targets()[i];
    const auto& o = j[i];
    EXPECT_EQ(o.at("name"), t.name);
    EXPECT_EQ(o.at("symbol"), t.symbol);
    EXPECT_EQ(o.at("triple"), t.triple);
    EXPECT_EQ(o.at("vector_bytes"), t.vector_bytes);
    EXPECT_EQ(o.at("l2_bytes"), t.l2_bytes);
    const char* const outputs[][2] = {{"c", ".c"}, {"object", ".o"}, {"opencl", ".cl"}, {"cuda", ".cu"}};
    ASSERT_LT(size_t(t.output), std::size(outputs));
    EXPECT_EQ(o.at("output"), outputs[size_t(t.output)][0]);
    EXPECT_EQ(o.at("extension"), outputs[size_t(t.output)][1]);
    EXPECT_EQ(o.at("cuda_arch"), t.cuda_arch);
    EXPECT_EQ(o.at("tensor_cores"), t.tensor_cores);
    EXPECT_EQ(o.at("gpu"), t.gpu);
    EXPECT_EQ(o.at("global_max").size(), t.global_max.size());
    EXPECT_EQ(o.at("local_bytes"), t.local_bytes);
    EXPECT_EQ(o.at("c_flags").size(), t.c_flags.size());
    EXPECT_EQ(o.at("runtime_mask"), t.runtime_mask);
    EXPECT_EQ(o.at("threads"), t.threads);
    EXPECT_EQ(o.at("freestanding"), t.freestanding);
  }
}

// a GPU target has the limits gpu dims fits launches to; the CPU targets have none, and
// cpu_targets() is the table without the GPU targets, in its order
TEST(Targets, GpuTargetsHaveGridLimitsAndCpuTargetsNone) {
  const Target* ocl = find("opencl");
  ASSERT_NE(ocl, nullptr);
  EXPECT_TRUE(ocl->gpu);
  EXPECT_EQ(ocl->output, Output::OpenCL);
  EXPECT_FALSE(ocl->threads);
  EXPECT_EQ(ocl->global_max.size(), 3u);
  EXPECT_EQ(ocl->local_max.size(), 3u);
  for (int64_t g : ocl->global_max) EXPECT_LE(g, int64_t(INT32_MAX));  // ids are int32
  int64_t local = 1;
  for (int64_t l : ocl->local_max) {
    EXPECT_LE(l, ocl->local_max_total);
    local *= l;
  }
  EXPECT_GE(local, ocl->local_max_total);
  EXPECT_NE(ocl->arch, "any");  // build rules that default to every portable target must not take it
  size_t i = 0;
  for (const Target& t : targets()) {
    if (t.gpu) continue;
    EXPECT_TRUE(t.global_max.empty() && t.local_max.empty() && t.local_bytes == 0) << t.name;
    ASSERT_LT(i, cpu_targets().size());
    EXPECT_EQ(cpu_targets()[i++], &t);
  }
  EXPECT_EQ(i, cpu_targets().size());
}

TEST(Targets, TextHasAHeaderAndALinePerTarget) {
  std::string text = table_text();
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, targets().size() + 1);
  EXPECT_EQ(text.rfind("target ", 0), 0u);
  for (const Target& t : targets()) EXPECT_NE(text.find("\n" + t.name + " "), std::string::npos) << t.name;
}

}  // namespace
}  // namespace kiln::target
