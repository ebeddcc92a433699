#include "pool/hf_cache_revisions.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "util/file.h"

namespace llmhost {

namespace fs = std::filesystem;

namespace {

// refs/ holds branch and tag names; deeper folders are not refs.
constexpr int kMaxRefDepth = 4;
constexpr size_t kMaxRefs = 1024;

bool IsDir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// A commit hash: no path separators or dots that could leave snapshots/.
bool SafeCommit(const std::string& s) {
  return !s.empty() && s.size() <= 128 && s.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
}

std::vector<fs::directory_entry> Sorted(const fs::path& dir) {
  std::vector<fs::directory_entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(*it);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
  return out;
}

// Every ref file under `dir`, as "name" or "folder/name", into `out`.
void CollectRefs(const fs::path& dir, const std::string& prefix, int depth, std::vector<std::string>* out) {
  for (const auto& e : Sorted(dir)) {
    if (out->size() >= kMaxRefs) return;
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code ec;
    if (e.is_directory(ec)) {
      if (depth + 1 < kMaxRefDepth) CollectRefs(e.path(), prefix + name + "/", depth + 1, out);
    } else if (e.is_regular_file(ec)) {
      out->push_back(prefix + name);
    }
  }
}

// snapshots/<commit> named by refs/<ref>, "" when it names none.
std::string RefSnapshot(const fs::path& folder, const std::string& ref) {
  auto text = ReadFileToString((folder / "refs" / ref).string());
  if (!text.ok()) return "";
  std::string commit = *text;
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
  if (!SafeCommit(commit)) return "";
  const fs::path snap = folder / "snapshots" / commit;
  return IsDir(snap) ? snap.string() : "";
}

}  // namespace

std::vector<HfCacheRevision> HfCacheRevisions(const std::string& folder_path) {
  const fs::path folder(folder_path);
  std::vector<std::string> refs;
  CollectRefs(folder / "refs", "", 0, &refs);
  std::vector<HfCacheRevision> out;
  std::string main = RefSnapshot(folder, "main");
  if (main.empty()) {
    std::vector<fs::path> snaps;
    for (const auto& e : Sorted(folder / "snapshots")) {
      const std::string name = e.path().filename().string();
      if (!name.empty() && name[0] != '.' && IsDir(e.path())) snaps.push_back(e.path());
    }
    if (snaps.size() == 1) main = snaps[0].string();
  }
  if (!main.empty()) out.push_back({"main", main});
  for (const std::string& ref : refs) {
    if (ref == "main") continue;
    std::string snap = RefSnapshot(folder, ref);
    if (!snap.empty()) out.push_back({ref, std::move(snap)});
  }
  return out;
}

std::string HfCacheRevisionId(const std::string& repo_id, const std::string& revision) {
  return revision == "main" ? repo_id : repo_id + "@" + revision;
}

}  // namespace llmhost
