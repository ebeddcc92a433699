#include "backend/cpu/cpu_features.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define LLMHOST_X86 1
#endif

namespace llmhost {
namespace {

#if defined(LLMHOST_X86)
uint64_t ReadXcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures Detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool avx = c & (1u << 28);
  const bool fma = c & (1u << 12);
  const bool f16c = c & (1u << 29);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = ReadXcr0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;     // SSE and AVX state
  const bool os_zmm = (xcr0 & 0xE6) == 0xE6;   // plus opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;
  if (!os_ymm) return f;
  f.fma = fma;
  f.f16c = f16c;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = b & (1u << 5);
  if (os_zmm) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512_vnni = c & (1u << 11);
    f.avx512_fp16 = d & (1u << 23);
  }
  if (os_amx) {
    f.amx_bf16 = d & (1u << 22);
    f.amx_tile = d & (1u << 24);
    f.amx_int8 = d & (1u << 25);
  }
  const unsigned max_sub = a;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx_vnni = a & (1u << 4);
    if (os_zmm) f.avx512_bf16 = a & (1u << 5);
  }
  return f;
}
#else
CpuFeatures Detect() { return {}; }
#endif

// Linux hands out AMX tile data per process on request (arch_prctl
// ARCH_REQ_XCOMP_PERM, feature XTILEDATA = 18); without it the first tile
// instruction faults.
bool RequestAmxTileData() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuIsa DetectBest() {
  const CpuFeatures& f = DetectedCpuFeatures();
  CpuIsa best = (f.avx2 && f.fma && f.f16c) ? CpuIsa::kAvx2 : CpuIsa::kScalar;
  CpuIsa cap = CpuIsa::kAmx;
  if (const char* env = std::getenv("LLMHOST_CPU_ISA")) {
    if (std::strcmp(env, "scalar") == 0) cap = CpuIsa::kScalar;
    if (std::strcmp(env, "avx2") == 0) cap = CpuIsa::kAvx2;
    if (std::strcmp(env, "avx512-bf16") == 0) cap = CpuIsa::kAvx512Bf16;
  }
  if (best == CpuIsa::kAvx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512_bf16) best = CpuIsa::kAvx512Bf16;
  // AMX CPUs have AVX512_BF16 too (each level requires the previous ones);
  // the tile data is requested only when AMX may be used.
  if (best == CpuIsa::kAvx512Bf16 && cap == CpuIsa::kAmx && f.amx_tile && f.amx_bf16 && RequestAmxTileData()) {
    best = CpuIsa::kAmx;
  }
  return static_cast<int>(best) < static_cast<int>(cap) ? best : cap;
}

std::atomic<int> g_active{-1};

}  // namespace

std::string CpuFeatures::Describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512dq, "avx512dq");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_vnni, "avx512_vnni");
  add(avx512_bf16, "avx512_bf16");
  add(avx512_fp16, "avx512_fp16");
  add(avx_vnni, "avx_vnni");
  add(amx_tile, "amx_tile");
  add(amx_bf16, "amx_bf16");
  add(amx_int8, "amx_int8");
  return s.empty() ? "baseline" : s;
}

const CpuFeatures& DetectedCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512Bf16: return "avx512-bf16";
    case CpuIsa::kAmx: return "amx";
  }
  return "?";
}

CpuIsa BestCpuIsa() {
  static const CpuIsa best = DetectBest();
  return best;
}

CpuIsa ActiveCpuIsa() {
  int v = g_active.load(std::memory_order_relaxed);
  return v < 0 ? BestCpuIsa() : static_cast<CpuIsa>(v);
}

void SetActiveCpuIsaForTesting(CpuIsa isa) {
  if (static_cast<int>(isa) > static_cast<int>(BestCpuIsa())) isa = BestCpuIsa();
  g_active.store(static_cast<int>(isa), std::memory_order_relaxed);
}

}  // namespace llmhost
