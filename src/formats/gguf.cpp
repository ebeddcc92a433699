// GGUF parsing. Every count and length read from the file is bounded by the
// bytes that remain before anything is allocated or skipped, so a hostile
// file costs at most O(file size) time and memory.
#include "formats/gguf.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "formats/gguf_internal.h"

namespace llmhost {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint64_t kMaxAlignment = uint64_t{1} << 30;
constexpr int kMaxArrayDepth = 8;  // arrays of arrays
constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS
// Smallest encodings, used to bound counts by the bytes left.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // key length, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset
constexpr uint64_t kMinStringBytes = 8;
constexpr uint64_t kMinArrayBytes = 4 + 8;

constexpr uint32_t kTypeString = static_cast<uint32_t>(GgufValueType::kString);
constexpr uint32_t kTypeArray = static_cast<uint32_t>(GgufValueType::kArray);

class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size, const std::string& name)
      : data_(data), size_(size), name_(name) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }

  Status Truncated(const std::string& what) const {
    return Status::Corruption(name_ + ": truncated at byte " + std::to_string(pos_) +
                              " while reading " + what);
  }
  Status Skip(uint64_t n, const std::string& what) {
    if (n > remaining()) return Truncated(what);
    pos_ += n;
    return Status::OK();
  }
  template <typename T>
  Status Read(T* out, const std::string& what) {
    *out = T{};
    if (sizeof(T) > remaining()) return Truncated(what);
    *out = LoadLe<T>(here());
    pos_ += sizeof(T);
    return Status::OK();
  }
  Status ReadString(std::string* out, const std::string& what) {
    uint64_t len = 0;
    RETURN_IF_ERROR(Read(&len, what));
    if (len > remaining()) {
      return Status::Corruption(name_ + ": " + what + " at byte " + std::to_string(pos_ - 8) +
                                " has length " + std::to_string(len) +
                                ", past the end of the file");
    }
    out->assign(reinterpret_cast<const char*>(here()), len);
    pos_ += len;
    return Status::OK();
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  const std::string& name_;
  uint64_t pos_ = 0;
};

Status SkipValue(Reader& r, uint32_t type, int depth, const std::string& what);

// Skips `count` elements of type `elem` (the array header already read).
Status SkipArrayElements(Reader& r, uint32_t elem, uint64_t count, int depth,
                         const std::string& what) {
  if (size_t n = GgufScalarSize(elem); n != 0) {
    if (count > r.remaining() / n) {
      return r.Truncated(what + " (" + std::to_string(count) + " elements)");
    }
    return r.Skip(count * n, what);
  }
  uint64_t min_elem = elem == kTypeString ? kMinStringBytes
                      : elem == kTypeArray ? kMinArrayBytes
                                           : 0;
  if (min_elem == 0) {
    return Status::Corruption(what + ": unknown array element type " + std::to_string(elem));
  }
  if (count > r.remaining() / min_elem) {
    return r.Truncated(what + " (" + std::to_string(count) + " elements)");
  }
  for (uint64_t i = 0; i < count; ++i) RETURN_IF_ERROR(SkipValue(r, elem, depth, what));
  return Status::OK();
}

Status SkipValue(Reader& r, uint32_t type, int depth, const std::string& what) {
  if (size_t n = GgufScalarSize(type); n != 0) return r.Skip(n, what);
  if (type == kTypeString) {
    uint64_t len = 0;
    RETURN_IF_ERROR(r.Read(&len, what));
    return r.Skip(len, what);
  }
  if (type != kTypeArray) {
    return Status::Corruption(what + ": unknown value type " + std::to_string(type));
  }
  if (depth >= kMaxArrayDepth) {
    return Status::Corruption(what + ": arrays nested deeper than " +
                              std::to_string(kMaxArrayDepth) + " levels");
  }
  uint32_t elem = 0;
  uint64_t count = 0;
  RETURN_IF_ERROR(r.Read(&elem, what));
  RETURN_IF_ERROR(r.Read(&count, what));
  return SkipArrayElements(r, elem, count, depth + 1, what);
}

Status ParseKv(Reader& r, const std::string& file, uint64_t index, GgufKv* kv) {
  RETURN_IF_ERROR(r.ReadString(&kv->key, "the key of metadata entry " + std::to_string(index)));
  std::string what = file + ": metadata key '" + kv->key + "'";
  uint32_t type = 0;
  RETURN_IF_ERROR(r.Read(&type, "the value type of metadata key '" + kv->key + "'"));
  kv->type = static_cast<GgufValueType>(type);
  if (type == kTypeArray) {
    uint32_t elem = 0;
    RETURN_IF_ERROR(r.Read(&elem, "the array header of metadata key '" + kv->key + "'"));
    RETURN_IF_ERROR(r.Read(&kv->count, "the array header of metadata key '" + kv->key + "'"));
    kv->elem_type = static_cast<GgufValueType>(elem);
    kv->value = r.here();
    uint64_t start = r.pos();
    RETURN_IF_ERROR(SkipArrayElements(r, elem, kv->count, 1, what));
    kv->value_size = r.pos() - start;
    return Status::OK();
  }
  kv->value = r.here();
  uint64_t start = r.pos();
  RETURN_IF_ERROR(SkipValue(r, type, 0, what));
  kv->value_size = r.pos() - start;
  return Status::OK();
}

Status ParseTensorInfo(Reader& r, const std::string& file, uint64_t index, uint64_t alignment,
                       GgufTensorInfo* t) {
  RETURN_IF_ERROR(r.ReadString(&t->name, "the name of tensor " + std::to_string(index)));
  std::string ctx = "tensor '" + t->name + "'";
  auto err = [&](const std::string& what) {
    return Status::Corruption(file + ": " + ctx + ": " + what);
  };
  uint32_t n_dims = 0;
  RETURN_IF_ERROR(r.Read(&n_dims, "the dimension count of " + ctx));
  if (n_dims > kMaxDims) {
    return err(std::to_string(n_dims) + " dimensions, at most " + std::to_string(kMaxDims) +
               " allowed");
  }
  t->shape.resize(n_dims);
  uint64_t n_elements = 1;
  bool overflow = false;
  for (uint32_t i = 0; i < n_dims; ++i) {
    RETURN_IF_ERROR(r.Read(&t->shape[i], "the shape of " + ctx));
    uint64_t d = t->shape[i];
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return err("dimension " + std::to_string(i) + " is " + std::to_string(d) +
                 ", larger than INT64_MAX");
    }
    if (d != 0 && n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d) {
      overflow = true;  // reported after the shape is read, with the whole shape
    }
    n_elements *= d;
  }
  if (overflow) return err("the element count overflows INT64_MAX");
  uint32_t type = 0;
  RETURN_IF_ERROR(r.Read(&type, "the type of " + ctx));
  RETURN_IF_ERROR(r.Read(&t->offset, "the data offset of " + ctx));
  std::optional<GgmlTypeTraits> traits = GgmlTypeInfo(type);
  if (!traits) {
    return Status::NotSupported(file + ": " + ctx + " has unsupported ggml type " +
                                std::to_string(type));
  }
  t->type = static_cast<GgmlType>(type);
  // ggml quantizes rows independently: ne[0] must be a whole number of blocks.
  uint64_t ne0 = n_dims > 0 ? t->shape[0] : 1;
  if (ne0 % traits->block_size != 0) {
    return err("row length " + std::to_string(ne0) + " is not a multiple of the " +
               traits->name + " block size " + std::to_string(traits->block_size));
  }
  uint64_t blocks = n_elements / traits->block_size;
  if (blocks > std::numeric_limits<uint64_t>::max() / traits->type_size) {
    return err("the byte size overflows 64 bits");
  }
  t->n_elements = n_elements;
  t->n_bytes = blocks * traits->type_size;
  if (t->offset % alignment != 0) {
    return err("data offset " + std::to_string(t->offset) + " is not a multiple of the alignment " +
               std::to_string(alignment));
  }
  return Status::OK();
}

Status ReadAlignment(const GgufImage& g, uint64_t* out) {
  *out = kDefaultAlignment;
  const GgufKv* kv = g.Find("general.alignment");
  if (kv == nullptr) return Status::OK();
  Result<int64_t> v = GgufScalarInt(*kv, g.name);
  if (!v.ok()) return Status::Corruption(v.status().message());
  if (*v <= 0 || (*v & (*v - 1)) != 0 || static_cast<uint64_t>(*v) > kMaxAlignment) {
    return Status::Corruption(g.name + ": general.alignment " + std::to_string(*v) +
                              " is not a power of two up to 2^30");
  }
  *out = static_cast<uint64_t>(*v);
  return Status::OK();
}

Status ParseImage(GgufImage& g) {
  Reader r(g.data, g.size, g.name);
  uint32_t magic = 0;
  if (g.size < 4) return Status::Corruption(g.name + ": not a GGUF file (shorter than 4 bytes)");
  RETURN_IF_ERROR(r.Read(&magic, "the magic"));
  if (magic != kGgufMagic) return Status::Corruption(g.name + ": not a GGUF file (bad magic)");
  RETURN_IF_ERROR(r.Read(&g.version, "the version"));
  if (g.version == 1) {
    return Status::NotSupported(g.name + ": GGUF version 1 is not supported (only v2 and v3)");
  }
  if ((g.version & 0xffff) == 0 && (g.version >> 16) != 0) {
    return Status::NotSupported(g.name + ": big-endian GGUF files are not supported");
  }
  if (g.version != 2 && g.version != 3) {
    return Status::NotSupported(g.name + ": unsupported GGUF version " +
                                std::to_string(g.version) + " (only v2 and v3)");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  RETURN_IF_ERROR(r.Read(&n_tensors, "the tensor count"));
  RETURN_IF_ERROR(r.Read(&n_kv, "the metadata count"));
  if (n_kv > r.remaining() / kMinKvBytes) {
    return Status::Corruption(g.name + ": metadata count " + std::to_string(n_kv) +
                              " cannot fit in the file");
  }
  if (n_tensors > r.remaining() / kMinTensorInfoBytes) {
    return Status::Corruption(g.name + ": tensor count " + std::to_string(n_tensors) +
                              " cannot fit in the file");
  }

  g.kvs.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    GgufKv kv;
    RETURN_IF_ERROR(ParseKv(r, g.name, i, &kv));
    if (!g.kv_index.emplace(kv.key, g.kvs.size()).second) {
      return Status::Corruption(g.name + ": duplicate metadata key '" + kv.key + "'");
    }
    g.kvs.push_back(std::move(kv));
  }
  RETURN_IF_ERROR(ReadAlignment(g, &g.alignment));

  g.tensors.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    RETURN_IF_ERROR(ParseTensorInfo(r, g.name, i, g.alignment, &t));
    if (!g.tensor_index.emplace(t.name, g.tensors.size()).second) {
      return Status::Corruption(g.name + ": duplicate tensor name '" + t.name + "'");
    }
    g.tensors.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment.
  uint64_t pos = r.pos();
  g.data_offset = (pos + g.alignment - 1) / g.alignment * g.alignment;
  if (g.tensors.empty()) return Status::OK();
  if (g.data_offset > g.size) {
    return Status::Corruption(g.name + ": the data section would start at byte " +
                              std::to_string(g.data_offset) + ", past the end of the file (" +
                              std::to_string(g.size) + " bytes)");
  }
  const uint64_t data_size = g.size - g.data_offset;
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(g.tensors.size());
  for (const GgufTensorInfo& t : g.tensors) {
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      return Status::Corruption(g.name + ": tensor '" + t.name + "' data [" +
                                std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                                ") lies outside the data section (" + std::to_string(data_size) +
                                " bytes)");
    }
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensorInfo* prev = by_offset[i - 1];
    if (by_offset[i]->offset < prev->offset + prev->n_bytes) {
      return Status::Corruption(g.name + ": tensor '" + by_offset[i]->name +
                                "' overlaps tensor '" + prev->name + "'");
    }
  }
  return Status::OK();
}

}  // namespace

size_t GgufScalarSize(uint32_t type) {
  switch (static_cast<GgufValueType>(type)) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64: return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray: return 0;
  }
  return 0;
}

const char* GgufValueTypeName(uint32_t type) {
  static constexpr const char* kNames[] = {"uint8",  "int8",   "uint16", "int16",  "uint32",
                                           "int32",  "float32", "bool",  "string", "array",
                                           "uint64", "int64",  "float64"};
  return type < std::size(kNames) ? kNames[type] : "unknown";
}

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::~GgufFile() = default;

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> map, MappedFile::Open(path));
  auto impl = std::make_unique<Impl>();
  impl->data = map->data();
  impl->size = map->size();
  impl->name = path;
  impl->map = std::move(map);
  RETURN_IF_ERROR(ParseImage(*impl));
  return std::unique_ptr<GgufFile>(new GgufFile(std::move(impl)));
}

Result<std::unique_ptr<GgufFile>> GgufFile::Parse(const uint8_t* data, size_t size,
                                                  std::string name) {
  auto impl = std::make_unique<Impl>();
  impl->data = data;
  impl->size = size;
  impl->name = std::move(name);
  RETURN_IF_ERROR(ParseImage(*impl));
  return std::unique_ptr<GgufFile>(new GgufFile(std::move(impl)));
}

uint32_t GgufFile::version() const { return impl_->version; }
uint64_t GgufFile::alignment() const { return impl_->alignment; }
const std::string& GgufFile::path() const { return impl_->name; }
uint64_t GgufFile::size() const { return impl_->size; }
uint64_t GgufFile::data_offset() const { return impl_->data_offset; }

const std::vector<GgufTensorInfo>& GgufFile::tensors() const { return impl_->tensors; }

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = impl_->tensor_index.find(name);
  return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

const uint8_t* GgufFile::TensorData(const GgufTensorInfo& t) const {
  return impl_->data + impl_->data_offset + t.offset;
}

}  // namespace llmhost
