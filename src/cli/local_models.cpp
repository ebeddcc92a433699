#include "cli/local_models.h"

#include <cstdlib>

#include "pool/model_removal.h"
#include "server/serve_settings.h"
#include "util/file.h"

namespace llmhost::cli {

void AddLocalModelOptions(CLI::App* cmd, LocalModelOptions* o) {
  cmd->add_option("--model-dir", o->model_dirs,
                  "without a server: the model directory (as for serve; repeatable; default <home>/models)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--home", o->home, "without a server: llmhost's home (default ~/.llmhost)");
}

Result<std::vector<std::string>> LocalModelDirs(const LocalModelOptions& o) {
  server::SettingValues values;
  if (!o.home.empty()) values["home"] = {o.home};
  if (!o.model_dirs.empty()) values["model-dir"] = o.model_dirs;
  ASSIGN_OR_RETURN(server::ServeSettings s,
                   server::ResolveServeSettings(values, [](const char* name) { return std::getenv(name); }));
  return s.model_dirs;
}

Result<std::vector<DiscoveredModel>> LocalModels(const LocalModelOptions& o) {
  ASSIGN_OR_RETURN(std::vector<std::string> dirs, LocalModelDirs(o));
  return DiscoverModels(dirs);
}

Result<std::string> LocalModelPath(const LocalModelOptions& o, const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<DiscoveredModel> models, LocalModels(o));
  if (const DiscoveredModel* m = FindModelByName(models, name)) return m->path;
  if (FileExists(name) || IsDirectory(name)) return name;
  std::string ids;
  for (const DiscoveredModel& m : models) ids += (ids.empty() ? "" : ", ") + m.id;
  ASSIGN_OR_RETURN(std::vector<std::string> dirs, LocalModelDirs(o));
  std::string where;
  for (const std::string& d : dirs) where += (where.empty() ? "" : ", ") + d;
  return Status::NotFound("no model '" + name + "' in " + where + " (models: " + (ids.empty() ? "none" : ids) +
                          ") and no such folder or file");
}

}  // namespace llmhost::cli
