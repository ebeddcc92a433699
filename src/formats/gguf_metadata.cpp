// GGUF metadata access: values are decoded from the map on each call.
#include <charconv>
#include <limits>

#include "formats/gguf.h"
#include "formats/gguf_internal.h"

namespace llmhost {

namespace {

bool IsIntType(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8: case GgufValueType::kInt8:
    case GgufValueType::kUint16: case GgufValueType::kInt16:
    case GgufValueType::kUint32: case GgufValueType::kInt32:
    case GgufValueType::kUint64: case GgufValueType::kInt64: return true;
    default: return false;
  }
}
bool IsFloatType(GgufValueType t) {
  return t == GgufValueType::kFloat32 || t == GgufValueType::kFloat64;
}
const char* TypeName(GgufValueType t) { return GgufValueTypeName(static_cast<uint32_t>(t)); }

// REQUIRES: IsIntType(t). Sets *overflow for a uint64 above INT64_MAX.
int64_t DecodeInt(GgufValueType t, const uint8_t* p, bool* overflow) {
  *overflow = false;
  switch (t) {
    case GgufValueType::kUint8: return LoadLe<uint8_t>(p);
    case GgufValueType::kInt8: return LoadLe<int8_t>(p);
    case GgufValueType::kUint16: return LoadLe<uint16_t>(p);
    case GgufValueType::kInt16: return LoadLe<int16_t>(p);
    case GgufValueType::kUint32: return LoadLe<uint32_t>(p);
    case GgufValueType::kInt32: return LoadLe<int32_t>(p);
    case GgufValueType::kInt64: return LoadLe<int64_t>(p);
    case GgufValueType::kUint64: {
      uint64_t v = LoadLe<uint64_t>(p);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) *overflow = true;
      return static_cast<int64_t>(v);
    }
    default: return 0;
  }
}

// REQUIRES: IsIntType(t) || IsFloatType(t).
double DecodeNumber(GgufValueType t, const uint8_t* p) {
  if (t == GgufValueType::kFloat32) return LoadLe<float>(p);
  if (t == GgufValueType::kFloat64) return LoadLe<double>(p);
  if (t == GgufValueType::kUint64) return static_cast<double>(LoadLe<uint64_t>(p));
  bool overflow;
  return static_cast<double>(DecodeInt(t, p, &overflow));
}

std::string_view DecodeString(const uint8_t* p) {
  uint64_t len = LoadLe<uint64_t>(p);
  return {reinterpret_cast<const char*>(p + 8), static_cast<size_t>(len)};
}

Status WrongType(const std::string& file, std::string_view key, const GgufKv& kv,
                 const char* expected) {
  std::string actual = TypeName(kv.type);
  if (kv.type == GgufValueType::kArray) actual += std::string(" of ") + TypeName(kv.elem_type);
  return Status::InvalidArgument(file + ": metadata key '" + std::string(key) + "' has type " +
                                 actual + ", expected " + expected);
}

std::string FormatDouble(double v, bool as_float) {
  char buf[64];
  auto res = as_float ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v))
                      : std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

std::string Quote(std::string_view s, size_t max_len) {
  std::string out = "\"";
  size_t n = 0;
  for (char c : s) {
    if (n++ >= max_len) {
      out += "...";
      break;
    }
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string DescribeScalar(GgufValueType t, const uint8_t* p) {
  if (t == GgufValueType::kString) return Quote(DecodeString(p), 200);
  if (t == GgufValueType::kBool) return LoadLe<uint8_t>(p) ? "true" : "false";
  if (t == GgufValueType::kFloat32) return FormatDouble(LoadLe<float>(p), true);
  if (t == GgufValueType::kFloat64) return FormatDouble(LoadLe<double>(p), false);
  if (t == GgufValueType::kUint64) return std::to_string(LoadLe<uint64_t>(p));
  bool overflow;
  return std::to_string(DecodeInt(t, p, &overflow));
}

}  // namespace

Result<int64_t> GgufScalarInt(const GgufKv& kv, const std::string& file) {
  if (!IsIntType(kv.type)) return WrongType(file, kv.key, kv, "an integer");
  bool overflow;
  int64_t v = DecodeInt(kv.type, kv.value, &overflow);
  if (overflow) {
    return Status::InvalidArgument(file + ": metadata key '" + kv.key +
                                   "' does not fit in int64");
  }
  return v;
}

bool GgufFile::Has(std::string_view key) const { return impl_->Find(key) != nullptr; }

std::optional<GgufValueType> GgufFile::TypeOf(std::string_view key) const {
  const GgufKv* kv = impl_->Find(key);
  if (kv == nullptr) return std::nullopt;
  return kv->type;
}

std::optional<GgufValueType> GgufFile::ArrayElementType(std::string_view key) const {
  const GgufKv* kv = impl_->Find(key);
  if (kv == nullptr || kv->type != GgufValueType::kArray) return std::nullopt;
  return kv->elem_type;
}

std::vector<std::string> GgufFile::Keys() const {
  std::vector<std::string> keys;
  keys.reserve(impl_->kvs.size());
  for (const GgufKv& kv : impl_->kvs) keys.push_back(kv.key);
  return keys;
}

#define LLMHOST_GGUF_FIND(kv, key)                                                           \
  const GgufKv* kv = impl_->Find(key);                                                      \
  if (kv == nullptr) {                                                                      \
    return Status::NotFound(impl_->name + ": no metadata key '" + std::string(key) + "'"); \
  }

Result<std::string> GgufFile::GetString(std::string_view key) const {
  LLMHOST_GGUF_FIND(kv, key);
  if (kv->type != GgufValueType::kString) return WrongType(impl_->name, key, *kv, "string");
  return std::string(DecodeString(kv->value));
}

Result<int64_t> GgufFile::GetInt(std::string_view key) const {
  LLMHOST_GGUF_FIND(kv, key);
  return GgufScalarInt(*kv, impl_->name);
}

Result<double> GgufFile::GetFloat(std::string_view key) const {
  LLMHOST_GGUF_FIND(kv, key);
  if (!IsFloatType(kv->type) && !IsIntType(kv->type)) {
    return WrongType(impl_->name, key, *kv, "a number");
  }
  return DecodeNumber(kv->type, kv->value);
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  LLMHOST_GGUF_FIND(kv, key);
  if (kv->type != GgufValueType::kBool) return WrongType(impl_->name, key, *kv, "bool");
  return LoadLe<uint8_t>(kv->value) != 0;
}

Result<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  LLMHOST_GGUF_FIND(kv, key);
  if (kv->type != GgufValueType::kArray || kv->elem_type != GgufValueType::kString) {
    return WrongType(impl_->name, key, *kv, "array of string");
  }
  std::vector<std::string> out;
  out.reserve(kv->count);
  const uint8_t* p = kv->value;
  for (uint64_t i = 0; i < kv->count; ++i) {
    std::string_view s = DecodeString(p);
    out.emplace_back(s);
    p += 8 + s.size();
  }
  return out;
}

Result<std::vector<int64_t>> GgufFile::GetIntArray(std::string_view key) const {
  LLMHOST_GGUF_FIND(kv, key);
  if (kv->type != GgufValueType::kArray || !IsIntType(kv->elem_type)) {
    return WrongType(impl_->name, key, *kv, "array of integers");
  }
  size_t step = GgufScalarSize(static_cast<uint32_t>(kv->elem_type));
  std::vector<int64_t> out;
  out.reserve(kv->count);
  for (uint64_t i = 0; i < kv->count; ++i) {
    bool overflow;
    out.push_back(DecodeInt(kv->elem_type, kv->value + i * step, &overflow));
    if (overflow) {
      return Status::InvalidArgument(impl_->name + ": metadata key '" + std::string(key) +
                                     "': element " + std::to_string(i) +
                                     " does not fit in int64");
    }
  }
  return out;
}

Result<std::vector<double>> GgufFile::GetFloatArray(std::string_view key) const {
  LLMHOST_GGUF_FIND(kv, key);
  if (kv->type != GgufValueType::kArray ||
      (!IsFloatType(kv->elem_type) && !IsIntType(kv->elem_type))) {
    return WrongType(impl_->name, key, *kv, "array of numbers");
  }
  size_t step = GgufScalarSize(static_cast<uint32_t>(kv->elem_type));
  std::vector<double> out;
  out.reserve(kv->count);
  for (uint64_t i = 0; i < kv->count; ++i) out.push_back(DecodeNumber(kv->elem_type, kv->value + i * step));
  return out;
}

#undef LLMHOST_GGUF_FIND

std::string GgufFile::DescribeValue(std::string_view key) const {
  const GgufKv* kv = impl_->Find(key);
  if (kv == nullptr) return "";
  if (kv->type != GgufValueType::kArray) return DescribeScalar(kv->type, kv->value);

  constexpr uint64_t kShown = 3;
  std::string out = "[";
  if (kv->elem_type == GgufValueType::kArray) {
    out += std::to_string(kv->count) + " arrays";
    return out + "]";
  }
  const uint8_t* p = kv->value;
  size_t step = GgufScalarSize(static_cast<uint32_t>(kv->elem_type));
  for (uint64_t i = 0; i < kv->count && i < kShown; ++i) {
    if (i) out += ", ";
    if (kv->elem_type == GgufValueType::kString) {
      std::string_view s = DecodeString(p);
      out += Quote(s, 40);
      p += 8 + s.size();
    } else {
      out += DescribeScalar(kv->elem_type, p);
      p += step;
    }
  }
  if (kv->count > kShown) {
    out += ", ... (" + std::to_string(kv->count) + " " + TypeName(kv->elem_type) + ")";
  }
  return out + "]";
}

}  // namespace llmhost
