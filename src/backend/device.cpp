#include "backend/device.h"

#include <cstdlib>

#include "backend/cpu/cpu_backend.h"
#ifdef LLMHOST_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#include <cuda_runtime.h>
#endif

namespace llmhost {

std::string DeviceSpec::ToString() const {
  return kind == DeviceKind::kCpu ? "cpu" : "cuda:" + std::to_string(index);
}

bool CudaBuilt() {
#ifdef LLMHOST_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int CudaDeviceCount() {
#ifdef LLMHOST_HAVE_CUDA
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
#else
  return 0;
#endif
}

std::vector<CudaMemory> CudaMemoryInfo() {
  std::vector<CudaMemory> out;
#ifdef LLMHOST_HAVE_CUDA
  struct Props {
    std::string name;
    PciLocation pci;
  };
  static const std::vector<Props> props = [] {  // asked once: slow
    std::vector<Props> v;
    for (int i = 0; i < CudaDeviceCount(); ++i) {
      cudaDeviceProp prop;
      Props p;
      if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
        p.name = prop.name;
        p.pci = PciLocation{prop.pciDomainID, prop.pciBusID, prop.pciDeviceID};
      }
      v.push_back(std::move(p));
    }
    return v;
  }();
  int current = 0;
  const bool had = cudaGetDevice(&current) == cudaSuccess;
  for (int i = 0; i < CudaDeviceCount(); ++i) {
    CudaMemory m;
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(i) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    m.index = i;
    m.name = props[static_cast<size_t>(i)].name;
    m.pci = props[static_cast<size_t>(i)].pci;
    m.total_bytes = total_b;
    m.free_bytes = free_b;
    out.push_back(std::move(m));
  }
  if (had) cudaSetDevice(current);
#endif
  return out;
}

bool CudaReadsGgmlInPlace(GgmlType t) {
  switch (t) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_K:
    case GgmlType::kQ6_K:
      return true;
    default:
      return false;
  }
}

Result<DeviceSpec> ParseDevice(const std::string& text) {
  DeviceSpec d;
  if (text == "cpu") return d;
  if (text == "auto") {
    if (CudaDeviceCount() > 0) d.kind = DeviceKind::kCuda;
    return d;
  }
  if (text == "cuda") {
    d.kind = DeviceKind::kCuda;
    return d;
  }
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() <= 8) {
    char* end = nullptr;
    const long v = std::strtol(text.c_str() + 5, &end, 10);
    if (*end == '\0' && v >= 0 && text[5] != '-' && text[5] != '+') {
      d.kind = DeviceKind::kCuda;
      d.index = static_cast<int>(v);
      return d;
    }
  }
  return Status::InvalidArgument("--device: '" + text + "' (expected auto, cpu, cuda or cuda:N)");
}

Result<std::unique_ptr<Backend>> MakeBackend(const DeviceSpec& spec, Precision precision, ThreadPool* pool) {
  if (spec.kind == DeviceKind::kCpu) return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(pool, precision));
#ifdef LLMHOST_HAVE_CUDA
  ASSIGN_OR_RETURN(auto b, CudaBackend::Create(spec.index, precision));
  return std::unique_ptr<Backend>(std::move(b));
#else
  return Status::NotSupported("device " + spec.ToString() +
                              ": this build of llmhost has no CUDA backend (rebuild where nvcc 13 is installed)");
#endif
}

Result<std::vector<std::unique_ptr<Backend>>> MakeBackends(const DeviceSpec& first, int n, Precision precision,
                                                          ThreadPool* pool) {
  if (n < 1 || n > 64) return Status::InvalidArgument("--tensor-parallel " + std::to_string(n) + ": expected 1 to 64");
  if (first.kind == DeviceKind::kCuda && n > 1 && first.index + n > CudaDeviceCount()) {
    return Status::NotSupported("--tensor-parallel " + std::to_string(n) + " from " + first.ToString() + " needs GPUs " +
                                first.ToString() + ".." + std::to_string(first.index + n - 1) + "; this machine has " +
                                std::to_string(CudaDeviceCount()) + " GPU(s)");
  }
  std::vector<std::unique_ptr<Backend>> out;
  for (int r = 0; r < n; ++r) {
    DeviceSpec d = first;
    if (d.kind == DeviceKind::kCuda) d.index += r;
    ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, MakeBackend(d, precision, pool));
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace llmhost
