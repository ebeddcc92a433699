#include "backend/cuda/common.cuh"
#include "backend/cuda/dequantize.cuh"
#include "backend/cuda/weight_load.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 256;

// A thread widens 8 consecutive columns of a row into one 16-byte store.
template <WFmt F>
__global__ void __launch_bounds__(kThreads) DequantizeBf16Kernel(DevWeight w, uint4* out) {
  WaitForPriorGrid();
  const int64_t per_row = w.cols / 8;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= w.rows * per_row) return;
  const int64_t r = i / per_row, c = (i % per_row) * 8;
  uint32_t packed[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t lo = F32ToBf16Bits(LoadW<F>(w, r, c + 2 * j));
    const uint32_t hi = F32ToBf16Bits(LoadW<F>(w, r, c + 2 * j + 1));
    packed[j] = lo | (hi << 16);
  }
  out[i] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
}

}  // namespace

bool DequantizableToBf16(const DevWeight& w) {
  switch (w.fmt) {
    case WFmt::kMlx:
    case WFmt::kFp8:
    case WFmt::kQ8_0:
    case WFmt::kQ4_0:
    case WFmt::kQ4_K:
    case WFmt::kQ6_K: return w.cols % 8 == 0 && w.rows > 0;
    default: return false;
  }
}

void LaunchDequantizeBf16(const DevWeight& w, uint16_t* out, cudaStream_t s) {
  const unsigned blocks = Blocks(w.rows * (w.cols / 8), kThreads);
  auto* o = reinterpret_cast<uint4*>(out);
  switch (w.fmt) {
    case WFmt::kMlx: LaunchPdl(DequantizeBf16Kernel<WFmt::kMlx>, blocks, kThreads, 0, s, w, o); break;
    case WFmt::kFp8: LaunchPdl(DequantizeBf16Kernel<WFmt::kFp8>, blocks, kThreads, 0, s, w, o); break;
    case WFmt::kQ8_0: LaunchPdl(DequantizeBf16Kernel<WFmt::kQ8_0>, blocks, kThreads, 0, s, w, o); break;
    case WFmt::kQ4_0: LaunchPdl(DequantizeBf16Kernel<WFmt::kQ4_0>, blocks, kThreads, 0, s, w, o); break;
    case WFmt::kQ4_K: LaunchPdl(DequantizeBf16Kernel<WFmt::kQ4_K>, blocks, kThreads, 0, s, w, o); break;
    case WFmt::kQ6_K: LaunchPdl(DequantizeBf16Kernel<WFmt::kQ6_K>, blocks, kThreads, 0, s, w, o); break;
    default: break;
  }
}

}  // namespace llmhost::cuda
