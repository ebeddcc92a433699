// The Hub's answer to GET /api/models/ORG/NAME/revision/REV?blobs=true:
// {"sha": commit, "siblings": [{"rfilename", "size"?, "blobId"?,
// "lfs"?: {"sha256", "size"}}]}. Everything in it is checked before use,
// since file names become paths on disk.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace llmhost {

struct HubFile {
  std::string path;      // relative to the repository root, '/'-separated
  uint64_t size = 0;     // bytes (lfs.size, else size); valid when has_size
  bool has_size = false;
  std::string sha256;    // LFS files: lower-case hex of the content; else ""
  std::string blob_id;   // git blob id (40 hex), "" when not given
};

struct HubModelInfo {
  std::string commit;  // 40 hex digits
  std::vector<HubFile> files;
};

inline constexpr size_t kHubMaxFiles = 100000;
inline constexpr size_t kHubModelInfoMaxBytes = size_t{64} << 20;

// Corruption naming the field for: no 40-hex "sha", a file name that is
// absolute, holds "." / ".." / empty segments, a backslash or a control
// character, an LFS hash that is not 64 hex digits, more than kHubMaxFiles files.
Result<HubModelInfo> ParseHubModelInfo(std::string_view json_text);

// True for a relative path of plain segments (see above).
bool IsSafeRepoPath(std::string_view path);

}  // namespace llmhost
