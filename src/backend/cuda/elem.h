// The element types the CUDA kernels are instantiated for (weights on the
// device, K/V rows), in a header plain C++ can include.
#pragma once

#include <cstdint>

#include "formats/dtype.h"

namespace llmhost::cuda {

enum class Elem { kF32, kF16, kBF16, kF8 };  // kF8: e4m3, K/V rows only

// How a weight is stored on the device: as the file stores it (16/32-bit
// floats, MLX affine bit streams, GGUF blocks), read by the kernels in place.
enum class WFmt { kF32, kF16, kBF16, kMlx, kQ8_0, kQ4_0, kQ4_K, kQ6_K, kFp8 };

// A weight matrix as the kernels take it (device addresses; by value).
struct DevWeight {
  WFmt fmt = WFmt::kF32;
  const void* data = nullptr;
  const void* scales = nullptr;  // kMlx, kFp8: [rows, cols / group_size] of scale_type
  const void* biases = nullptr;
  Elem scale_type = Elem::kBF16;
  int bits = 0;
  int group_size = 0;
  int64_t rows = 0, cols = 0;
  int64_t row_bytes = 0;  // bytes of one stored row (kMlx and the GGUF blocks)
  const int32_t* col_order = nullptr;  // WeightMatrix::col_order, on the device
};

inline Elem ElemOf(DType t) {
  return t == DType::kBF16 ? Elem::kBF16 : t == DType::kF16 ? Elem::kF16 : t == DType::kF8_E4M3 ? Elem::kF8 : Elem::kF32;
}

inline unsigned Blocks(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// Whether a pointer may be read or written 16 bytes at a time.
inline bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace llmhost::cuda
