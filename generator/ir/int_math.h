// Integer helpers that are exact over the whole int64 range.
#pragma once

#include <cstdint>

namespace kiln {

// gcd(a, b) >= 0 for every pair of int64s. std::gcd's |INT64_MIN| overflows (undefined); a gcd of
// 2^63, which int64 cannot hold, is given as 1: a common divisor all the same, so every use stays sound.
inline int64_t safe_gcd(int64_t a, int64_t b) {
  auto magnitude = [](int64_t x) { return x < 0 ? uint64_t(0) - uint64_t(x) : uint64_t(x); };
  uint64_t x = magnitude(a), y = magnitude(b);
  while (y != 0) {
    uint64_t r = x % y;
    x = y;
    y = r;
  }
  return x > uint64_t(INT64_MAX) ? 1 : int64_t(x);
}

}  // namespace kiln
