// `llmhost tokenize` and `llmhost detokenize`: the tokenizer from the command
// line, for tests and for users debugging a model's vocabulary.
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost::cli {

namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string text;
  std::string text_file;
  bool add_special = false;
};

struct DetokenizeOptions {
  std::string tokenizer;
  std::string ids;
  bool skip_special = false;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "llmhost: %s\n", message.c_str());
  return 1;
}

void PrintJson(const nlohmann::json& j) {
  // Replace invalid UTF-8 rather than throw: decoded bytes may be partial.
  std::string out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fputc('\n', stdout);
}

int RunTokenize(const TokenizeOptions& o) {
  auto tok = Tokenizer::FromPath(o.tokenizer);
  if (!tok.ok()) return Fail(tok.status().ToString());
  std::string text = o.text;
  if (!o.text_file.empty()) {
    auto content = ReadFileToString(o.text_file);
    if (!content.ok()) return Fail(content.status().ToString());
    text = std::move(content).value();
  }
  std::vector<TokenId> ids = (*tok)->Encode(text, o.add_special);
  PrintJson({{"ids", ids}});
  return 0;
}

// "1,2, 3" -> ids; rejects anything that is not a non-negative integer.
Result<std::vector<TokenId>> ParseIds(const std::string& s) {
  std::vector<TokenId> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" \t");
    size_t e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0' || v < 0 || v > INT32_MAX) {
      return Status::InvalidArgument("--ids: '" + item + "' is not a token id (expected e.g. 1,2,3)");
    }
    ids.push_back(static_cast<TokenId>(v));
  }
  return ids;
}

int RunDetokenize(const DetokenizeOptions& o) {
  auto ids = ParseIds(o.ids);
  if (!ids.ok()) return Fail(ids.status().ToString());
  auto tok = Tokenizer::FromPath(o.tokenizer);
  if (!tok.ok()) return Fail(tok.status().ToString());
  for (TokenId id : *ids) {
    if (static_cast<size_t>(id) >= (*tok)->VocabSize()) {
      return Fail("token id " + std::to_string(id) + " is out of range: the vocabulary has " +
                  std::to_string((*tok)->VocabSize()) + " ids");
    }
  }
  PrintJson({{"text", (*tok)->Decode(*ids, o.skip_special)}});
  return 0;
}

}  // namespace

void RegisterTokenizerCommands(CLI::App& app) {
  auto topt = std::make_shared<TokenizeOptions>();
  CLI::App* tok = app.add_subcommand("tokenize", "Encode text to token ids; prints {\"ids\":[...]}");
  tok->add_option("--tokenizer", topt->tokenizer, "tokenizer.json, GGUF file, or model directory")->required();
  auto* text = tok->add_option("--text", topt->text, "text to encode");
  auto* file = tok->add_option("--text-file", topt->text_file, "file whose bytes are the text to encode");
  text->excludes(file);
  tok->add_flag("--add-special", topt->add_special, "apply the post-processor (BOS/EOS, [CLS]/[SEP]...)");
  tok->callback([topt, text, file] {
    if (text->count() == 0 && file->count() == 0) {
      ExitCode() = Fail("tokenize: give --text or --text-file");
      return;
    }
    ExitCode() = RunTokenize(*topt);
  });

  auto dopt = std::make_shared<DetokenizeOptions>();
  CLI::App* detok = app.add_subcommand("detokenize", "Decode token ids to text; prints {\"text\":\"...\"}");
  detok->add_option("--tokenizer", dopt->tokenizer, "tokenizer.json, GGUF file, or model directory")->required();
  detok->add_option("--ids", dopt->ids, "comma-separated token ids, e.g. 1,2,3")->required();
  detok->add_flag("--skip-special", dopt->skip_special, "drop special tokens from the text");
  detok->callback([dopt] { ExitCode() = RunDetokenize(*dopt); });
}

}  // namespace llmhost::cli
