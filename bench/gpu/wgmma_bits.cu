// Whether Hopper's warpgroup MMA (wgmma) gives the bits of the m16n8k16
// mma.sync that the batch-invariant GEMVs use, and whether either depends on
// where a column sits in its 16-wide k group or on how many tokens (n) an
// instruction takes. Batch invariance across kernels rests on these: a GEMM
// on wgmma for a large batch may stand beside the mma.sync GEMVs only if a
// token's sums come out the same.
//
// Each block is one trial: 64 weight rows x K columns (A) and 32 tokens (B),
// bf16 with exponents spread over +-E, in shared memory. It sums A · Bᵀ over
// K in k16 steps six ways:
//   S   mma.sync, k slots in column order
//   P   mma.sync, k slots as the GEMVs deal them (mma_rows.cuh's MmaChunk)
//   R   mma.sync, k slots reversed within each 16 (a third order)
//   W8  wgmma m64n8k16, column order
//   W32 wgmma m64n32k16 (tokens 0-7 the same as W8's), column order
//   WP  wgmma m64n8k16 with A and B laid out in P's slot order
//   WR  wgmma m64n8k16, A from registers loaded as P's lanes load them, B
//       in shared memory in P's slot order (what a GEMM beside the GEMVs
//       would do)
// and the host counts the elements where two of them differ.
//   nvcc -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a bench/gpu/wgmma_bits.cu -o build/wgmma_bits
//   wgmma_bits [trials=264] [K=512] [E=8]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

constexpr int kM = 64, kN = 32, kVariants = 7;

__device__ __forceinline__ void MmaSync(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                        uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A no-swizzle K-major operand: 8 x 8 core matrices of 128 bytes, the two of
// a k16 step side by side (LBO 128 bytes), 8-row groups `sbo` bytes apart.
__device__ __forceinline__ uint64_t Desc(const void* smem, uint32_t sbo) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return static_cast<uint64_t>((a & 0x3FFFF) >> 4) | (static_cast<uint64_t>(128 >> 4) << 16) |
         (static_cast<uint64_t>(sbo >> 4) << 32);
}

__device__ __forceinline__ void Wgmma8(float (&d)[4], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db));
}

__device__ __forceinline__ void Wgmma32(float (&d)[16], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db));
}

// A from registers: each warp of the warpgroup holds 16 rows as
// mma.sync's A fragment (a0 row g, a1 row g + 8, a2, a3 the same at k + 8).
__device__ __forceinline__ void Wgmma8R(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                        uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db));
}

__device__ __forceinline__ void WgFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgCommitWait() {
  asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

// The column that the GEMVs put in k slot `slot` of a 16-column group `q`
// (0-3) of a 64-column step (mma_rows.cuh: lane c's chunk ch holds columns
// 8 (2c + ch) .. +7; group q = 2 ch + half; slots 2c, 2c+1 take the chunk's
// columns 4 half + 0, 1 and slots 2c+8, 2c+9 its columns 4 half + 2, 3).
__host__ __device__ int PermutedCol(int q, int slot) {
  const int ch = q >> 1, half = q & 1;
  const int hi = slot >= 8, c = (slot & 7) >> 1, e = slot & 1;
  return 16 * c + 8 * ch + 4 * half + 2 * hi + e;
}

// Element (row r, k) of a K-major operand in core-matrix layout.
__device__ __forceinline__ int CoreIndex(int r, int k, int K) { return ((r >> 3) * (K >> 3) + (k >> 3)) * 64 + (r & 7) * 8 + (k & 7); }

// Column of slot position k under mode: 0 column order, 1 P's order, 2 reversed.
__device__ __forceinline__ int SlotCol(int mode, int k) {
  const int base = k & ~15, slot = k & 15;
  if (mode == 0) return k;
  if (mode == 1) return (k & ~63) + PermutedCol((k >> 4) & 3, slot);
  return base + 15 - slot;
}

__global__ void Trials(const __nv_bfloat16* a, const __nv_bfloat16* b, int K, float* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __nv_bfloat16* sa = reinterpret_cast<__nv_bfloat16*>(smem);      // 64 x K, column order
  __nv_bfloat16* sb = sa + kM * K;                                 // 32 x K
  __nv_bfloat16* pa = sb + kN * K;                                 // 64 x K, P's order
  __nv_bfloat16* pb = pa + kM * K;                                 // 32 x K (8 used)
  const __nv_bfloat16* ga = a + static_cast<int64_t>(blockIdx.x) * kM * K;
  const __nv_bfloat16* gb = b + static_cast<int64_t>(blockIdx.x) * kN * K;
  for (int i = threadIdx.x; i < kM * K; i += blockDim.x) {
    const int r = i / K, k = i % K;
    sa[CoreIndex(r, k, K)] = ga[i];
    pa[CoreIndex(r, k, K)] = ga[r * K + SlotCol(1, k)];
  }
  for (int i = threadIdx.x; i < kN * K; i += blockDim.x) {
    const int r = i / K, k = i % K;
    sb[CoreIndex(r, k, K)] = gb[i];
    pb[CoreIndex(r, k, K)] = gb[r * K + SlotCol(1, k)];
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();

  const int t = threadIdx.x, warp = t >> 5, lane = t & 31, g = lane >> 2, c = lane & 3;
  // out: [trial][variant 7][64 rows][8 tokens]
  float* o = out + static_cast<int64_t>(blockIdx.x) * kVariants * kM * 8;
  auto put = [&](int v, const float (&d)[4]) {
    const int r0 = 16 * warp + g;
    o[(v * kM + r0) * 8 + 2 * c] = d[0];
    o[(v * kM + r0) * 8 + 2 * c + 1] = d[1];
    o[(v * kM + r0 + 8) * 8 + 2 * c] = d[2];
    o[(v * kM + r0 + 8) * 8 + 2 * c + 1] = d[3];
  };
  // mma.sync in three slot orders, read from the global copies.
  for (int mode = 0; mode < 3; ++mode) {
    float d[4] = {0, 0, 0, 0};
    const __nv_bfloat16* ra = ga + (16 * warp + g) * K;
    const __nv_bfloat16* rb = ga + (16 * warp + g + 8) * K;
    const __nv_bfloat16* xb = gb + g * K;
    for (int k0 = 0; k0 < K; k0 += 16) {
      auto w = [&](const __nv_bfloat16* row, int slot) {
        __nv_bfloat162 p;
        p.x = row[SlotCol(mode, k0 + slot)];
        p.y = row[SlotCol(mode, k0 + slot + 1)];
        return *reinterpret_cast<uint32_t*>(&p);
      };
      MmaSync(d, w(ra, 2 * c), w(rb, 2 * c), w(ra, 2 * c + 8), w(rb, 2 * c + 8), w(xb, 2 * c), w(xb, 2 * c + 8));
    }
    put(mode == 0 ? 0 : mode == 1 ? 1 : 2, d);
  }
  const uint32_t sbo = (K >> 3) * 128;
  {
    float d[4] = {0, 0, 0, 0};
    for (int k0 = 0; k0 < K; k0 += 16) {
      WgFence();
      Wgmma8(d, Desc(sa + (k0 >> 3) * 64, sbo), Desc(sb + (k0 >> 3) * 64, sbo));
      WgCommitWait();
    }
    put(3, d);
  }
  {
    float d[16] = {};
    for (int k0 = 0; k0 < K; k0 += 16) {
      WgFence();
      Wgmma32(d, Desc(sa + (k0 >> 3) * 64, sbo), Desc(sb + (k0 >> 3) * 64, sbo));
      WgCommitWait();
    }
    const float first[4] = {d[0], d[1], d[2], d[3]};  // tokens 0-7
    put(4, first);
  }
  {
    float d[4] = {0, 0, 0, 0};
    for (int k0 = 0; k0 < K; k0 += 16) {
      WgFence();
      Wgmma8(d, Desc(pa + (k0 >> 3) * 64, sbo), Desc(pb + (k0 >> 3) * 64, sbo));
      WgCommitWait();
    }
    put(5, d);
  }
  {
    float d[4] = {0, 0, 0, 0};
    const __nv_bfloat16* ra = ga + (16 * warp + g) * K;
    const __nv_bfloat16* rb = ga + (16 * warp + g + 8) * K;
    for (int k0 = 0; k0 < K; k0 += 16) {
      auto w = [&](const __nv_bfloat16* row, int slot) {
        __nv_bfloat162 p;
        p.x = row[SlotCol(1, k0 + slot)];
        p.y = row[SlotCol(1, k0 + slot + 1)];
        return *reinterpret_cast<uint32_t*>(&p);
      };
      const uint32_t a0 = w(ra, 2 * c), a1 = w(rb, 2 * c), a2 = w(ra, 2 * c + 8), a3 = w(rb, 2 * c + 8);
      WgFence();
      Wgmma8R(d, a0, a1, a2, a3, Desc(pb + (k0 >> 3) * 64, sbo));
      WgCommitWait();
    }
    put(6, d);
  }
}

uint16_t Bf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

}  // namespace

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::atoi(argv[1]) : 264;
  const int K = argc > 2 ? std::atoi(argv[2]) : 512;
  const int E = argc > 3 ? std::atoi(argv[3]) : 8;
  if (K % 64 != 0 || K > 512) {
    std::fprintf(stderr, "K must be a multiple of 64, at most 512 (shared memory)\n");
    return 2;
  }
  std::vector<uint16_t> ha(static_cast<size_t>(trials) * kM * K), hb(static_cast<size_t>(trials) * kN * K);
  uint64_t s = 88172645463325252ull;
  auto rnd = [&]() {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
  };
  auto value = [&]() {
    const double m = 1.0 + static_cast<double>(rnd() % 1000000) / 1e6;
    const int e = static_cast<int>(rnd() % (2 * E + 1)) - E;
    return static_cast<float>((rnd() & 1 ? -m : m) * std::ldexp(1.0, e));
  };
  for (auto& v : ha) v = Bf16Bits(value());
  for (auto& v : hb) v = Bf16Bits(value());
  __nv_bfloat16 *da, *db;
  float* dout;
  const size_t outs = static_cast<size_t>(trials) * kVariants * kM * 8;
  cudaMalloc(&da, ha.size() * 2);
  cudaMalloc(&db, hb.size() * 2);
  cudaMalloc(&dout, outs * 4);
  cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice);
  const int smem = (2 * kM + 2 * kN) * K * 2;
  cudaFuncSetAttribute(Trials, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  Trials<<<trials, 128, smem>>>(da, db, K, dout);
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    std::fprintf(stderr, "kernel: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::vector<float> out(outs);
  cudaMemcpy(out.data(), dout, outs * 4, cudaMemcpyDeviceToHost);
  const char* names[kVariants] = {"S", "P", "R", "W8", "W32", "WP", "WR"};
  const int pairs[][2] = {{0, 1}, {0, 2}, {0, 3}, {3, 4}, {1, 5}, {0, 5}, {1, 3}, {1, 6}};
  // A host f64 sum of the column-order products, to see how far each lies.
  double worst[kVariants] = {};
  for (int tr = 0; tr < trials; ++tr) {
    for (int r = 0; r < kM; ++r) {
      for (int n = 0; n < 8; ++n) {
        double ref = 0, mag = 0;
        for (int k = 0; k < K; ++k) {
          uint32_t ua = static_cast<uint32_t>(ha[(static_cast<size_t>(tr) * kM + r) * K + k]) << 16;
          uint32_t ub = static_cast<uint32_t>(hb[(static_cast<size_t>(tr) * kN + n) * K + k]) << 16;
          float fa, fb;
          std::memcpy(&fa, &ua, 4);
          std::memcpy(&fb, &ub, 4);
          ref += static_cast<double>(fa) * fb;
          mag += std::fabs(static_cast<double>(fa) * fb);
        }
        for (int v = 0; v < kVariants; ++v) {
          const double err = std::fabs(out[((static_cast<size_t>(tr) * kVariants + v) * kM + r) * 8 + n] - ref) / mag;
          if (err > worst[v]) worst[v] = err;
        }
      }
    }
  }
  std::printf("wgmma_bits: %d trials, 64 rows x 8 tokens, K %d, exponents +-%d\n", trials, K, E);
  for (auto& p : pairs) {
    int64_t diff = 0;
    for (int tr = 0; tr < trials; ++tr) {
      for (int i = 0; i < kM * 8; ++i) {
        float x = out[(static_cast<size_t>(tr) * kVariants + p[0]) * kM * 8 + i];
        float y = out[(static_cast<size_t>(tr) * kVariants + p[1]) * kM * 8 + i];
        uint32_t ux, uy;
        std::memcpy(&ux, &x, 4);
        std::memcpy(&uy, &y, 4);
        diff += ux != uy;
      }
    }
    std::printf("  %-3s vs %-3s: %lld of %lld elements differ\n", names[p[0]], names[p[1]],
                static_cast<long long>(diff), static_cast<long long>(trials) * kM * 8);
  }
  for (int v = 0; v < kVariants; ++v) std::printf("  %-3s worst |err| / sum|a b|: %.3g\n", names[v], worst[v]);
  return 0;
}
