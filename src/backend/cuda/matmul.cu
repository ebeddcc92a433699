#include "backend/cuda/common.cuh"
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
  WaitForPriorGrid();
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

// The wide kernels: one block of kRowThreads per (RowsPerBlock weight rows,
// up to T tokens). A row is cut into chunks of CW columns, one 16-byte load
// each where the format allows (CW = 8: f16/bf16 rows, MLX 8-bit words, GGUF
// Q8_0/Q4_0; CW = 32: MLX 4-bit, 32 nibbles); thread i sums chunks i,
// i + kRowThreads, ... of each row in column order (16-bit rows: 4 chunks
// loaded before they are summed; MLX 4-bit: one chunk of each of 4 rows), so
// that enough bytes are in flight to stream the weights near the memory's
// bandwidth; then each warp's butterfly and the warps' sums in warp order. A
// token's bits depend on the weight's shape and its own row only: never on
// n, T or where it sits in the batch.
constexpr int kRowThreads = 128;
constexpr int64_t kMaxGridY = 65535;

// Rows per block of the wide kernel: MLX 4-bit rows are a quarter of a
// 16-bit row's bytes, so a block takes four of them (the same bytes in
// flight, each x chunk loaded once for the four).
template <int CW>
constexpr int RowsPerBlock() {
  return CW == 32 ? 4 : 1;
}

// Rows r0 .. r0 + R - 1 (those < w.rows) against nt (≤ T) token rows of x
// (row stride cols); the sums land in thread 0's `out`. A: 8-column chunks a
// thread loads before it sums them (its chunks in order whatever A is: the
// same sums). One token takes one at a time: FP8 decode b1 of the
// Llama-3-8B shape 111.8 -> 121.0 tok/s on an H100 against 4 (2: 115.0).
template <WFmt F, bool XVec, int T, int CW, int A = 4>
__device__ __forceinline__ void RowDot(const DevWeight& w, int64_t r0, const float* x, int nt,
                                       float (&out)[RowsPerBlock<CW>()][T]) {
  constexpr int R = RowsPerBlock<CW>();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t cols = w.cols, chunks = cols / CW;
  float acc[R][T];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
#pragma unroll
    for (int t = 0; t < T; ++t) acc[rr][t] = 0.0f;
  }
  if constexpr (CW == 8) {
    constexpr int kAhead = A;
    for (int64_t k0 = tid; k0 < chunks; k0 += kRowThreads * kAhead) {
      float wv[kAhead][8];
#pragma unroll
      for (int a = 0; a < kAhead; ++a) {
        if (k0 + a * kRowThreads < chunks) LoadW8<F>(w, r0, (k0 + a * kRowThreads) * 8, wv[a]);
      }
#pragma unroll
      for (int a = 0; a < kAhead; ++a) {
        const int64_t c = (k0 + a * kRowThreads) * 8;
        if (c >= cols) break;
#pragma unroll
        for (int t = 0; t < T; ++t) {
          if (t < nt) {
            float xv[8];
            LoadX8<XVec>(x + t * cols + c, xv);
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[0][t] = fmaf(wv[a][j], xv[j], acc[0][t]);
          }
        }
      }
    }
  } else {  // MLX 4-bit: a chunk is one 16-byte load of 32 nibbles, in one group (one scale and bias)
    const int64_t groups = cols / w.group_size;
    for (int64_t k = tid; k < chunks; k += kRowThreads) {
      const int64_t c = k * 32;
      uint4 q[R];
      float scale[R], bias[R];
#pragma unroll
      for (int rr = 0; rr < R; ++rr) {
        q[rr] = make_uint4(0, 0, 0, 0);
        scale[rr] = bias[rr] = 0.0f;
        if (r0 + rr < w.rows) {
          q[rr] = __ldg(reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(w.data) + (r0 + rr) * w.row_bytes +
                                                       c / 2));
          const int64_t g = (r0 + rr) * groups + c / w.group_size;
          scale[rr] = ScaleAt(w.scales, w.scale_type, g);
          bias[rr] = ScaleAt(w.biases, w.scale_type, g);
        }
      }
#pragma unroll
      for (int j0 = 0; j0 < 32; j0 += 8) {
        // LoadW's arithmetic: scale * q + bias, rounded twice.
        float dq[R][8];
#pragma unroll
        for (int rr = 0; rr < R; ++rr) {
          const uint32_t word = j0 == 0 ? q[rr].x : j0 == 8 ? q[rr].y : j0 == 16 ? q[rr].z : q[rr].w;
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            dq[rr][j] = __fadd_rn(__fmul_rn(scale[rr], static_cast<float>((word >> (4 * j)) & 15u)), bias[rr]);
          }
        }
#pragma unroll
        for (int t = 0; t < T; ++t) {
          if (t < nt) {
            float xv[8];
            LoadX8<XVec>(x + t * cols + c + j0, xv);
#pragma unroll
            for (int rr = 0; rr < R; ++rr) {
#pragma unroll
              for (int j = 0; j < 8; ++j) acc[rr][t] = fmaf(dq[rr][j], xv[j], acc[rr][t]);
            }
          }
        }
      }
    }
  }
  __shared__ float part[kRowThreads / 32][R][T];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float v = WarpSum(acc[rr][t]);
      if (lane == 0) part[warp][rr][t] = v;
    }
  }
  __syncthreads();
  if (tid == 0) {
#pragma unroll
    for (int rr = 0; rr < R; ++rr) {
#pragma unroll
      for (int t = 0; t < T; ++t) {
        float v = part[0][rr][t];
#pragma unroll
        for (int i = 1; i < kRowThreads / 32; ++i) v += part[i][rr][t];
        out[rr][t] = v;
      }
    }
  }
}

// The weights of one wide launch: their blocks follow one another in the
// grid (weight i's first block is first[i]), each with its own y.
struct WideWeights {
  DevWeight w[kMaxFusedWeights];
  float* y[kMaxFusedWeights];
  int64_t first[kMaxFusedWeights + 1];
  int count = 0;
};

// grid (Σ blocks, ceil(n / T)): a block takes RowsPerBlock rows of one weight.
template <WFmt F, bool XVec, int T, int CW, int A = 4>
__global__ void __launch_bounds__(kRowThreads) MatMulWideKernel(WideWeights ws, const float* x, int64_t n) {
  WaitForPriorGrid();
  constexpr int R = RowsPerBlock<CW>();
  int i = 0;
  while (i + 1 < ws.count && blockIdx.x >= ws.first[i + 1]) ++i;
  const DevWeight& w = ws.w[i];
  const int64_t r0 = (blockIdx.x - ws.first[i]) * R, t0 = static_cast<int64_t>(blockIdx.y) * T;
  const int nt = n - t0 < T ? static_cast<int>(n - t0) : T;
  float out[R][T];
  RowDot<F, XVec, T, CW, A>(w, r0, x + t0 * w.cols, nt, out);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int rr = 0; rr < R; ++rr) {
#pragma unroll
      for (int t = 0; t < T; ++t) {
        if (t < nt && r0 + rr < w.rows) ws.y[i][(t0 + t) * w.rows + r0 + rr] = out[rr][t];
      }
    }
  }
}

// grid (ceil(rows / RowsPerBlock), n): token t's rows of table[sel[t * sel_stride]] (RowDot's bits).
template <WFmt F, bool XVec, int CW>
__global__ void __launch_bounds__(kRowThreads) GroupedMatMulWideKernel(const DevWeight* table, const int32_t* sel,
                                                                       int64_t sel_stride, int64_t rows, const float* x,
                                                                       float* y) {
  constexpr int R = RowsPerBlock<CW>();
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * R, t = blockIdx.y;
  const int32_t e = sel[t * sel_stride];
  if (e < 0) return;
  const DevWeight w = table[e];
  float out[R][1];
  RowDot<F, XVec, 1, CW>(w, r0, x + t * w.cols, 1, out);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int rr = 0; rr < R; ++rr) {
      if (r0 + rr < rows) y[t * rows + r0 + rr] = out[rr][0];
    }
  }
}

// Columns per chunk of a wide weight: 32 for MLX 4-bit whose groups hold
// whole 32-column chunks, else 8.
int ChunkCols(const DevWeight& w) {
  return w.fmt == WFmt::kMlx && w.bits == 4 && w.group_size % 32 == 0 && w.cols % 32 == 0 ? 32 : 8;
}

// Instantiates `body.template operator()<CW>()`.
template <typename Body>
void ForChunkCols(int cw, Body&& body) {
  if (cw == 32) {
    body.template operator()<32>();
  } else {
    body.template operator()<8>();
  }
}

// Whether `w`'s rows go through the wide kernels: a property of the weight alone, so
// a token's sums never depend on the launch.
bool WideRows(const DevWeight& w) {
  if (w.cols % 8 != 0) return false;
  if (w.fmt == WFmt::kMlx || w.fmt == WFmt::kFp8) return w.group_size % 8 == 0;
  return true;
}

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


namespace {

// One launch of the wide kernel over ws (their format, cols and chunking agree).
void LaunchWide(WideWeights& ws, const float* x, int64_t n, cudaStream_t s) {
  const DevWeight& w0 = ws.w[0];
  ws.first[0] = 0;
  const int rows_per_block = ChunkCols(w0) == 32 ? RowsPerBlock<32>() : RowsPerBlock<8>();
  for (int i = 0; i < ws.count; ++i) ws.first[i + 1] = ws.first[i] + (ws.w[i].rows + rows_per_block - 1) / rows_per_block;
  // Tokens per block: the fewest that hold n (bits do not depend on it), so
  // one generated row pays for one accumulator.
  const int64_t per_block = n == 1 ? 1 : n == 2 ? 2 : n <= 4 ? 4 : 8;
  float* y0[kMaxFusedWeights];
  for (int i = 0; i < ws.count; ++i) y0[i] = ws.y[i];
  // Token ranges within gridDim.y's limit (a row's sum does not depend on the range).
  for (int64_t t0 = 0; t0 < n; t0 += kMaxGridY * per_block) {
    const int64_t m = n - t0 < kMaxGridY * per_block ? n - t0 : kMaxGridY * per_block;
    const float* xs = x + t0 * w0.cols;
    for (int i = 0; i < ws.count; ++i) ws.y[i] = y0[i] + t0 * ws.w[i].rows;
    const dim3 grid(static_cast<unsigned>(ws.first[ws.count]), Blocks(m, static_cast<int>(per_block)));
    ForFormat(w0.fmt, [&]<WFmt F>() {
      ForXVec(Aligned16(xs), [&]<bool XVec>() {
        ForChunkCols(ChunkCols(w0), [&]<int CW>() {
          if constexpr (F != WFmt::kMlx && CW == 32) {
            return;  // only MLX 4-bit has 32-column chunks
          } else {
            switch (per_block) {
              case 1: LaunchPdl(MatMulWideKernel<F, XVec, 1, CW, 1>, grid, kRowThreads, 0, s, ws, xs, m); break;
              case 2: LaunchPdl(MatMulWideKernel<F, XVec, 2, CW>, grid, kRowThreads, 0, s, ws, xs, m); break;
              case 4: LaunchPdl(MatMulWideKernel<F, XVec, 4, CW>, grid, kRowThreads, 0, s, ws, xs, m); break;
              default: LaunchPdl(MatMulWideKernel<F, XVec, 8, CW>, grid, kRowThreads, 0, s, ws, xs, m); break;
            }
          }
        });
      });
    });
  }
}

}  // namespace

void LaunchMatMul(const DevWeight& w, const float* x, int64_t n, float* y, cudaStream_t s) {
  if (n <= 0 || w.rows <= 0) return;
  if (WideRows(w)) {
    WideWeights ws;
    ws.w[0] = w;
    ws.y[0] = y;
    ws.count = 1;
    LaunchWide(ws, x, n, s);
    return;
  }
  for (int64_t t0 = 0; t0 < n; t0 += kMaxGridY * kTokens) {
    const int64_t m = n - t0 < kMaxGridY * kTokens ? n - t0 : kMaxGridY * kTokens;
    ForFormat(w.fmt, [&]<WFmt F>() {
      LaunchPdl(MatMulKernel<F>, dim3(Blocks(w.rows, kWarps), Blocks(m, kTokens)), kWarps * 32, 0, s, w,
                x + t0 * w.cols, m, y + t0 * w.rows);
    });
  }
}

bool LaunchFusedMatMul(const DevWeight* w, float* const* y, int count, const float* x, int64_t n, cudaStream_t s) {
  if (count < 1 || count > kMaxFusedWeights || !WideRows(w[0])) return false;
  WideWeights ws;
  for (int i = 0; i < count; ++i) {
    const DevWeight& a = w[i];
    const bool same = a.fmt == w[0].fmt && a.cols == w[0].cols && ChunkCols(a) == ChunkCols(w[0]) &&
                      (a.fmt != WFmt::kMlx || (a.bits == w[0].bits && a.group_size == w[0].group_size));
    if (!same || !WideRows(a) || a.rows <= 0) return false;
    ws.w[i] = a;
    ws.y[i] = y[i];
  }
  ws.count = count;
  if (n > 0) LaunchWide(ws, x, n, s);
  return true;
}

void LaunchGroupedMatMul(const DevWeight& like, const DevWeight* table, const int32_t* sel, int64_t sel_stride,
                         const float* x, int64_t n, float* y, cudaStream_t s) {
  if (n <= 0 || like.rows <= 0) return;
  for (int64_t t0 = 0; t0 < n; t0 += kMaxGridY) {
    const int64_t m = n - t0 < kMaxGridY ? n - t0 : kMaxGridY;
    const float* xs = x + t0 * like.cols;
    float* ys = y + t0 * like.rows;
    ForFormat(like.fmt, [&]<WFmt F>() {
      if (!WideRows(like)) {
        GroupedMatMulKernel<F><<<dim3(Blocks(like.rows, kWarps), static_cast<unsigned>(m)), kWarps * 32, 0, s>>>(
            table, sel + t0 * sel_stride, sel_stride, like.rows, like.cols, xs, ys);
        return;
      }
      const int rows_per_block = ChunkCols(like) == 32 ? RowsPerBlock<32>() : RowsPerBlock<8>();
      const dim3 grid(static_cast<unsigned>((like.rows + rows_per_block - 1) / rows_per_block), static_cast<unsigned>(m));
      ForXVec(Aligned16(xs), [&]<bool XVec>() {
        ForChunkCols(ChunkCols(like), [&]<int CW>() {
          if constexpr (F != WFmt::kMlx && CW == 32) {
            return;
          } else {
            GroupedMatMulWideKernel<F, XVec, CW><<<grid, kRowThreads, 0, s>>>(table, sel + t0 * sel_stride,
                                                                              sel_stride, like.rows, xs, ys);
          }
        });
      });
    });
  }
}

}  // namespace llmhost::cuda
