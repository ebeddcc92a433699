#include "backend/cuda/common.cuh"
#include "backend/cuda/gated_activation.cuh"

namespace llmhost::cuda {
namespace {

// act(gate) in double, rounded to f32 (the CPU's arithmetic), times up.
__device__ __forceinline__ float GatedOne(bool gelu, float g, float u) {
  const double v = g;
  float a;
  if (gelu) {
    constexpr double kSqrt2OverPi = 0.7978845608028654;
    a = static_cast<float>(0.5 * v * (1.0 + tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v))));
  } else {
    a = static_cast<float>(v / (1.0 + exp(-v)));
  }
  return a * u;
}

__global__ void GatedKernel(bool gelu, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                            int64_t cols, float* out, int64_t out_stride) {
  WaitForPriorGrid();
  const int64_t r = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  out[r * out_stride + c] = GatedOne(gelu, gate[r * gate_stride + c], up[r * up_stride + c]);
}

// Four columns a thread with 16-byte loads and stores (cols, strides and
// pointers multiples of 4 floats): a prompt's gate/up rows are ~1.4 GB a
// layer at 8K tokens, and an element a thread left much of the bandwidth.
__global__ void GatedX4Kernel(bool gelu, const float4* gate, int64_t gate_stride4, const float4* up,
                              int64_t up_stride4, int64_t cols4, float4* out, int64_t out_stride4) {
  WaitForPriorGrid();
  const int64_t r = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= cols4) return;
  const float4 g = gate[r * gate_stride4 + c], u = up[r * up_stride4 + c];
  out[r * out_stride4 + c] = make_float4(GatedOne(gelu, g.x, u.x), GatedOne(gelu, g.y, u.y), GatedOne(gelu, g.z, u.z),
                                         GatedOne(gelu, g.w, u.w));
}

}  // namespace

void LaunchGatedActivation(Activation act, const float* gate, int64_t gate_stride, const float* up,
                           int64_t up_stride, int64_t rows, int64_t cols, float* out, int64_t out_stride,
                           cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  const bool gelu = act == Activation::kGeluTanh;
  if (cols % 4 == 0 && gate_stride % 4 == 0 && up_stride % 4 == 0 && out_stride % 4 == 0 && Aligned16(gate) &&
      Aligned16(up) && Aligned16(out)) {
    const dim3 grid(static_cast<unsigned>(rows), Blocks(cols / 4, 256));
    LaunchPdl(GatedX4Kernel, grid, 256, 0, s, gelu, reinterpret_cast<const float4*>(gate), gate_stride / 4,
              reinterpret_cast<const float4*>(up), up_stride / 4, cols / 4, reinterpret_cast<float4*>(out),
              out_stride / 4);
    return;
  }
  const dim3 grid(static_cast<unsigned>(rows), Blocks(cols, 256));
  LaunchPdl(GatedKernel, grid, 256, 0, s, gelu, gate, gate_stride, up, up_stride, cols, out,
            out_stride);
}

}  // namespace llmhost::cuda
