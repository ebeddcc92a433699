// The revisions a Hugging Face cache folder (`models--ORG--NAME`, layout in
// pool/hub_cache.h) holds, for model discovery: every file under refs/
// (nested names such as refs/pr/1 included, at most 4 folders deep) whose
// content is a commit with a snapshots/<commit> folder. A ref naming
// anything else (a path, a missing snapshot) is skipped. Without a usable
// refs/main, the only snapshot (when there is exactly one) is "main": a
// cache copied by hand, with no refs.
#pragma once

#include <string>
#include <vector>

namespace llmhost {

struct HfCacheRevision {
  std::string revision;  // "main", "v2", "pr/1"
  std::string snapshot;  // <folder>/snapshots/<commit>
};

// "main" first (when there is one), then the other refs in name order.
std::vector<HfCacheRevision> HfCacheRevisions(const std::string& folder_path);

// The model id of a revision: "ORG/NAME" for main, "ORG/NAME@REV" otherwise.
std::string HfCacheRevisionId(const std::string& repo_id, const std::string& revision);

}  // namespace llmhost
