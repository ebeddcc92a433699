#include "formats/safetensors.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "util/json.h"

namespace llmhost {

namespace {

using Json = nlohmann::json;

uint64_t ReadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A JSON number that is a non-negative integer, or nullopt.
std::optional<uint64_t> AsUnsigned(const Json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v >= 0) return static_cast<uint64_t>(v);
  }
  return std::nullopt;
}

Status ParseTensorEntry(const std::string& file, const std::string& name, const Json& j,
                        SafetensorsTensorInfo* out) {
  auto err = [&](const std::string& what) {
    return Status::Corruption(file + ": tensor '" + name + "': " + what);
  };
  if (!j.is_object()) return err("entry is not a JSON object");
  out->name = name;

  auto dt = j.find("dtype");
  if (dt == j.end()) return err("missing field 'dtype'");
  if (!dt->is_string()) return err("field 'dtype' is not a string");
  const std::string& dname = dt->get_ref<const std::string&>();
  std::optional<DType> dtype = DTypeFromName(dname);
  if (!dtype) {
    return Status::NotSupported(file + ": tensor '" + name + "': unknown dtype '" + dname + "'");
  }
  out->dtype = *dtype;

  auto sh = j.find("shape");
  if (sh == j.end()) return err("missing field 'shape'");
  if (!sh->is_array()) return err("field 'shape' is not an array");
  out->shape.reserve(sh->size());
  for (const Json& d : *sh) {
    if (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0) {
      return err("negative dimension " + std::to_string(d.get<int64_t>()) + " in shape");
    }
    std::optional<uint64_t> v = AsUnsigned(d);
    if (!v) return err("shape has a dimension that is not a non-negative integer: " + d.dump());
    if (*v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return err("dimension " + std::to_string(*v) + " is too large");
    }
    out->shape.push_back(static_cast<int64_t>(*v));
  }

  auto off = j.find("data_offsets");
  if (off == j.end()) return err("missing field 'data_offsets'");
  if (!off->is_array() || off->size() != 2) return err("field 'data_offsets' is not [begin, end]");
  std::optional<uint64_t> begin = AsUnsigned((*off)[0]);
  std::optional<uint64_t> end = AsUnsigned((*off)[1]);
  if (!begin || !end) return err("data_offsets are not non-negative integers: " + off->dump());
  if (*end < *begin) {
    return err("data_offsets end " + std::to_string(*end) + " is before begin " +
               std::to_string(*begin));
  }
  out->begin = *begin;
  out->end = *end;

  // prod(shape) * element size, guarding against overflow.
  uint64_t bytes = DTypeSize(out->dtype);
  for (int64_t d : out->shape) {
    uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && bytes > std::numeric_limits<uint64_t>::max() / ud) {
      return err("shape " + ShapeToString(out->shape) + " overflows a 64-bit byte count");
    }
    bytes *= ud;
  }
  if (bytes != out->n_bytes()) {
    return err("shape " + ShapeToString(out->shape) + " of " + dname + " needs " +
               std::to_string(bytes) + " bytes but data_offsets span " +
               std::to_string(out->n_bytes()));
  }
  return Status::OK();
}

}  // namespace

int64_t TensorView::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t SafetensorsTensorInfo::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

SafetensorsFile::~SafetensorsFile() = default;

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> map, MappedFile::Open(path));
  const uint8_t* data = map->data();
  size_t size = map->size();
  return ParseImpl(data, size, path, std::move(map));
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Parse(const uint8_t* data, size_t size,
                                                                std::string name) {
  return ParseImpl(data, size, std::move(name), nullptr);
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::ParseImpl(
    const uint8_t* data, size_t size, std::string name, std::unique_ptr<MappedFile> map) {
  if (size < 8) {
    return Status::Corruption(name + ": file is " + std::to_string(size) +
                              " bytes, shorter than the 8-byte header length");
  }
  uint64_t n = ReadLe64(data);
  if (n > kSafetensorsMaxHeaderBytes) {
    return Status::Corruption(name + ": header length " + std::to_string(n) +
                              " exceeds the limit of " +
                              std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  }
  if (n > size - 8) {
    return Status::Corruption(name + ": header length " + std::to_string(n) +
                              " runs past the end of the file (" + std::to_string(size) +
                              " bytes)");
  }
  const char* hbegin = reinterpret_cast<const char*>(data + 8);
  Result<Json> parsed = ParseJson(std::string_view(hbegin, n), name + ": header", n);
  if (!parsed.ok()) return Status::Corruption(parsed.status().message());
  const Json& header = *parsed;
  if (!header.is_object()) return Status::Corruption(name + ": header is not a JSON object");

  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->tensors_.reserve(header.size());
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    if (key == "__metadata__") {
      if (!it->is_object()) return Status::Corruption(name + ": __metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) {
          return Status::Corruption(name + ": __metadata__ value of '" + m.key() +
                                    "' is not a string");
        }
        f->metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    SafetensorsTensorInfo info;
    RETURN_IF_ERROR(ParseTensorEntry(name, key, *it, &info));
    f->tensors_.push_back(std::move(info));
  }

  // The data section must be exactly covered, tensor after tensor.
  std::sort(f->tensors_.begin(), f->tensors_.end(),
            [](const SafetensorsTensorInfo& a, const SafetensorsTensorInfo& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  const uint64_t data_size = size - 8 - n;
  uint64_t expect = 0;
  for (size_t i = 0; i < f->tensors_.size(); ++i) {
    const SafetensorsTensorInfo& t = f->tensors_[i];
    if (t.begin < expect) {
      return Status::Corruption(name + ": tensor '" + t.name + "' (bytes " +
                                std::to_string(t.begin) + ".." + std::to_string(t.end) +
                                ") overlaps tensor '" + f->tensors_[i - 1].name + "'");
    }
    if (t.begin > expect) {
      return Status::Corruption(name + ": " + std::to_string(t.begin - expect) +
                                "-byte hole in the data section before tensor '" + t.name +
                                "' (safetensors data must be contiguous)");
    }
    if (t.end > data_size) {
      return Status::Corruption(name + ": tensor '" + t.name + "' ends at data byte " +
                                std::to_string(t.end) + ", past the end of the file (data section " +
                                std::to_string(data_size) + " bytes)");
    }
    expect = t.end;
  }
  if (expect != data_size) {
    return Status::Corruption(name + ": tensors cover " + std::to_string(expect) +
                              " bytes but the data section has " + std::to_string(data_size) +
                              " bytes");
  }
  for (size_t i = 0; i < f->tensors_.size(); ++i) f->index_.emplace(f->tensors_[i].name, i);

  f->map_ = std::move(map);
  f->data_ = data;
  f->size_ = size;
  f->name_ = std::move(name);
  f->header_size_ = n;
  return f;
}

const SafetensorsTensorInfo* SafetensorsFile::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

TensorView SafetensorsFile::View(const SafetensorsTensorInfo& t) const {
  TensorView v;
  v.dtype = t.dtype;
  v.shape = t.shape;
  v.data = data_ + data_offset() + t.begin;
  v.n_bytes = static_cast<size_t>(t.n_bytes());
  return v;
}

Result<TensorView> SafetensorsFile::Tensor(std::string_view name) const {
  const SafetensorsTensorInfo* t = Find(name);
  if (t == nullptr) {
    return Status::NotFound(name_ + ": no tensor named '" + std::string(name) + "'");
  }
  return View(*t);
}

}  // namespace llmhost
