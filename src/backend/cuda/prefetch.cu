// A decode step's GEMVs stream weights from DRAM, but between them run
// kernels that hardly touch it (norms, RoPE, attention over a short
// context, the merge, the gated activation): DRAM idles there. A prefetch
// of the next weight's first rows into L2, issued as those kernels start,
// lets the GEMV's first blocks read from L2 while DRAM keeps streaming.
#include "backend/cuda/common.cuh"
#include "backend/cuda/prefetch.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 128;
constexpr size_t kPiece = 64 * 1024;  // bytes a bulk prefetch asks for

__global__ void __launch_bounds__(kThreads) PrefetchL2Kernel(const char* p, size_t bytes) {
  // After the kernel before: a prefetch during the previous GEMV would
  // compete with its reads.
  WaitForPriorGrid();
  for (size_t off = (size_t{blockIdx.x} * kThreads + threadIdx.x) * kPiece; off < bytes;
       off += size_t{gridDim.x} * kThreads * kPiece) {
    const size_t n = bytes - off < kPiece ? bytes - off : kPiece;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + off), "r"(static_cast<unsigned>(n & ~size_t{15}))
                 : "memory");
#else
    for (size_t b = 0; b < n; b += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off + b));
#endif
  }
}

}  // namespace

void LaunchPrefetchL2(const void* p, size_t bytes, cudaStream_t s) {
  bytes &= ~size_t{15};
  if (p == nullptr || bytes == 0) return;
  const size_t pieces = (bytes + kPiece - 1) / kPiece;
  const unsigned blocks = static_cast<unsigned>((pieces + kThreads - 1) / kThreads);
  LaunchPdl(PrefetchL2Kernel, dim3(blocks), dim3(kThreads), 0, s, static_cast<const char*>(p), bytes);
}

}  // namespace llmhost::cuda
