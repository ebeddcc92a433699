// Deleting a discovered model's files (`llmhost rm`, DELETE /api/delete),
// only what belongs to it and never anything outside its --model-dir:
//   - a model folder (root/NAME, root/ORG/NAME): the folder;
//   - a GGUF file (root/NAME.gguf, root/ORG/NAME.gguf): the file (a split
//     model: every part there is);
//   - a Hugging Face cache repo (root/[ORG/]models--ORG--NAME): the served
//     snapshot (snapshots/<commit>), the refs naming that commit, then the
//     blobs no other snapshot links to; the whole repo folder (and its
//     .locks/models--ORG--NAME) once no snapshot is left.
// Symlinks are removed, never followed: a link to a file or folder elsewhere
// loses the link only, and a path that reaches the model through a linked
// folder (an ORG folder that is a link, a repo folder that is a link) is
// refused, as is a model that is the --model-dir itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pool/model_discovery.h"
#include "util/status.h"

namespace llmhost {

struct ModelRemoval {
  std::vector<std::string> removed;  // the paths removed (folders whole), in order
  uint64_t bytes = 0;                // bytes of the regular files among them
};

// Removes `m`'s files as above. InvalidArgument when its path is not one
// discovery would give under m.root or passes through a link; IOError naming
// the path that could not be removed (what was removed before stays removed).
Result<ModelRemoval> RemoveModelFiles(const DiscoveredModel& m);

// The model `name` names among `models`: its id, the id in other case, or the
// id's last component ("Qwen3-8B" for "org/Qwen3-8B") when only one model
// has it; null when none does.
const DiscoveredModel* FindModelByName(const std::vector<DiscoveredModel>& models, const std::string& name);

}  // namespace llmhost
