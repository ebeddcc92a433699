#include "kv/weights_digest.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "kv/block_file.h"
#include "util/file.h"
#include "util/json.h"
#include "util/log.h"

namespace llmhost {

namespace {

constexpr size_t kReadBytes = size_t{4} << 20;  // per pread
constexpr const char* kFormat = "llmhost weights digests";

void PutU64(Sha256& h, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  h.Update(b, 8);
}

int64_t Nanos(const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

FileStamp StampFrom(const struct stat& st) {
  FileStamp s;
  s.dev = static_cast<uint64_t>(st.st_dev);
  s.ino = static_cast<uint64_t>(st.st_ino);
  s.size = static_cast<uint64_t>(st.st_size);
  s.mtime_ns = Nanos(st.st_mtim);
  s.ctime_ns = Nanos(st.st_ctim);
  return s;
}

int64_t NowSeconds() { return static_cast<int64_t>(std::time(nullptr)); }

struct OpenFile {
  int fd = -1;
  FileStamp stamp;
};

}  // namespace

std::string FileStamp::Key() const {
  return std::to_string(dev) + ":" + std::to_string(ino) + ":" + std::to_string(size) + ":" +
         std::to_string(mtime_ns) + ":" + std::to_string(ctime_ns);
}

Result<FileStamp> StampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    return e == ENOENT ? Status::NotFound(path + ": no such file") : Status::IOError(path + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(path + ": not a regular file");
  return StampFrom(st);
}

Result<std::vector<Sha256Digest>> DigestFiles(const std::vector<std::string>& files, int threads, bool low_priority,
                                              const std::atomic<bool>* cancel, DigestProgress* progress) {
  std::vector<OpenFile> open(files.size());
  auto close_all = [&] {
    for (OpenFile& f : open) {
      if (f.fd >= 0) ::close(f.fd);
    }
  };
  struct Chunk {
    size_t file;
    uint64_t offset, size;
  };
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < files.size(); ++i) {
    open[i].fd = ::open(files[i].c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (open[i].fd < 0 || ::fstat(open[i].fd, &st) != 0) {
      const int e = errno;
      close_all();
      return e == ENOENT ? Status::NotFound(files[i] + ": no such file")
                         : Status::IOError(files[i] + ": " + std::strerror(e));
    }
    open[i].stamp = StampFrom(st);
    ::posix_fadvise(open[i].fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    const uint64_t size = open[i].stamp.size;
    for (uint64_t off = 0; off < size || (off == 0 && size == 0); off += kDigestChunkBytes) {
      chunks.push_back({i, off, std::min(kDigestChunkBytes, size - off)});
      if (size == 0) break;
    }
  }
  std::vector<Sha256Digest> chunk_digests(chunks.size());
  std::atomic<size_t> next{0};
  std::mutex err_mu;
  Status error = Status::OK();
  std::atomic<bool> failed{false};
  auto work = [&] {
    if (low_priority) ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
    std::vector<uint8_t> buf(kReadBytes);
    for (size_t c; (c = next.fetch_add(1)) < chunks.size();) {
      if (failed.load() || (cancel && cancel->load())) return;
      const Chunk& ch = chunks[c];
      Sha256 h;
      uint64_t done = 0;
      while (done < ch.size) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(kReadBytes, ch.size - done));
        const ssize_t n = ::pread(open[ch.file].fd, buf.data(), want, static_cast<off_t>(ch.offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          std::lock_guard<std::mutex> lock(err_mu);
          if (!failed.exchange(true)) {
            error = Status::IOError(files[ch.file] + ": read at " + std::to_string(ch.offset + done) + ": " +
                                    (n < 0 ? std::strerror(errno) : "the file shrank while it was read"));
          }
          return;
        }
        h.Update(buf.data(), static_cast<size_t>(n));
        done += static_cast<uint64_t>(n);
        if (progress) progress->bytes += static_cast<uint64_t>(n);
      }
      chunk_digests[c] = h.Finish();
    }
  };
  const size_t n_threads = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), chunks.size()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (cancel && cancel->load() && !failed.load()) {
    close_all();
    return Status::ResourceExhausted("hashing cancelled");
  }
  if (failed.load()) {
    close_all();
    return error;
  }
  // A file rewritten while it was read: its digest would belong to neither version.
  for (size_t i = 0; i < files.size(); ++i) {
    struct stat st {};
    const bool same = ::fstat(open[i].fd, &st) == 0 && StampFrom(st) == open[i].stamp;
    Result<FileStamp> now = StampOf(files[i]);
    if (!same || !now.ok() || !(*now == open[i].stamp)) {
      close_all();
      return Status::IOError(files[i] + ": the file changed while it was hashed");
    }
  }
  close_all();
  std::vector<Sha256Digest> out;
  size_t c = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    Sha256 h;
    h.Update("llmhost file digest v1");
    PutU64(h, open[i].stamp.size);
    PutU64(h, kDigestChunkBytes);
    for (; c < chunks.size() && chunks[c].file == i; ++c) h.Update(chunk_digests[c].data(), chunk_digests[c].size());
    out.push_back(h.Finish());
  }
  return out;
}

WeightsDigestCache::WeightsDigestCache(std::string path) : path_(std::move(path)) { Load(); }

void WeightsDigestCache::Load() {
  if (path_.empty() || !FileExists(path_)) return;
  Result<nlohmann::json> j = ReadJsonFile(path_, kJsonSettingsMaxBytes);
  auto fail = [&](const std::string& why) {
    LOG_WARN("kv: " << why << "; the weights' digests are computed again");
    entries_.clear();
  };
  if (!j.ok()) return fail(j.status().message());
  if (!j->is_object() || j->value("format", "") != kFormat || !j->contains("files") || !(*j)["files"].is_object()) {
    return fail(path_ + ": not a weights digest file");
  }
  for (const auto& [key, v] : (*j)["files"].items()) {
    Entry e;
    if (!v.is_object() || !v.contains("digest") || !v["digest"].is_string() ||
        !ParseHexDigest(v["digest"].get<std::string>(), &e.digest)) {
      return fail(path_ + ": entry '" + key + "' is malformed");
    }
    if (v.contains("file") && v["file"].is_string()) e.file = v["file"].get<std::string>();
    if (v.contains("used") && v["used"].is_number_integer()) e.used = v["used"].get<int64_t>();
    entries_[key] = std::move(e);
  }
}

Status WeightsDigestCache::Save() const {
  if (path_.empty()) return Status::OK();
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [key, e] : entries_) {
    files[key] = {{"file", e.file}, {"digest", ToHex(e.digest)}, {"used", e.used}};
  }
  std::error_code ec;
  std::filesystem::create_directories(DirName(path_), ec);
  return WriteFileAtomic(path_, nlohmann::json{{"format", kFormat}, {"version", 1}, {"files", files}}.dump(1) + "\n");
}

std::optional<Sha256Digest> WeightsDigestCache::Lookup(const FileStamp& stamp) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(stamp.Key());
  if (it == entries_.end()) return std::nullopt;
  it->second.used = NowSeconds();  // persisted with the next store
  return it->second.digest;
}

void WeightsDigestCache::Remember(const std::string& file, const FileStamp& stamp, const Sha256Digest& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[stamp.Key()] = Entry{file, digest, NowSeconds()};
  while (entries_.size() > kMaxEntries) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
    entries_.erase(oldest);
  }
  if (Status st = Save(); !st.ok()) LOG_WARN("kv: cannot save weight digests: " << st.message());
}

size_t WeightsDigestCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace llmhost
