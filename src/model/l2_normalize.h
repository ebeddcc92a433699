// Scaling a vector to unit L2 norm: the embedders' convention, and what a
// truncated embedding (the APIs' `dimensions`) is renormalized with.
#pragma once

#include <cmath>
#include <vector>

namespace llmhost {

// Unchanged when all zeros. Sums in double.
inline void L2Normalize(std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0) return;
  const float inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (float& x : v) x *= inv;
}

}  // namespace llmhost
