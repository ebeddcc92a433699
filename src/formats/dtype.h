// Element types of safetensors tensors (and of tensors in memory later on):
// names as written in safetensors headers, and element sizes in bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace llmhost {

enum class DType : uint8_t {
  kF64, kF32, kF16, kBF16,
  kI8, kI16, kI32, kI64,
  kU8, kU16, kU32, kU64,
  kBool,
  kF8_E4M3, kF8_E5M2,
};
inline constexpr int kNumDTypes = 15;

// "BF16" for kBF16: the spelling used in safetensors headers.
const char* DTypeName(DType t);
// Bytes per element: 8, 4, 2 or 1.
size_t DTypeSize(DType t);
// Parses a safetensors dtype name (exact, case-sensitive); nullopt if unknown.
std::optional<DType> DTypeFromName(std::string_view name);
bool DTypeIsFloat(DType t);  // F64 F32 F16 BF16 F8_*

}  // namespace llmhost
