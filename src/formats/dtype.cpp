#include "formats/dtype.h"

namespace llmhost {

namespace {
struct DTypeEntry {
  DType type;
  const char* name;
  uint8_t size;
  bool is_float;
};
// Indexed by the enum value.
constexpr DTypeEntry kDTypes[kNumDTypes] = {
    {DType::kF64, "F64", 8, true},   {DType::kF32, "F32", 4, true},
    {DType::kF16, "F16", 2, true},   {DType::kBF16, "BF16", 2, true},
    {DType::kI8, "I8", 1, false},    {DType::kI16, "I16", 2, false},
    {DType::kI32, "I32", 4, false},  {DType::kI64, "I64", 8, false},
    {DType::kU8, "U8", 1, false},    {DType::kU16, "U16", 2, false},
    {DType::kU32, "U32", 4, false},  {DType::kU64, "U64", 8, false},
    {DType::kBool, "BOOL", 1, false},
    {DType::kF8_E4M3, "F8_E4M3", 1, true}, {DType::kF8_E5M2, "F8_E5M2", 1, true},
};

const DTypeEntry& Entry(DType t) {
  size_t i = static_cast<size_t>(t);
  return kDTypes[i < kNumDTypes ? i : 0];
}
}  // namespace

const char* DTypeName(DType t) { return Entry(t).name; }
size_t DTypeSize(DType t) { return Entry(t).size; }
bool DTypeIsFloat(DType t) { return Entry(t).is_float; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const DTypeEntry& e : kDTypes) {
    if (name == e.name) return e.type;
  }
  return std::nullopt;
}

}  // namespace llmhost
