// The element types the CUDA kernels are instantiated for (weights on the
// device, K/V rows), in a header plain C++ can include.
#pragma once

#include <cstdint>

#include "formats/dtype.h"

namespace llmhost::cuda {

enum class Elem { kF32, kF16, kBF16 };

inline Elem ElemOf(DType t) {
  return t == DType::kBF16 ? Elem::kBF16 : t == DType::kF16 ? Elem::kF16 : Elem::kF32;
}

inline unsigned Blocks(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace llmhost::cuda
