#include "backend/cuda/common.cuh"
#include "backend/cuda/gated_activation.cuh"

namespace llmhost::cuda {
namespace {

__global__ void GatedKernel(bool gelu, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                            int64_t cols, float* out, int64_t out_stride) {
  WaitForPriorGrid();
  const int64_t r = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const double v = gate[r * gate_stride + c];
  float a;
  if (gelu) {
    constexpr double kSqrt2OverPi = 0.7978845608028654;
    a = static_cast<float>(0.5 * v * (1.0 + tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v))));
  } else {
    a = static_cast<float>(v / (1.0 + exp(-v)));
  }
  out[r * out_stride + c] = a * up[r * up_stride + c];
}

}  // namespace

void LaunchGatedActivation(Activation act, const float* gate, int64_t gate_stride, const float* up,
                           int64_t up_stride, int64_t rows, int64_t cols, float* out, int64_t out_stride,
                           cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 grid(static_cast<unsigned>(rows), Blocks(cols, 256));
  LaunchPdl(GatedKernel, grid, 256, 0, s, act == Activation::kGeluTanh, gate, gate_stride, up, up_stride, cols, out,
            out_stride);
}

}  // namespace llmhost::cuda
