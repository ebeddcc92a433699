#include "pool/hub_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/file.h"

namespace llmhost {

namespace fs = std::filesystem;

std::string HubRepoFolder(const std::string& model_dir, std::string_view repo) {
  std::string name = "models--";
  for (char c : repo) {
    if (c == '/') {
      name += "--";
    } else {
      name += c;
    }
  }
  return JoinPath(model_dir, name);
}

std::string HubBlobPath(const std::string& repo_folder, std::string_view etag) {
  return JoinPath(JoinPath(repo_folder, "blobs"), etag);
}

std::string HubSnapshotDir(const std::string& repo_folder, std::string_view commit) {
  return JoinPath(JoinPath(repo_folder, "snapshots"), commit);
}

std::string HubSnapshotLinkTarget(std::string_view file, std::string_view etag) {
  std::string target = "../../";
  for (char c : file) {
    if (c == '/') target += "../";
  }
  return target + "blobs/" + std::string(etag);
}

Status LinkHubSnapshotFile(const std::string& repo_folder, std::string_view commit, std::string_view file,
                           std::string_view etag) {
  const std::string link = JoinPath(HubSnapshotDir(repo_folder, commit), file);
  std::error_code ec;
  fs::create_directories(fs::path(link).parent_path(), ec);
  if (ec) return Status::IOError(DirName(link) + ": cannot create: " + ec.message());
  // Replace atomically: a new link beside it, renamed over the old one.
  const std::string tmp = link + ".llmhost-link";
  unlink(tmp.c_str());
  if (symlink(HubSnapshotLinkTarget(file, etag).c_str(), tmp.c_str()) != 0) {
    return Status::IOError(tmp + ": cannot create a symlink: " + std::strerror(errno));
  }
  if (rename(tmp.c_str(), link.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return Status::IOError(link + ": cannot place the symlink: " + std::strerror(err));
  }
  return Status::OK();
}

Status WriteHubRef(const std::string& repo_folder, std::string_view revision, std::string_view commit) {
  if (revision == commit) return Status::OK();
  const std::string path = JoinPath(JoinPath(repo_folder, "refs"), revision);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return Status::IOError(DirName(path) + ": cannot create: " + ec.message());
  return WriteFileAtomic(path, commit);
}

}  // namespace llmhost
