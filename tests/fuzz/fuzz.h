// What the fuzz targets share (tests/fuzz/fuzz_*.cpp, libFuzzer; scripts/fuzz.sh runs them). Each
// target feeds its input through the function the kiln CLI calls for that input, as the CLI
// calls it: on a thread with the CLI's 1 GiB stack, with stdout and stderr silenced (set
// KILN_FUZZ_VERBOSE=1 to see them when replaying an input). A crash, a leak, undefined behaviour,
// a hang or a blow-up is libFuzzer's finding; an internal error (what the CLI reports with exit 70)
// or a user error without a message is the target's, and aborts the same way.
#pragma once

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <streambuf>
#include <string>

#include "generator/ir/uop.h"

namespace kiln::fuzz {

// stdout and stderr into nothing while it lives (std::cout and std::cerr are what the CLI writes),
// counting what stderr got: a failure must say why
class Quiet {
 public:
  Quiet() {
    if (std::getenv("KILN_FUZZ_VERBOSE")) {
      err_bytes_.n = 1;  // not counted: taken as said
      return;
    }
    out_ = std::cout.rdbuf(&null_);
    err_ = std::cerr.rdbuf(&err_bytes_);
  }
  // bytes written to stderr so far
  std::streamsize err_bytes() const { return err_bytes_.n; }
  ~Quiet() {
    if (out_) std::cout.rdbuf(out_);
    if (err_) std::cerr.rdbuf(err_);
  }
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

 private:
  struct Null : std::streambuf {
    std::streamsize n = 0;
    int overflow(int c) override { return ++n, c; }
    std::streamsize xsputn(const char*, std::streamsize k) override { return n += k, k; }
  } null_, err_bytes_;
  std::streambuf* out_ = nullptr;
  std::streambuf* err_ = nullptr;
};

// The target's own finding: printed (libFuzzer saves the input when the process aborts)
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "kiln fuzz: finding: %s\n", what.c_str());
  std::abort();
}

// f() on a thread with the CLI's stack (generator/tools/kiln.cpp: 1 GiB, reserved, committed as
// touched), every exception the CLI would turn into exit 70 a finding
template <class F> void run_as_cli(F f) {
  struct Call {
    F* f;
  } call{&f};
  auto body = [](void* p) -> void* {
    F& fn = *static_cast<Call*>(p)->f;
    try {
      fn();
    } catch (const kiln::InternalError& e) {
      finding(std::string("internal error: ") + e.what());
    } catch (const std::bad_alloc&) {
      finding("out of memory");
    } catch (const std::exception& e) {
      finding(std::string("an exception the CLI reports as an internal error: ") + e.what());
    } catch (...) {
      finding("an unknown exception");
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, size_t(1) << 30) != 0 ||
      pthread_create(&thread, &attr, body, &call) != 0)
    finding("no thread with a 1 GiB stack");
  pthread_attr_destroy(&attr);
  pthread_join(thread, nullptr);
}

}  // namespace kiln::fuzz
