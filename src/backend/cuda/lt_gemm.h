// Prompt-row MatMuls of 16-bit weights on cuBLASLt's tensor-core GEMMs.
// libcublasLt is opened at run time (CUDA 13's, from the library path or
// /usr/local/cuda), so the binary starts where it is missing; the backend then
// keeps its own tensor-core kernel.
//
// Batch invariance: one algorithm per weight shape, chosen once (for a
// typical prompt chunk) and used for every n; only algorithms without split-K
// or any other reduction across blocks are taken (a workspace of
// kWorkspaceBytes holds a tile scheduler's counter, no partial sums), so each
// output is one k-ordered sum over the tensor cores' steps, whatever n is and
// wherever the row sits in the batch.
//
// Where batch invariance is given up (generated rows with
// LLMHOST_CUDA_BATCH_INVARIANT=off), MatMul's `plan_rows` asks for an
// algorithm chosen for that many rows instead: decode batches get tiles made
// for them, and a row's bits may then depend on the batch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

namespace llmhost::cuda {

class LtGemm {
 public:
  enum class Type { kBF16, kF16 };
  static constexpr size_t kWorkspaceBytes = 256;  // the device workspace each MatMul is given
  struct Api;  // the dlopen'ed entry points (lt_gemm.cpp)

  // nullptr when libcublasLt cannot be loaded or started.
  static std::unique_ptr<LtGemm> Create();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // y[n, rows] (f32, row stride rows) = beta·y + x[n, cols] · Wᵀ, with W
  // [rows, cols] and x of `type`, f32 sums. False (nothing enqueued) when no
  // algorithm fits the shape: the caller then uses its own kernel for this
  // shape, always. Pointers 16-byte aligned; `workspace` kWorkspaceBytes of
  // device memory used by nothing else on the stream. `plan_rows` 0: the
  // batch-invariant plan; else a plan chosen for n up to plan_rows (a power
  // of two, n > plan_rows / 2).
  bool MatMul(Type type, const void* w, int64_t rows, int64_t cols, const void* x, int64_t n, float beta, float* y,
              void* workspace, cudaStream_t s, int64_t plan_rows = 0);

  // Whether `type` weights of this shape have a batch-invariant plan (MatMul
  // with plan_rows 0 runs).
  bool HasPlan(Type type, int64_t rows, int64_t cols) { return PlanFor(Shape{type, rows, cols, 0}) != nullptr; }

  // Prompt plans by chunk size (on unless LLMHOST_CUBLASLT_PLANS=one): a chunk of
  // n rows in (b / 2, b] for b = 256, 512 or 1024 may take the algorithm
  // chosen for b rows (MatMul's plan_rows -b) where it gives the bits of the
  // shape's one plan, so that a row's bits still do not depend on its chunk.
  // BucketFor: b, or 0 (the one plan) outside the buckets or with the switch
  // off. BucketBits: kSame where the two plans are one algorithm or a
  // comparison found the same bits, kDiffer where it did not (or the bucket
  // has no plan of its own), kUnknown until the caller compares
  // (SetBucketBits).
  enum class Bits { kUnknown, kSame, kDiffer };
  static int64_t BucketFor(int64_t n);
  Bits BucketBits(Type type, int64_t rows, int64_t cols, int64_t b);
  void SetBucketBits(Type type, int64_t rows, int64_t cols, int64_t b, bool same);

 private:
  struct Shape {
    Type type;
    int64_t rows, cols;
    int64_t plan_rows;  // 0: the batch-invariant plan; < 0: a prompt bucket's (BucketFor)
    bool operator<(const Shape& o) const {
      return std::tie(type, rows, cols, plan_rows) < std::tie(o.type, o.rows, o.cols, o.plan_rows);
    }
  };
  struct Plan;
  LtGemm() = default;
  const Plan* PlanFor(const Shape& s);  // nullptr: no algorithm

  const Api* api_ = nullptr;
  void* handle_ = nullptr;  // cublasLtHandle_t
  std::mutex mu_;
  std::map<Shape, std::unique_ptr<Plan>> plans_;
  std::map<Shape, Bits> bucket_bits_;  // by the bucket's Shape (plan_rows -b)
};

}  // namespace llmhost::cuda
