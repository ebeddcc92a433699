#include "kv/fingerprint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "model/random_model.h"
#include "util/file.h"

namespace llmhost {
namespace {

// Fields are length- or width-prefixed so that no two inputs hash alike by
// concatenation.
void PutU64(Sha256& h, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  h.Update(b, 8);
}
void PutString(Sha256& h, std::string_view s) {
  PutU64(h, s.size());
  h.Update(s);
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<Sha256Digest> WeightFileIdentity(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return e == ENOENT ? Status::NotFound(file + ": no such file")
                       : Status::IOError(file + ": open: " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::IOError(file + ": not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  Sha256 h;
  PutString(h, BaseName(file));
  PutU64(h, size);
  const uint64_t w = std::min<uint64_t>(kIdentityWindowBytes, size);
  std::vector<uint8_t> buf(static_cast<size_t>(w));
  for (int i = 0; i < kIdentityWindows && w > 0; ++i) {
    // Windows from the first byte to the last, evenly spaced (they overlap
    // in files under 1 MiB).
    const uint64_t off = (size - w) * static_cast<uint64_t>(i) / (kIdentityWindows - 1);
    size_t got = 0;
    while (got < w) {
      const ssize_t n = ::pread(fd, buf.data() + got, static_cast<size_t>(w) - got,
                                static_cast<off_t>(off + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string why = n < 0 ? std::strerror(errno) : "file shrank while read";
        ::close(fd);
        return Status::IOError(file + ": read at " + std::to_string(off + got) + ": " + why);
      }
      got += static_cast<size_t>(n);
    }
    const Sha256Digest d = Sha256Of({reinterpret_cast<const char*>(buf.data()), buf.size()});
    h.Update(d.data(), d.size());
  }
  ::close(fd);
  return h.Finish();
}

Result<WeightFiles> ListWeightFiles(const std::string& path) {
  WeightFiles w;
  if (IsDirectory(path)) {
    const std::string config = JoinPath(path, "config.json");
    if (FileExists(config)) {
      ASSIGN_OR_RETURN(std::string text, ReadFileToString(config));
      w.config_json = std::move(text);
    }
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
      const std::string name = e.path().filename().string();
      if ((EndsWith(name, ".safetensors") || EndsWith(name, ".gguf")) && e.is_regular_file(ec)) {
        w.files.push_back(e.path().string());
      }
    }
    if (ec) return Status::IOError(path + ": cannot list the directory: " + ec.message());
    if (w.files.empty()) {
      return Status::InvalidArgument(path + ": no weight files (*.safetensors, *.gguf) to identify");
    }
    std::sort(w.files.begin(), w.files.end());
  } else {
    if (!FileExists(path)) return Status::NotFound(path + ": no such file");
    w.files.push_back(path);
  }
  return w;
}

namespace {

// The identity's frame around per-file digests (sampled or full).
Sha256Digest IdentityOf(std::string_view version, const WeightFiles& w, const std::vector<Sha256Digest>& per_file) {
  Sha256 h;
  PutString(h, version);
  if (w.config_json) {
    PutString(h, "config.json");
    PutString(h, *w.config_json);
  }
  PutU64(h, w.files.size());
  for (const Sha256Digest& d : per_file) h.Update(d.data(), d.size());
  return h.Finish();
}

}  // namespace

Result<Sha256Digest> SampledWeightsIdentity(const std::string& path) {
  if (IsRandomModelSpec(path)) {  // no files: the spec fixes every byte
    ASSIGN_OR_RETURN(RandomModelParts r, OpenRandomModel(path, nullptr));
    return r.identity;
  }
  ASSIGN_OR_RETURN(WeightFiles w, ListWeightFiles(path));
  std::vector<Sha256Digest> per_file;
  for (const std::string& f : w.files) {
    ASSIGN_OR_RETURN(Sha256Digest d, WeightFileIdentity(f));
    per_file.push_back(d);
  }
  return IdentityOf("llmhost weights identity v1", w, per_file);
}

Sha256Digest FullWeightsIdentity(const WeightFiles& w, const std::vector<Sha256Digest>& digests) {
  std::vector<Sha256Digest> per_file;
  for (size_t i = 0; i < w.files.size() && i < digests.size(); ++i) {
    Sha256 h;
    PutString(h, BaseName(w.files[i]));
    h.Update(digests[i].data(), digests[i].size());  // the digest covers the size
    per_file.push_back(h.Finish());
  }
  return IdentityOf("llmhost full weights identity v2", w, per_file);
}

KvLayout LayoutOf(const Model& model, int64_t block_size, DType kv_dtype) {
  const ModelSpec& s = model.spec();
  KvLayout l;
  l.kv_dtype = KvDtypeName(kv_dtype);
  l.block_size = block_size;
  l.n_layers = s.n_layers;
  l.n_kv_heads = s.n_kv_heads;
  l.head_dim = s.head_dim;
  for (const LayerSpec& layer : s.layers) l.windows.push_back(layer.sliding ? layer.window : 0);
  l.numerics = model.backend()->name() + "/precision " +
               std::to_string(static_cast<int>(model.backend()->precision()));
  l.tensor_parallel = model.tensor_parallel();
  return l;
}

Sha256Digest ModelFingerprint(const Sha256Digest& weights_identity, const KvLayout& layout) {
  Sha256 h;
  PutString(h, "llmhost model fingerprint v1");
  h.Update(weights_identity.data(), weights_identity.size());
  PutString(h, layout.kv_dtype);
  PutU64(h, static_cast<uint64_t>(layout.block_size));
  PutU64(h, static_cast<uint64_t>(layout.n_layers));
  PutU64(h, static_cast<uint64_t>(layout.n_kv_heads));
  PutU64(h, static_cast<uint64_t>(layout.head_dim));
  PutU64(h, layout.windows.size());
  for (int64_t w : layout.windows) PutU64(h, static_cast<uint64_t>(w));
  PutString(h, layout.numerics);
  // Only when split, so that the keys of unsplit models (and their saved blocks) stay as they were.
  if (layout.tensor_parallel > 1) {
    PutString(h, "tensor parallel");
    PutU64(h, static_cast<uint64_t>(layout.tensor_parallel));
  }
  return h.Finish();
}

Result<Sha256Digest> SampledModelFingerprint(const Model& model, int64_t block_size) {
  ASSIGN_OR_RETURN(Sha256Digest weights, SampledWeightsIdentity(model.path()));
  return ModelFingerprint(weights, LayoutOf(model, block_size));
}

}  // namespace llmhost
