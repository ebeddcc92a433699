#include "pool/hub_file_select.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "formats/gguf_split.h"

namespace llmhost {

namespace {

const std::vector<std::string>& DefaultPatterns() {
  static const std::vector<std::string> kPatterns = {
      "*.safetensors", "*.gguf", "*.json", "tokenizer.*", "*/tokenizer.*", "*.model", "*.tiktoken", "*.jinja"};
  return kPatterns;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Base(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool MatchesAny(const std::vector<std::string>& patterns, std::string_view path) {
  for (const std::string& p : patterns) {
    if (GlobMatch(p, path)) return true;
  }
  return false;
}

std::string ListPaths(const std::vector<HubFile>& files) {
  std::string out;
  for (const HubFile& f : files) out += (out.empty() ? "" : ", ") + f.path;
  return out;
}

// The model a GGUF file belongs to: a split's parts share one (the path
// without "-0000K-of-0000N.gguf"), any other file is its own.
std::string GgufModelKey(const std::string& path) {
  const std::optional<GgufSplitName> split = ParseGgufSplitName(path);
  return split ? split->prefix + "-of-" + std::to_string(split->count) : path;
}

std::set<std::string> GgufModels(const std::vector<HubFile>& ggufs) {
  std::set<std::string> out;
  for (const HubFile& f : ggufs) out.insert(GgufModelKey(f.path));
  return out;
}

// All parts of a split model (`ggufs` holds one model's files) are listed.
Status CheckSplitComplete(const std::vector<HubFile>& ggufs) {
  if (ggufs.empty()) return Status::OK();
  const std::optional<GgufSplitName> split = ParseGgufSplitName(ggufs[0].path);
  if (!split) return Status::OK();
  for (int no = 1; no <= split->count; ++no) {
    const std::string part = GgufSplitPartPath(split->prefix, no, split->count);
    if (std::none_of(ggufs.begin(), ggufs.end(), [&](const HubFile& f) { return f.path == part; })) {
      return Status::InvalidArgument("the split GGUF model " + split->prefix + " lacks part " + part +
                                     " (in the repository, or through --include/--exclude)");
    }
  }
  return Status::OK();
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view path) {
  std::string p(pattern);
  if (!p.empty() && p.back() == '/') p += '*';
  // No FNM_PATHNAME: '*' crosses '/'. No FNM_PERIOD: leading dots are plain.
  return fnmatch(p.c_str(), std::string(path).c_str(), 0) == 0;
}

Result<std::vector<HubFile>> SelectHubFiles(const std::vector<HubFile>& files, const HubFileFilter& filter) {
  const std::vector<std::string>& include = filter.include.empty() ? DefaultPatterns() : filter.include;
  std::vector<HubFile> chosen;
  for (const HubFile& f : files) {
    if (MatchesAny(include, f.path) && !MatchesAny(filter.exclude, f.path)) chosen.push_back(f);
  }
  auto is_gguf = [](const HubFile& f) { return EndsWith(Lower(f.path), ".gguf"); };
  if (filter.include.empty()) {
    // Mistral's consolidated checkpoint duplicates the sharded weights.
    auto consolidated = [](const HubFile& f) {
      return Base(f.path).rfind("consolidated", 0) == 0 && EndsWith(f.path, ".safetensors");
    };
    bool other_weights = std::any_of(chosen.begin(), chosen.end(), [&](const HubFile& f) {
      return EndsWith(f.path, ".safetensors") && !consolidated(f);
    });
    if (other_weights) std::erase_if(chosen, consolidated);
  }
  std::vector<HubFile> ggufs;
  std::copy_if(chosen.begin(), chosen.end(), std::back_inserter(ggufs), is_gguf);
  if (!filter.quant.empty()) {
    const std::string q = Lower(filter.quant);
    std::vector<HubFile> picked;
    for (const HubFile& f : ggufs) {
      if (Lower(Base(f.path)).find(q) != std::string::npos) picked.push_back(f);
    }
    const std::set<std::string> models = GgufModels(picked);
    if (models.size() != 1) {
      return Status::InvalidArgument(
          (picked.empty() ? "no GGUF file of the repository has '" + filter.quant + "' in its name"
                          : "several GGUF models have '" + filter.quant + "' in their names: " + ListPaths(picked)) +
          (ggufs.empty() ? " (the repository has no GGUF files)" : "; the GGUF files: " + ListPaths(ggufs)));
    }
    RETURN_IF_ERROR(CheckSplitComplete(picked));
    std::erase_if(chosen, [&](const HubFile& f) {
      return is_gguf(f) && std::none_of(picked.begin(), picked.end(), [&](const HubFile& p) { return p.path == f.path; });
    });
  } else if (GgufModels(ggufs).size() > 1) {
    return Status::InvalidArgument("the repository has " + std::to_string(GgufModels(ggufs).size()) +
                                   " GGUF models; choose one with ORG/NAME:QUANT (e.g. :Q4_K_M) or --include: " +
                                   ListPaths(ggufs));
  } else {
    RETURN_IF_ERROR(CheckSplitComplete(ggufs));
  }
  if (chosen.empty()) {
    return Status::InvalidArgument("no file of the repository matches the patterns; its files: " + ListPaths(files));
  }
  return chosen;
}

}  // namespace llmhost
