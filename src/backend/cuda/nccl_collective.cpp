#include "backend/cuda/nccl_collective.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/nccl_collective.cuh"

namespace llmhost::cuda {

namespace {

// The calls used, resolved from the library at run time.
struct Api {
  decltype(&ncclCommInitAll) init_all = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  bool ok() const { return init_all && destroy && all_reduce && all_gather && error_string; }
};

template <typename F>
void Sym(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
}

// NCCL's calls, or null and `why` (the last name tried and what went wrong).
const Api* LoadApi(std::string* why) {
  struct Loaded {
    const Api* api = nullptr;
    std::string why;
  };
  static const Loaded loaded = [] {
    Loaded l;
    std::vector<std::string> names;
    const char* env = std::getenv("LLMHOST_NCCL");
    if (env && *env) names.push_back(env);
    names.push_back("libnccl.so.2");
    names.push_back("/usr/local/cuda/lib64/libnccl.so.2");
    for (const std::string& n : names) {
      void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        const char* e = dlerror();
        l.why = e ? e : n + ": cannot be opened";
        continue;
      }
      auto* a = new Api;
      Sym(lib, "ncclCommInitAll", &a->init_all);
      Sym(lib, "ncclCommDestroy", &a->destroy);
      Sym(lib, "ncclAllReduce", &a->all_reduce);
      Sym(lib, "ncclAllGather", &a->all_gather);
      Sym(lib, "ncclGetErrorString", &a->error_string);
      if (a->ok()) {
        l.api = a;  // kept for the process's life, as the library
        return l;
      }
      l.why = n + ": lacks ncclCommInitAll, ncclAllReduce or ncclAllGather";
      delete a;
      dlclose(lib);
    }
    return l;
  }();
  if (!loaded.api) *why = loaded.why;
  return loaded.api;
}

// Gathered bytes (all ranks together) per step of an all-gather and sum: a
// prompt's activations over many ranks would otherwise need a scratch buffer
// of gigabytes. Every rank splits a call the same way, by count and size.
constexpr size_t kGatherBytes = size_t{64} << 20;

class NcclCollective final : public Collective {
 public:
  NcclCollective(const Api* api, ncclComm_t comm, CudaBackend* backend, int rank, int size)
      : api_(api), comm_(comm), b_(backend), rank_(rank), size_(size) {}
  ~NcclCollective() override {
    // The backend's graphs may hold this communicator (its destroy waits for
    // them to go) and the scratch buffer's address.
    b_->DropGraphs();
    if (scratch_.valid()) b_->Free(scratch_);  // waits for the stream
    b_->Use();
    api_->destroy(comm_);  // one rank at a time, one thread: NCCL tears an in-process group down at its last
  }
  NcclCollective(const NcclCollective&) = delete;
  NcclCollective& operator=(const NcclCollective&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // More than two ranks gather into a scratch buffer: all of it now, so that
  // no step allocates (one rank failing to would leave the others waiting in
  // the gather for good).
  Status Reserve() {
    if (size_ <= 2) return Status::OK();
    if (!b_->Scratch(&scratch_, kGatherBytes, "all-gathered ranks")) {
      return Status::ResourceExhausted("NCCL: " + b_->name() + " cannot hold the all-gather buffer (" +
                                       std::to_string(kGatherBytes >> 20) + " MiB)");
    }
    return b_->Synchronize();
  }

  void AllReduceSum(float* buf, int64_t count) override {
    if (size_ == 1 || count <= 0) return;
    b_->Use();
    const auto stream = static_cast<cudaStream_t>(b_->stream());
    if (size_ == 2) {  // one addition per element, and a + b == b + a exactly
      Check(api_->all_reduce(buf, buf, static_cast<size_t>(count), ncclFloat32, ncclSum, comm_, stream), "AllReduce");
      return;
    }
    const int64_t step = std::min<int64_t>(count, static_cast<int64_t>(kGatherBytes / (sizeof(float) * size_)));
    // Reserve made it kGatherBytes: this never grows.
    if (!b_->Scratch(&scratch_, static_cast<size_t>(step) * size_ * sizeof(float), "all-gathered ranks")) return;
    for (int64_t begin = 0; begin < count; begin += step) {
      const int64_t n = std::min(step, count - begin);
      // [size, n]: rank r's n floats at r * n.
      if (!Check(api_->all_gather(buf + begin, scratch_.data, static_cast<size_t>(n), ncclFloat32, comm_, stream),
                 "AllGather")) {
        return;
      }
      LaunchSumOverRanks(scratch_.as<float>(), size_, n, buf + begin, stream);
      if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
        b_->OpFailed(Status::Internal(std::string("cuda AllReduceSum: ") + cudaGetErrorName(e) + ": " +
                                      cudaGetErrorString(e)));
        return;
      }
    }
  }

 private:
  // A failed call becomes the backend's error (sticky, or the recording's).
  bool Check(ncclResult_t r, const char* op) {
    if (r == ncclSuccess) return true;
    b_->OpFailed(Status::Internal(std::string("nccl ") + op + " on " + b_->name() + " (rank " +
                                  std::to_string(rank_) + " of " + std::to_string(size_) +
                                  "): " + api_->error_string(r)));
    return false;
  }

  const Api* api_;
  ncclComm_t comm_;
  CudaBackend* b_;
  const int rank_, size_;
  DeviceBuffer scratch_;  // [size, step] floats, grown through the backend (counted, graph-safe)
};

}  // namespace

Result<std::vector<std::unique_ptr<Collective>>> MakeNcclCollectives(std::span<Backend* const> backends) {
  if (backends.empty()) return Status::InvalidArgument("NCCL collectives: no backends");
  std::vector<CudaBackend*> gpus;
  std::vector<int> devices;
  std::string names;
  for (Backend* b : backends) {
    if (!b || b->kind() != DeviceKind::kCuda) {
      return Status::InvalidArgument("NCCL collectives: " + (b ? b->name() : std::string("a null backend")) +
                                     " is not a CUDA backend");
    }
    auto* g = static_cast<CudaBackend*>(b);
    if (std::find(devices.begin(), devices.end(), g->device()) != devices.end()) {
      return Status::NotSupported("NCCL needs one GPU per rank; " + g->name() + " is named twice");
    }
    gpus.push_back(g);
    devices.push_back(g->device());
    names += (names.empty() ? "" : ", ") + g->name();
  }
  std::string why;
  const Api* api = LoadApi(&why);
  if (!api) {
    return Status::NotSupported("NCCL (libnccl.so.2) could not be loaded (" + why +
                                "; LLMHOST_NCCL names another path): tensor parallelism over GPUs needs it");
  }
  const int n = static_cast<int>(gpus.size());
  std::vector<ncclComm_t> comms(gpus.size(), nullptr);
  int current = 0;
  const bool had = cudaGetDevice(&current) == cudaSuccess;
  const ncclResult_t r = api->init_all(comms.data(), n, devices.data());
  if (had) cudaSetDevice(current);  // NCCL visits every GPU
  if (r != ncclSuccess) {
    return Status::NotSupported("NCCL could not start over " + names + ": " + api->error_string(r));
  }
  std::vector<std::unique_ptr<Collective>> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(std::make_unique<NcclCollective>(api, comms[static_cast<size_t>(i)], gpus[static_cast<size_t>(i)],
                                                   i, n));
  }
  for (auto& c : out) RETURN_IF_ERROR(static_cast<NcclCollective*>(c.get())->Reserve());
  return out;
}

}  // namespace llmhost::cuda
