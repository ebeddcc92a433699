#include "pool/hub_pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "pool/hf_cache_revisions.h"
#include "pool/hub_cache.h"
#include "pool/hub_model_info.h"
#include "util/file.h"
#include "util/http_download.h"
#include "util/sha256.h"
#include "util/url.h"

namespace llmhost {

namespace {

namespace fs = std::filesystem;

std::string Excerpt(const std::string& body) {
  std::string s = body.substr(0, 300);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// The error for a non-2xx answer of the Hub, from its status and X-Error-Code.
Status HubHttpError(const HttpGetResult& r, const HubPullOptions& o, const std::string& what) {
  const int status = r.head.status;
  const std::string code = r.head.Header("X-Error-Code");
  const std::string repo = o.ref.repo;
  if (code == "RevisionNotFound") {
    return Status::NotFound(repo + ": the Hub has no revision '" + o.ref.revision + "'");
  }
  if (code == "GatedRepo" || status == 401 || status == 403) {
    if (code == "RepoNotFound") {
      return Status::NotFound(repo + ": no such model on the Hub" +
                              std::string(o.token.empty() ? " (or it is private: set HF_TOKEN)" : ""));
    }
    return Status::InvalidArgument(
        repo + ": access denied (HTTP " + std::to_string(status) + "): the model is gated or private; " +
        (o.token.empty() ? "accept its terms on the Hub and set HF_TOKEN to an access token"
                         : "the token in HF_TOKEN has no access to it (accept the model's terms on the Hub)"));
  }
  if (status == 404 || code == "RepoNotFound" || code == "EntryNotFound") {
    return Status::NotFound(repo + ": " + (what.empty() ? "no such model on the Hub" : what + " not found on the Hub") +
                            " (HTTP " + std::to_string(status) + ")");
  }
  return Status::IOError(repo + ": HTTP " + std::to_string(status) + " from " + r.url +
                         (r.error_body.empty() ? "" : ": " + Excerpt(r.error_body)));
}

// An ETag header's value without W/ and quotes; "" unless it can name a blob.
std::string CleanEtag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  if (etag.empty() || etag.size() > 128) return "";
  for (char c : etag) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return "";
  }
  return etag;
}

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

// An exclusive flock on a download's .incomplete file, held while it is
// fetched, verified and renamed; released when destroyed.
class PartialLock {
 public:
  static Result<PartialLock> Acquire(const std::string& path) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);
      return Status::IOError(path + ": another pull is downloading this file; try again when it is done");
    }
    return PartialLock(fd);
  }
  PartialLock(PartialLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  PartialLock& operator=(PartialLock&&) = delete;
  ~PartialLock() {
    if (fd_ >= 0) close(fd_);
  }

 private:
  explicit PartialLock(int fd) : fd_(fd) {}
  int fd_;
};

class Puller {
 public:
  explicit Puller(const HubPullOptions& o) : o_(o) {
    endpoint_ = o.endpoint;
    while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
    if (!o.token.empty()) http_.credentials.emplace_back("Authorization", "Bearer " + o.token);
    http_.timeouts = o.timeouts;
    folder_ = HubRepoFolder(o.model_dir, o.ref.repo);
  }

  Result<HubPullResult> Run() {
    ASSIGN_OR_RETURN(HubModelInfo info, FetchInfo());
    HubFileFilter filter = o_.filter;
    filter.quant = o_.ref.quant;
    auto chosen = SelectHubFiles(info.files, filter);
    if (!chosen.ok()) return chosen.status().WithContext(o_.ref.repo);
    files_ = std::move(chosen).value();
    commit_ = info.commit;
    for (const HubFile& f : files_) total_ += f.size;
    Emit(HubPullProgress::Event::kListed, "", 0, 0, 0, 0);
    RETURN_IF_ERROR(MakeFolders());
    RETURN_IF_ERROR(CheckSpace());

    // `jobs` workers (this thread one of them) take the files in order.
    const size_t workers = std::clamp<size_t>(static_cast<size_t>(std::max(o_.jobs, 1)), 1, files_.size());
    std::vector<std::thread> threads;
    for (size_t t = 1; t < workers; ++t) threads.emplace_back([this] { Work(); });
    Work();
    for (std::thread& t : threads) t.join();
    if (!first_error_.ok()) return first_error_;

    RETURN_IF_ERROR(WriteHubRef(folder_, o_.ref.revision, commit_));
    HubPullResult result;
    result.model_id = HfCacheRevisionId(o_.ref.repo, o_.ref.revision);
    result.commit = commit_;
    result.snapshot_dir = HubSnapshotDir(folder_, commit_);
    result.files = files_.size();
    result.downloaded = downloaded_files_;
    result.total_bytes = total_;
    result.downloaded_bytes = downloaded_bytes_;
    return result;
  }

 private:
  Result<HubModelInfo> FetchInfo() {
    const std::string url = endpoint_ + "/api/models/" + o_.ref.repo + "/revision/" +
                            PercentEncode(o_.ref.revision, false) + "?blobs=true";
    auto got = HttpGetString(url, http_, kHubModelInfoMaxBytes);
    if (!got.ok()) return got.status().WithContext(o_.ref.repo + ": the model info");
    const HttpGetResult& r = got->first;
    if (r.head.status != 200) return HubHttpError(r, o_, "");
    auto info = ParseHubModelInfo(got->second);
    if (!info.ok()) return info.status().WithContext(url);
    return info;
  }

  Status MakeFolders() {
    std::error_code ec;
    fs::create_directories(JoinPath(folder_, "blobs"), ec);
    if (!ec) fs::create_directories(HubSnapshotDir(folder_, commit_), ec);
    if (ec) return Status::IOError(folder_ + ": cannot create: " + ec.message());
    return Status::OK();
  }

  // What is left to download (partial downloads count what they lack)
  // against the free space of the blobs folder.
  Status CheckSpace() {
    uint64_t needed = 0;
    for (const HubFile& f : files_) {
      const std::string etag = Etag(f);
      if (!f.has_size || (!etag.empty() && FileExists(HubBlobPath(folder_, etag)))) continue;
      uint64_t partial = etag.empty() ? 0 : FileSize(HubBlobPath(folder_, etag) + ".incomplete");
      needed += f.size > partial ? f.size - partial : 0;
    }
    struct statvfs vfs {};
    const std::string blobs = JoinPath(folder_, "blobs");
    if (statvfs(blobs.c_str(), &vfs) != 0) return Status::IOError(blobs + ": statvfs: " + std::strerror(errno));
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (needed > free_bytes) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "no space left: the download needs %.2f GiB, %s has %.2f GiB free",
                    needed / 1073741824.0, o_.model_dir.c_str(), free_bytes / 1073741824.0);
      return Status::ResourceExhausted(o_.ref.repo + ": " + buf);
    }
    return Status::OK();
  }

  // The blob name: the LFS hash, else the git blob id ("" until the download's ETag tells).
  static std::string Etag(const HubFile& f) { return !f.sha256.empty() ? f.sha256 : f.blob_id; }

  // One worker: files until none is left or a worker failed.
  void Work() {
    for (;;) {
      const size_t i = next_file_.fetch_add(1);
      if (i >= files_.size() || failed_.load()) return;
      Status s = PullFile(files_[i], i);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (first_error_.ok()) first_error_ = s;
        failed_ = true;
      }
    }
  }

  bool Stopping() const { return failed_.load() || (o_.cancel != nullptr && o_.cancel->load()); }

  Status PullFile(const HubFile& f, size_t index) {
    using E = HubPullProgress::Event;
    std::string etag = Etag(f);
    if (!etag.empty() && FileExists(HubBlobPath(folder_, etag)) &&
        (!f.has_size || FileSize(HubBlobPath(folder_, etag)) == f.size)) {
      Emit(E::kFileCached, f.path, index, f.size, f.size, f.size);
      return LinkHubSnapshotFile(folder_, commit_, f.path, etag);
    }
    // Unknown etag: a temporary name from the commit and path.
    const std::string partial = etag.empty() ? HubBlobPath(folder_, "tmp-" + ToHex(Sha256Of(commit_ + "/" + f.path))) +
                                                   ".incomplete"
                                             : HubBlobPath(folder_, etag) + ".incomplete";
    // Another pull of the same file (another process, or the server) holds
    // this lock until its blob is in place.
    ASSIGN_OR_RETURN(PartialLock lock, PartialLock::Acquire(partial));
    if (!etag.empty() && FileExists(HubBlobPath(folder_, etag))) {  // finished while we waited
      unlink(partial.c_str());
      Emit(E::kFileCached, f.path, index, f.size, f.size, f.size);
      return LinkHubSnapshotFile(folder_, commit_, f.path, etag);
    }
    const std::string url = endpoint_ + "/" + o_.ref.repo + "/resolve/" + commit_ + "/" + PercentEncode(f.path, true);
    uint64_t counted = 0;  // bytes of this file already added to the total done
    DownloadOptions d;
    d.http = http_;
    d.sha256 = !f.sha256.empty() || etag.empty();
    d.progress = [&](uint64_t done, uint64_t total) -> Status {
      if (Stopping()) return Status::IOError("stopped");
      // A server that answered a resumed request with the whole file restarts
      // `done`: nothing more is counted until it passes what was.
      Emit(E::kFileBytes, f.path, index, done, f.has_size ? f.size : total, done > counted ? done - counted : 0);
      counted = std::max(counted, done);
      return Status::OK();
    };
    const uint64_t kept = FileSize(partial);  // from an earlier pull
    Emit(E::kFileStart, f.path, index, kept, f.size, 0);

    Result<DownloadResult> got = Status::Internal("no attempt");
    for (int attempt = 0;; ++attempt) {
      got = DownloadToFile(url, partial, d);
      if (got.ok() || got.status().code() != StatusCode::kIOError || attempt >= o_.retries || Stopping()) break;
      Emit(E::kRetry, f.path, index, FileSize(partial), f.size, 0, got.status().message());
      std::this_thread::sleep_for(std::chrono::milliseconds(o_.retry_delay_ms));
    }
    if (!got.ok()) {
      return got.status().WithContext(o_.ref.repo + ": " + f.path + " (" + std::to_string(FileSize(partial)) +
                                      " bytes kept; pull again to resume)");
    }
    const DownloadResult& r = *got;
    if (r.response.head.status < 200 || r.response.head.status >= 300) {
      return HubHttpError(r.response, o_, "the file " + f.path);
    }
    auto discard = [&](const std::string& why) {
      unlink(partial.c_str());
      return Status::Corruption(o_.ref.repo + ": " + f.path + ": " + why +
                                "; the download was discarded, pull again to fetch it anew");
    };
    if (f.has_size && r.size != f.size) {
      return discard("got " + std::to_string(r.size) + " bytes, the Hub lists " + std::to_string(f.size));
    }
    if (!f.sha256.empty() && r.sha256 != f.sha256) {
      return discard("SHA-256 mismatch (expected " + f.sha256 + ", got " + r.sha256 + ")");
    }
    if (etag.empty()) {
      for (const HttpResponseHead& h : r.response.redirect_heads) {
        if (etag.empty()) etag = CleanEtag(h.Header("X-Linked-Etag"));
      }
      if (etag.empty()) etag = CleanEtag(r.response.head.Header("ETag"));
      if (etag.empty()) etag = r.sha256;
    }
    const std::string blob = HubBlobPath(folder_, etag);
    if (rename(partial.c_str(), blob.c_str()) != 0) {
      return Status::IOError(blob + ": cannot rename the download into place: " + std::strerror(errno));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      // What this pull fetched: all of it unless it continued the kept part.
      downloaded_bytes_ += r.resumed_from > 0 && r.size >= kept ? r.size - kept : r.size;
      ++downloaded_files_;
    }
    // A listed size smaller than what came (no size listed) still ends at the file's size.
    Emit(E::kFileDone, f.path, index, r.size, r.size, r.size > counted ? r.size - counted : 0);
    return LinkHubSnapshotFile(folder_, commit_, f.path, etag);
  }

  // One event of one file; `add` bytes more are done overall. The callback
  // runs under the lock: events reach it one at a time, in order.
  void Emit(HubPullProgress::Event event, const std::string& file, size_t index, uint64_t file_done,
            uint64_t file_total, uint64_t add, std::string message = "") {
    HubPullProgress p;
    p.event = event;
    p.file = file;
    p.file_index = index;
    p.file_done = file_done;
    p.file_total = file_total;
    p.message = std::move(message);
    EmitLocked(std::move(p), add);
  }
  void EmitLocked(HubPullProgress p, uint64_t add) {
    std::lock_guard<std::mutex> lock(mu_);
    done_ += add;
    if (p.event == HubPullProgress::Event::kFileDone || p.event == HubPullProgress::Event::kFileCached) ++files_done_;
    if (!o_.progress) return;
    p.file_count = files_.size();
    p.files_done = files_done_;
    p.done = done_;
    p.total = total_;
    o_.progress(p);
  }

  const HubPullOptions& o_;
  // Set before the workers start, read-only while they run.
  std::string endpoint_;
  std::string folder_;
  std::string commit_;
  HttpGetOptions http_;
  std::vector<HubFile> files_;
  uint64_t total_ = 0;

  std::atomic<size_t> next_file_{0};
  std::atomic<bool> failed_{false};
  std::mutex mu_;  // guards what follows, and serializes progress callbacks
  Status first_error_;
  uint64_t done_ = 0;
  size_t files_done_ = 0;
  size_t downloaded_files_ = 0;
  uint64_t downloaded_bytes_ = 0;
};

}  // namespace

void ApplyHubEnvironment(HubPullOptions* options) {
  if (const char* e = std::getenv("HF_ENDPOINT"); e != nullptr && *e != '\0') options->endpoint = e;
  if (const char* t = std::getenv("HF_TOKEN"); t != nullptr && *t != '\0') options->token = t;
}

Result<HubPullResult> PullFromHub(const HubPullOptions& options) {
  if (options.model_dir.empty()) return Status::InvalidArgument("no model directory to pull into");
  auto endpoint = ParseUrl(options.endpoint);
  if (!endpoint.ok()) return endpoint.status().WithContext("HF_ENDPOINT");
  return Puller(options).Run();
}

}  // namespace llmhost
