// Matmul throughput on Llama-1B-shaped matrices (hidden 2048, FFN 8192,
// vocab 32000) per weight format, next to the machine's read bandwidth.
//
//   decode n=1, n=8: one sweep over every matrix of a set of layers (q, k, v,
//     o, gate, up, down; enough layers for >= 256 MB of weights, so that the
//     sweep streams from DRAM, not the L3) plus the 32000-row head, as a
//     forward pass does; GB/s of weight bytes and % of the read bandwidth.
//   prefill n=512: one layer's matrices, each the best of a few runs; GFLOP/s
//     (2 * n * rows * cols).
//   Every matrix is timed per call, best of --reps runs (default 5), and the
//   best times summed: on a shared machine, the least disturbed calls.
//   implied tok/s: what those rates give for Llama-1B (1.04e9 matmul weights
//     per token, tied head), ignoring attention and the other ops.
//   Quantized formats run twice: kFast (f32 activations, exact weights) and
//   kFastInt8 (activations rounded to int8 per 32 values, integer dots).
//
//   --cpu-time (one thread): times are the thread's CPU time, so that
//   other processes on the shared cores do not count; the figures are then
//   per core (a kernel's efficiency), comparable across loaded runs.
//
// Usage: matmul_bench [--formats bf16,mlx4,...] [--reps N] [--threads N] [--cpu-time]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "bench_util.h"
#include "util/thread_pool.h"

namespace llmhost {
namespace {

// Wall time, or the calling thread's CPU time with --cpu-time.
bool g_cpu_time = false;
double Now() {
  if (!g_cpu_time) return bench::Now();
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
using bench::ReadBandwidthGBs;

// --- weights -----------------------------------------------------------------

struct Rng {
  uint64_t s;
  uint64_t Next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  float Uniform() { return static_cast<float>(Next() >> 40) / static_cast<float>(1 << 24) * 2 - 1; }
};

struct Format {
  std::string name;
  WeightFormat format;
  GgmlType ggml_type = GgmlType::kF32;
  int bits = 0;
  double bytes_per_weight;
  bool Quantized() const { return format == WeightFormat::kMlxAffine || format == WeightFormat::kGgml; }  // int8 kernels
};

std::vector<Format> AllFormats() {
  return {
      {"f32", WeightFormat::kF32, GgmlType::kF32, 0, 4.0},
      {"bf16", WeightFormat::kBF16, GgmlType::kF32, 0, 2.0},
      {"f16", WeightFormat::kF16, GgmlType::kF32, 0, 2.0},
      {"mlx8", WeightFormat::kMlxAffine, GgmlType::kF32, 8, 1.0 + 4.0 / 64},
      {"mlx4", WeightFormat::kMlxAffine, GgmlType::kF32, 4, 0.5 + 4.0 / 64},
      {"q8_0", WeightFormat::kGgml, GgmlType::kQ8_0, 0, 34.0 / 32},
      {"q4_0", WeightFormat::kGgml, GgmlType::kQ4_0, 0, 18.0 / 32},
      {"q4_k", WeightFormat::kGgml, GgmlType::kQ4_K, 0, 144.0 / 256},
      {"q6_k", WeightFormat::kGgml, GgmlType::kQ6_K, 0, 210.0 / 256},
      {"fp8", WeightFormat::kFp8E4M3, GgmlType::kF32, 8, 1.0 + 4.0 / 128},
  };
}

// A matrix with random contents of the right scale (no denormals, no NaN).
struct Matrix {
  WeightMatrix w;
  std::vector<uint8_t> data, scales, biases;
  size_t Bytes() const { return data.size() + scales.size() + biases.size(); }
};

std::unique_ptr<Matrix> MakeMatrix(const Format& f, int64_t rows, int64_t cols, uint64_t seed) {
  auto m = std::make_unique<Matrix>();
  Rng rng{seed * 0x9E3779B97F4A7C15ull + 1};
  WeightMatrix& w = m->w;
  w.format = f.format;
  w.rows = rows;
  w.cols = cols;
  const int64_t n = rows * cols;
  auto put16 = [](uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); };
  switch (f.format) {
    case WeightFormat::kF32:
      m->data.resize(4 * n);
      for (int64_t i = 0; i < n; ++i) {
        const float v = rng.Uniform();
        std::memcpy(&m->data[4 * i], &v, 4);
      }
      break;
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      m->data.resize(2 * n);
      for (int64_t i = 0; i < n; ++i) {
        const float v = rng.Uniform();
        put16(&m->data[2 * i], f.format == WeightFormat::kF16 ? F32ToF16(v) : F32ToBf16(v));
      }
      break;
    case WeightFormat::kMlxAffine: {
      w.bits = f.bits;
      w.group_size = 64;
      w.scale_dtype = DType::kBF16;
      m->data.resize(n * f.bits / 8);
      for (auto& b : m->data) b = static_cast<uint8_t>(rng.Next());
      const int64_t groups = n / 64;
      m->scales.resize(2 * groups);
      m->biases.resize(2 * groups);
      for (int64_t g = 0; g < groups; ++g) {
        put16(&m->scales[2 * g], F32ToBf16(0.01f + 0.001f * rng.Uniform()));
        put16(&m->biases[2 * g], F32ToBf16(-0.1f * rng.Uniform()));
      }
      break;
    }
    case WeightFormat::kFp8E4M3: {
      // Codes of |w| <= 1 with no NaN (0x7F / 0xFF), a scale per 128 columns.
      w.group_size = 128;
      w.scale_dtype = DType::kF32;
      m->data.resize(n);
      for (auto& b : m->data) b = static_cast<uint8_t>(rng.Next() % 0x38) | static_cast<uint8_t>(rng.Next() & 0x80);
      m->scales.resize(4 * (n / 128));
      for (int64_t g = 0; g < n / 128; ++g) {
        const float sc = 0.01f * (1.5f + rng.Uniform());
        std::memcpy(&m->scales[4 * g], &sc, 4);
      }
      break;
    }
    case WeightFormat::kGgml: {
      w.ggml_type = f.ggml_type;
      const auto info = *GgmlTypeInfo(static_cast<uint32_t>(f.ggml_type));
      const int64_t blocks = n / info.block_size;
      m->data.resize(blocks * info.type_size);
      for (auto& b : m->data) b = static_cast<uint8_t>(rng.Next());
      const int d_off = f.ggml_type == GgmlType::kQ6_K ? 208 : 0;
      const bool has_min = f.ggml_type == GgmlType::kQ4_K;
      for (int64_t i = 0; i < blocks; ++i) {
        uint8_t* b = &m->data[i * info.type_size];
        put16(b + d_off, F32ToF16(0.001f * (1.5f + rng.Uniform())));
        if (has_min) put16(b + 2, F32ToF16(0.001f * (1.5f + rng.Uniform())));
      }
      break;
    }
  }
  w.data = m->data.data();
  w.scales = m->scales.empty() ? nullptr : m->scales.data();
  w.biases = m->biases.empty() ? nullptr : m->biases.data();
  return m;
}

// The seven matrices of one Llama-1B layer: [rows, cols].
constexpr int64_t kLayerShapes[7][2] = {{2048, 2048}, {512, 2048}, {512, 2048}, {2048, 2048},
                                        {8192, 2048}, {8192, 2048}, {2048, 8192}};
constexpr double kWeightsPerToken = 16 * 60817408.0 + 32000 * 2048.0;  // 16 layers + head

struct Result {
  double decode1_gbs = 0, decode8_gbs = 0, prefill_gflops = 0;
};

Result BenchFormat(const Format& f, MatMulPrecision precision, ThreadPool& pool, int reps) {
  // Decode set: layers until >= 256 MB, then the head.
  std::vector<std::unique_ptr<Matrix>> set;
  size_t bytes = 0;
  uint64_t seed = 1;
  for (int layer = 0; layer < 16 && bytes < (size_t{256} << 20); ++layer) {
    for (const auto& s : kLayerShapes) {
      set.push_back(MakeMatrix(f, s[0], s[1], seed++));
      bytes += set.back()->Bytes();
    }
  }
  const size_t layer_matrices = 7;
  set.push_back(MakeMatrix(f, 32000, 2048, seed++));
  bytes += set.back()->Bytes();

  Rng rng{77};
  std::vector<float> x(512 * 8192), y(512 * 32000);
  for (auto& v : x) v = rng.Uniform();
  Result r;
  for (int64_t n : {1, 8}) {
    // Each matrix is timed on its own inside full sweeps (so that it comes
    // from DRAM, as in a forward pass), keeping its best time over the
    // sweeps: a sweep disturbed by another process on the shared cores
    // loses only the matrices it hit.
    std::vector<double> best(set.size(), 1e30);
    for (int rep = 0; rep <= reps; ++rep) {  // sweep 0 warms up (page faults, scratch)
      for (size_t i = 0; i < set.size(); ++i) {
        const double t0 = Now();
        MatMul(set[i]->w, x.data(), n, y.data(), precision, &pool);
        if (rep > 0) best[i] = std::min(best[i], Now() - t0);
      }
    }
    double total = 0;
    for (double b : best) total += b;
    (n == 1 ? r.decode1_gbs : r.decode8_gbs) = bytes / total / 1e9;
  }
  // Prefill is compute-bound: each matrix timed on its own, best of the
  // repetitions, then summed (robust to other processes sharing the cores).
  double flops = 0, total = 0;
  for (size_t i = 0; i < layer_matrices; ++i) {
    flops += 2.0 * 512 * set[i]->w.rows * set[i]->w.cols;
    double best = 1e30;
    for (int rep = 0; rep < std::max(2, reps / 2 + 1); ++rep) {
      const double t0 = Now();
      MatMul(set[i]->w, x.data(), 512, y.data(), precision, &pool);
      best = std::min(best, Now() - t0);
    }
    total += best;
  }
  r.prefill_gflops = flops / total / 1e9;
  return r;
}

int Main(int argc, char** argv) {
  std::string only;
  int reps = 5, threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--formats" && i + 1 < argc) {
      only.clear();  // ",a,b," (push_back: GCC 12 warns falsely on short assigns)
      only.push_back(',');
      only.append(argv[++i]);
      only.push_back(',');
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--cpu-time") {
      g_cpu_time = true;
    } else {
      std::fprintf(stderr, "usage: matmul_bench [--formats f32,bf16,...] [--reps N] [--threads N] [--cpu-time]\n");
      return 1;
    }
  }
  if (g_cpu_time) threads = 1;  // CPU time of the calling thread: all the work must run on it
  ThreadPool pool(threads);
  std::printf("CPU: %s; kernels: %s; threads: %d; timing: %s\n", DetectedCpuFeatures().Describe().c_str(),
              CpuIsaName(ActiveCpuIsa()), pool.size(), g_cpu_time ? "thread CPU time" : "wall clock");
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) std::printf("load average at start: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  const double bw = ReadBandwidthGBs(pool.size(), reps);
  std::printf("read bandwidth (1 GiB, %d threads, best of %d): %.1f GB/s\n\n", pool.size(), reps, bw);
  std::printf("| format | bytes/weight | decode n=1 GB/s | %% of read bw | decode n=8 GB/s (weights) | "
              "prefill n=512 GFLOP/s | implied Llama-1B decode tok/s (n=1) | n=8 tok/s (8 streams) | "
              "implied prefill tok/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Format& f : AllFormats()) {
    std::string key;
    key.push_back(',');
    key.append(f.name);
    key.push_back(',');
    if (!only.empty() && only.find(key) == std::string::npos) continue;
    for (MatMulPrecision p : {MatMulPrecision::kFast, MatMulPrecision::kFastInt8, MatMulPrecision::kFastBf16}) {
      if (p == MatMulPrecision::kFastInt8 && !f.Quantized()) continue;
      if (p == MatMulPrecision::kFastBf16 && !HasBf16Matmul(BestCpuIsa())) continue;
      const Result r = BenchFormat(f, p, pool, reps);
      const double token_bytes = kWeightsPerToken * f.bytes_per_weight;
      std::string label = f.name;
      label += p == MatMulPrecision::kFast ? " (f32 act.)" : p == MatMulPrecision::kFastInt8 ? " (int8 act.)" : " (AMX bf16)";
      std::printf("| %s | %.3f | %.1f | %.0f%% | %.1f | %.1f | %.1f | %.1f | %.1f |\n", label.c_str(),
                  f.bytes_per_weight, r.decode1_gbs, 100 * r.decode1_gbs / bw, r.decode8_gbs, r.prefill_gflops,
                  r.decode1_gbs * 1e9 / token_bytes, 8 * r.decode8_gbs * 1e9 / token_bytes,
                  r.prefill_gflops * 1e9 / (2 * kWeightsPerToken));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace llmhost

int main(int argc, char** argv) { return llmhost::Main(argc, argv); }
