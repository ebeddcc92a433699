#include "pool/memory_probe.h"

#include <dlfcn.h>

#include <algorithm>
#include <charconv>
#include <fstream>

#include "backend/device.h"
#include "util/file.h"

namespace llmhost {

namespace {

// Kernel files are small; a bound keeps a strange one from being slurped.
constexpr size_t kMaxProcFile = 1 << 20;

std::string ReadSmall(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::string out;
  char buf[4096];
  while (out.size() < kMaxProcFile && f.read(buf, sizeof(buf)).gcount() > 0) {
    out.append(buf, static_cast<size_t>(f.gcount()));
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Calls fn(key, value) for each "Key:   value [kB]" line.
template <typename Fn>
void ForEachField(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = Trim(line.substr(0, colon));
    std::string_view rest = Trim(line.substr(colon + 1));
    uint64_t mult = 1;
    if (rest.size() > 3 && rest.substr(rest.size() - 3) == " kB") {
      mult = 1024;
      rest = Trim(rest.substr(0, rest.size() - 3));
    }
    uint64_t v = 0;
    if (ParseU64(rest, &v) && v <= UINT64_MAX / mult) fn(key, v * mult);
  }
}

}  // namespace

uint64_t SystemMemory::EffectiveTotal() const {
  if (cgroup_limit == 0) return mem_total;
  if (mem_total == 0) return cgroup_limit;
  return std::min(mem_total, cgroup_limit);
}

uint64_t SystemMemory::EffectiveAvailable() const {
  if (cgroup_limit == 0) return mem_available;
  const uint64_t used = cgroup_current > cgroup_inactive_file ? cgroup_current - cgroup_inactive_file : 0;
  const uint64_t room = cgroup_limit > used ? cgroup_limit - used : 0;
  return ok ? std::min(mem_available, room) : room;
}

ProcessMemory ParseSmapsRollup(std::string_view text) {
  ProcessMemory m;
  bool rss = false;
  ForEachField(text, [&](std::string_view key, uint64_t v) {
    if (key == "Rss") {
      m.rss_bytes = v;
      rss = true;
    } else if (key == "Pss") {
      m.pss_bytes = v;
    }
  });
  m.ok = rss;
  return m;
}

ProcessMemory ParseProcStatus(std::string_view text) {
  ProcessMemory m;
  ForEachField(text, [&](std::string_view key, uint64_t v) {
    if (key == "VmRSS") {
      m.rss_bytes = v;
      m.ok = true;
    }
  });
  return m;
}

void ParseMeminfo(std::string_view text, SystemMemory* out) {
  bool total = false;
  ForEachField(text, [&](std::string_view key, uint64_t v) {
    if (key == "MemTotal") {
      out->mem_total = v;
      total = true;
    } else if (key == "MemAvailable") {
      out->mem_available = v;
    } else if (key == "SwapFree") {
      out->swap_free = v;
    } else if (key == "Inactive(anon)") {
      out->inactive_anon = v;
    }
  });
  out->ok = total;
}

uint64_t ParseCgroupLimit(std::string_view text) {
  text = Trim(text);
  uint64_t v = 0;
  if (text == "max" || !ParseU64(text, &v)) return 0;
  return v >= (uint64_t{1} << 60) ? 0 : v;
}

uint64_t ParseKeyValue(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || line.substr(0, sp) != key) continue;
    uint64_t v = 0;
    return ParseU64(line.substr(sp + 1), &v) ? v : 0;
  }
  return 0;
}

std::string ParseCgroupPath(std::string_view text, std::string_view v1_controller) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // hierarchy-id:controller-list:path
    const size_t a = line.find(':');
    if (a == std::string_view::npos) continue;
    const size_t b = line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    std::string_view id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    std::string_view path = Trim(line.substr(b + 1));
    if (v1_controller.empty()) {
      if (id == "0" && controllers.empty()) return std::string(path);
      continue;
    }
    // v1: the controller appears in a comma-separated list.
    size_t pos = 0;
    while (pos <= controllers.size()) {
      size_t comma = controllers.find(',', pos);
      if (comma == std::string_view::npos) comma = controllers.size();
      if (controllers.substr(pos, comma - pos) == v1_controller) return std::string(path);
      pos = comma + 1;
    }
  }
  return "";
}

// ---- LinuxMemoryProbe ---------------------------------------------------------

// NVML entry points (the driver's libnvidia-ml.so.1), looked up at run time
// so that llmhost neither links against nor requires the NVIDIA driver.
struct LinuxMemoryProbe::Nvml {
  struct Memory {
    unsigned long long total, free, used;
  };
  using Device = void*;
  void* lib = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*handle)(unsigned, Device*) = nullptr;
  int (*memory)(Device, Memory*) = nullptr;
  int (*name)(Device, char*, unsigned) = nullptr;
  // nvmlPciInfo_t (v2 and v3 share it).
  struct Pci {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
  };
  int (*pci)(Device, Pci*) = nullptr;

  ~Nvml() {
    if (shutdown) shutdown();
    if (lib) dlclose(lib);
  }
  static std::unique_ptr<Nvml> Load() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    auto n = std::make_unique<Nvml>();
    n->lib = lib;
    auto sym = [&](const char* s) { return dlsym(lib, s); };
    n->init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
    n->count = reinterpret_cast<int (*)(unsigned*)>(sym("nvmlDeviceGetCount_v2"));
    n->handle = reinterpret_cast<int (*)(unsigned, Device*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
    n->memory = reinterpret_cast<int (*)(Device, Memory*)>(sym("nvmlDeviceGetMemoryInfo"));
    n->name = reinterpret_cast<int (*)(Device, char*, unsigned)>(sym("nvmlDeviceGetName"));
    void* pci = sym("nvmlDeviceGetPciInfo_v3");
    if (!pci) pci = sym("nvmlDeviceGetPciInfo_v2");
    n->pci = reinterpret_cast<int (*)(Device, Pci*)>(pci);
    auto shutdown = reinterpret_cast<int (*)()>(sym("nvmlShutdown"));
    if (!n->init || !n->count || !n->handle || !n->memory || n->init() != 0) return nullptr;
    n->shutdown = shutdown;  // only after a successful init
    return n;
  }
};

LinuxMemoryProbe::LinuxMemoryProbe(std::string proc_root, std::string cgroup_root, bool probe_gpus)
    : proc_root_(std::move(proc_root)), cgroup_root_(std::move(cgroup_root)), probe_gpus_(probe_gpus) {}

LinuxMemoryProbe::~LinuxMemoryProbe() = default;

ProcessMemory LinuxMemoryProbe::Process() {
  ProcessMemory m = ParseSmapsRollup(ReadSmall(proc_root_ + "/self/smaps_rollup"));
  if (!m.ok) m = ParseProcStatus(ReadSmall(proc_root_ + "/self/status"));
  return m;
}

ProcessMemory LinuxMemoryProbe::ProcessRss() {
  ProcessMemory m = ParseProcStatus(ReadSmall(proc_root_ + "/self/status"));
  return m.ok ? m : Process();
}

SystemMemory LinuxMemoryProbe::System() {
  SystemMemory s;
  ParseMeminfo(ReadSmall(proc_root_ + "/meminfo"), &s);
  ReadCgroup(&s);
  return s;
}

void LinuxMemoryProbe::ReadCgroup(SystemMemory* out) const {
  const std::string self = ReadSmall(proc_root_ + "/self/cgroup");
  // cgroup v2: the tightest memory.max from this process's cgroup up to the root.
  std::string path = ParseCgroupPath(self);
  if (!path.empty() && FileExists(cgroup_root_ + "/cgroup.controllers")) {
    std::string dir = path;
    for (;;) {
      const std::string base = cgroup_root_ + (dir == "/" ? "" : dir);
      const uint64_t limit = ParseCgroupLimit(ReadSmall(base + "/memory.max"));
      if (limit != 0 && (out->cgroup_limit == 0 || limit < out->cgroup_limit)) {
        out->cgroup_limit = limit;
        uint64_t cur = 0;
        ParseU64(ReadSmall(base + "/memory.current"), &cur);
        out->cgroup_current = cur;
        out->cgroup_inactive_file = ParseKeyValue(ReadSmall(base + "/memory.stat"), "inactive_file");
      }
      if (dir == "/" || dir.empty()) break;
      const size_t slash = dir.rfind('/');
      dir = slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
    }
    return;
  }
  // cgroup v1 memory controller (its own mount, or the hierarchy root).
  path = ParseCgroupPath(self, "memory");
  for (const std::string& base : {cgroup_root_ + "/memory" + (path == "/" ? "" : path),
                                  cgroup_root_ + "/memory"}) {
    const uint64_t limit = ParseCgroupLimit(ReadSmall(base + "/memory.limit_in_bytes"));
    if (limit == 0) continue;
    out->cgroup_limit = limit;
    uint64_t cur = 0;
    ParseU64(ReadSmall(base + "/memory.usage_in_bytes"), &cur);
    out->cgroup_current = cur;
    out->cgroup_inactive_file = ParseKeyValue(ReadSmall(base + "/memory.stat"), "total_inactive_file");
    return;
  }
}

std::vector<GpuMemory> LinuxMemoryProbe::Gpus() {
  std::vector<GpuMemory> out;
  if (!probe_gpus_) return out;
  std::lock_guard<std::mutex> lock(gpu_mu_);
  if (!nvml_tried_) {
    nvml_tried_ = true;
    nvml_ = Nvml::Load();
  }
  if (!nvml_) {
    // A driver without NVML: the CUDA runtime's figures, where llmhost
    // computes on a GPU (asking starts the runtime on every GPU).
    if (!cuda_fallback_) return out;
    for (const CudaMemory& c : CudaMemoryInfo()) {
      GpuMemory g;
      g.index = c.index;
      g.name = c.name;
      g.total_bytes = c.total_bytes;
      g.free_bytes = c.free_bytes;
      g.used_bytes = c.total_bytes - c.free_bytes;
      g.pci = c.pci;
      out.push_back(std::move(g));
    }
    return out;
  }
  unsigned n = 0;
  if (nvml_->count(&n) != 0) return out;
  for (unsigned i = 0; i < n && i < 64; ++i) {
    Nvml::Device d = nullptr;
    Nvml::Memory m{};
    if (nvml_->handle(i, &d) != 0 || nvml_->memory(d, &m) != 0) continue;
    GpuMemory g;
    g.index = static_cast<int>(i);
    char name[96] = {};
    if (nvml_->name && nvml_->name(d, name, sizeof(name) - 1) == 0) g.name = name;
    g.total_bytes = m.total;
    g.free_bytes = m.free;
    g.used_bytes = m.used;
    Nvml::Pci pci{};
    if (nvml_->pci && nvml_->pci(d, &pci) == 0) {
      g.pci = PciLocation{static_cast<int>(pci.domain), static_cast<int>(pci.bus), static_cast<int>(pci.device)};
    }
    out.push_back(std::move(g));
  }
  return out;
}

const GpuMemory* SelectGpu(const std::vector<GpuMemory>& gpus, int cuda_index, const PciLocation& pci) {
  if (pci.known()) {
    for (const GpuMemory& g : gpus) {
      if (g.pci == pci) return &g;
    }
    for (const GpuMemory& g : gpus) {
      if (g.pci.known()) return nullptr;  // located, and none is this one
    }
  }
  for (const GpuMemory& g : gpus) {
    if (g.index == cuda_index) return &g;
  }
  return nullptr;
}

// ---- FakeMemoryProbe ----------------------------------------------------------

ProcessMemory FakeMemoryProbe::Process() {
  ++process_reads_;
  std::lock_guard<std::mutex> lock(mu_);
  return ProcessMemory{footprint_, footprint_, true};
}

ProcessMemory FakeMemoryProbe::ProcessRss() {
  ++rss_reads_;
  std::lock_guard<std::mutex> lock(mu_);
  return ProcessMemory{footprint_, 0, true};
}

SystemMemory FakeMemoryProbe::System() {
  std::lock_guard<std::mutex> lock(mu_);
  return system_;
}

std::vector<GpuMemory> FakeMemoryProbe::Gpus() {
  std::lock_guard<std::mutex> lock(mu_);
  return gpus_;
}

void FakeMemoryProbe::set_footprint(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  footprint_ = bytes;
}

void FakeMemoryProbe::set_system(const SystemMemory& s) {
  std::lock_guard<std::mutex> lock(mu_);
  system_ = s;
}

void FakeMemoryProbe::set_gpus(std::vector<GpuMemory> gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  gpus_ = std::move(gpus);
}

}  // namespace llmhost
