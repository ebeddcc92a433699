// Helpers shared by the benchmarks: a monotonic clock, the machine's read
// bandwidth (what decode of a memory-bound model can reach at best), and the
// load average (the development machine is shared).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_features.h"

namespace llmhost::bench {

inline double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#if defined(__x86_64__)
// Four streams at once (quarters of the slice), as the decode kernels read
// four weight rows at once; one stream alone does not reach the bandwidth.
__attribute__((target("avx2"))) inline uint64_t SumAvx2(const uint8_t* p, size_t n) {
  const size_t q = n / 4 / 64 * 64;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= q; i += 64) {
    for (int s = 0; s < 4; ++s) {
      const uint8_t* b = p + s * q + i;
      a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(b)));
      a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32)));
    }
  }
  a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), a0);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

inline uint64_t SumPlain(const uint8_t* p, size_t n) {
  const uint64_t* q = reinterpret_cast<const uint64_t*>(p);
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 4 <= n / 8; i += 4) {
    a += q[i];
    b += q[i + 1];
    c += q[i + 2];
    d += q[i + 3];
  }
  return a + b + c + d;
}

// Read bandwidth in GB/s: best of `reps` passes of `threads` threads each
// streaming its slice of 1 GiB.
inline double ReadBandwidthGBs(int threads, int reps) {
  const size_t size = size_t{1} << 30;
  uint8_t* buf = static_cast<uint8_t*>(std::aligned_alloc(4096, size));
  if (!buf) return 0;
  std::memset(buf, 1, size);
  const bool avx2 = BestCpuIsa() != CpuIsa::kScalar;  // every SIMD level has AVX2
  double best = 0;
  std::vector<uint64_t> sink(threads);
  for (int rep = 0; rep < reps; ++rep) {
    const double t0 = Now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        const size_t part = size / threads;
        const uint8_t* p = buf + part * t;
#if defined(__x86_64__)
        sink[t] = avx2 ? SumAvx2(p, part) : SumPlain(p, part);
#else
        sink[t] = SumPlain(p, part);
#endif
      });
    }
    for (auto& th : ts) th.join();
    best = std::max(best, size / (Now() - t0) / 1e9);
  }
  std::free(buf);
  return best;
}

// The first three fields of /proc/loadavg ("" when unavailable).
inline std::string LoadAverage() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return buf;
}

}  // namespace llmhost::bench
