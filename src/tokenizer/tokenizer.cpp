// Tokenizer::FromJson / FromPath: pick the loader for a path and turn every
// failure (including JSON library exceptions) into a Status.
#include "tokenizer/tokenizer.h"

#include <dirent.h>

#include <exception>

#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The .gguf files directly inside `dir`.
std::vector<std::string> GgufFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (EndsWith(name, ".gguf")) out.push_back(JoinPath(dir, name));
  }
  closedir(d);
  return out;
}

Result<std::unique_ptr<Tokenizer>> LoadJsonFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, kJsonTokenizerMaxBytes));
  ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(text, path, kJsonTokenizerMaxBytes));
  auto t = Tokenizer::FromJson(doc);
  if (!t.ok()) return t.status().WithContext(path);
  return t;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(const nlohmann::json& doc) {
  try {
    auto t = tok::HfTokenizer::Create(doc);
    if (!t.ok()) return t.status();
    return std::unique_ptr<Tokenizer>(std::move(t).value());
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("tokenizer.json: out of memory while loading");
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("tokenizer.json: ") + e.what());
  }
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromPath(const std::string& path) {
  if (IsDirectory(path)) {
    std::string json_path = JoinPath(path, "tokenizer.json");
    if (FileExists(json_path)) return LoadJsonFile(json_path);
    std::vector<std::string> ggufs = GgufFilesIn(path);
    if (ggufs.size() == 1) return TokenizerFromGguf(ggufs[0]);
    if (ggufs.size() > 1)
      return Status::InvalidArgument(path + ": no tokenizer.json and " +
                                     std::to_string(ggufs.size()) +
                                     " .gguf files; name the one to use");
    return Status::NotFound(path + ": no tokenizer.json or .gguf file in this directory");
  }
  if (!FileExists(path)) return Status::NotFound(path + ": no such file or directory");
  if (EndsWith(path, ".gguf")) return TokenizerFromGguf(path);
  return LoadJsonFile(path);
}

}  // namespace llmhost
