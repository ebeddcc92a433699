#include "backend/cuda/matmul.cuh"
#include "backend/cuda/weight_load.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kWarps = 8;   // weight rows per block, one per warp
constexpr int kTokens = 8;  // tokens per block (each weight element loaded once for them)

// grid (ceil(rows / kWarps), ceil(n / kTokens)). Each lane sums columns
// lane, lane + 32, ... in order, then the warp's butterfly: the same bits for
// a token whatever n is (and as GroupedMatMulKernel's).
template <WFmt F>
__global__ void MatMulKernel(DevWeight w, const float* x, int64_t n, float* y) {
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokens;
  if (r >= w.rows) return;
  const int nt = n - t0 < kTokens ? static_cast<int>(n - t0) : kTokens;
  const int64_t cols = w.cols;
  float acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) {
    const float wv = LoadW<F>(w, r, c);
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t < nt) acc[t] = fmaf(wv, x[(t0 + t) * cols + c], acc[t]);
    }
  }
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t < nt) {
      const float v = WarpSum(acc[t]);
      if (lane == 0) y[(t0 + t) * w.rows + r] = v;
    }
  }
}

// grid (ceil(rows / kWarps), n): one token per block column.
template <WFmt F>
__global__ void GroupedMatMulKernel(const DevWeight* table, const int32_t* sel, int64_t sel_stride, int64_t rows,
                                    int64_t cols, const float* x, float* y) {
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t t = blockIdx.y;
  if (r >= rows) return;
  const int32_t e = sel[t * sel_stride];
  if (e < 0) return;
  const DevWeight w = table[e];
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) acc = fmaf(LoadW<F>(w, r, c), x[t * cols + c], acc);
  acc = WarpSum(acc);
  if (lane == 0) y[t * rows + r] = acc;
}

// Eight consecutive activations (16-byte loads where x's rows are aligned:
// the same values either way).
template <bool XVec>
__device__ __forceinline__ void LoadX8(const float* p, float (&out)[8]) {
  if constexpr (XVec) {
    const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
    out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
    out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) out[j] = p[j];
  }
}

// Row r against nt (≤ T) token rows of x (row stride cols), for WideRows
// weights: each lane sums its 8-column chunks lane, lane + 32, ... in column
// order; the caller's butterfly ends the sum. A token's bits depend on its
// own row only.
template <WFmt F, bool XVec, int T>
__device__ __forceinline__ void WideDot(const DevWeight& w, int64_t r, const float* x, int nt, float (&acc)[T]) {
  const int lane = threadIdx.x & 31;
  const int64_t cols = w.cols;
#pragma unroll 2
  for (int64_t c = 8 * lane; c < cols; c += 8 * 32) {
    float wv[8];
    LoadW8<F>(w, r, c, wv);
#pragma unroll
    for (int t = 0; t < T; ++t) {
      if (t < nt) {
        float xv[8];
        LoadX8<XVec>(x + t * cols + c, xv);
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[t] = fmaf(wv[j], xv[j], acc[t]);
      }
    }
  }
}

// MatMulKernel's grid, WideDot's sums.
template <WFmt F, bool XVec>
__global__ void MatMulWideKernel(DevWeight w, const float* x, int64_t n, float* y) {
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokens;
  if (r >= w.rows) return;
  const int nt = n - t0 < kTokens ? static_cast<int>(n - t0) : kTokens;
  float acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;
  WideDot<F, XVec>(w, r, x + t0 * w.cols, nt, acc);
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t < nt) {
      const float v = WarpSum(acc[t]);
      if (lane == 0) y[(t0 + t) * w.rows + r] = v;
    }
  }
}

// GroupedMatMulKernel's grid, WideDot's sums (the same bits as MatMulWideKernel).
template <WFmt F, bool XVec>
__global__ void GroupedMatMulWideKernel(const DevWeight* table, const int32_t* sel, int64_t sel_stride, int64_t rows,
                                        const float* x, float* y) {
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t t = blockIdx.y;
  if (r >= rows) return;
  const int32_t e = sel[t * sel_stride];
  if (e < 0) return;
  const DevWeight w = table[e];
  float acc[1] = {0.0f};
  WideDot<F, XVec>(w, r, x + t * w.cols, 1, acc);
  const float v = WarpSum(acc[0]);
  if (lane == 0) y[t * rows + r] = v;
}

// Whether `w`'s rows go through WideDot: a property of the weight alone, so
// a token's sums never depend on the launch.
bool WideRows(const DevWeight& w) {
  if (w.cols % 8 != 0) return false;
  if (w.fmt == WFmt::kMlx) return w.group_size % 8 == 0;
  return true;
}

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Instantiates `body.template operator()<XVec>()`.
template <typename Body>
void ForXVec(bool vec, Body&& body) {
  if (vec) {
    body.template operator()<true>();
  } else {
    body.template operator()<false>();
  }
}

}  // namespace

constexpr int64_t kMaxGridY = 65535;

void LaunchMatMul(const DevWeight& w, const float* x, int64_t n, float* y, cudaStream_t s) {
  if (n <= 0 || w.rows <= 0) return;
  // Token ranges within gridDim.y's limit (a row's sum does not depend on the range).
  for (int64_t t0 = 0; t0 < n; t0 += kMaxGridY * kTokens) {
    const int64_t m = n - t0 < kMaxGridY * kTokens ? n - t0 : kMaxGridY * kTokens;
    const dim3 grid(Blocks(w.rows, kWarps), Blocks(m, kTokens));
    const float* xs = x + t0 * w.cols;
    float* ys = y + t0 * w.rows;
    ForFormat(w.fmt, [&]<WFmt F>() {
      if (WideRows(w)) {
        ForXVec(Aligned16(xs), [&]<bool XVec>() { MatMulWideKernel<F, XVec><<<grid, kWarps * 32, 0, s>>>(w, xs, m, ys); });
      } else {
        MatMulKernel<F><<<grid, kWarps * 32, 0, s>>>(w, xs, m, ys);
      }
    });
  }
}

void LaunchGroupedMatMul(const DevWeight& like, const DevWeight* table, const int32_t* sel, int64_t sel_stride,
                         const float* x, int64_t n, float* y, cudaStream_t s) {
  if (n <= 0 || like.rows <= 0) return;
  for (int64_t t0 = 0; t0 < n; t0 += kMaxGridY) {
    const int64_t m = n - t0 < kMaxGridY ? n - t0 : kMaxGridY;
    const dim3 grid(Blocks(like.rows, kWarps), static_cast<unsigned>(m));
    const float* xs = x + t0 * like.cols;
    float* ys = y + t0 * like.rows;
    ForFormat(like.fmt, [&]<WFmt F>() {
      if (WideRows(like)) {
        ForXVec(Aligned16(xs), [&]<bool XVec>() {
          GroupedMatMulWideKernel<F, XVec><<<grid, kWarps * 32, 0, s>>>(table, sel + t0 * sel_stride, sel_stride,
                                                                          like.rows, xs, ys);
        });
      } else {
        GroupedMatMulKernel<F><<<grid, kWarps * 32, 0, s>>>(table, sel + t0 * sel_stride, sel_stride, like.rows,
                                                            like.cols, xs, ys);
      }
    });
  }
}

}  // namespace llmhost::cuda
