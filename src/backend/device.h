// Which device a model computes on, and the Backend for it.
//
// Spelled as `--device` takes it: "cpu", "cuda" (the first GPU), "cuda:N",
// or "auto" (the first GPU when this build has CUDA and the machine a GPU,
// else the CPU).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "formats/gguf.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace llmhost {

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // kCuda: which GPU
  std::string ToString() const;
};

// InvalidArgument for a spelling not listed above; "auto" is resolved here.
Result<DeviceSpec> ParseDevice(const std::string& text);

// True when this binary was built with the CUDA backend.
bool CudaBuilt();
// GPUs the CUDA backend can use (0 when not built, no driver or no GPU).
int CudaDeviceCount();

// Each GPU's memory as the CUDA runtime reports it (cudaMemGetInfo), for a
// machine whose driver has no NVML; empty without CUDA or a GPU. Starts the
// runtime on every GPU: for when a GPU is to be used anyway.
// Where a GPU sits on the PCI bus: what NVML's numbering (the driver's, by bus
// order, blind to CUDA_VISIBLE_DEVICES) and the CUDA runtime's (fastest first,
// renumbered by CUDA_VISIBLE_DEVICES) agree on.
struct PciLocation {
  int domain = -1, bus = -1, device = -1;  // -1: unknown
  bool known() const { return bus >= 0; }
  bool operator==(const PciLocation&) const = default;
};

struct CudaMemory {
  int index = 0;  // the CUDA device number
  std::string name;
  PciLocation pci;
  uint64_t total_bytes = 0, free_bytes = 0;
};
std::vector<CudaMemory> CudaMemoryInfo();

// True when the CUDA backend keeps GGUF tensors of type `t` as stored (its
// kernels read them in place); the other types are expanded to f32 rows at
// upload (4 bytes a weight).
bool CudaReadsGgmlInPlace(GgmlType t);

// The backend for `spec`; NotSupported (saying why) when it cannot be had:
// CUDA not built, no such GPU. `pool` is the CPU backend's.
Result<std::unique_ptr<Backend>> MakeBackend(const DeviceSpec& spec, Precision precision, ThreadPool* pool);

// The backends of an `n`-rank tensor-parallel model starting at `first`: GPUs
// first.index .. first.index + n - 1 (NotSupported naming the GPUs there
// are when too few), or n CPU backends on `pool` (the stand-in the tests
// use: their work takes turns on the pool).
Result<std::vector<std::unique_ptr<Backend>>> MakeBackends(const DeviceSpec& first, int n, Precision precision,
                                                          ThreadPool* pool);

}  // namespace llmhost
