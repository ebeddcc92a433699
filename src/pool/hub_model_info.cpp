#include "pool/hub_model_info.h"

#include <cctype>

#include "pool/hub_ref.h"
#include "util/json.h"

namespace llmhost {

namespace {

bool IsLowerHex(std::string_view s, size_t size) {
  if (s.size() != size) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

}  // namespace

bool IsSafeRepoPath(std::string_view path) {
  if (path.empty() || path.size() > 1024 || path.front() == '/') return false;
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f || c == '\\') return false;
  }
  size_t start = 0;
  for (;;) {
    size_t end = path.find('/', start);
    std::string_view seg = path.substr(start, end == std::string_view::npos ? path.npos : end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

Result<HubModelInfo> ParseHubModelInfo(std::string_view json_text) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json_text, "the Hub's model info", kHubModelInfoMaxBytes));
  auto bad = [](const std::string& why) { return Status::Corruption("the Hub's model info: " + why); };
  if (!j.is_object()) return bad("not a JSON object");
  HubModelInfo info;
  auto sha = j.find("sha");
  if (sha == j.end() || !sha->is_string() || !IsCommitHash(sha->get<std::string>())) {
    return bad("no commit hash in \"sha\"");
  }
  info.commit = sha->get<std::string>();
  auto siblings = j.find("siblings");
  if (siblings == j.end() || !siblings->is_array()) return bad("no \"siblings\" list of files");
  if (siblings->size() > kHubMaxFiles) return bad("more than " + std::to_string(kHubMaxFiles) + " files");
  for (size_t i = 0; i < siblings->size(); ++i) {
    const nlohmann::json& s = (*siblings)[i];
    const std::string where = "siblings[" + std::to_string(i) + "]";
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) {
      return bad(where + ": no \"rfilename\"");
    }
    HubFile f;
    f.path = s["rfilename"].get<std::string>();
    if (!IsSafeRepoPath(f.path)) return bad(where + ": unsafe file name '" + f.path + "'");
    if (auto size = s.find("size"); size != s.end() && size->is_number_unsigned()) {
      f.size = size->get<uint64_t>();
      f.has_size = true;
    }
    if (auto blob = s.find("blobId"); blob != s.end() && blob->is_string() && IsLowerHex(blob->get<std::string>(), 40)) {
      f.blob_id = blob->get<std::string>();
    }
    if (auto lfs = s.find("lfs"); lfs != s.end() && lfs->is_object()) {
      auto hash = lfs->find("sha256");
      if (hash == lfs->end() || !hash->is_string() || !IsLowerHex(hash->get<std::string>(), 64)) {
        return bad(where + " (" + f.path + "): lfs.sha256 is not 64 lower-case hex digits");
      }
      f.sha256 = hash->get<std::string>();
      if (auto size = lfs->find("size"); size != lfs->end() && size->is_number_unsigned()) {
        f.size = size->get<uint64_t>();
        f.has_size = true;
      }
    }
    info.files.push_back(std::move(f));
  }
  return info;
}

}  // namespace llmhost
