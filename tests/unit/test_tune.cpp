// kiln tune's database (generator/emit/tune_db.h): its text round trip, order, merge and errors;
// the kernel hash it keys on (the scheduled kernel, not the spec's text); tuned opts in the
// heuristics' place (codegen/opt/tuned.cpp); and kiln gen with a database: entries applied,
// stale ones reported and ignored, malformed ones an error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/pipeline.h"
#include "generator/emit/tune.h"
#include "generator/emit/tune_db.h"
#include "generator/schedule/schedule.h"
#include "tests/unit/random_program.h"

namespace kiln {
namespace {

using codegen::Opt;
using Kind = codegen::Opt::Kind;

emit::TuneEntry entry(std::string hash, std::string target, std::string variant, std::vector<Opt> opts,
                      int64_t block = 0) {
  emit::TuneEntry e;
  e.hash = std::move(hash);
  e.target = std::move(target);
  e.variant = std::move(variant);
  e.kernel = "k";
  e.opts.opts = std::move(opts);
  e.opts.reduce_block = block;
  e.us = 12.5;
  e.heuristic_us = 20.1254;
  return e;
}

std::string parse_error(const std::string& text) {
  std::vector<emit::TuneEntry> db;
  std::string err;
  EXPECT_FALSE(emit::parse_tune_db(text, "t.db", db, err)) << text;
  return err;
}

TEST(TuneDb, RoundTripsSortedWhateverTheOrder) {
  std::vector<emit::TuneEntry> db = {
      entry("ffff000000000000", "cpu", "any", {{Kind::Upcast, 0, 8}, {Kind::Thread, 0, 0}}),
      entry("0000ffff00000000", "x86_64-avx512", "M1_Nx16", {}, 256),
      entry("0000ffff00000000", "cpu", "M1_Nx16", {{Kind::Lane, 1, 32}, {Kind::Padto, 0, 16}, {Kind::Swap, 0, 1}}),
      entry("0000ffff00000000", "cpu", "Mx16", {{Kind::Unroll, 2, 4}}),
  };
  std::string text = emit::print_tune_db(db);
  std::vector<emit::TuneEntry> back;
  std::string err;
  ASSERT_TRUE(emit::parse_tune_db(text, "t.db", back, err)) << err;
  ASSERT_EQ(back.size(), db.size());
  // sorted by hash, then target, then variant
  std::vector<std::string> keys;
  for (const emit::TuneEntry& e : back) keys.push_back(e.hash + " " + e.target + " " + e.variant);
  EXPECT_EQ(keys, (std::vector<std::string>{"0000ffff00000000 cpu M1_Nx16", "0000ffff00000000 cpu Mx16",
                                            "0000ffff00000000 x86_64-avx512 M1_Nx16", "ffff000000000000 cpu any"}));
  const emit::TuneEntry* e = emit::find_tune_entry(back, "0000ffff00000000", "cpu", "M1_Nx16");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->opts, db[2].opts);
  EXPECT_EQ(e->kernel, "k");
  EXPECT_DOUBLE_EQ(e->us, 12.5);
  EXPECT_DOUBLE_EQ(e->heuristic_us, 20.125);  // to the nanosecond
  EXPECT_EQ(emit::find_tune_entry(back, "0000ffff00000000", "x86_64-avx512", "M1_Nx16")->opts.reduce_block, 256);
  EXPECT_EQ(emit::find_tune_entry(back, "0000ffff00000000", "cpu", "any"), nullptr);
  // printing what was read gives the same bytes: the file is stable under a rewrite
  EXPECT_EQ(emit::print_tune_db(back), text);
  EXPECT_NE(text.find("opts=LANES(1,32);PADTO(0,16);SWAP(0,1) block=0"), std::string::npos) << text;
  EXPECT_NE(text.find("opts=- block=256"), std::string::npos) << text;
}

TEST(TuneDb, MergeReplacesTheEntryOfItsKeyAndAddsNewOnes) {
  std::vector<emit::TuneEntry> db = {entry("0000000000000001", "cpu", "any", {{Kind::Upcast, 0, 8}}),
                                     entry("0000000000000002", "cpu", "any", {{Kind::Upcast, 0, 4}})};
  emit::merge_tune_entry(db, entry("0000000000000001", "cpu", "any", {{Kind::Lane, 1, 16}}));
  emit::merge_tune_entry(db, entry("0000000000000001", "cpu", "M1", {{Kind::Unroll, 2, 2}}));
  ASSERT_EQ(db.size(), 3u);
  EXPECT_EQ(emit::find_tune_entry(db, "0000000000000001", "cpu", "any")->opts.opts.at(0).str(), "LANES(1, 16)");
  EXPECT_EQ(emit::find_tune_entry(db, "0000000000000001", "cpu", "M1")->opts.opts.at(0).str(), "UNROLL(2, 2)");
  EXPECT_EQ(emit::find_tune_entry(db, "0000000000000002", "cpu", "any")->opts.opts.at(0).str(), "UPCAST(0, 4)");
}

TEST(TuneDb, CommentsAndBlankLinesAreSkipped) {
  std::vector<emit::TuneEntry> db;
  std::string err;
  ASSERT_TRUE(emit::parse_tune_db("# a note\n\n   \n0123456789abcdef cpu any kernel=k opts=-\n", "t.db", db, err))
      << err;
  ASSERT_EQ(db.size(), 1u);
  EXPECT_EQ(db[0].line, 4);
  EXPECT_TRUE(db[0].opts.opts.empty());
}

TEST(TuneDb, ErrorsNameTheFileLineAndColumn) {
  const std::string ok = "0123456789abcdef cpu any kernel=k opts=UPCAST(0,8)";
  EXPECT_EQ(parse_error("# x\nzz cpu any kernel=k opts=-\n"),
            "t.db:2:1: error: expected a kernel hash (16 hex digits), got 'zz'\n");
  EXPECT_EQ(parse_error("0123456789abcdef cpu\n"),
            "t.db:1:21: error: a tune entry needs a hash, a target and a variant before its fields (got 2 words)\n");
  EXPECT_EQ(parse_error("0123456789abcdef cpu any kernel=k opts=UPCAST(0,8);FOO(1)\n"),
            "t.db:1:52: error: expected an opt such as UPCAST(0,8), got 'FOO(1)'\n");
  EXPECT_EQ(parse_error(ok + " speed=3\n"),
            "t.db:1:52: error: unknown field 'speed' (expected kernel, opts, block, us or heuristic_us)\n");
  EXPECT_EQ(parse_error(ok + " block=x\n"), "t.db:1:58: error: expected a block size (0 or more), got 'x'\n");
  EXPECT_EQ(parse_error(ok + " us=-1\n"), "t.db:1:55: error: expected a time in microseconds, got '-1'\n");
  EXPECT_EQ(parse_error(ok + " opts=-\n"), "t.db:1:52: error: opts given twice\n");
  EXPECT_EQ(parse_error("0123456789abcdef cpu any kernel=k\n"), "t.db:1:34: error: the entry has no opts\n");
  EXPECT_EQ(parse_error(ok + "\n" + ok + "\n"),
            "t.db:2:1: error: a second entry for 0123456789abcdef cpu any (the first is on line 1)\n");
}

TEST(TuneDb, ParseOptReadsWhatStrWrites) {
  for (Opt o : {Opt{Kind::Upcast, 1, 16}, Opt{Kind::Unroll, 2, 4}, Opt{Kind::Lane, 0, 64}, Opt{Kind::Thread, 3, 0},
                Opt{Kind::Padto, 0, 16}, Opt{Kind::Swap, 0, 1}, Opt{Kind::GroupTop, 1, 8}}) {
    std::optional<Opt> back = codegen::parse_opt(o.str());
    ASSERT_TRUE(back) << o.str();
    EXPECT_EQ(back->str(), o.str());
  }
  for (const char* bad :
       {"", "UPCAST", "UPCAST(1)", "UPCAST(1,)", "UPCAST(a,2)", "THREAD(0,1)", "UPCASTX(1,2)", "(1,2)"})
    EXPECT_FALSE(codegen::parse_opt(bad)) << bad;
}

class TuneGenTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("kiln-tune-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  }
  static emit::GenOptions opts(std::vector<std::string> specs, std::string db = {}) {
    emit::GenOptions o;
    o.name = "lib";
    o.targets = {"cpu", "x86_64-avx512"};
    o.specs = std::move(specs);
    o.tune_db = std::move(db);
    return o;
  }
  std::map<std::string, std::string> hashes(const std::string& spec) {
    std::vector<emit::TuneEntry> keys;
    std::string err;
    EXPECT_TRUE(emit::tune_keys(opts({spec}), keys, err)) << err;
    std::map<std::string, std::string> m;
    for (const emit::TuneEntry& k : keys) m[k.kernel + " " + k.target + " " + k.variant] = k.hash;
    return m;
  }
  // the opts the manifest lists for a kernel's variant on a target
  static std::vector<std::string> manifest_opts(const emit::GenResult& r, const std::string& variant,
                                                const std::string& target) {
    for (const auto& [name, text] : r.files) {
      if (name != "lib.manifest.json") continue;
      nlohmann::json m = nlohmann::json::parse(text);
      for (const auto& k : m["kernels"])
        for (const auto& v : k["variants"])
          if (v["name"] == variant && v["target"] == target) return v["kernels"][0]["opts"];
    }
    return {"(no variant " + variant + ")"};
  }
  const std::string gemm =
      "dim M in 1..256 specialize 1, %16\ndim N in 1..256 specialize %16\ndim K in 1..256\n\n"
      "kernel sgemm(a: f32[M, K], b: f32[K, N]) -> (c: f32[M, N]) {\n  c = a @ b\n}\n";
};

TEST_F(TuneGenTest, TheHashIsOfTheKernelNotOfTheSpecsText) {
  std::map<std::string, std::string> plain = hashes(write("a.kiln", gemm));
  // comments, blank lines, a kernel declared before it and a dim it does not use: the same kernels
  std::map<std::string, std::string> edited = hashes(write(
      "b.kiln", "# the library's gemm\ndim L in 1..8\n\nkernel twice(x: f32[L]) -> (y: f32[L]) {\n  y = x + x\n}\n\n" +
                    gemm + "# the end\n"));
  ASSERT_EQ(plain.size(), 12u);  // 6 variants, 2 targets
  for (const auto& [key, hash] : plain) {
    EXPECT_EQ(edited[key], hash) << key;
    EXPECT_EQ(hash.size(), 16u);
  }
  EXPECT_NE(plain["sgemm cpu any"], plain["sgemm cpu M1"]);             // each variant is its own kernel
  EXPECT_EQ(plain["sgemm cpu any"], plain["sgemm x86_64-avx512 any"]);  // the kernel as scheduled, before opts
  // the kernel itself changed (its dim's range): another hash
  std::string wider = gemm;
  wider.replace(wider.find("K in 1..256"), 11, "K in 1..512");
  EXPECT_NE(hashes(write("c.kiln", wider))["sgemm cpu any"], plain["sgemm cpu any"]);
}

TEST_F(TuneGenTest, GenAppliesMatchingEntriesAndReportsStaleOnes) {
  std::string spec = write("g.kiln", gemm);
  std::map<std::string, std::string> h = hashes(spec);
  emit::GenResult plain = emit::generate(opts({spec}));
  ASSERT_TRUE(plain.ok) << plain.errors;
  // the heuristics' tile of the cpu target (16 registers of 16 bytes): 6 rows of 8 columns over
  // the largest multiple of 6 in M, and a cleanup nest for the M % 6 rows left, 2 at a time (M %
  // 16 == 0 leaves 0, 2 or 4), whose axes are numbered after the 4 of the nest that packs b's
  // blocks (pack_shared_operand)
  EXPECT_EQ(manifest_opts(plain, "sgemm[Mx16_Nx16]", "cpu"),
            (std::vector<std::string>{"LANES(1, 8)", "UPCAST(0, 6)", "THREAD(0)", "LANES(16, 8)", "UPCAST(15, 2)",
                                      "THREAD(15)"}));
  std::vector<emit::TuneEntry> db = {
      entry(h["sgemm cpu Mx16_Nx16"], "cpu", "Mx16_Nx16",
            {{Kind::Lane, 1, 16}, {Kind::Upcast, 0, 4}, {Kind::Thread, 0, 0}}),
      // the kernel as it was before an edit: its name, target and variant, another hash
      entry("0123456789abcdef", "x86_64-avx512", "Mx16_Nx16", {{Kind::Upcast, 0, 2}}),
      // another library's kernel: nothing here matches it, nothing to say
      entry("fedcba9876543210", "cpu", "any", {{Kind::Upcast, 0, 2}}),
  };
  db[0].kernel = db[1].kernel = "sgemm";
  db[2].kernel = "other";
  std::string path = write("g.db", emit::print_tune_db(db));
  emit::GenResult tuned = emit::generate(opts({spec}, path)), again = emit::generate(opts({spec}, path));
  ASSERT_TRUE(tuned.ok) << tuned.errors;
  EXPECT_EQ(manifest_opts(tuned, "sgemm[Mx16_Nx16]", "cpu"),
            (std::vector<std::string>{"LANES(1, 16)", "UPCAST(0, 4)", "THREAD(0)"}));
  // the stale entry is reported, by its line and kernel, and the heuristics' opts are kept
  EXPECT_EQ(manifest_opts(tuned, "sgemm[Mx16_Nx16]", "x86_64-avx512"),
            manifest_opts(plain, "sgemm[Mx16_Nx16]", "x86_64-avx512"));
  // (line 3: the header is two lines, and its hash sorts first)
  EXPECT_EQ(tuned.warnings, path +
                                ":3: warning: the entry for kernel 'sgemm' (Mx16_Nx16, x86_64-avx512) is for another "
                                "version of it (hash 0123456789abcdef, now " +
                                h["sgemm x86_64-avx512 Mx16_Nx16"] +
                                "): ignored, the heuristics' opts are used (run kiln tune again)\n");
  // every other variant as without the database; the same bytes on every run
  EXPECT_EQ(manifest_opts(tuned, "sgemm[any]", "cpu"), manifest_opts(plain, "sgemm[any]", "cpu"));
  ASSERT_EQ(tuned.files.size(), again.files.size());
  for (size_t i = 0; i < tuned.files.size(); ++i) EXPECT_EQ(tuned.files[i], again.files[i]) << tuned.files[i].first;
}

TEST_F(TuneGenTest, AnEntryWhoseOptsDoNotApplyIsReportedNotUsed) {
  std::string spec = write("g.kiln", gemm);
  std::map<std::string, std::string> h = hashes(spec);
  emit::TuneEntry e = entry(h["sgemm cpu any"], "cpu", "any", {{Kind::Upcast, 7, 4}});
  e.kernel = "sgemm";
  std::string path = write("bad_opts.db", emit::print_tune_db({e}));
  emit::GenResult r = emit::generate(opts({spec}, path));
  ASSERT_TRUE(r.ok) << r.errors;
  EXPECT_NE(r.warnings.find("the entry for kernel 'sgemm' (any, cpu) does not apply (no range with axis 7)"),
            std::string::npos)
      << r.warnings;
}

TEST_F(TuneGenTest, AMalformedDatabaseIsAnError) {
  std::string spec = write("g.kiln", gemm);
  std::string path = write("broken.db", "# ok\n0123456789abcdef cpu any kernel=sgemm opts=UPCAST(0,8) block=-4\n");
  emit::GenResult r = emit::generate(opts({spec}, path));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.errors, path + ":2:62: error: expected a block size (0 or more), got '-4'\n");
  r = emit::generate(opts({spec}, path + ".missing"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.errors.find(path + ".missing"), std::string::npos) << r.errors;
}

// The heuristics' own opts, given as tuned opts, make the heuristics' kernel: the rewrites around
// the opts are the same, so a database changes only what the search chose. (At shapes the
// heuristics tile whole: where they cut a kernel into a tile and cleanup nests, the opts they
// report are each nest's, which no one list of opts on the whole kernel reproduces.)
TEST(TunedOpts, TheHeuristicsChoiceGivenExplicitlyIsTheHeuristicsKernel) {
  testing_programs::ProgramInputs p;
  for (auto [m, k, n] : {std::tuple{48, 64, 64}, {5, 13, 3}, {96, 1024, 64}, {1, 512, 48}}) {
    Tensor a = p.input("a", {m, k}), b = p.input("b", {k, n});
    schedule::Schedule s =
        schedule::schedule(p.ins, std::vector<Tensor>{a.matmul(b)}, "p" + std::to_string(p.programs++));
    p.ins.clear();
    const UOp* ast = s.kernels.at(0).ast;
    for (const char* t : {"cpu", "x86_64-avx2", "x86_64-avx512"}) {
      const UOp *before = nullptr, *heuristic = nullptr;
      std::vector<std::string> chosen;
      codegen::PipelineOptions po;
      po.target = target::find(t);
      po.applied_opts = &chosen;
      po.after_stage = [&](std::string_view stage, const UOp* u) {
        if (stage == "simplify ranges") before = u;
        if (stage == "apply opts") heuristic = u;
      };
      std::string want = codegen::compile_to_c(ast, s.vars, po).source;
      codegen::TunedOpts given;
      for (const std::string& o : chosen) given.opts.push_back(*codegen::parse_opt(o));
      bool found = false;
      for (int64_t block : {0, 64}) {
        given.reduce_block = block;
        const UOp* u = codegen::apply_tuned_opts(before, given);
        if (u != heuristic) continue;
        found = true;
        codegen::PipelineOptions tuned;
        tuned.target = po.target;
        tuned.tuned = given;
        EXPECT_EQ(codegen::compile_to_c(ast, s.vars, tuned).source, want) << m << "x" << k << "x" << n << " " << t;
      }
      EXPECT_TRUE(found) << m << "x" << k << "x" << n << " " << t;
    }
  }
}

TEST(TunedOpts, AnOptThatDoesNotApplyIsAnOptError) {
  testing_programs::ProgramInputs p;
  Tensor a = p.input("a", {8, 8}), b = p.input("b", {8, 8});
  schedule::Schedule s = schedule::schedule(p.ins, std::vector<Tensor>{a.matmul(b)}, "p");
  codegen::PipelineOptions po;
  po.tuned = codegen::TunedOpts{{{Kind::Upcast, 0, 3}}, 0};
  EXPECT_THROW(codegen::compile_to_c(s.kernels[0].ast, s.vars, po), codegen::OptError);
  po.tuned = codegen::TunedOpts{{{Kind::Upcast, 0, 4}}, 0};
  EXPECT_NO_THROW(codegen::compile_to_c(s.kernels[0].ast, s.vars, po));
}

}  // namespace
}  // namespace kiln
