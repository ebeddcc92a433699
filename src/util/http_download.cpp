#include "util/http_download.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "util/sha256.h"

namespace llmhost {

namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(path + ": write failed: " + std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

// Feeds the first `size` bytes of the file to `hasher`.
Status HashExisting(int fd, uint64_t size, Sha256& hasher, const std::string& path) {
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  uint64_t off = 0;
  while (off < size) {
    ssize_t n = pread(fd, buf.get(), std::min<uint64_t>(1 << 20, size - off), static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IOError(path + ": cannot read back the partial download");
    hasher.Update(buf.get(), static_cast<size_t>(n));
    off += static_cast<uint64_t>(n);
  }
  return Status::OK();
}

}  // namespace

Result<DownloadResult> DownloadToFile(const std::string& url, const std::string& path, const DownloadOptions& options) {
  FileDescriptor fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return Status::IOError(path + ": cannot stat: " + std::strerror(errno));
  uint64_t have = static_cast<uint64_t>(st.st_size);

  for (int attempt = 0;; ++attempt) {
    DownloadResult result;
    std::unique_ptr<Sha256> hasher;
    if (options.sha256) hasher = std::make_unique<Sha256>();
    HttpGetOptions http = options.http;
    if (have > 0) http.headers.emplace_back("Range", "bytes=" + std::to_string(have) + "-");

    // The response's head decides where writing starts: 206 appends after
    // `have`, anything else starts over.
    uint64_t done = 0, total = 0;
    auto sink = [&](std::string_view piece) -> Status {
      RETURN_IF_ERROR(WriteAll(fd.get(), piece, path));
      if (hasher) hasher->Update(piece);
      done += piece.size();
      if (options.progress) return options.progress(done, total);
      return Status::OK();
    };
    auto on_head = [&](const HttpResponseHead& head) -> Status {
      if (head.status == 206 && have > 0) {
        auto cr = ParseContentRange(head.Header("Content-Range"));
        if (!cr.ok()) return cr.status().WithContext(url);
        if (cr->first != have) {
          return Status::Corruption(url + ": asked for bytes from " + std::to_string(have) + ", got from " +
                                    std::to_string(cr->first));
        }
        total = cr->total;
        done = have;
        result.resumed_from = have;
        if (hasher) RETURN_IF_ERROR(HashExisting(fd.get(), have, *hasher, path));
      } else {
        if (ftruncate(fd.get(), 0) != 0) return Status::IOError(path + ": cannot truncate: " + std::strerror(errno));
        std::string len = head.Header("Content-Length");
        total = len.empty() ? 0 : std::strtoull(len.c_str(), nullptr, 10);
      }
      if (lseek(fd.get(), static_cast<off_t>(done), SEEK_SET) < 0) {
        return Status::IOError(path + ": cannot seek: " + std::strerror(errno));
      }
      return Status::OK();
    };
    http.on_head = on_head;
    auto got = HttpGet(url, http, sink);
    if (!got.ok()) return got.status();
    HttpGetResult response = std::move(got).value();
    const int status = response.head.status;
    if (status == 416 && have > 0 && attempt == 0) {  // the partial file is not a prefix the server knows
      if (ftruncate(fd.get(), 0) != 0) return Status::IOError(path + ": cannot truncate: " + std::strerror(errno));
      have = 0;
      continue;
    }
    if (status < 200 || status >= 300) {
      result.response = std::move(response);
      result.size = have;
      return result;
    }
    if (fsync(fd.get()) != 0) return Status::IOError(path + ": fsync failed: " + std::strerror(errno));
    result.size = done;
    if (hasher) result.sha256 = ToHex(hasher->Finish());
    result.response = std::move(response);
    return result;
  }
}

}  // namespace llmhost
