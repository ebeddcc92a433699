#include "backend/cuda/lt_gemm.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "util/log.h"

namespace llmhost::cuda {

// The calls used, resolved from the library at run time.
struct LtGemm::Api {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmulAlgoCheck) check = nullptr;
  decltype(&cublasLtMatmulAlgoConfigGetAttribute) config_get = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  bool ok() const {
    return create && destroy && desc_create && desc_destroy && desc_set && layout_create && layout_destroy &&
           pref_create && pref_destroy && pref_set && heuristic && check && config_get && matmul;
  }
};

namespace {

template <typename F>
void Sym(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
}

const LtGemm::Api* LoadApi();

}  // namespace

// One weight shape's descriptors and chosen algorithm.
struct LtGemm::Plan {
  const Api* api = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr;  // W as k × m, column-major (ld k): op T gives m × k
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a) api->layout_destroy(a);
    if (desc) api->desc_destroy(desc);
  }
};

namespace {

const LtGemm::Api* LoadApi() {
  static const LtGemm::Api* api = []() -> const LtGemm::Api* {
    const char* env = std::getenv("LLMHOST_CUBLASLT");
    if (env && std::string(env) == "off") return nullptr;
    std::vector<std::string> names;
    if (env && *env) names.push_back(env);
    names.push_back("libcublasLt.so.13");
    names.push_back("/usr/local/cuda/lib64/libcublasLt.so.13");
    for (const std::string& n : names) {
      void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib) continue;
      auto* a = new LtGemm::Api;
      Sym(lib, "cublasLtCreate", &a->create);
      Sym(lib, "cublasLtDestroy", &a->destroy);
      Sym(lib, "cublasLtMatmulDescCreate", &a->desc_create);
      Sym(lib, "cublasLtMatmulDescDestroy", &a->desc_destroy);
      Sym(lib, "cublasLtMatmulDescSetAttribute", &a->desc_set);
      Sym(lib, "cublasLtMatrixLayoutCreate", &a->layout_create);
      Sym(lib, "cublasLtMatrixLayoutDestroy", &a->layout_destroy);
      Sym(lib, "cublasLtMatmulPreferenceCreate", &a->pref_create);
      Sym(lib, "cublasLtMatmulPreferenceDestroy", &a->pref_destroy);
      Sym(lib, "cublasLtMatmulPreferenceSetAttribute", &a->pref_set);
      Sym(lib, "cublasLtMatmulAlgoGetHeuristic", &a->heuristic);
      Sym(lib, "cublasLtMatmulAlgoCheck", &a->check);
      Sym(lib, "cublasLtMatmulAlgoConfigGetAttribute", &a->config_get);
      Sym(lib, "cublasLtMatmul", &a->matmul);
      if (a->ok()) return a;  // kept for the process's life, as the library
      delete a;
      dlclose(lib);
    }
    return nullptr;
  }();
  return api;
}

cudaDataType_t DataType(LtGemm::Type t) { return t == LtGemm::Type::kBF16 ? CUDA_R_16BF : CUDA_R_16F; }

// The prompt chunk the algorithm is chosen for (LLMHOST_CUBLASLT_PLAN_ROWS=N
// another, to compare), and sizes it is checked at.
constexpr int64_t kPlanRows = 2048;
int64_t PromptPlanRows() {
  const char* v = std::getenv("LLMHOST_CUBLASLT_PLAN_ROWS");
  const long long n = v != nullptr ? std::atoll(v) : 0;
  return n >= 1 && n <= 8192 ? n : kPlanRows;
}
constexpr int64_t kCheckRows[] = {1, 7, 64, 2048, 8192};

}  // namespace

std::unique_ptr<LtGemm> LtGemm::Create() {
  const Api* api = LoadApi();
  if (!api) {
    static bool told = false;  // once a process
    if (!told) {
      told = true;
      LOG_WARN("cuBLASLt (libcublasLt.so.13) could not be loaded (LLMHOST_CUBLASLT names another path): prompt "
               "rows use llmhost's own tensor-core kernel, several times slower");
    }
    return nullptr;
  }
  cublasLtHandle_t h = nullptr;
  if (const cublasStatus_t st = api->create(&h); st != CUBLAS_STATUS_SUCCESS) {
    LOG_WARN("cuBLASLt did not start (status " << static_cast<int>(st) << "): prompt rows use llmhost's own kernel");
    return nullptr;
  }
  std::unique_ptr<LtGemm> g(new LtGemm);
  g->api_ = api;
  g->handle_ = h;
  return g;
}

LtGemm::~LtGemm() {
  plans_.clear();
  if (handle_) api_->destroy(static_cast<cublasLtHandle_t>(handle_));
}

const LtGemm::Plan* LtGemm::PlanFor(const Shape& s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(s);
  if (it != plans_.end()) return it->second.get();
  std::unique_ptr<Plan> p(new Plan);
  p->api = api_;
  const auto handle = static_cast<cublasLtHandle_t>(handle_);
  const cudaDataType_t t = DataType(s.type);
  bool ok = api_->desc_create(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  ok = ok && api_->desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)) == CUBLAS_STATUS_SUCCESS;
  ok = ok && api_->desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)) == CUBLAS_STATUS_SUCCESS;
  ok = ok && api_->layout_create(&p->a, t, static_cast<uint64_t>(s.cols), static_cast<uint64_t>(s.rows), s.cols) ==
                 CUBLAS_STATUS_SUCCESS;
  cublasLtMatmulPreference_t pref = nullptr;
  ok = ok && api_->pref_create(&pref) == CUBLAS_STATUS_SUCCESS;
  const uint64_t workspace = kWorkspaceBytes;  // room for a tile scheduler's counter, none for partial sums
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE, align = 16;
  if (ok) {
    api_->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
    api_->pref_set(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes));
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      api_->pref_set(pref, attr, &align, sizeof(align));
    }
  }
  // Layouts of x (k × n) and y (m × n) for n rows.
  auto layouts = [&](int64_t n, cublasLtMatrixLayout_t* b, cublasLtMatrixLayout_t* c) {
    *b = *c = nullptr;
    return api_->layout_create(b, t, static_cast<uint64_t>(s.cols), static_cast<uint64_t>(n), s.cols) ==
               CUBLAS_STATUS_SUCCESS &&
           api_->layout_create(c, CUDA_R_32F, static_cast<uint64_t>(s.rows), static_cast<uint64_t>(n), s.rows) ==
               CUBLAS_STATUS_SUCCESS;
  };
  auto drop = [&](cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c) {
    if (b) api_->layout_destroy(b);
    if (c) api_->layout_destroy(c);
  };
  bool found = false;
  std::string why = ok ? "" : "descriptors could not be made";
  if (ok) {
    cublasLtMatrixLayout_t b = nullptr, c = nullptr;
    const int64_t chosen_for = s.plan_rows != 0 ? std::abs(s.plan_rows) : PromptPlanRows();
    if (layouts(chosen_for, &b, &c)) {
      cublasLtMatmulHeuristicResult_t results[8];
      int n_results = 0;
      const cublasStatus_t hs = api_->heuristic(handle, p->desc, p->a, b, c, c, pref, 8, results, &n_results);
      if (hs != CUBLAS_STATUS_SUCCESS) {
        why = "the heuristic failed (status " + std::to_string(static_cast<int>(hs)) + ")";
        n_results = 0;
      } else if (n_results == 0) {
        why = "the heuristic offered none";
      }
      // The first algorithm that runs at every checked size.
      for (int i = 0; i < n_results && !found; ++i) {
        if (results[i].state != CUBLAS_STATUS_SUCCESS || results[i].workspaceSize > kWorkspaceBytes) continue;
        // One pass over k per output: no split-K, nothing reduced across blocks.
        int32_t splits = 0;
        uint32_t scheme = 1;
        size_t written = 0;
        if (api_->config_get(&results[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof(splits), &written) !=
                CUBLAS_STATUS_SUCCESS ||
            api_->config_get(&results[i].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof(scheme),
                             &written) != CUBLAS_STATUS_SUCCESS ||
            splits > 1 || scheme != CUBLASLT_REDUCTION_SCHEME_NONE) {
          why = "every offered algorithm splits k";
          continue;
        }
        bool all = true;
        const std::vector<int64_t> checks = s.plan_rows != 0 ? std::vector<int64_t>{chosen_for / 2 + 1, chosen_for}
                                                            : std::vector<int64_t>(std::begin(kCheckRows), std::end(kCheckRows));
        for (int64_t n : checks) {
          cublasLtMatrixLayout_t bn = nullptr, cn = nullptr;
          cublasLtMatmulHeuristicResult_t r{};
          const cublasStatus_t cs =
              layouts(n, &bn, &cn) ? api_->check(handle, p->desc, p->a, bn, cn, cn, &results[i].algo, &r)
                                   : CUBLAS_STATUS_INVALID_VALUE;
          all = cs == CUBLAS_STATUS_SUCCESS && r.workspaceSize <= kWorkspaceBytes;
          drop(bn, cn);
          if (!all) {
            why = "no offered algorithm runs at " + std::to_string(n) + " rows (status " +
                  std::to_string(static_cast<int>(cs)) + ", workspace " + std::to_string(r.workspaceSize) + ")";
            break;
          }
        }
        if (all) {
          p->algo = results[i].algo;
          found = true;
        }
      }
    }
    drop(b, c);
  }
  if (pref) api_->pref_destroy(pref);
  if (!found) {
    p.reset();
    LOG_WARN("cuBLASLt: no algorithm for a " << (s.type == Type::kBF16 ? "bf16" : "f16") << " [" << s.rows << " x "
                                               << s.cols << "] weight (" << why
                                               << (s.plan_rows > 0   ? "): its generated rows keep the batch-invariant kernels"
                                                   : s.plan_rows < 0 ? "): its prompt chunks of that size keep its one plan"
                                                                     : "): its prompt rows use llmhost's tensor-core kernel"));
  }
  const Plan* out = p.get();
  plans_.emplace(s, std::move(p));
  return out;
}

bool LtGemm::MatMul(Type type, const void* w, int64_t rows, int64_t cols, const void* x, int64_t n, float beta,
                    float* y, void* workspace, cudaStream_t s, int64_t plan_rows) {
  const Plan* p = PlanFor(Shape{type, rows, cols, plan_rows});
  if (!p || n <= 0) return false;
  const cudaDataType_t t = DataType(type);
  cublasLtMatrixLayout_t b = nullptr, c = nullptr;
  bool ok = api_->layout_create(&b, t, static_cast<uint64_t>(cols), static_cast<uint64_t>(n), cols) ==
                CUBLAS_STATUS_SUCCESS &&
            api_->layout_create(&c, CUDA_R_32F, static_cast<uint64_t>(rows), static_cast<uint64_t>(n), rows) ==
                CUBLAS_STATUS_SUCCESS;
  const float alpha = 1.0f;
  ok = ok && api_->matmul(static_cast<cublasLtHandle_t>(handle_), p->desc, &alpha, w, p->a, x, b, &beta, y, c, y, c,
                          &p->algo, workspace, kWorkspaceBytes, s) == CUBLAS_STATUS_SUCCESS;
  if (b) api_->layout_destroy(b);
  if (c) api_->layout_destroy(c);
  return ok;
}

int64_t LtGemm::BucketFor(int64_t n) {
  // On by default; LLMHOST_CUBLASLT_PLANS=one keeps every chunk on the one plan.
  const char* v = std::getenv("LLMHOST_CUBLASLT_PLANS");
  if ((v != nullptr && std::strcmp(v, "one") == 0) || n <= 128 || n > 1024) return 0;
  int64_t b = 256;
  while (b < n) b *= 2;
  return b;
}

LtGemm::Bits LtGemm::BucketBits(Type type, int64_t rows, int64_t cols, int64_t b) {
  const Shape key{type, rows, cols, -b};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = bucket_bits_.find(key);
    if (it != bucket_bits_.end()) return it->second;
  }
  const Plan* one = PlanFor(Shape{type, rows, cols, 0});
  const Plan* own = PlanFor(key);
  Bits bits = Bits::kUnknown;
  if (one == nullptr || own == nullptr) {
    bits = Bits::kDiffer;  // nothing to choose between
  } else if (std::memcmp(&one->algo, &own->algo, sizeof(one->algo)) == 0) {
    bits = Bits::kSame;  // one algorithm: the same kernel and bits
  }
  if (bits != Bits::kUnknown) {
    std::lock_guard<std::mutex> lock(mu_);
    bucket_bits_[key] = bits;
  }
  return bits;
}

void LtGemm::SetBucketBits(Type type, int64_t rows, int64_t cols, int64_t b, bool same) {
  std::lock_guard<std::mutex> lock(mu_);
  bucket_bits_[Shape{type, rows, cols, -b}] = same ? Bits::kSame : Bits::kDiffer;
  LOG_INFO("cuBLASLt: the plan for " << b / 2 + 1 << "-" << b << "-row prompt chunks of a [" << rows << " x " << cols
                                     << "] weight " << (same ? "gives" : "does not give")
                                     << " the bits of its one plan" << (same ? ": taken" : ": not taken"));
}

}  // namespace llmhost::cuda
