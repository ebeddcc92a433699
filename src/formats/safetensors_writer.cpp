#include "formats/safetensors_writer.h"

#include <algorithm>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/utf8.h"

namespace llmhost {

namespace {
// The reference writer's dtype order (its enum order, "increasing alignment");
// it lays tensors out by descending rank, then by name.
int WriterRank(DType t) {
  switch (t) {
    case DType::kBool: return 0;
    case DType::kU8: return 1;
    case DType::kI8: return 2;
    case DType::kF8_E5M2: return 3;
    case DType::kF8_E4M3: return 4;
    case DType::kI16: return 5;
    case DType::kU16: return 6;
    case DType::kF16: return 7;
    case DType::kBF16: return 8;
    case DType::kI32: return 9;
    case DType::kU32: return 10;
    case DType::kF32: return 11;
    case DType::kF64: return 12;
    case DType::kI64: return 13;
    case DType::kU64: return 14;
  }
  return 0;
}
}  // namespace

Result<std::string> SerializeSafetensors(const std::vector<SafetensorsWriteTensor>& tensors,
                                         const std::map<std::string, std::string>& metadata) {
  std::vector<const SafetensorsWriteTensor*> order;
  order.reserve(tensors.size());
  std::set<std::string_view> names;
  for (const SafetensorsWriteTensor& t : tensors) {
    if (t.name == "__metadata__") {
      return Status::InvalidArgument("safetensors writer: '__metadata__' is reserved");
    }
    if (!utf8::IsValid(t.name)) {
      return Status::InvalidArgument("safetensors writer: tensor name is not valid UTF-8");
    }
    if (!names.insert(t.name).second) {
      return Status::InvalidArgument("safetensors writer: duplicate tensor name '" + t.name + "'");
    }
    uint64_t bytes = DTypeSize(t.dtype);
    for (int64_t d : t.shape) {
      if (d < 0) {
        return Status::InvalidArgument("safetensors writer: tensor '" + t.name +
                                       "' has a negative dimension");
      }
      uint64_t ud = static_cast<uint64_t>(d);
      if (ud != 0 && bytes > std::numeric_limits<uint64_t>::max() / ud) {
        return Status::InvalidArgument("safetensors writer: tensor '" + t.name +
                                       "' shape overflows");
      }
      bytes *= ud;
    }
    if (bytes != t.data.size()) {
      return Status::InvalidArgument("safetensors writer: tensor '" + t.name + "' has " +
                                     std::to_string(t.data.size()) + " bytes, its shape needs " +
                                     std::to_string(bytes));
    }
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(),
            [](const SafetensorsWriteTensor* a, const SafetensorsWriteTensor* b) {
              int ra = WriterRank(a->dtype), rb = WriterRank(b->dtype);
              return ra != rb ? ra > rb : a->name < b->name;
            });

  for (const auto& [k, v] : metadata) {
    if (!utf8::IsValid(k) || !utf8::IsValid(v)) {
      return Status::InvalidArgument("safetensors writer: metadata is not valid UTF-8");
    }
  }

  // Key order as the reference writer: __metadata__, then tensors in layout
  // order, each with dtype, shape, data_offsets.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const SafetensorsWriteTensor* t : order) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = DTypeName(t->dtype);
    entry["shape"] = t->shape;
    entry["data_offsets"] = {offset, offset + t->data.size()};
    header[t->name] = std::move(entry);
    offset += t->data.size();
  }
  std::string json = header.dump(-1, ' ', /*ensure_ascii=*/false,
                                 nlohmann::ordered_json::error_handler_t::replace);
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + json.size() + offset);
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += json;
  for (const SafetensorsWriteTensor* t : order) out.append(t->data);
  return out;
}

Status WriteSafetensorsFile(const std::string& path,
                            const std::vector<SafetensorsWriteTensor>& tensors,
                            const std::map<std::string, std::string>& metadata) {
  ASSIGN_OR_RETURN(std::string bytes, SerializeSafetensors(tensors, metadata));
  return WriteFileAtomic(path, bytes);
}

}  // namespace llmhost
