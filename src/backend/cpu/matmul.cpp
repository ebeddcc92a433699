// MatMul entry points: weight validation, dequantization, and the fast-path
// driver that tiles y = x · Wᵀ over threads, weight panels and column chunks.
//
// Fast path, per task (one panel of kPanelRows weight rows):
//   for each block of up to kBatchRows rows of x:
//     for each chunk of kChunkCols columns:
//       dequantize the panel's chunk to f32 (thread-local, L1/L2-sized; F32
//       weights are read in place), then run the micro-kernels over all x rows
//       of the block, continuing each output's 8-lane accumulator;
//     reduce the accumulators to y.
// Every output follows the canonical order of matmul_kernels.h, so the result
// of a row of x does not depend on n, on the block it falls in, or on threads.
#include "backend/cpu/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_reference.h"
#include "backend/cpu/quant_formats.h"

namespace llmhost {
namespace {

constexpr int64_t kPanelRows = 24;   // weight rows per task (a multiple of the 3-row tile)
constexpr int64_t kChunkCols = 256;  // columns per dequantized chunk (a multiple of every block)
constexpr int64_t kBatchRows = 128;  // rows of x per accumulator block
constexpr int64_t kMaxElements = int64_t{1} << 48;

std::string Shape(const WeightMatrix& w) {
  std::string s = "[";
  s += std::to_string(w.rows);
  s += " x ";
  s += std::to_string(w.cols);
  s += "]";
  return s;
}

// Grow-only, 64-byte aligned per-thread buffers (pool threads persist, so
// they are allocated once per thread).
class Scratch {
 public:
  ~Scratch() { std::free(p_); }
  float* Get(size_t n) {
    if (n > cap_) {
      std::free(p_);
      cap_ = (n + 15) / 16 * 16;
      p_ = static_cast<float*>(std::aligned_alloc(64, cap_ * sizeof(float)));
    }
    return p_;
  }

 private:
  float* p_ = nullptr;
  size_t cap_ = 0;
};

thread_local Scratch tls_panel;
thread_local Scratch tls_acc;

const cpu::FastKernels* ActiveKernels() {
  return ActiveCpuIsa() == CpuIsa::kAvx2 ? cpu::Avx2Kernels() : nullptr;
}

bool IsPlainF32(const WeightMatrix& w) {
  return w.format == WeightFormat::kF32 ||
         (w.format == WeightFormat::kGgml && w.ggml_type == GgmlType::kF32);
}

void FastMatMul(const cpu::FastKernels& ks, const WeightMatrix& w, const float* x, int64_t n,
                float* y, ThreadPool* pool) {
  const int64_t rows = w.rows, cols = w.cols;
  const bool in_place = IsPlainF32(w);
  const cpu::DequantRangeFn dequant = ks.select_dequant(w);
  const int64_t panels = (rows + kPanelRows - 1) / kPanelRows;
  auto body = [&](int64_t p_begin, int64_t p_end) {
    float* panel = in_place ? nullptr : tls_panel.Get(kPanelRows * kChunkCols);
    float* acc = tls_acc.Get(std::min(n, kBatchRows) * kPanelRows * 8);
    for (int64_t p = p_begin; p < p_end; ++p) {
      const int64_t r0 = p * kPanelRows, nr = std::min(kPanelRows, rows - r0);
      for (int64_t t0 = 0; t0 < n; t0 += kBatchRows) {
        const int64_t nt = std::min(kBatchRows, n - t0);
        for (int64_t k0 = 0; k0 < cols; k0 += kChunkCols) {
          const int64_t kc = std::min(kChunkCols, cols - k0);
          const float* wp;
          int64_t ldw;
          if (in_place) {
            wp = static_cast<const float*>(w.data) + r0 * cols + k0;
            ldw = cols;
          } else {
            for (int64_t i = 0; i < nr; ++i) dequant(w, r0 + i, k0, k0 + kc, panel + i * kChunkCols);
            wp = panel;
            ldw = kChunkCols;
          }
          ks.gemm_chunk(x + t0 * cols + k0, cols, nt, wp, ldw, nr, kc, acc, kPanelRows, k0 == 0);
        }
        ks.reduce(acc, nt, nr, kPanelRows, y + t0 * rows + r0, rows);
      }
    }
  };
  if (pool) {
    pool->ParallelFor(panels, 1, body);
  } else {
    body(0, panels);
  }
}

void FillNaN(float* p, int64_t count) {
  std::fill(p, p + count, std::numeric_limits<float>::quiet_NaN());
}

}  // namespace

Status CheckWeight(const WeightMatrix& w) {
  if (w.rows < 0 || w.cols <= 0) {
    return Status::InvalidArgument("weight " + Shape(w) + ": rows must be >= 0 and cols > 0");
  }
  if (w.rows > 0 && w.cols > kMaxElements / w.rows) {
    return Status::InvalidArgument("weight " + Shape(w) + ": too many elements");
  }
  if (w.rows > 0 && w.data == nullptr) {
    return Status::InvalidArgument("weight " + Shape(w) + ": no data");
  }
  switch (w.format) {
    case WeightFormat::kF32:
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      return Status::OK();
    case WeightFormat::kMlxAffine: {
      const int b = w.bits;
      if (b != 2 && b != 3 && b != 4 && b != 5 && b != 6 && b != 8) {
        return Status::NotSupported("MLX weight " + Shape(w) + ": bits " + std::to_string(b) +
                                    " (supported: 2, 3, 4, 5, 6, 8)");
      }
      if (w.group_size != 32 && w.group_size != 64 && w.group_size != 128) {
        return Status::NotSupported("MLX weight " + Shape(w) + ": group size " +
                                    std::to_string(w.group_size) + " (supported: 32, 64, 128)");
      }
      if (w.cols % w.group_size != 0) {
        return Status::InvalidArgument("MLX weight " + Shape(w) + ": cols " +
                                       std::to_string(w.cols) + " not a multiple of group size " +
                                       std::to_string(w.group_size));
      }
      if (w.scale_dtype != DType::kBF16 && w.scale_dtype != DType::kF16 &&
          w.scale_dtype != DType::kF32) {
        return Status::NotSupported("MLX weight " + Shape(w) + ": scales/biases of dtype " +
                                    DTypeName(w.scale_dtype) + " (supported: BF16, F16, F32)");
      }
      if (w.rows > 0 && (w.scales == nullptr || w.biases == nullptr)) {
        return Status::InvalidArgument("MLX weight " + Shape(w) + ": missing scales or biases");
      }
      return Status::OK();
    }
    case WeightFormat::kGgml: {
      const int block = quant::GgmlBlockSize(w.ggml_type);
      if (block == 0) {
        const auto info = GgmlTypeInfo(static_cast<uint32_t>(w.ggml_type));
        return Status::NotSupported("GGUF weight " + Shape(w) + ": tensor type " +
                                    (info ? std::string(info->name)
                                          : std::to_string(static_cast<uint32_t>(w.ggml_type))) +
                                    " not supported by the CPU kernels");
      }
      if (w.cols % block != 0) {
        return Status::InvalidArgument("GGUF weight " + Shape(w) + ": cols " +
                                       std::to_string(w.cols) + " not a multiple of the " +
                                       std::to_string(block) + "-element block");
      }
      return Status::OK();
    }
  }
  return Status::InvalidArgument("weight " + Shape(w) + ": unknown format");
}

void DequantizeRows(const WeightMatrix& w, int64_t row_begin, int64_t row_end, float* out) {
  if (row_end <= row_begin) return;
  if (!CheckWeight(w).ok() || row_begin < 0 || row_end > w.rows) {
    FillNaN(out, (row_end - row_begin) * std::max<int64_t>(w.cols, 0));
    return;
  }
  const cpu::FastKernels* ks = ActiveKernels();
  const cpu::DequantRangeFn fn = ks ? ks->select_dequant(w) : nullptr;
  for (int64_t r = row_begin; r < row_end; ++r) {
    float* dst = out + (r - row_begin) * w.cols;
    if (fn) {
      fn(w, r, 0, w.cols, dst);
    } else {
      quant::DequantizeRangeScalar(w, r, 0, w.cols, dst);
    }
  }
}

void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, MatMulPrecision precision,
            ThreadPool* pool) {
  if (n <= 0 || w.rows == 0) return;
  if (!CheckWeight(w).ok()) {
    FillNaN(y, n * w.rows);
    return;
  }
  const cpu::FastKernels* ks = ActiveKernels();
  if (precision == MatMulPrecision::kFast && ks != nullptr) {
    FastMatMul(*ks, w, x, n, y, pool);
  } else {
    cpu::ReferenceMatMul(w, x, n, y, pool);
  }
}

}  // namespace llmhost
