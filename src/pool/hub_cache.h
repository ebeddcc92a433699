// The Hugging Face cache layout under a model directory, as huggingface_hub
// writes it, so that both share the files:
//   models--ORG--NAME/
//     blobs/<etag>                  file contents, named by the LFS SHA-256 or
//                                   the git blob id; "<etag>.incomplete" while
//                                   downloading
//     snapshots/<commit>/<path>     a relative symlink to ../../blobs/<etag>
//                                   (one more "../" per folder in <path>)
//     refs/<revision>               the commit hash of a branch or tag
// Paths come from validated inputs (hub_ref.h, hub_model_info.h).
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace llmhost {

// "ORG/NAME" → "<model_dir>/models--ORG--NAME".
std::string HubRepoFolder(const std::string& model_dir, std::string_view repo);
std::string HubBlobPath(const std::string& repo_folder, std::string_view etag);
std::string HubSnapshotDir(const std::string& repo_folder, std::string_view commit);

// The link target of snapshots/<commit>/<file>: "../../blobs/<etag>" with a
// "../" more per '/' in `file`.
std::string HubSnapshotLinkTarget(std::string_view file, std::string_view etag);

// Creates (or replaces) snapshots/<commit>/<file> pointing at the blob, with
// the folders it needs. IOError naming the path.
Status LinkHubSnapshotFile(const std::string& repo_folder, std::string_view commit, std::string_view file,
                           std::string_view etag);

// Writes refs/<revision> = commit (no newline, as huggingface_hub does),
// atomically. Nothing for a revision that is itself the commit.
Status WriteHubRef(const std::string& repo_folder, std::string_view revision, std::string_view commit);

}  // namespace llmhost
