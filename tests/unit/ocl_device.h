// The OpenCL device the tests run kernels on (tests only): the first device of the first platform,
// or null with the reason printed where the tests that need one are skipped (under the sanitizers,
// and under Bazel, whose sandbox may hide the ICD or PoCL's tools) and with the test failed
// anywhere else (CI installs PoCL).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/unit/ocl_runner.h"

namespace kiln::oclrun {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

inline Device* test_device() {
  if (kSanitized) {  // the device's compiler and its code are not instrumented: the dev build runs them
    std::cout << "OpenCL runs skipped under the sanitizers (PoCL's LLVM and the kernels it builds are not "
                 "instrumented; the dev build runs them)\n";
    return nullptr;
  }
  bool bazel = std::getenv("TEST_SRCDIR") != nullptr;
  try {
    Device& d = Device::first();
    if (bazel) {
      static const std::string probe = [&]() -> std::string {
        try {
          Program p(d, "__kernel void probe(__global int* p) { p[0] = 1; }\n");
          return "";
        } catch (const Error& e) {
          return e.what();
        }
      }();
      if (!probe.empty()) throw Unavailable("the device cannot build a program here: " + probe);
    }
    return &d;
  } catch (const Unavailable& e) {
    if (bazel) {
      std::cout << "OpenCL runs skipped under Bazel: " << e.what() << "\n";
      return nullptr;
    }
    ADD_FAILURE() << "no OpenCL device to run the kernels on: " << e.what();
    return nullptr;
  }
}

}  // namespace kiln::oclrun
