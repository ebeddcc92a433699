// ggml tensor type traits: elements per block and bytes per block, as in
// ggml's type_traits table and gguf-py's GGML_QUANT_SIZES.
#include "formats/gguf.h"

namespace llmhost {

std::optional<GgmlTypeTraits> GgmlTypeInfo(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32: return GgmlTypeTraits{"F32", 1, 4};
    case GgmlType::kF16: return GgmlTypeTraits{"F16", 1, 2};
    case GgmlType::kQ4_0: return GgmlTypeTraits{"Q4_0", 32, 18};   // f16 d + 16 nibble bytes
    case GgmlType::kQ4_1: return GgmlTypeTraits{"Q4_1", 32, 20};   // f16 d, m + 16
    case GgmlType::kQ5_0: return GgmlTypeTraits{"Q5_0", 32, 22};   // f16 d + 4 qh + 16
    case GgmlType::kQ5_1: return GgmlTypeTraits{"Q5_1", 32, 24};   // f16 d, m + 4 qh + 16
    case GgmlType::kQ8_0: return GgmlTypeTraits{"Q8_0", 32, 34};   // f16 d + 32 int8
    case GgmlType::kQ8_1: return GgmlTypeTraits{"Q8_1", 32, 36};   // f16 d, s + 32 int8
    case GgmlType::kQ2_K: return GgmlTypeTraits{"Q2_K", 256, 84};  // 16 scales + 64 qs + 2 f16
    case GgmlType::kQ3_K: return GgmlTypeTraits{"Q3_K", 256, 110}; // 32 hmask + 64 qs + 12 + f16
    case GgmlType::kQ4_K: return GgmlTypeTraits{"Q4_K", 256, 144}; // 2 f16 + 12 scales + 128 qs
    case GgmlType::kQ5_K: return GgmlTypeTraits{"Q5_K", 256, 176}; // 2 f16 + 12 + 32 qh + 128
    case GgmlType::kQ6_K: return GgmlTypeTraits{"Q6_K", 256, 210}; // 128 ql + 64 qh + 16 + f16
    case GgmlType::kQ8_K: return GgmlTypeTraits{"Q8_K", 256, 292}; // f32 d + 256 qs + 16 i16
    case GgmlType::kI8: return GgmlTypeTraits{"I8", 1, 1};
    case GgmlType::kI16: return GgmlTypeTraits{"I16", 1, 2};
    case GgmlType::kI32: return GgmlTypeTraits{"I32", 1, 4};
    case GgmlType::kI64: return GgmlTypeTraits{"I64", 1, 8};
    case GgmlType::kF64: return GgmlTypeTraits{"F64", 1, 8};
    case GgmlType::kBF16: return GgmlTypeTraits{"BF16", 1, 2};
  }
  return std::nullopt;
}

}  // namespace llmhost
