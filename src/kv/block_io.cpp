// Block file I/O: atomic writes (temp file, fdatasync, rename) and validated
// reads straight into the block's buffer (no intermediate copies).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>

#include "kv/block_file.h"

namespace llmhost {
namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Closes on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(Errno("write", path));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

// Reads exactly n bytes at `offset`; IOError / Corruption (short file).
Status ReadAt(int fd, uint8_t* p, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(Errno("read", path));
    }
    if (r == 0) return Status::Corruption(path + ": file is truncated");
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return Status::OK();
}

// Opens `path` and reads its header; fills the file size too.
Status OpenAndReadHeader(const std::string& path, Fd* fd, BlockFileHeader* h, struct stat* st) {
  fd->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd->fd < 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such block file");
    return Status::IOError(Errno("open", path));
  }
  if (::fstat(fd->fd, st) != 0) return Status::IOError(Errno("stat", path));
  uint64_t size = static_cast<uint64_t>(st->st_size);
  // One read usually holds the whole header (a few hundred bytes).
  std::vector<uint8_t> head(std::min<uint64_t>(size, 4096));
  RETURN_IF_ERROR(ReadAt(fd->fd, head.data(), head.size(), 0, path));
  if (head.size() >= 8) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | head[i];
    if (n <= kBlockFileMaxHeaderBytes && 8 + n > head.size() && 8 + n <= size) {
      size_t have = head.size();
      head.resize(8 + n);
      RETURN_IF_ERROR(ReadAt(fd->fd, head.data() + have, head.size() - have, have, path));
    }
  }
  Status s = ParseBlockFileHeader(head, h);
  if (!s.ok()) return s.WithContext(path);
  if (size != h->header_bytes + h->meta.data_bytes()) {
    return Status::Corruption(path + ": file is " + std::to_string(size) + " bytes, header says " +
                              std::to_string(h->header_bytes + h->meta.data_bytes()));
  }
  return Status::OK();
}

std::atomic<uint64_t> g_temp_counter{0};

}  // namespace

bool IsBlockTempFileName(std::string_view name) {
  return name.size() > 4 && name.substr(name.size() - 4) == ".tmp";
}

std::string BlockFileHeaderFor(const BlockMeta& meta, std::span<const uint8_t> data) {
  Sha256 sha;
  sha.Update(data.data(), data.size());
  return BuildBlockFileHeader(meta, sha.Finish(), static_cast<int64_t>(std::time(nullptr)));
}

Status WriteBlockFileAtomic(const std::string& path, std::string_view head,
                            std::span<const uint8_t> data) {
  std::string tmp = path + "." + std::to_string(::getpid()) + "-" +
                    std::to_string(g_temp_counter.fetch_add(1)) + ".tmp";
  Fd fd;
  fd.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd.fd < 0) return Status::IOError(Errno("create", tmp));
  Status s = WriteAll(fd.fd, reinterpret_cast<const uint8_t*>(head.data()), head.size(), tmp);
  if (s.ok()) s = WriteAll(fd.fd, data.data(), data.size(), tmp);
  // The data must be on disk before the rename makes the file visible: a
  // crash leaves either no file or the whole file.
  if (s.ok() && ::fdatasync(fd.fd) != 0) s = Status::IOError(Errno("fdatasync", tmp));
  if (s.ok()) {
    int rc = ::close(fd.fd);
    fd.fd = -1;
    if (rc != 0) s = Status::IOError(Errno("close", tmp));
  }
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::IOError(Errno("rename to " + path + ":", tmp));
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Result<BlockBytes> ReadBlockFile(const std::string& path, const BlockMeta& want) {
  Fd fd;
  BlockFileHeader h;
  struct stat st;
  RETURN_IF_ERROR(OpenAndReadHeader(path, &fd, &h, &st));
  if (h.meta.key != want.key) return Status::Corruption(path + ": holds another block key");
  if (!h.meta.SameShape(want)) {
    return Status::Corruption(path + ": fingerprint or shape differs from the wanted block");
  }
  auto data = std::make_shared<std::vector<uint8_t>>(h.meta.data_bytes());
  // Hash each chunk right after reading it, while it is still in cache: one
  // pass over memory instead of two.
  constexpr size_t kChunk = size_t{1} << 20;
  Sha256 sha;
  for (size_t off = 0; off < data->size(); off += kChunk) {
    size_t n = std::min(kChunk, data->size() - off);
    RETURN_IF_ERROR(ReadAt(fd.fd, data->data() + off, n, h.header_bytes + off, path));
    sha.Update(data->data() + off, n);
  }
  if (sha.Finish() != h.data_sha256) return Status::Corruption(path + ": data SHA-256 mismatch");
  // A hit refreshes the mtime: the LRU order survives a restart.
  ::futimens(fd.fd, nullptr);
  return BlockBytes(std::move(data));
}

Status ReadBlockFileHeader(const std::string& path, BlockFileHeader* out, uint64_t* file_bytes,
                           int64_t* mtime_ns) {
  Fd fd;
  struct stat st;
  RETURN_IF_ERROR(OpenAndReadHeader(path, &fd, out, &st));
  if (file_bytes) *file_bytes = static_cast<uint64_t>(st.st_size);
  if (mtime_ns) *mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return Status::OK();
}

}  // namespace llmhost
