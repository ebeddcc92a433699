// MemoryProbe: the live memory readings the engine pool and the memory
// enforcer decide with.
//
//   footprint  the process's resident memory: Rss of /proc/self/smaps_rollup
//              (Pss beside it; /proc/self/status VmRSS when smaps_rollup is absent)
//   system     MemTotal / MemAvailable / SwapFree / Inactive(anon) of /proc/meminfo,
//              and the cgroup limit of this process when one is set (v2
//              memory.max / memory.current / memory.stat inactive_file; v1
//              memory.limit_in_bytes / usage_in_bytes as a fallback)
//   gpus       total / free bytes of each NVIDIA GPU (NVML, loaded with dlopen
//              when the driver is installed; without NVML, the CUDA runtime's
//              cudaMemGetInfo where this build has CUDA; none otherwise)
//
// "Device-active bytes" (what llmhost's own allocators hold) are not read
// here: the pool sums them over its loaded engines (LoadedEngine).
//
// LinuxMemoryProbe reads the real files (paths overridable for tests);
// FakeMemoryProbe returns values a test sets. Both are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "backend/device.h"

namespace llmhost {

struct ProcessMemory {
  uint64_t rss_bytes = 0;
  uint64_t pss_bytes = 0;  // 0 when only VmRSS was readable
  bool ok = false;         // false: nothing was readable (readings are 0)
};

struct SystemMemory {
  uint64_t mem_total = 0;
  uint64_t mem_available = 0;
  uint64_t swap_free = 0;
  uint64_t inactive_anon = 0;
  // The tightest cgroup memory limit on this process's path (0: none), the
  // memory charged to that cgroup, and its reclaimable page cache.
  uint64_t cgroup_limit = 0;
  uint64_t cgroup_current = 0;
  uint64_t cgroup_inactive_file = 0;
  bool ok = false;  // /proc/meminfo was read

  // min(MemTotal, cgroup limit).
  uint64_t EffectiveTotal() const;
  // min(MemAvailable, limit − current + inactive file cache) with a limit.
  uint64_t EffectiveAvailable() const;
};

struct GpuMemory {
  int index = 0;  // NVML's number (the CUDA runtime's where NVML is absent)
  std::string name;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t used_bytes = 0;
  PciLocation pci;
};

// The reading of the GPU that CUDA numbers `cuda_index` and finds at `pci`:
// matched by PCI location where both sides know it (NVML and CUDA number GPUs
// differently), else by number; null when there is none.
const GpuMemory* SelectGpu(const std::vector<GpuMemory>& gpus, int cuda_index, const PciLocation& pci);

class MemoryProbe {
 public:
  virtual ~MemoryProbe() = default;
  virtual ProcessMemory Process() = 0;
  virtual SystemMemory System() = 0;
  virtual std::vector<GpuMemory> Gpus() = 0;
  // Rss alone, as cheaply as it can be read (no PSS): for decisions on an
  // engine's executor, where Process() (smaps_rollup walks every page table:
  // milliseconds for a large model) would stall the running streams.
  virtual ProcessMemory ProcessRss() { return Process(); }
  // The footprint the pool compares: Rss (0 when unreadable).
  uint64_t FootprintBytes() { return Process().rss_bytes; }
};

// Parsers of the kernel's text files (exposed for tests). Values in kB are
// returned in bytes; unreadable fields stay 0.
ProcessMemory ParseSmapsRollup(std::string_view text);
ProcessMemory ParseProcStatus(std::string_view text);  // VmRSS
void ParseMeminfo(std::string_view text, SystemMemory* out);
// "max" → 0 (no limit); a number → that many bytes; anything else → 0.
// cgroup v1 writes "no limit" as a huge number: values ≥ 2^60 are 0 too.
uint64_t ParseCgroupLimit(std::string_view text);
// The value of `key` in a "key value" file (memory.stat), 0 when absent.
uint64_t ParseKeyValue(std::string_view text, std::string_view key);
// From /proc/self/cgroup: the v2 path ("0::/a/b" → "/a/b") or, with
// `v1_controller` ("memory"), the v1 path of that controller. "" when absent.
std::string ParseCgroupPath(std::string_view text, std::string_view v1_controller = "");

class LinuxMemoryProbe final : public MemoryProbe {
 public:
  // Roots for tests: a fake /proc and /sys/fs/cgroup tree.
  explicit LinuxMemoryProbe(std::string proc_root = "/proc", std::string cgroup_root = "/sys/fs/cgroup",
                            bool probe_gpus = true);
  ~LinuxMemoryProbe() override;
  ProcessMemory Process() override;
  ProcessMemory ProcessRss() override;  // VmRSS of /proc/self/status (kernel counters)
  SystemMemory System() override;
  std::vector<GpuMemory> Gpus() override;
  // Without NVML, read the GPUs through the CUDA runtime (for a process that
  // computes on one: it starts the runtime on each).
  void set_cuda_fallback(bool on) { cuda_fallback_ = on; }

 private:
  void ReadCgroup(SystemMemory* out) const;

  std::string proc_root_, cgroup_root_;
  bool probe_gpus_;
  std::mutex gpu_mu_;
  struct Nvml;
  std::unique_ptr<Nvml> nvml_;  // loaded on first Gpus(); null: no NVML
  std::atomic<bool> cuda_fallback_{false};
  bool nvml_tried_ = false;
};

class FakeMemoryProbe final : public MemoryProbe {
 public:
  ProcessMemory Process() override;
  ProcessMemory ProcessRss() override;
  SystemMemory System() override;
  std::vector<GpuMemory> Gpus() override;

  void set_footprint(uint64_t bytes);
  void set_system(const SystemMemory& s);
  void set_gpus(std::vector<GpuMemory> gpus);
  // Readings taken so far: the full one (Process) and the cheap one.
  int process_reads() const { return process_reads_.load(); }
  int rss_reads() const { return rss_reads_.load(); }

 private:
  std::atomic<int> process_reads_{0}, rss_reads_{0};
  std::mutex mu_;
  uint64_t footprint_ = 0;
  SystemMemory system_;
  std::vector<GpuMemory> gpus_;
};

}  // namespace llmhost
