// Run-time CPU feature detection and the choice of kernel instruction set.
//
// The binary is built for baseline x86-64; kernels for wider instruction sets
// live in files whose functions carry target attributes (*_avx2.cpp) and are
// called only when the CPU (and the OS, via XCR0) supports them.
#pragma once

#include <string>

namespace llmhost {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false, avx_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;  // CPU and XCR0 bits; Linux must also
                                                              // grant tile data (BestCpuIsa asks)
  std::string Describe() const;  // "avx2 fma f16c avx512f ..."
};

// Detected once (cpuid + xgetbv); all false on non-x86 builds.
const CpuFeatures& DetectedCpuFeatures();

// Kernel families, lowest first. Each level requires the previous ones.
enum class CpuIsa {
  kScalar,  // portable C++: the fast path falls back to the reference kernels
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512Bf16,  // plus AVX-512 F/BW/VL + AVX512_BF16 (Zen 4, Cooper Lake and
                // later): the kFastBf16 matmuls by VDPBF16PS
  kAmx,     // plus AMX-TILE + AMX-BF16 with tile data granted by the OS
            // (arch_prctl ARCH_REQ_XCOMP_PERM): the kFastBf16 matmuls in tiles
};

// Whether `isa` has a bf16 dot-product matmul (kFastBf16 / kBf16Tiles).
inline bool HasBf16Matmul(CpuIsa isa) { return static_cast<int>(isa) >= static_cast<int>(CpuIsa::kAvx512Bf16); }

const char* CpuIsaName(CpuIsa isa);

// The best level this CPU supports, capped by LLMHOST_CPU_ISA=scalar|avx2|avx512-bf16|amx
// when set (read once; for tests and comparisons).
CpuIsa BestCpuIsa();

// The level the kernels use now: BestCpuIsa() unless overridden. The override
// exists for tests that compare kernel families on one machine; a level the
// CPU lacks is clamped to BestCpuIsa(). Not thread-safe against running
// matmuls: set it before starting work.
CpuIsa ActiveCpuIsa();
void SetActiveCpuIsaForTesting(CpuIsa isa);

}  // namespace llmhost
