#include "formats/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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

// One tensor as the header sees it; `index` is its position in the caller's list.
struct Planned {
  const std::string* name;
  DType dtype;
  const std::vector<int64_t>* shape;
  uint64_t bytes;
  size_t index;
};

Result<uint64_t> ShapeBytes(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
  uint64_t bytes = DTypeSize(dtype);
  for (int64_t d : shape) {
    if (d < 0) {
      return Status::InvalidArgument("safetensors writer: tensor '" + name +
                                     "' has a negative dimension");
    }
    uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && bytes > std::numeric_limits<uint64_t>::max() / ud) {
      return Status::InvalidArgument("safetensors writer: tensor '" + name + "' shape overflows");
    }
    bytes *= ud;
  }
  return bytes;
}

// Checks names and metadata, sorts `t` into layout order and returns the
// file's first bytes: the 8-byte header length and the padded header JSON.
Result<std::string> PlanHeader(std::vector<Planned>& t,
                               const std::map<std::string, std::string>& metadata) {
  std::set<std::string_view> names;
  for (const Planned& p : t) {
    if (*p.name == "__metadata__") {
      return Status::InvalidArgument("safetensors writer: '__metadata__' is reserved");
    }
    if (!utf8::IsValid(*p.name)) {
      return Status::InvalidArgument("safetensors writer: tensor name is not valid UTF-8");
    }
    if (!names.insert(*p.name).second) {
      return Status::InvalidArgument("safetensors writer: duplicate tensor name '" + *p.name + "'");
    }
  }
  std::sort(t.begin(), t.end(), [](const Planned& a, const Planned& b) {
    int ra = WriterRank(a.dtype), rb = WriterRank(b.dtype);
    return ra != rb ? ra > rb : *a.name < *b.name;
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
  for (const Planned& p : t) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = DTypeName(p.dtype);
    entry["shape"] = *p.shape;
    entry["data_offsets"] = {offset, offset + p.bytes};
    header[*p.name] = std::move(entry);
    offset += p.bytes;
  }
  std::string json = header.dump(-1, ' ', /*ensure_ascii=*/false,
                                 nlohmann::ordered_json::error_handler_t::replace);
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out;
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += json;
  return out;
}

std::string ErrnoText() { return std::strerror(errno); }

}  // namespace

Result<std::string> SerializeSafetensors(const std::vector<SafetensorsWriteTensor>& tensors,
                                         const std::map<std::string, std::string>& metadata) {
  std::vector<Planned> plan;
  plan.reserve(tensors.size());
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsWriteTensor& t = tensors[i];
    ASSIGN_OR_RETURN(uint64_t bytes, ShapeBytes(t.name, t.dtype, t.shape));
    if (bytes != t.data.size()) {
      return Status::InvalidArgument("safetensors writer: tensor '" + t.name + "' has " +
                                     std::to_string(t.data.size()) + " bytes, its shape needs " +
                                     std::to_string(bytes));
    }
    plan.push_back({&t.name, t.dtype, &t.shape, bytes, i});
    total += bytes;
  }
  ASSIGN_OR_RETURN(std::string out, PlanHeader(plan, metadata));
  out.reserve(out.size() + total);
  for (const Planned& p : plan) out.append(tensors[p.index].data);
  return out;
}

Status WriteSafetensorsFile(const std::string& path,
                            const std::vector<SafetensorsWriteTensor>& tensors,
                            const std::map<std::string, std::string>& metadata) {
  ASSIGN_OR_RETURN(std::string bytes, SerializeSafetensors(tensors, metadata));
  return WriteFileAtomic(path, bytes);
}

// --- streaming ---------------------------------------------------------------

namespace {
constexpr size_t kStreamBuffer = size_t{8} << 20;  // bytes per write(2)
}  // namespace

Result<std::unique_ptr<SafetensorsStreamWriter>> SafetensorsStreamWriter::Create(
    const std::string& path, const std::vector<SafetensorsTensorSpec>& tensors,
    const std::map<std::string, std::string>& metadata) {
  std::vector<Planned> plan;
  plan.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsTensorSpec& t = tensors[i];
    ASSIGN_OR_RETURN(uint64_t bytes, ShapeBytes(t.name, t.dtype, t.shape));
    plan.push_back({&t.name, t.dtype, &t.shape, bytes, i});
  }
  ASSIGN_OR_RETURN(std::string header, PlanHeader(plan, metadata));
  std::unique_ptr<SafetensorsStreamWriter> w(new SafetensorsStreamWriter());
  w->path_ = path;
  w->tmp_ = path + ".tmp." + std::to_string(::getpid());
  uint64_t end = 0;
  for (const Planned& p : plan) {
    w->layout_.push_back(tensors[p.index]);
    end += p.bytes;
    w->ends_.push_back(end);
  }
  w->fd_ = ::open(w->tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) return Status::IOError(w->tmp_ + ": create failed: " + ErrnoText());
  w->buffer_ = std::move(header);
  w->current_ = 0;
  while (w->current_ < w->ends_.size() && w->ends_[w->current_] == 0) ++w->current_;
  return w;
}

SafetensorsStreamWriter::~SafetensorsStreamWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

Status SafetensorsStreamWriter::WriteAll(std::string_view bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(tmp_ + ": write failed: " + ErrnoText());
    }
    off += static_cast<size_t>(n);
  }
  return Status::OK();
}

Status SafetensorsStreamWriter::Flush() {
  RETURN_IF_ERROR(WriteAll(buffer_));
  buffer_.clear();
  return Status::OK();
}

Status SafetensorsStreamWriter::Append(std::string_view bytes) {
  if (fd_ < 0) return Status::InvalidArgument("safetensors writer: " + path_ + " is finished");
  const uint64_t total = ends_.empty() ? 0 : ends_.back();
  if (bytes.size() > total - written_) {
    return Status::InvalidArgument("safetensors writer: " + path_ + ": " +
                                   std::to_string(bytes.size()) + " bytes appended past the end of "
                                   "the last tensor");
  }
  written_ += bytes.size();
  while (current_ < ends_.size() && ends_[current_] <= written_) ++current_;
  if (buffer_.size() + bytes.size() > kStreamBuffer) {
    RETURN_IF_ERROR(Flush());
    if (bytes.size() >= kStreamBuffer) return WriteAll(bytes);  // large chunks go straight out
  }
  buffer_.append(bytes);
  return Status::OK();
}

Status SafetensorsStreamWriter::Finish() {
  if (fd_ < 0) return Status::InvalidArgument("safetensors writer: " + path_ + " is finished");
  const uint64_t total = ends_.empty() ? 0 : ends_.back();
  if (written_ != total) {
    return Status::InvalidArgument("safetensors writer: " + path_ + ": tensor '" +
                                   layout_[current_].name + "' is incomplete (" +
                                   std::to_string(total - written_) + " bytes missing in all)");
  }
  RETURN_IF_ERROR(Flush());
  if (::fsync(fd_) != 0) return Status::IOError(tmp_ + ": fsync failed: " + ErrnoText());
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    Status s = Status::IOError(path_ + ": rename failed: " + ErrnoText());
    ::unlink(tmp_.c_str());
    return s;
  }
  int dfd = ::open(DirName(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: makes the rename durable
    ::close(dfd);
  }
  return Status::OK();
}

}  // namespace llmhost
