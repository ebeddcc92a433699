#include "pool/hub_pull.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

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
    for (const HubFile& f : files_) progress_.total += f.size;
    progress_.file_count = files_.size();
    Emit(HubPullProgress::Event::kListed, "");
    RETURN_IF_ERROR(MakeFolders());
    RETURN_IF_ERROR(CheckSpace());

    HubPullResult result;
    for (size_t i = 0; i < files_.size(); ++i) {
      progress_.file_index = i;
      bool fetched = false;
      RETURN_IF_ERROR(PullFile(files_[i], &fetched));
      if (fetched) ++result.downloaded;
    }
    RETURN_IF_ERROR(WriteHubRef(folder_, o_.ref.revision, commit_));
    result.model_id = o_.ref.repo;
    result.commit = commit_;
    result.snapshot_dir = HubSnapshotDir(folder_, commit_);
    result.files = files_.size();
    result.total_bytes = progress_.total;
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

  Status PullFile(const HubFile& f, bool* fetched) {
    std::string etag = Etag(f);
    if (!etag.empty() && FileExists(HubBlobPath(folder_, etag)) &&
        (!f.has_size || FileSize(HubBlobPath(folder_, etag)) == f.size)) {
      progress_.done += f.size;
      progress_.file_done = progress_.file_total = f.size;
      Emit(HubPullProgress::Event::kFileCached, f.path);
      return LinkHubSnapshotFile(folder_, commit_, f.path, etag);
    }
    // Unknown etag: a temporary name from the commit and path.
    const std::string partial = etag.empty() ? HubBlobPath(folder_, "tmp-" + ToHex(Sha256Of(commit_ + "/" + f.path))) +
                                                   ".incomplete"
                                             : HubBlobPath(folder_, etag) + ".incomplete";
    const std::string url = endpoint_ + "/" + o_.ref.repo + "/resolve/" + commit_ + "/" + PercentEncode(f.path, true);
    const uint64_t done_before = progress_.done;
    DownloadOptions d;
    d.http = http_;
    d.sha256 = !f.sha256.empty() || etag.empty();
    d.progress = [&](uint64_t done, uint64_t total) -> Status {
      if (o_.cancel != nullptr && o_.cancel->load()) return Status::IOError("cancelled");
      progress_.file_done = done;
      progress_.file_total = f.has_size ? f.size : total;
      progress_.done = done_before + done;
      Emit(HubPullProgress::Event::kFileBytes, f.path);
      return Status::OK();
    };
    const uint64_t kept = FileSize(partial);  // from an earlier pull
    progress_.file_done = kept;
    progress_.file_total = f.size;
    Emit(HubPullProgress::Event::kFileStart, f.path);

    Result<DownloadResult> got = Status::Internal("no attempt");
    for (int attempt = 0;; ++attempt) {
      got = DownloadToFile(url, partial, d);
      if (got.ok() || got.status().code() != StatusCode::kIOError || attempt >= o_.retries ||
          (o_.cancel != nullptr && o_.cancel->load())) {
        break;
      }
      progress_.message = got.status().message();
      Emit(HubPullProgress::Event::kRetry, f.path);
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
    // What this pull fetched: all of it unless it continued the kept part.
    downloaded_bytes_ += r.resumed_from > 0 && r.size >= kept ? r.size - kept : r.size;
    progress_.done = done_before + r.size;
    progress_.file_done = r.size;
    Emit(HubPullProgress::Event::kFileDone, f.path);
    *fetched = true;
    return LinkHubSnapshotFile(folder_, commit_, f.path, etag);
  }

  void Emit(HubPullProgress::Event e, const std::string& file) {
    if (!o_.progress) return;
    progress_.event = e;
    progress_.file = file;
    o_.progress(progress_);
    progress_.message.clear();
  }

  const HubPullOptions& o_;
  std::string endpoint_;
  std::string folder_;
  std::string commit_;
  HttpGetOptions http_;
  std::vector<HubFile> files_;
  HubPullProgress progress_;
  uint64_t downloaded_bytes_ = 0;
};

}  // namespace

Result<HubPullResult> PullFromHub(const HubPullOptions& options) {
  if (options.model_dir.empty()) return Status::InvalidArgument("no model directory to pull into");
  auto endpoint = ParseUrl(options.endpoint);
  if (!endpoint.ok()) return endpoint.status().WithContext("HF_ENDPOINT");
  return Puller(options).Run();
}

}  // namespace llmhost
