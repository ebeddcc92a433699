#include "pool/model_removal.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iterator>
#include <optional>
#include <set>

#include "formats/gguf_split.h"
#include "util/file.h"
#include "util/log.h"

namespace llmhost {

namespace fs = std::filesystem;

namespace {

bool IsLink(const fs::path& p) {
  std::error_code ec;
  return fs::is_symlink(fs::symlink_status(p, ec));
}

bool IsRealDir(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(p, ec);
  return !ec && fs::is_directory(st);
}

bool Exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Bytes of the regular files at or under `p`, links not followed.
uint64_t RegularBytes(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(p, ec);
  if (ec) return 0;
  if (fs::is_regular_file(st)) {
    const auto n = fs::file_size(p, ec);
    return ec ? 0 : static_cast<uint64_t>(n);
  }
  if (!fs::is_directory(st)) return 0;
  uint64_t total = 0;
  for (fs::recursive_directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (fs::is_regular_file(it->symlink_status(e))) {
      const auto n = fs::file_size(it->path(), e);
      if (!e) total += static_cast<uint64_t>(n);
    }
  }
  return total;
}

// Removes `p` (a folder with what it holds; a link as the link only).
Status RemovePath(const fs::path& p, ModelRemoval* out) {
  const uint64_t bytes = RegularBytes(p);
  std::error_code ec;
  fs::remove_all(p, ec);
  if (ec) return Status::IOError(p.string() + ": cannot remove: " + ec.message());
  LOG_INFO("models: removed " << p.string());
  out->removed.push_back(p.string());
  out->bytes += bytes;
  return Status::OK();
}

// The blob names (files of repo/blobs) the links under `snapshot` point at.
std::set<std::string> LinkedBlobs(const fs::path& repo, const fs::path& snapshot) {
  std::set<std::string> blobs;
  const fs::path blob_dir = (repo / "blobs").lexically_normal();
  std::error_code ec;
  for (fs::recursive_directory_iterator it(snapshot, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (!fs::is_symlink(it->symlink_status(e))) continue;
    const fs::path target = fs::read_symlink(it->path(), e);
    if (e) continue;
    const fs::path resolved = (target.is_absolute() ? target : it->path().parent_path() / target).lexically_normal();
    const fs::path rel = resolved.lexically_relative(blob_dir);
    // One plain name inside blobs/: anything else is not this repo's blob.
    if (std::distance(rel.begin(), rel.end()) == 1 && rel != "." && rel != "..") blobs.insert(rel.string());
  }
  return blobs;
}

// The snapshot folders of a repo (links among them skipped: not ours to walk).
std::vector<fs::path> Snapshots(const fs::path& repo) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(repo / "snapshots", ec), end; !ec && it != end; it.increment(ec)) {
    if (IsRealDir(it->path())) out.push_back(it->path());
  }
  return out;
}

// refs/<revision> files (refs/pr/1 too) that name `commit`.
std::vector<fs::path> RefsTo(const fs::path& repo, const std::string& commit) {
  std::vector<fs::path> out;
  if (!IsRealDir(repo / "refs")) return out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(repo / "refs", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (!fs::is_regular_file(it->symlink_status(e))) continue;
    auto text = ReadFileToString(it->path().string());
    if (!text.ok()) continue;
    std::string ref = *text;
    while (!ref.empty() && std::isspace(static_cast<unsigned char>(ref.back()))) ref.pop_back();
    if (ref == commit) out.push_back(it->path());
  }
  return out;
}

// A Hugging Face cache repo's snapshot: the snapshot, its refs, then its blobs
// no other snapshot shares (or the repo whole when it was the last one).
Status RemoveHubSnapshot(const fs::path& repo, const std::string& commit, ModelRemoval* out) {
  const fs::path snapshot = repo / "snapshots" / commit;
  if (!IsRealDir(snapshot)) {
    return Status::InvalidArgument(snapshot.string() + " is not a folder (a link?): not deleted");
  }
  const std::set<std::string> mine = LinkedBlobs(repo, snapshot);
  std::set<std::string> shared;
  for (const fs::path& other : Snapshots(repo)) {
    if (other.filename() == commit) continue;
    const std::set<std::string> theirs = LinkedBlobs(repo, other);
    shared.insert(theirs.begin(), theirs.end());
  }
  RETURN_IF_ERROR(RemovePath(snapshot, out));
  for (const fs::path& ref : RefsTo(repo, commit)) RETURN_IF_ERROR(RemovePath(ref, out));
  if (Snapshots(repo).empty()) {
    // huggingface_hub keeps its lock files beside the repos: <cache>/.locks/models--ORG--NAME.
    const fs::path locks = repo.parent_path() / ".locks" / repo.filename();
    RETURN_IF_ERROR(RemovePath(repo, out));
    if (IsRealDir(repo.parent_path() / ".locks") && Exists(locks)) RETURN_IF_ERROR(RemovePath(locks, out));
    return Status::OK();
  }
  if (!IsRealDir(repo / "blobs")) return Status::OK();
  for (const std::string& blob : mine) {
    if (shared.count(blob)) continue;
    const fs::path p = repo / "blobs" / blob;
    if (Exists(p)) RETURN_IF_ERROR(RemovePath(p, out));
  }
  return Status::OK();
}

}  // namespace

Result<ModelRemoval> RemoveModelFiles(const DiscoveredModel& m) {
  const fs::path root = fs::path(m.root).lexically_normal();
  const fs::path path = fs::path(m.path).lexically_normal();
  const fs::path rel = path.lexically_relative(root);
  const std::vector<std::string> parts(rel.begin(), rel.end());
  const auto bad = [](const std::string& p) { return p.empty() || p == "." || p == ".."; };
  if (parts.empty() || std::any_of(parts.begin(), parts.end(), bad)) {
    return Status::InvalidArgument(m.path + " is the model directory " + m.root +
                                   " itself or not inside it: not deleted");
  }
  // Every folder on the way from the root is a real folder: a linked one
  // would lead the removal somewhere else.
  fs::path on_the_way = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    on_the_way /= parts[i];
    if (!IsRealDir(on_the_way)) {
      return Status::InvalidArgument(on_the_way.string() + " is a link or not a folder: " + m.id +
                                     " is not deleted through it");
    }
  }
  ModelRemoval out;
  for (size_t i = 0; i + 2 < parts.size(); ++i) {
    if (parts[i].rfind("models--", 0) == 0 && parts[i + 1] == "snapshots") {
      fs::path repo = root;
      for (size_t k = 0; k <= i; ++k) repo /= parts[k];
      RETURN_IF_ERROR(RemoveHubSnapshot(repo, parts[i + 2], &out));
      return out;
    }
  }
  if (!Exists(path)) return Status::NotFound(m.path + ": no such file or folder");
  RETURN_IF_ERROR(RemovePath(path, &out));
  // A split GGUF model's other parts, named after the first.
  const std::optional<GgufSplitName> split = m.gguf() ? ParseGgufSplitName(path.string()) : std::nullopt;
  for (int no = 2; split && split->no == 1 && no <= split->count; ++no) {
    const fs::path part = GgufSplitPartPath(split->prefix, no, split->count);
    if (Exists(part)) RETURN_IF_ERROR(RemovePath(part, &out));
  }
  return out;
}

const DiscoveredModel* FindModelByName(const std::vector<DiscoveredModel>& models, const std::string& name) {
  if (name.empty()) return nullptr;
  for (const DiscoveredModel& m : models) {
    if (m.id == name) return &m;
  }
  auto unique = [&](auto&& match) -> const DiscoveredModel* {
    const DiscoveredModel* found = nullptr;
    for (const DiscoveredModel& m : models) {
      if (!match(m)) continue;
      if (found) return nullptr;
      found = &m;
    }
    return found;
  };
  const std::string lower = Lower(name);
  if (const DiscoveredModel* m = unique([&](const DiscoveredModel& d) { return Lower(d.id) == lower; })) return m;
  return unique([&](const DiscoveredModel& d) {
    const size_t slash = d.id.rfind('/');
    return slash != std::string::npos && Lower(d.id.substr(slash + 1)) == lower;
  });
}

}  // namespace llmhost
