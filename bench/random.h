// What the benchmarks share: inputs, random and never zero-filled, the same every run.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace kiln::bench {

// n floats uniform in [-1, 1), from `seed`
inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace kiln::bench
