// kSanitized: whether this test is built with AddressSanitizer (GCC's and Clang's spellings), where
// an OpenCL platform's uninstrumented LLVM (PoCL) cannot run.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif
